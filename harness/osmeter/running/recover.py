"""What a killed run left on the machine, undone: a --kernel-paths run's
tracing instances (and the tracefs it mounted), an --isolate run's moved
tasks, IRQs and settings, an `ab`'s --restore command it still owed. Every command that starts measuring or reading
runs (run, ab, fleet, report, decide) calls undo_dead_runs() first; and
a run that changes the machine starts a watchdog that does the same the
moment the run's process is gone, even by SIGKILL (guard()).

Both kinds of state are written to a private state file before the
change is made, under a lock the run holds (host/cleanup.private_lock): a
state file whose lock nobody holds is a dead run's. A live run's lock is
held, and its state is never touched."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.host import cleanup, isolate
from osmeter.ktrace import tracefs

ISOLATE_STATE = Path("/run/osmeter/isolate.json")


def undo_dead_runs(say=print, skip: set[str] = frozenset()) -> list[str]:
    """Undoes what dead runs left, saying so (each undo says what it did),
    but the kinds in skip ("kernel-paths", "isolate"); returns the kinds
    undone. One kind's failure (or its message's) never keeps the other
    from being undone: that failure is raised after both were tried."""
    undone, failed = [], []
    if "kernel-paths" not in skip:
        try:
            if tracefs.undo_killed_run(say) is not None:
                undone.append("kernel-paths")
        except Exception as e:  # noqa: BLE001 - raised below, once the isolation was put back too
            failed.append(e)
    if "isolate" not in skip and os.geteuid() == 0 and ISOLATE_STATE.exists():
        try:
            if isolate.undo_killed_run(say=say) is not None:
                undone.append("isolate")
        except RunError:
            pass  # a live isolated run holds the lock: its state is its own
    if "ab-restore" not in skip:
        try:
            if run_owed_restores(say):
                undone.append("ab-restore")
        except Exception as e:  # noqa: BLE001 - as above
            failed.append(e)
    if failed:
        raise failed[0]
    return undone


# ------------------------------------------------------------ ab's --restore, owed

RESTORE_TIMEOUT = 600.0
_OWED = re.compile(r"ab-restore\.(\d+)\.json")


class OwedRestore:
    """ab's --restore command, owed from before its first setup command
    until it has run: a state file in the private state directory
    (tracefs.state_dir(), mode 0700: nobody else can plant a command there)
    under a lock ab holds. An ab killed outright leaves the file with its
    lock free; its watchdog, or the next command, runs the command then
    (run_owed_restores)."""

    def __init__(self, command: str, out: Path):
        self.command, self.out = command, out
        self.dir = tracefs.state_dir()
        self.name = f"ab-restore.{os.getpid()}"
        self.lock: int | None = None

    def __enter__(self) -> OwedRestore:
        from osmeter.results.writer import write_json_atomic
        self.lock = cleanup.private_lock(self.dir, self.name + ".lock", "another ab holds {pid}'s restore")
        write_json_atomic(self.dir / (self.name + ".json"), {
            "pid": os.getpid(), "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "restore": self.command, "cwd": os.getcwd(), "out": str(self.out)})
        return self

    def paid(self) -> None:
        """The command ran (whatever its status): nothing is owed."""
        if self.lock is not None:
            with contextlib.suppress(OSError):
                (self.dir / (self.name + ".json")).unlink()
            cleanup.release_lock(self.dir, self.name + ".lock", self.lock)
            self.lock = None

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.paid()
        elif self.lock is not None:  # ab itself failed to run it: what is owed stays for the next command
            os.close(self.lock)
            self.lock = None


def run_owed_restores(say=print) -> int:
    """Each dead ab's owed --restore command (a state file whose lock
    nobody holds), run now in its directory (its own session, bounded by
    RESTORE_TIMEOUT) and said; the number run."""
    directory = tracefs.state_dir()
    try:
        names = sorted(p.name for p in directory.iterdir() if _OWED.fullmatch(p.name))
    except OSError:
        return 0
    ran = 0
    for name in names:
        base = name[:-len(".json")]
        try:
            fd = cleanup.private_lock(directory, base + ".lock", "held by {pid}")
        except RunError:
            continue  # its ab is alive
        try:
            try:
                doc = json.loads((directory / name).read_text())
                cmd, cwd = doc["restore"], doc.get("cwd") or "/"
                if not isinstance(cmd, str) or not isinstance(cwd, str):
                    raise TypeError
            except FileNotFoundError:
                continue  # paid meanwhile
            except (OSError, ValueError, KeyError, TypeError):
                say(f"osmeter: {directory / name}: an owed ab restore that cannot be read; removed",
                    file=sys.stderr)
                (directory / name).unlink(missing_ok=True)
                continue
            if not os.path.isdir(cwd):  # a command meant for that directory is run nowhere else
                (directory / name).unlink(missing_ok=True)
                say(f"osmeter: ab (pid {doc.get('pid')}) was killed before its --restore {cmd!r}, and its "
                    f"directory {cwd} is gone: not run; restore the machine by hand", file=sys.stderr)
                continue
            try:
                r = subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd,
                                   start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=RESTORE_TIMEOUT)
                how = f"exit {r.returncode}" + (f": {r.stderr.decode(errors='replace').strip()[-200:]}"
                                                if r.returncode and r.stderr.strip() else "")
            except subprocess.TimeoutExpired:
                how = f"not finished within {RESTORE_TIMEOUT:.0f} s"
            (directory / name).unlink(missing_ok=True)
            ran += 1
            say(f"osmeter: ab (pid {doc.get('pid')}, started {doc.get('started_utc')}, into {doc.get('out')}) "
                f"was killed before its --restore; ran it now: {cmd!r} ({how})", file=sys.stderr)
        finally:
            cleanup.release_lock(directory, base + ".lock", fd)
    return ran


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
    then undoes. Its messages are kept and written last, each write's
    failure ignored: the run's stderr may be gone with it (a closed
    terminal, a killed pipeline), and a write to it must not stop an undo."""
    while os.read(0, 4096):
        pass
    end = time.monotonic() + 60
    while cleanup.alive(run_pid) and time.monotonic() < end:
        time.sleep(0.05)
    said: list[str] = []
    try:
        undo_dead_runs(say=lambda msg, **_: said.append(msg.replace("osmeter:", "osmeter (watchdog):", 1)))
    except Exception as e:  # noqa: BLE001 - the watchdog has no one to raise to
        said.append(f"osmeter (watchdog): could not undo all a dead run left: {e}")
    for msg in said:
        try:
            os.write(2, (msg + "\n").encode(errors="replace"))
        except OSError:
            break
    return 0


if __name__ == "__main__":
    sys.exit(_watch(int(sys.argv[1])))
