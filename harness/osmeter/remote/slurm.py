"""Slurm's srun as a transport, beside OpenSSH (ssh.py): a fleet host whose
target is slurm:NODE is reached by a job step on that node of the current
allocation, and everything osmeter does over ssh (a short command, a
session carrying agent.py's requests, a tar stream either way) goes through
the step's standard input and output instead. srun takes the allocation
from SLURM_JOB_ID (set by salloc and sbatch, or by fleet/slurm.py after it
submitted one). No daemon of our own: slurmd starts the step.

Each step is one task on one node (--nodes 1 --ntasks 1 -w NODE), with
every CPU the job holds there (--whole), and may run beside the job's other
steps (--overlap: a step that checks or stops something while the probes'
step holds the node). Its exit status is the task's; srun's own failure (no
such node in the job, the job gone, a node that stopped answering) is told
apart by srun's words on its standard error.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

from osmeter.core.errors import RunError

PREFIX = "slurm:"
NODE_LOST = "srun: the node"  # how a lost node's reasons begin
NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# srun's report of a task that ended non-zero: the command's own status, not a transport failure
TASK_EXIT = re.compile(r"^srun: error: \S+: tasks? [\d,-]+: (Exited with exit code|Killed)")


def is_slurm(target: str) -> bool:
    return target.startswith(PREFIX)


def node_of(target: str) -> str:
    node = target[len(PREFIX):]
    if not NODE_RE.match(node):
        raise RunError(f"{target!r}: not a Slurm node (expected slurm:NODE)")
    return node


def tool(name: str) -> str:
    """The path of one of Slurm's client commands (srun, salloc, squeue, ...)."""
    path = shutil.which(name)
    if not path:
        raise RunError(f"{name} is not on the PATH: --slurm needs Slurm's client commands (Debian: slurm-client), "
                       "on a machine of the cluster")
    return path


def srun() -> str:
    return tool("srun")


def argv(target: str, command: str) -> list[str]:
    """srun argv that runs a shell command line on the node, in the job."""
    if not os.environ.get("SLURM_JOB_ID"):
        raise RunError(f"{target}: not inside a Slurm allocation (no SLURM_JOB_ID)")
    return [srun(), "--nodes=1", "--ntasks=1", f"--nodelist={node_of(target)}", "--whole", "--overlap",
            "--quiet", "--kill-on-bad-exit=1", f"--job-name=osmeter-{node_of(target)}", "sh", "-c", command]


def failed(stderr: str, returncode: int | None) -> bool:
    """True when srun itself failed (not the command it ran): its own error
    lines, whatever its exit status (a node lost mid-step can leave srun
    exiting 0 after "Node failure")."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("srun: error:")]
    return any(not TASK_EXIT.match(ln) for ln in lines)


def job_state(job: str | None = None) -> tuple[str, str] | None:
    """(state, reason) of a job (default the current one, SLURM_JOB_ID) as
    squeue has it, ("", "") once it left the queue; None where that cannot
    be asked."""
    job = job or os.environ.get("SLURM_JOB_ID")
    squeue = shutil.which("squeue")
    if not job or not squeue:
        return None
    try:
        r = subprocess.run([squeue, "-h", "-j", job, "-o", "%T|%r"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0 and "Invalid job id" not in r.stderr:
        return None
    state, _, why = r.stdout.strip().partition("|")
    return state, why


def reason(stderr: str | bytes) -> str:
    """srun's own failure, in words a person acts on."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.startswith("srun:") and not TASK_EXIT.match(ln)]
    text = " | ".join(lines[-3:]) or "srun failed without a message"
    if any(w in stderr for w in ("Invalid job id", "Job has been cancelled", "CANCELLED", "has expired")):
        return f"srun: the job is gone (cancelled, or past its time limit): {text}"
    state = (job_state() or (None,))[0]
    if state is not None and state not in ("RUNNING", "CONFIGURING", "PENDING", "SUSPENDED"):
        return f"srun: the job is gone ({state.lower() or 'no longer in the queue'}): {text}"
    if "Node failure" in stderr:
        return f"{NODE_LOST} failed (Slurm found it not answering and marked it down): {text}"
    if "Communication connection failure" in stderr or "Task launch for" in stderr:
        return f"{NODE_LOST} did not take the step (its slurmd down or unreachable): {text}"
    if "not in job" in stderr.lower() or "Requested node configuration is not available" in stderr:
        return f"srun: that node is not in this allocation: {text}"
    return text
