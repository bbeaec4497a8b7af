"""The hosts of a fleet and what is done to them over OpenSSH
(harness/osmeter/remote/ssh.py), shared by fleet run (run.py) and fleet load
(load.py): no daemon of our own.

  hosts   --hosts parsed: USER@HOST, HOST or local (this machine and tree,
          no ssh), each with its label (its directory under the fleet's)
  check   what the host lacks (the tools named, python3 at the version
          asked, or --python's interpreter): everything named at once, read
          from the check's own marked lines only
  ship    the source tree (`git archive HEAD`, or the working tree with
          --dirty) into ~/.osmeter-fleet/<label>-<tree>/ there; kept, so the
          next use of the same tree ships and builds nothing
  build   make there (or here for the host local)
  setup   (--python) that interpreter imports numpy and matplotlib
Driver runs one step function per host, one host at a time or all at once,
each host's remote command started with its pid first so that Ctrl-C
stops them all; a host that fails keeps its reason and the others go on.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from osmeter.core.errors import Interrupted, RunError, shielded
from osmeter.remote import ssh

LOCAL = ("local", "localhost")
NEEDS = ("python3", "make", "cc", "tar")
THIN_PYTHON = (3, 8)   # what agent.py, machine.py and launch.py need on a thin host
FULL_PYTHON = (3, 11)  # what the whole harness needs (--python)
HOST_RE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])$")


@dataclass
class Host:
    target: str                 # USER@HOST as ssh takes it, or "local"
    label: str                  # its directory under the fleet directory
    status: str = "not run"     # ok | failed | interrupted | not run
    reason: str = ""
    steps: dict = field(default_factory=dict)   # step -> seconds
    tree_dir: str = ""          # the shipped tree there
    results: str = ""           # DIR/<label> relative to the fleet directory

    @property
    def local(self) -> bool:
        return self.target in LOCAL


def parse_hosts(text: str) -> list[Host]:
    names = [h.strip() for h in text.split(",") if h.strip()]
    if not names:
        raise RunError("--hosts: expected USER@HOST,USER@HOST,... (or local)")
    bad = [n for n in names if n not in LOCAL and not HOST_RE.match(n)]
    if bad:
        raise RunError(f"--hosts: not a host: {', '.join(repr(b) for b in bad)} (expected USER@HOST, HOST or local)")
    dash = [n for n in names if any(part.startswith("-") for part in n.split("@"))]
    if dash:  # ssh would read "-oProxyCommand=..." as an option, not a host
        raise RunError(f"--hosts: not a host: {', '.join(repr(b) for b in dash)} (a user or host name cannot "
                       "start with '-')")
    if len(set(names)) != len(names):
        raise RunError("--hosts: a host is named twice")
    hosts = []
    for n in names:
        label = "local" if n in LOCAL else n.rsplit("@", 1)[-1].strip("[]").replace(":", "_")
        if any(h.label == label for h in hosts) or any(
                (m.rsplit("@", 1)[-1].strip("[]").replace(":", "_") == label) for m in names if m != n):
            label = n.replace("@", "_at_").replace(":", "_").strip("[]")
        hosts.append(Host(n, label))
    return hosts


# ------------------------------------------------------------ the source

def source_tar(root: Path, dirty: bool) -> tuple[bytes, str, str]:
    """(tar bytes, tree id, what it is): HEAD by git archive, or the working
    tree; either way with a .osmeter-source saying which (machine.git_commit
    reads it where there is no .git)."""
    tar, tree, what, commit = _source_tar(root, dirty)
    src = json.dumps({"commit": commit, "dirty": not what.startswith("git HEAD"), "tree": tree}).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        with tarfile.open(fileobj=io.BytesIO(tar), mode="r") as src_tf:
            for m in src_tf:
                tf.addfile(m, src_tf.extractfile(m) if m.isfile() else None)
        info = tarfile.TarInfo(".osmeter-source")
        info.size = len(src)
        tf.addfile(info, io.BytesIO(src))
    return out.getvalue(), tree, what


def _git_head(root: Path) -> str | None:
    r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def _source_tar(root: Path, dirty: bool) -> tuple[bytes, str, str, str | None]:
    git = (root / ".git").exists()
    if git and not dirty:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            tar = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", "HEAD"], capture_output=True)
            if tar.returncode != 0:
                raise RunError(f"git archive failed: {tar.stderr.decode(errors='replace').strip()}")
            changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                     capture_output=True, text=True).stdout.strip()
            what = f"git HEAD {head.stdout.strip()[:12]}"
            if changed:
                what += " (uncommitted changes not shipped: --dirty ships the working tree)"
            return tar.stdout, head.stdout.strip()[:12], what, head.stdout.strip()
    if git:
        ls = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, text=True, check=True).stdout.split("\0")
        files = sorted(f for f in ls if f and (root / f).is_file())
    else:
        skip = {".venv", "build", "results", ".git", "__pycache__"}
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                       if p.is_file() and not skip.intersection(p.relative_to(root).parts))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for f in files:
            info = tf.gettarinfo(str(root / f), arcname=f)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(root / f, "rb") as fh:
                tf.addfile(info, fh)
    data = buf.getvalue()
    tree = hashlib.sha256(data).hexdigest()[:12]
    return data, tree, f"working tree {tree} ({len(files)} files)", _git_head(root) if git else None


# ------------------------------------------------------------ one host

class HostFailed(Exception):
    pass


def last_lines(text: str, n: int = 3) -> str:
    """The last n lines that say something, whole (never cut mid-word), joined."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "no message"


def run_on(host: Host, command: str, **kw) -> subprocess.CompletedProcess:
    """A short command there (ssh.run); ssh's own failure is the host's."""
    try:
        return ssh.run(host.target, command, **kw)
    except RunError as e:
        raise HostFailed(str(e).removeprefix(f"{host.target}: ")) from None


def timed(host: Host, step: str, fn, *args):
    t0 = time.monotonic()
    try:
        return fn(*args)
    finally:
        host.steps[step] = round(time.monotonic() - t0, 3)


MARK = "osmeter-check"  # the check's own lines: a .bashrc banner or a chatty interpreter prints others


def check_script(tools: list[str], py: str) -> str:
    """What the check runs there: one marked line per lacking tool, the
    interpreter's version and $HOME, each on a line of its own."""
    return (f"for t in {' '.join(tools)}; do command -v $t >/dev/null 2>&1 || printf '{MARK} lacks %s\\n' $t; done; "
            f"{ssh.quote(py)} -c 'import sys; print(\"\\n{MARK} python %d.%d\" % sys.version_info[:2])' "
            f"2>/dev/null; printf '\\n{MARK} home %s\\n' \"$HOME\"")


def parse_check(text: str) -> tuple[list[str], tuple[int, int] | None, str]:
    """(lacking tools, the interpreter's (major, minor) or None, home) from
    the check's marked lines only."""
    lacks, version, home = [], None, ""
    for line in text.splitlines():
        word = line.split(" ", 2)
        if len(word) < 3 or word[0] != MARK:
            continue
        if word[1] == "lacks":
            lacks.append(word[2].strip())
        elif word[1] == "python":
            m = re.fullmatch(r"(\d+)\.(\d+)", word[2].strip())
            version = (int(m.group(1)), int(m.group(2))) if m else version
        elif word[1] == "home":
            home = word[2].strip()
    return lacks, version, home


def check(host: Host, needs: tuple[str, ...], python: str | None, min_python: tuple[int, int] = (3, 11)) -> str:
    """Fails naming everything the host lacks; returns its home directory."""
    tools = [t for t in needs if t != "python3"]
    py = python or "python3"
    r = run_on(host, check_script(tools, py), timeout=30)
    lacks, version, home = parse_check(r.stdout)
    problems = []
    if ("python3" in needs or python) and version is None:
        lacks.append(py)
    if lacks:
        debian = ", ".join(dict.fromkeys({"cc": "gcc", py: "python3"}.get(m, m) for m in lacks))
        problems.append(f"lacks {', '.join(lacks)} (Debian: {debian})")
    if ("python3" in needs or python) and version is not None and version < min_python:
        problems.append(f"has Python {version[0]}.{version[1]} as {py}; osmeter needs {min_python[0]}."
                        f"{min_python[1]} or newer there" + ("" if python else " (--python PATH)"))
    if problems:
        raise HostFailed("; and ".join(problems))
    if not home:
        raise HostFailed(f"the check printed nothing of its own (exit {r.returncode}): {last_lines(r.stderr)}")
    return home


def ship(host: Host, tar: bytes, tree: str, home: str) -> str:
    d = f"{home}/.osmeter-fleet/{host.label}-{tree}"
    q = ssh.quote(d)
    r = run_on(host, f"test -f {q}/.osmeter-tree && echo have || true", timeout=30)
    if r.stdout.strip() == "have":
        return d
    r = run_on(host, f"rm -rf {q}.new && mkdir -p {q}.new && tar -x -C {q}.new && echo {tree} > {q}.new/.osmeter-tree "
             f"&& rm -rf {q} && mv {q}.new {q}", input=tar, text=False, timeout=300)
    if r.returncode != 0:
        raise HostFailed(f"cannot unpack the source there: {last_lines(r.stderr.decode(errors='replace'))}")
    return d


def build(host: Host, tree_dir: str, target: str = "all") -> None:
    r = run_on(host, f"make -s -j\"$(nproc 2>/dev/null || echo 2)\" -C {ssh.quote(tree_dir)} {target}", timeout=900)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-5:])
        raise HostFailed(f"make failed there:\n{tail}")


def python_ready(host: Host, tree_dir: str, python: str) -> str:
    """The command that starts the whole of osmeter there (--python): that
    interpreter must import numpy and matplotlib."""
    q = ssh.quote(tree_dir)
    r = run_on(host, f"{ssh.quote(python)} -c 'import numpy, matplotlib'", timeout=60)
    if r.returncode != 0:
        err = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        raise HostFailed(f"{python} cannot import numpy and matplotlib there: {err[-1] if err else 'no message'}")
    return f"env OSMETER_ROOT={q} PYTHONPATH={q}/harness {ssh.quote(python)} -m osmeter"


class Driver:
    """Runs one function per host, one host at a time or all at once, with
    the main thread free to take Ctrl-C: then every remote process this
    driver started gets SIGINT, the hosts end their step, and what finished
    is kept."""

    def __init__(self, hosts: list[Host], parallel: bool, save, say=None):
        self.hosts, self.parallel, self.save = hosts, parallel, save
        self.say = say or (lambda message: print(message, file=sys.stderr))  # a live table prints it above itself
        self.stop = threading.Event()
        self.procs: dict[str, tuple[subprocess.Popen, str]] = {}
        self.lock = threading.Lock()

    def start(self, host: Host, command: str, here: bool = False) -> subprocess.Popen:
        """A remote command (or, for the host local or with here, one on this
        machine) whose first output line is its pid."""
        here = here or host.local
        argv = ["sh", "-c", command] if here else ssh.argv(host.target, command)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        pid = p.stdout.readline().strip()
        with self.lock:
            self.procs[host.label] = (p, pid, here)
        if self.stop.is_set():
            self.interrupt_one(host)
        return p

    def follow(self, host: Host, command: str, on_line, here: bool = False) -> tuple[int, str]:
        """A command started (start) and followed to its end: each line of
        its standard output to on_line as it comes, the last lines of its
        standard error kept; (exit status, those lines). ssh's own failure
        (ssh's exit 255, srun's own error) is the host's, in ssh.lost's words."""
        p = self.start(host, command, here)
        tail: list[str] = []

        def pump_err():
            for line in p.stderr:
                tail.append(line.rstrip())
                del tail[:-20]

        t = threading.Thread(target=pump_err, daemon=True)
        t.start()
        for line in p.stdout:
            on_line(line)
        rc = p.wait()
        t.join(timeout=5)
        err = "\n".join(tail)
        why = None if host.local or here else ssh.lost(host.target, err, rc)
        if why:
            raise HostFailed(why)
        return rc, err

    def done(self, host: Host) -> None:
        with self.lock:
            self.procs.pop(host.label, None)

    def interrupt_one(self, host: Host) -> None:
        with self.lock:
            p, pid, here = self.procs.get(host.label, (None, "", True))
        if not p or not pid.isdigit():
            return
        if here:
            try:
                os.kill(int(pid), 2)
            except ProcessLookupError:
                pass
        else:
            try:
                ssh.run(host.target, f"kill -INT {pid} 2>/dev/null || true", timeout=15)
            except RunError:
                pass

    def run(self, fn) -> None:
        def one(h: Host):
            if self.stop.is_set():
                return
            try:
                fn(h)
                if h.status == "not run":
                    h.status = "ok"
            except HostFailed as e:
                h.status = "interrupted" if self.stop.is_set() else "failed"
                h.reason = str(e)
            except Exception as e:  # a bug here must not lose the other hosts' results
                h.status, h.reason = "failed", f"{type(e).__name__}: {e}"
            finally:
                self.done(h)
                if h.status in ("failed", "interrupted"):
                    self.say(f"fleet: {h.target}: {h.status}: {h.reason}")
                self.save()

        pool = cf.ThreadPoolExecutor(max_workers=len(self.hosts) if self.parallel else 1)
        futures = [pool.submit(one, h) for h in self.hosts]
        try:
            while not all(f.done() for f in futures):
                cf.wait(futures, timeout=0.2)
        except Interrupted:
            self.stop.set()
            with shielded():
                self.say("fleet: interrupted: stopping the runs and fetching what finished ...")
                for h in self.hosts:
                    self.interrupt_one(h)
                cf.wait(futures)
                for h in self.hosts:
                    if h.status == "not run":
                        h.reason = "interrupted before it started"
                self.save()
            raise
        finally:
            pool.shutdown(wait=True)


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def build_local(root: Path) -> None:
    r = subprocess.run(["make", "-s", "-C", str(root), "all"], capture_output=True, text=True)
    if r.returncode != 0:
        raise HostFailed("make failed here:\n" + "\n".join(r.stderr.strip().splitlines()[-5:]))


def summary_text(hosts: list[Host]) -> str:
    order = ("check", "ship", "build", "setup", "clock", "run", "load", "fetch")
    steps = [k for k in order if any(k in h.steps for h in hosts)]
    rows = [("host", "status", *steps, "reason")]
    for h in hosts:
        rows.append((h.target, h.status, *(f"{h.steps[s]:.1f}" if s in h.steps else "-" for s in steps),
                     h.reason.splitlines()[0] if h.reason else ""))
    from osmeter.present.values import text_table

    return "seconds per step:\n" + text_table(rows[0], rows[1:])
