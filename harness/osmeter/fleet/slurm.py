"""`osmeter fleet run|load --slurm`: the hosts are the nodes of a Slurm
allocation, each reached by srun (remote/slurm.py) as a host over ssh is.

Inside an allocation (salloc, sbatch: SLURM_JOB_ID is set) its nodes are
used as they are. Outside one, a job is submitted with the user's partition,
node count, time limit and account (`salloc --no-shell --exclusive
--no-kill`: the whole of each node, no shell step, and a node that fails
does not end the job on the others), its state shown until it is granted,
and it is cancelled when the fleet ends, on success, failure or Ctrl-C;
and, should osmeter be killed outright (SIGKILL), by a watchdog in a
session of its own that knows the job (JobWatch), pending or running. A
job osmeter submits without --time-limit gets one from the planned work
(planned_limit), never the partition's default (often days).
Nothing assumes a shared file system: each node gets the source through the
step's standard input and builds it in its own home, and the results come
back through the step's standard output.
"""
from __future__ import annotations

import contextlib
import math
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.fleet.host import Host
from osmeter.remote import slurm

SQUEUE_EVERY = 5.0  # seconds between looks at a pending job's state
SETUP_S = 1200.0  # shipping the tree and building it on a node (fleet/host.py's bounds: 300 + 900 s)


def planned_limit(seconds: float) -> str:
    """The job's time limit, in whole minutes, for work planned to take
    `seconds` on a node: twice that (a slow node, a slow disk), and the
    tree shipped and built first."""
    return str(max(1, math.ceil((SETUP_S + 2 * max(seconds, 0.0)) / 60)))


class JobWatch:
    """A watchdog for a job osmeter submits: a process in a session of its
    own (a signal to osmeter's group does not reach it) reading a pipe only
    osmeter writes to. Told salloc's process group and then the job's id
    as they become known, it ends salloc (withdrawing a pending request)
    and cancels the job when the pipe closes without osmeter having
    released them: osmeter killed outright."""

    def __init__(self):
        r, self.w = os.pipe2(os.O_CLOEXEC)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        try:
            subprocess.Popen([sys.executable, "-m", "osmeter.fleet.slurm", slurm.tool("scancel")], stdin=r,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                             start_new_session=True, close_fds=True)
        finally:
            os.close(r)

    def tell(self, what: str, value: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self.w, f"{what} {value}\n".encode())

    def close(self, released: bool) -> None:
        """released: the job was cancelled (and salloc ended) here; the watchdog exits without a word."""
        if self.w >= 0:
            if released:
                self.tell("released", "-")
            os.close(self.w)
            self.w = -1


def _watch_job(scancel: str) -> int:
    """The watchdog's side of JobWatch."""
    group = job = None
    released = False
    for line in sys.stdin:
        what, _, value = line.strip().partition(" ")
        if what == "salloc" and value.isdigit():
            group = int(value)
        elif what == "job" and value.isdigit():  # only digits: the id reaches scancel's command line
            job = value
        elif what == "salloc_gone":
            group = None
        elif what == "released":
            released = True
    if released:
        return 0
    if group is not None:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGINT)  # salloc withdraws a pending request on SIGINT
    if job is not None:
        subprocess.run([scancel, job], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
    return 0


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
    job, watch = None, JobWatch()
    try:
        job = _submit(req, say, watch)
        nodes = expand(_squeue_nodes(job))
        say(f"fleet: Slurm job {job} granted: {', '.join(nodes)}")
        os.environ["SLURM_JOB_ID"] = job
        yield Allocation(job, nodes, True)
    finally:
        os.environ.pop("SLURM_JOB_ID", None)
        if job:
            subprocess.run([slurm.tool("scancel"), job], capture_output=True, timeout=30)
            say(f"fleet: Slurm job {job} released (scancel)")
        watch.close(released=True)


def _squeue_nodes(job: str) -> str:
    r = subprocess.run([slurm.tool("squeue"), "-h", "-j", job, "-o", "%N"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0 or not r.stdout.strip():
        raise RunError(f"Slurm job {job} has no nodes (squeue: {r.stderr.strip() or 'not running'})")
    return r.stdout.strip()


def _submit(req: SlurmRequest, say, watch: JobWatch) -> str:
    """salloc --no-shell, its words and the job's state shown as they come;
    returns the job id once granted."""
    argv = [slurm.tool("salloc"), "--no-shell", "--exclusive", "--no-kill", "--job-name=osmeter-fleet",
            f"--partition={req.partition}", f"--nodes={req.nodes or 1}"]
    argv += [f"--time={req.time_limit}"] if req.time_limit else []
    argv += [f"--account={req.account}"] if req.account else []
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    watch.tell("salloc", str(p.pid))
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
                if not job and m:
                    job = m.group(1)
                    watch.tell("job", job)
            if job and time.monotonic() - last_look >= SQUEUE_EVERY:
                last_look = time.monotonic()
                state = slurm.job_state(job) or ("", "")
                if state != seen and state[0]:
                    seen = state
                    say(f"fleet: Slurm job {job}: {state[0]}" + (f" ({state[1]})" if state[1] not in ("", "None")
                                                                 else ""))
        rc = p.wait()
        watch.tell("salloc_gone", "-")  # its group is no longer salloc's to signal
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


if __name__ == "__main__":
    sys.exit(_watch_job(sys.argv[1]))
