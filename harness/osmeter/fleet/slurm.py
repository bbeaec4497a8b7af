"""`osmeter fleet run|load --slurm`: the hosts are the nodes of a Slurm
allocation, each reached by srun (remote/slurm.py) as a host over ssh is.

Inside an allocation (salloc, sbatch: SLURM_JOB_ID is set) its nodes are
used as they are. Outside one, a job is submitted with the user's partition,
node count, time limit and account (`salloc --no-shell --exclusive
--no-kill`: the whole of each node, no shell step, and a node that fails
does not end the job on the others), its state shown until it is granted,
and it is cancelled when the fleet ends, on success, failure or Ctrl-C.
Nothing assumes a shared file system: each node gets the source through the
step's standard input and builds it in its own home, and the results come
back through the step's standard output.
"""
from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import threading
import time
from dataclasses import dataclass

from osmeter.core.errors import RunError
from osmeter.fleet.host import Host
from osmeter.remote import slurm

SQUEUE_EVERY = 5.0  # seconds between looks at a pending job's state


@dataclass
class SlurmRequest:
    partition: str | None = None
    nodes: int | None = None
    time_limit: str | None = None
    account: str | None = None

    def given(self) -> list[str]:
        return [f"--{k.replace('_', '-')}" for k, v in vars(self).items() if v is not None]


@dataclass
class Allocation:
    job: str
    nodes: list[str]
    submitted: bool  # by osmeter, so cancelled by it at the end

    def hosts(self) -> list[Host]:
        return [Host(f"{slurm.PREFIX}{n}", n) for n in self.nodes]

    def record(self) -> dict:
        return {"job": self.job, "nodes": self.nodes, "submitted_by_osmeter": self.submitted}


def expand(nodelist: str) -> list[str]:
    """Slurm's compact node list (node[1-3],gpu7) as names, by scontrol."""
    r = subprocess.run([slurm.tool("scontrol"), "show", "hostnames", nodelist], capture_output=True, text=True,
                       timeout=30)
    names = r.stdout.split()
    if r.returncode != 0 or not names:
        raise RunError(f"scontrol could not expand the node list {nodelist!r}: {r.stderr.strip() or 'no names'}")
    return names


@contextlib.contextmanager
def allocation(req: SlurmRequest, say):
    """The allocation to run in: the current one, or one submitted now and
    cancelled on the way out. SLURM_JOB_ID is set while it lives."""
    slurm.srun()
    job = os.environ.get("SLURM_JOB_ID")
    if job:
        if req.given():
            raise RunError(f"inside Slurm job {job} already: {', '.join(req.given())} are for submitting a job "
                           "from outside an allocation; leave them out to use this one's nodes")
        listed = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
        nodes = expand(listed) if listed else expand(_squeue_nodes(job))
        say(f"fleet: Slurm job {job}: {len(nodes)} node{'s' if len(nodes) != 1 else ''} ({', '.join(nodes)})")
        yield Allocation(job, nodes, False)
        return
    if not req.partition:
        raise RunError("not inside a Slurm allocation (no SLURM_JOB_ID) and no --partition: run osmeter inside "
                       "salloc or sbatch, or give --partition P [--nodes N --time-limit T --account A] to submit a job")
    job = None
    try:
        job = _submit(req, say)
        nodes = expand(_squeue_nodes(job))
        say(f"fleet: Slurm job {job} granted: {', '.join(nodes)}")
        os.environ["SLURM_JOB_ID"] = job
        yield Allocation(job, nodes, True)
    finally:
        os.environ.pop("SLURM_JOB_ID", None)
        if job:
            subprocess.run([slurm.tool("scancel"), job], capture_output=True, timeout=30)
            say(f"fleet: Slurm job {job} released (scancel)")


def _squeue_nodes(job: str) -> str:
    r = subprocess.run([slurm.tool("squeue"), "-h", "-j", job, "-o", "%N"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0 or not r.stdout.strip():
        raise RunError(f"Slurm job {job} has no nodes (squeue: {r.stderr.strip() or 'not running'})")
    return r.stdout.strip()


def _submit(req: SlurmRequest, say) -> str:
    """salloc --no-shell, its words and the job's state shown as they come;
    returns the job id once granted."""
    argv = [slurm.tool("salloc"), "--no-shell", "--exclusive", "--no-kill", "--job-name=osmeter-fleet",
            f"--partition={req.partition}", f"--nodes={req.nodes or 1}"]
    argv += [f"--time={req.time_limit}"] if req.time_limit else []
    argv += [f"--account={req.account}"] if req.account else []
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in p.stdout] + [lines.put(None)], daemon=True).start()
    job, said, seen, last_look = None, [], ("", ""), 0.0
    try:
        while True:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                line = ""
            if line is None:
                break
            if line.strip():
                said.append(line.strip())
                say(f"fleet: {line.strip()}")
                m = re.search(r"job(?: allocation)? (\d+)", line)
                job = job or (m.group(1) if m else None)
            if job and time.monotonic() - last_look >= SQUEUE_EVERY:
                last_look = time.monotonic()
                state = slurm.job_state(job) or ("", "")
                if state != seen and state[0]:
                    seen = state
                    say(f"fleet: Slurm job {job}: {state[0]}" + (f" ({state[1]})" if state[1] not in ("", "None")
                                                                 else ""))
        rc = p.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, 2)  # salloc withdraws a pending request on SIGINT
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)
        if job:
            subprocess.run([slurm.tool("scancel"), job], capture_output=True, timeout=30)
        raise
    if rc != 0 or not job or not any("Granted job allocation" in s for s in said):
        if job:
            subprocess.run([slurm.tool("scancel"), job], capture_output=True, timeout=30)
        raise RunError(f"salloc could not allocate (exit {rc}): {' | '.join(said[-3:]) or 'no message'}")
    return job
