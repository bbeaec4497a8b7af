"""What a killed run leaves behind, removed by the next run: by name and
owner only, never anything osmeter did not make.

A run holds an flock on DIR/.osmeter.lock while it lasts (writer.ResultsDir);
a lock file nobody holds marks a run that was killed (SIGKILL, power). In
such a directory the next run removes the disk probes' target when the
run's results.json says osmeter made it, and half-written temporary files.
In the directories the file-system probes use, it removes their scratch
files whose process is gone: osmeter-<probe>-<pid>..."""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import time
from pathlib import Path

from osmeter.results import reader, store

LOCK = store.LOCK
# bench/common/scratch.c's names: osmeter-TAG-PID-XXXXXX
SCRATCH = re.compile(r"^osmeter-(?:fscache|contention|meta|fsread|pagefault|reread|vm|path|select)-(\d+)-.+$")
TEMP = re.compile(r"^\.[^/]+\.[A-Za-z0-9_]{8}\.tmp$")  # write_atomic's mkstemp names


def private_lock(directory: Path, name: str, busy: str) -> int:
    """The lock of a session that changes the machine (--isolate, --kernel-paths)
    beside its state file: directory/name, in a directory private to this
    user (made mode 0700 when missing, refused otherwise), flocked for as
    long as the returned descriptor stays open (the lock dies with its
    holder, even by SIGKILL), the holder's pid written in it. Held by
    another: RunError(busy, with {pid} the holder's). release_lock removes
    the file (and the directory, when nothing else is left in it): a lock
    taken on a file that was removed meanwhile is taken again on the new one."""
    from osmeter.core.errors import RunError

    path = directory / name
    for _ in range(20):
        directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        try:
            st = os.lstat(directory)
        except FileNotFoundError:  # removed by a release between the two: again
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise RunError(f"{directory} is not a private directory of this user's (mode 0700); remove it and run "
                           "again")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunError(busy.format(pid=holder)) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # its holder released it (and removed it) between our open and our lock
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd
    raise RunError(f"{path}: could not take the lock (it kept being removed); run again")


def release_lock(directory: Path, name: str, fd: int) -> None:
    """A private_lock's end: its file removed while still held, the descriptor closed, and the directory
    removed when nothing else is in it (a state file a later run must find stays, and so does it)."""
    with contextlib.suppress(OSError):
        os.unlink(directory / name)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(directory)


def _ours(p: Path) -> bool:
    try:
        return p.lstat().st_uid == os.geteuid()
    except OSError:
        return False


def alive(pid: int) -> bool:
    """A process that still runs. A zombie does not: it has exited and only
    waits to be reaped, which can take a while where PID 1 (a container's
    agent) reaps lazily; kill(pid, 0) still succeeds on it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    state = stat.rsplit(")", 1)[-1].split()[:1]
    return state not in (["Z"], ["X"])


def _abandoned(run_dir: Path, settle: float = 10.0) -> bool:
    """A lock file that nobody holds (and not one a starting run made a
    moment ago and is about to lock): the run that made it is gone."""
    lock = run_dir / LOCK
    if not lock.is_file() or not _ours(lock):
        return False
    try:
        if time.time() - lock.stat().st_mtime < settle:
            return False
    except OSError:
        return False
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _remove(p: Path, removed: list[str]) -> None:
    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
        removed.append(str(p))
    except OSError:
        pass


def scratch(directory: Path, removed: list[str]) -> None:
    """The file-system probes' scratch files of processes that are gone."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return
    for p in entries:
        mo = SCRATCH.match(p.name)
        if mo and _ours(p) and not alive(int(mo.group(1))):
            _remove(p, removed)


def _killed_run(run_dir: Path, removed: list[str]) -> None:
    try:
        doc = reader.read_json(run_dir / store.RESULTS)  # a killed run's, or anything planted there
        target = doc["conditions"]["disk_target"]
        if target.get("made_by_osmeter"):
            t = Path(target["path"])
            if t.parent == run_dir and t.is_file() and _ours(t):
                _remove(t, removed)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for d in (run_dir, run_dir / store.SAMPLES, run_dir / store.RAW):
        try:
            for p in d.iterdir():
                if TEMP.match(p.name) and _ours(p):
                    _remove(p, removed)
        except OSError:
            pass
    scratch(run_dir, removed)
    _remove(run_dir / LOCK, removed)


def clean(results_root: Path, fs_dirs: list[Path] = ()) -> list[str]:
    """Removes what killed runs left under results_root (run directories and
    campaigns one level down) and in fs_dirs; returns what it removed."""
    removed: list[str] = []
    # a run, a campaign's run (DIR/run-01) or an ab side's run (DIR/a/run-01)
    for pattern in ("*/" + LOCK, "*/*/" + LOCK, "*/*/*/" + LOCK):
        for lock in results_root.glob(pattern):
            if _abandoned(lock.parent):
                _killed_run(lock.parent, removed)
    for d in fs_dirs:
        scratch(d, removed)
    return removed
