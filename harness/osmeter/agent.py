"""The remote side of `osmeter fleet`: a script that runs on a fleet host
with Python 3's standard library alone (no numpy, no .venv, no package
registry), from the tree fleet shipped there.

    python3 agent.py hold DIR -- ARGV...   print this process's pid, hold an flock on DIR.lock
                                           for as long as ARGV runs (it is exec'd: same pid)
    python3 agent.py clean TREE            remove what killed fleet runs left in TREE/results:
                                           every fleet-* directory whose lock nobody holds

A results directory of a fleet run lives in TREE/results/fleet-<stamp>-<pid>
while its run lasts; the controller fetches it and removes it. A controller
killed outright (SIGKILL, power) cannot: the next fleet run on that host
and tree removes it, once nothing holds its lock.
"""
import fcntl
import os
import re
import shutil
import sys

STALE = re.compile(r"^fleet-[0-9A-Za-z]+-[0-9]+(?:\.lock)?$")


def _held(path):
    """Whether a live process holds the flock on path (a missing file: no)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: keep it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def hold(directory, argv):
    """DIR made (private), DIR.lock held by this process, which becomes ARGV."""
    os.makedirs(os.path.dirname(directory) or ".", exist_ok=True)
    os.mkdir(directory, 0o700)
    fd = os.open(directory + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.set_inheritable(fd, True)  # held across exec, released when ARGV's process ends
    print(os.getpid(), flush=True)
    os.execvp(argv[0], argv)


def clean(tree):
    """Removes TREE/results/fleet-* (and its .lock) that no process holds;
    prints each path removed."""
    base = os.path.join(tree, "results")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return
    for name in names:
        if not STALE.match(name) or name.endswith(".lock"):
            continue
        d = os.path.join(base, name)
        if os.path.islink(d) or not os.path.isdir(d) or os.stat(d).st_uid != os.geteuid():
            continue
        if _held(d + ".lock") or _held(os.path.join(d, ".osmeter.lock")):
            continue
        shutil.rmtree(d, ignore_errors=True)
        try:
            os.unlink(d + ".lock")
        except OSError:
            pass
        print(d, flush=True)


def main(argv):
    if len(argv) >= 4 and argv[0] == "hold" and argv[2] == "--":
        hold(argv[1], argv[3:])
    elif len(argv) == 2 and argv[0] == "clean":
        clean(argv[1])
    else:
        print("usage: agent.py hold DIR -- ARGV... | clean TREE", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
