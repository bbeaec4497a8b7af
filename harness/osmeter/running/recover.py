"""What a killed run left on the machine, undone: a --kernel-paths run's
tracing instances (and the tracefs it mounted), an --isolate run's moved
tasks, IRQs and settings. Every command that starts measuring or reading
runs (run, ab, fleet, report, decide) calls undo_dead_runs() first; and
a run that changes the machine starts a watchdog that does the same the
moment the run's process is gone, even by SIGKILL (guard()).

Both kinds of state are written to a private state file before the
change is made, under a lock the run holds (host/cleanup.private_lock): a
state file whose lock nobody holds is a dead run's. A live run's lock is
held, and its state is never touched."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.host import cleanup, isolate
from osmeter.ktrace import tracefs


def undo_dead_runs(say=print, skip: set[str] = frozenset()) -> list[str]:
    """Undoes what dead runs left, saying so (each undo says what it did),
    but the kinds in skip ("kernel-paths", "isolate"); returns the kinds
    undone."""
    undone = []
    if "kernel-paths" not in skip and tracefs.undo_killed_run(say) is not None:
        undone.append("kernel-paths")
    if "isolate" not in skip and os.geteuid() == 0 and Path("/run/osmeter/isolate.json").exists():
        try:
            if isolate.undo_killed_run(say=say) is not None:
                undone.append("isolate")
        except RunError:
            pass  # a live isolated run holds the lock: its state is its own
    return undone


@contextlib.contextmanager
def guard(active: bool):
    """For the block, when active: a watchdog process (a session of its own,
    so a signal to the run's group does not reach it) that waits on a pipe
    only this process writes to. The pipe closes when the run ends, however
    it ends; the watchdog then undoes what the run left, if anything (after
    a clean end, nothing is left and it exits)."""
    if not active:
        yield
        return
    r, w = os.pipe2(os.O_CLOEXEC)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    try:
        subprocess.Popen([sys.executable, "-m", "osmeter.running.recover", str(os.getpid())], stdin=r,
                         stdout=subprocess.DEVNULL,
                         env=env, start_new_session=True, close_fds=True)
    except OSError as e:
        print(f"osmeter: warning: no watchdog for this run ({sys.executable}: {e.strerror}): if it is killed "
              "outright, what it changed stays until the next osmeter command", file=sys.stderr)
    finally:
        os.close(r)
    try:
        yield
    finally:
        os.close(w)


def _watch(run_pid: int) -> int:
    """The watchdog: waits for the end of standard input, then for the run's
    process to be gone (its pipe may close before its locks are released),
    then undoes."""
    while os.read(0, 4096):
        pass
    end = time.monotonic() + 60
    while cleanup.alive(run_pid) and time.monotonic() < end:
        time.sleep(0.05)
    undo_dead_runs(say=lambda msg, **_: print(msg.replace("osmeter:", "osmeter (watchdog):", 1), file=sys.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(_watch(int(sys.argv[1])))
