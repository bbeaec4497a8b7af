"""The remote side of `osmeter fleet`: a script that runs on a fleet host
with Python 3's standard library alone (no numpy, no .venv, no package
registry), from the tree fleet shipped there.

    python3 agent.py hold DIR -- ARGV...   print this process's pid, hold an flock on DIR.lock
                                           for as long as ARGV runs (it is exec'd: same pid)
    python3 agent.py clean TREE            remove what killed fleet runs left in TREE/results:
                                           every fleet-* directory whose lock nobody holds

    python3 agent.py serve TREE            a thin host's side of `osmeter run --on` (onhost.py):
                                           one JSON request a line on stdin, one reply a line on
                                           stdout; TREE's machine.py describes this machine and
                                           launch.py starts the probes, as in a local run

A results directory of a fleet run lives in TREE/results/fleet-<stamp>-<pid>
while its run lasts (serve's working directory too: the probes' scratch
files and the disk probes' default target); the controller fetches it and
removes it (serve removes its own when its session ends, whichever way). A
controller killed outright (SIGKILL, power) cannot: the next fleet run on
that host and tree removes it, once nothing holds its lock.

Python 3.8 or newer, standard library only.
"""
import datetime
import fcntl
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading

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
    returns the paths removed."""
    base = os.path.join(tree, "results")
    removed = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return removed
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
        removed.append(d)
    return removed


def serve(tree):
    """Answers the controller's requests until its session ends (end of
    standard input): then the running probe's group is killed and the
    working directory removed."""
    tree = os.path.abspath(tree)
    sys.path.insert(0, os.path.join(tree, "harness"))
    removed = clean(tree)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    work = os.path.join(tree, "results", f"fleet-{stamp}-{os.getpid()}")
    os.makedirs(os.path.dirname(work), exist_ok=True)
    os.mkdir(work, 0o700)
    lock = os.open(work + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    out = sys.stdout
    out_lock = threading.Lock()
    state = {"launcher": None, "worker": None}
    bin_dir = os.path.join(tree, "build", "bin")

    def reply(rid, **kw):
        with out_lock:
            out.write(json.dumps(dict(kw, id=rid)) + "\n")
            out.flush()

    def run_probe(rid, argv, timeout, awake):
        try:
            rc, so, se = state["launcher"].run(argv, timeout, awake=awake)
            reply(rid, ok={"rc": rc, "out": so, "err": se})
        except Exception as e:  # the controller hears of it, with what happened
            reply(rid, error=f"{type(e).__name__}: {e}")

    ops = _ops(tree, bin_dir, state)
    reply(None, ok={"workdir": work, "python": platform.python_version(), "removed": removed})
    try:
        for line in sys.stdin:
            try:
                q = json.loads(line)
                rid, op = q["id"], q["op"]
            except (ValueError, KeyError, TypeError):
                continue
            if op == "run":
                w = threading.Thread(target=run_probe, args=(rid, q["argv"], q["timeout"], bool(q.get("awake"))),
                                     daemon=True)
                state["worker"] = w
                w.start()
                continue
            try:
                got = ops[op](q)
                reply(rid, ok=got)
            except Exception as e:
                reply(rid, error=f"{op}: {type(e).__name__}: {e}")
    finally:  # the session ended: nothing of this run stays behind
        if state["launcher"] is not None:
            state["launcher"].kill()
        if state["worker"] is not None:
            state["worker"].join(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
        try:
            os.unlink(work + ".lock")
        except OSError:
            pass


def _ops(tree, bin_dir, state):
    """The requests serve answers, by name: each a function of the request."""
    from pathlib import Path

    from osmeter.host import cleanup, interference, launch, machine  # the tree's own, standard library only

    def make():
        r = subprocess.run(["make", "-s", "-C", tree, "all"], capture_output=True, text=True)
        return [r.returncode, r.stderr[-3000:]]

    ops = {
        "machine": lambda q: machine.describe_machine(),
        "conditions": lambda q: machine.describe_conditions(Path(tree)),
        "affinity": lambda q: sorted(os.sched_getaffinity(0)),
        "set_affinity": lambda q: os.sched_setaffinity(0, set(q["cpus"])),
        "fifo": lambda q: list(launch.fifo_permission()),
        "uid": lambda q: os.geteuid(),
        "exists": lambda q: os.path.exists(q["path"]),
        "is_dir": lambda q: os.path.isdir(q["path"]),
        "unlink": lambda q: os.unlink(q["path"]) if os.path.lexists(q["path"]) else None,
        "read": lambda q: machine._read(q["path"]),
        "counters": lambda q: interference.counters(q["cpu"]),
        "missing": lambda q: [b for b in q["names"] if not os.path.exists(os.path.join(bin_dir, b))],
        "make": lambda q: make(),
        "which": lambda q: shutil.which(q["name"]),
        "launcher": lambda q: state.update(launcher=launch.Launcher(Path(bin_dir), q["cpu"], q["fifo"],
                                                                    [Path(d) for d in q["scratch"]])),
        "kill": lambda q: state["launcher"] and state["launcher"].kill(q.get("grace", 3.0)),
        "clean_scratch": lambda q: ([cleanup.scratch(Path(d), []) for d in q["dirs"]] if "dirs" in q
                                   else state["launcher"] and state["launcher"].clean_scratch()),
    }
    return ops


def main(argv):
    if len(argv) >= 4 and argv[0] == "hold" and argv[2] == "--":
        hold(argv[1], argv[3:])
    elif len(argv) == 2 and argv[0] == "clean":
        for d in clean(argv[1]):
            print(d, flush=True)
    elif len(argv) == 2 and argv[0] == "serve":
        serve(argv[1])
    else:
        print("usage: agent.py hold DIR -- ARGV... | clean TREE | serve TREE", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
