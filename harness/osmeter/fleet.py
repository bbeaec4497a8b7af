"""`osmeter fleet run` and `osmeter fleet load`: the suite on several
machines, driven from this one over OpenSSH (harness/osmeter/ssh.py), in
the manager/worker model of SPEK and Iometer, with no daemon of its own.

fleet run: for each host, in turn (or all at once with --parallel):
  check   what the host lacks (python3 >= 3.8, make, cc, tar; with --python,
          that interpreter >= 3.11): everything named at once, not guessed
  ship    the source tree (`git archive HEAD`, or the working tree with
          --dirty) into ~/.osmeter-fleet/<label>-<tree>/ there; kept, so the
          next run of the same tree ships and builds nothing
  build   make there
  run     a thin host (the default): `osmeter run --on HOST --on-tree TREE`
          here, straight into DIR/<label>/: the probes run there, started by
          agent.py (Python's standard library only, no package registry
          needed there), the harness, statistics and figures here (onhost.py);
          with --python: `osmeter run` there with that interpreter (numpy and
          matplotlib there), then
  setup   (--python) that interpreter imports numpy and matplotlib
  fetch   (--python) its results directory into DIR/<label>/
The host "local" runs here, in this tree. A host that fails is recorded
with its reason and the others go on; Ctrl-C stops every remote run (each
keeps its finished probes) and fetches what finished. DIR/fleet.json indexes
it all, with the seconds each step took.

fleet load: iogen on every host at once against its own target, started
together: each host's clock offset from this one is measured over ssh
(the reading with the least round trip; uncertainty half of it), and every
host is told the same start instant in its own clock (iogen --start-at).
The totals add IOPS and MB/s; the latency percentiles come from the hosts'
histograms merged bucket by bucket, never from averaged percentiles. While
it runs, every host's iogen prints a status line once an interval (iogen
--status: SPEK's prober), which the load's own ssh session brings here as it
is written: each host's series and the live table are loadstatus.py's. With
--net, net_bw clients on every host against one netpeer instead: many
clients, one server (net_bw measures each direction as one sample: no
status is streamed).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import hist, loadstatus, ssh, store
from .errors import Interrupted, RunError, shielded
from .results import write_json_atomic
from .runopts import run_args

LOCAL = ("local", "localhost")
NEEDS = ("python3", "make", "cc", "tar")
THIN_PYTHON = (3, 8)   # what agent.py, machine.py and launch.py need on a thin host
FULL_PYTHON = (3, 11)  # what the whole harness needs (--python)
_HOST_RE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])$")


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
    bad = [n for n in names if n not in LOCAL and not _HOST_RE.match(n)]
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


def _ssh(host: Host, command: str, **kw) -> subprocess.CompletedProcess:
    try:
        return ssh.run(host.target, command, **kw)
    except RunError as e:
        raise HostFailed(str(e).removeprefix(f"{host.target}: ")) from None


def _timed(host: Host, step: str, fn, *args):
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
    r = _ssh(host, check_script(tools, py), timeout=30)
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
    r = _ssh(host, f"test -f {q}/.osmeter-tree && echo have || true", timeout=30)
    if r.stdout.strip() == "have":
        return d
    r = _ssh(host, f"rm -rf {q}.new && mkdir -p {q}.new && tar -x -C {q}.new && echo {tree} > {q}.new/.osmeter-tree "
             f"&& rm -rf {q} && mv {q}.new {q}", input=tar, text=False, timeout=300)
    if r.returncode != 0:
        raise HostFailed(f"cannot unpack the source there: {last_lines(r.stderr.decode(errors='replace'))}")
    return d


def build(host: Host, tree_dir: str, target: str = "all") -> None:
    r = _ssh(host, f"make -s -j\"$(nproc 2>/dev/null || echo 2)\" -C {ssh.quote(tree_dir)} {target}", timeout=900)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-5:])
        raise HostFailed(f"make failed there:\n{tail}")


def python_ready(host: Host, tree_dir: str, python: str) -> str:
    """The command that starts the whole of osmeter there (--python): that
    interpreter must import numpy and matplotlib."""
    q = ssh.quote(tree_dir)
    r = _ssh(host, f"{ssh.quote(python)} -c 'import numpy, matplotlib'", timeout=60)
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


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _fetch_dir(host: Host, remote_dir: str, local: Path) -> None:
    """The remote directory's files into local (tar over ssh, unpacked safely)."""
    local.mkdir(parents=True, exist_ok=True)
    argv = ssh.argv(host.target, f"tar -C {ssh.quote(remote_dir)} -cf - .")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
            _extract_safely(tf, local)
    except tarfile.TarError as e:
        p.kill()
        err = p.stderr.read().decode(errors="replace")
        p.wait()
        raise HostFailed(f"fetching {remote_dir}: {ssh.reason(err) if p.returncode == 255 else (err.strip() or e)}")
    if p.wait() != 0:
        err = p.stderr.read().decode(errors="replace")
        raise HostFailed(f"fetching {remote_dir}: {ssh.reason(err) if p.returncode == 255 else err.strip()}")


def _extract_safely(tf: tarfile.TarFile, dest: Path) -> None:
    """A host's tar stream unpacked under dest only: Python's "data" filter
    where this Python has it (3.11.4+), else the same rules by hand: plain
    files and directories, no absolute path, no "..", nothing else."""
    if hasattr(tarfile, "data_filter"):
        tf.extractall(dest, filter="data")
        return
    for m in tf:
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise HostFailed(f"refusing {m.name!r} in the fetched results (not a plain file under the directory)")
        m.mode &= 0o755
        tf.extract(m, dest)


# ------------------------------------------------------------ fleet run

def fleet_run(hosts: list[Host], out: Path, opts: dict, parallel: bool, dirty: bool,
              python: str | None, root: Path) -> int:
    """`opts`: the run options to pass on, by name (runopts.fleet_values)."""
    out.mkdir(parents=True, exist_ok=True)
    if store.is_fleet(out):
        raise RunError(f"{out} already holds a fleet ({store.FLEET}): give a new --out")
    tar, tree, what = source_tar(root, dirty)
    args = run_args(opts)
    index = {"kind": "fleet-run", "created_utc": _stamp(), "source": what, "tree": tree, "options": opts,
             "osmeter_run_args": args, "parallel": parallel, "hosts": []}
    lock = threading.Lock()

    def save():
        with lock:
            index["hosts"] = [asdict(h) for h in hosts]
            write_json_atomic(out / store.FLEET, index)

    print(f"fleet: {len(hosts)} host{'s' if len(hosts) != 1 else ''}, {what}, "
          f"{'all at once' if parallel else 'one after another'}; results in {out}")
    save()
    drv = Driver(hosts, parallel, save)

    def one(h: Host):
        dest = out / h.label
        if h.local:
            _timed(h, "build", _build_local, root)
            cmd = (f"echo $$; exec env OSMETER_ROOT={ssh.quote(root)} {ssh.quote(sys.executable)} -m osmeter run "
                   + ssh.quote(*args) + f" --no-report --out {ssh.quote(dest)}")
            _timed(h, "run", _run_step, drv, h, cmd)
            h.results = h.label
            return
        home = _timed(h, "check", check, h, NEEDS, python, FULL_PYTHON if python else THIN_PYTHON)
        h.tree_dir = _timed(h, "ship", ship, h, tar, tree, home)
        _timed(h, "build", build, h, h.tree_dir)
        agent = f"{ssh.quote(python or 'python3')} {ssh.quote(h.tree_dir)}/harness/osmeter/agent.py"
        _clean_stale(h, agent)
        if not python:  # a thin host: the harness here, the probes there
            cmd = (f"echo $$; exec env OSMETER_ROOT={ssh.quote(root)} {ssh.quote(sys.executable)} -m osmeter run "
                   + ssh.quote(*args) + f" --no-report --on {ssh.quote(h.target)} --on-tree {ssh.quote(h.tree_dir)}"
                   f" --out {ssh.quote(dest)}")
            try:
                _timed(h, "run", _run_step, drv, h, cmd, True)
            finally:
                if store.has_run(dest):
                    h.results = h.label
            return
        launcher = _timed(h, "setup", python_ready, h, h.tree_dir, python)
        rres = f"{h.tree_dir}/results/fleet-{_stamp()}-{os.getpid()}"
        cmd = f"exec {agent} hold {ssh.quote(rres)} -- {launcher} run {ssh.quote(*args)} --no-report --out {ssh.quote(rres)}"
        failed = None
        try:
            _timed(h, "run", _run_step, drv, h, cmd)
        except HostFailed as e:
            failed = e  # the run's own words stay the reason, whatever the fetch says after
        try:
            _fetch_results(h, rres, dest)
        except HostFailed as e:
            if failed is None:
                raise
            failed = HostFailed(f"{failed}; and {e}")
        if failed is not None:
            raise failed

    drv.run(one)
    ok = [h for h in hosts if h.status == "ok"]
    print(summary_text(hosts))
    print(f"fleet: {len(ok)} of {len(hosts)} hosts ok; compare them with: osmeter compare {out}")
    return 0 if len(ok) == len(hosts) else 1


def _clean_stale(h: Host, agent: str) -> None:
    """What killed fleet runs left in the host's tree (agent.py clean)."""
    r = _ssh(h, f"{agent} clean {ssh.quote(h.tree_dir)}", timeout=60)
    gone = r.stdout.split()
    if r.returncode != 0:
        raise HostFailed(f"agent.py clean failed there: {last_lines(r.stderr)}")
    if gone:
        print(f"fleet: {h.target}: removed what killed fleet runs left: {', '.join(gone)}", file=sys.stderr)


def _fetch_results(h: Host, rres: str, dest: Path) -> None:
    """The remote run's results directory into dest, when the run wrote one
    (a run refused at its start writes nothing), then removed there."""
    q = ssh.quote(rres)
    have = _ssh(h, f"test -e {q}/{store.RESULTS} -o -e {q}/{store.CAMPAIGN} && echo have", timeout=30)
    if have.stdout.strip() == "have":
        _timed(h, "fetch", _fetch_dir, h, rres, dest)
        h.results = h.label
    _ssh(h, f"rm -rf {q} {ssh.quote(rres + '.lock')}", timeout=60)


def _build_local(root: Path) -> None:
    r = subprocess.run(["make", "-s", "-C", str(root), "all"], capture_output=True, text=True)
    if r.returncode != 0:
        raise HostFailed("make failed here:\n" + "\n".join(r.stderr.strip().splitlines()[-5:]))


def _run_step(drv: Driver, h: Host, cmd: str, here: bool = False) -> None:
    p = drv.start(h, cmd, here)
    tail: list[str] = []

    def pump_err():
        for line in p.stderr:
            tail.append(line.rstrip())
            del tail[:-20]

    t = threading.Thread(target=pump_err, daemon=True)
    t.start()
    for line in p.stdout:
        print(f"[{h.label}] {line.rstrip()}", flush=True)
    rc = p.wait()
    t.join(timeout=5)
    if rc == 255 and not (h.local or here):
        raise HostFailed(ssh.reason("\n".join(tail)))
    if rc in (130, 143) or drv.stop.is_set():
        h.status, h.reason = "interrupted", f"stopped by Ctrl-C (exit {rc}); finished probes kept"
        return
    if rc != 0:
        raise HostFailed(f"osmeter run exited {rc}: " + last_lines("\n".join(tail)))


def summary_text(hosts: list[Host]) -> str:
    order = ("check", "ship", "build", "setup", "clock", "run", "load", "fetch")
    steps = [k for k in order if any(k in h.steps for h in hosts)]
    rows = [("host", "status", *steps, "reason")]
    for h in hosts:
        rows.append((h.target, h.status, *(f"{h.steps[s]:.1f}" if s in h.steps else "-" for s in steps),
                     h.reason.splitlines()[0] if h.reason else ""))
    from .present import text_table

    return "seconds per step:\n" + text_table(rows[0], rows[1:])


# ------------------------------------------------------------ clocks

def clock_offset(host: Host, samples: int = 9) -> tuple[float, float]:
    """(offset, uncertainty) in seconds: the host's CLOCK_REALTIME minus
    this one's, from the reading with the least round trip (Cristian's
    method); the uncertainty is half that round trip."""
    if host.local:
        return 0.0, 0.0
    cmd = ("if command -v bash >/dev/null 2>&1; then exec bash -c 'while read x; do echo $EPOCHREALTIME; done'; "
           "else while read x; do date +%s.%N; done; fi")
    p = subprocess.Popen(ssh.argv(host.target, cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    best = (math.inf, 0.0)
    try:
        for _ in range(samples):
            t0 = time.time()
            p.stdin.write("x\n")
            p.stdin.flush()
            line = p.stdout.readline()
            t1 = time.time()
            if not line:
                break
            remote = float(line.strip().replace(",", "."))
            if t1 - t0 < best[0]:
                best = (t1 - t0, remote - (t0 + t1) / 2)
    except (ValueError, OSError):
        pass
    finally:
        p.stdin.close()
        p.kill()
        err = p.stderr.read()
        p.wait()
    if not math.isfinite(best[0]):
        raise HostFailed(f"cannot read its clock: {ssh.reason(err)}")
    return best[1], best[0] / 2


# ------------------------------------------------------------ fleet load

PCTS = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999), ("p99_99", 0.9999))


def merge_load(per_host: list[dict]) -> dict:
    """The whole load from the hosts' iogen results: rates added, latency
    percentiles from the histograms merged (never from the hosts' percentiles)."""
    lats = [r["lat_ns"] for r in per_host if r.get("lat_ns", {}).get("count")]
    counts = hist.merge([lat["hist"] for lat in lats])
    lo = min((lat["min"] for lat in lats), default=None)
    hi = max((lat["max"] for lat in lats), default=None)
    total = {k: round(sum(r[k] for r in per_host), 3) for k in ("iops", "mbps", "read_iops", "write_iops")}
    total["ios"] = sum(r["reads"] + r["writes"] for r in per_host)
    lat = {"count": sum(counts.values()), "min": lo, "max": hi}
    if lat["count"]:
        lat["mean"] = sum(lt["mean"] * lt["count"] for lt in lats) / lat["count"]
        for name, p in PCTS:
            lat[name] = hist.percentile(counts, p, lo, hi)
    lat["hist"] = {"sub_bits": hist.SUB_BITS, "counts": [[b, c] for b, c in sorted(counts.items())]}
    total["lat_ns"] = lat
    return total


class Load:
    """What fleet load and fleet load --net share: load.json (rewritten after
    every host), every host made ready (check, ship, build the one program
    the load runs) and its clock read, all in the same way."""

    def __init__(self, hosts: list[Host], out: Path, doc: dict, dirty: bool, root: Path):
        out.mkdir(parents=True, exist_ok=True)
        if (out / store.LOAD).exists():
            raise RunError(f"{out} already holds a load ({store.LOAD}): give a new --out")
        self.hosts, self.out, self.root = hosts, out, root
        self.tar, self.tree, self.what = source_tar(root, dirty)
        self.doc = dict(doc, created_utc=_stamp(), source=self.what, tree=self.tree, hosts=[])
        self.extra: dict[str, dict] = {h.label: {} for h in hosts}
        self.bins: dict[str, str] = {}
        self.lock = threading.Lock()

    def save(self) -> None:
        with self.lock:
            self.doc["hosts"] = [dict(asdict(h), **self.extra[h.label]) for h in self.hosts]
            write_json_atomic(self.out / store.LOAD, self.doc)

    def prepare(self, program: str, parallel: bool) -> list[Host]:
        """The hosts ready to run build/bin/<program>; fails when none is."""
        self.save()

        def ready(h: Host):
            if h.local:
                _timed(h, "build", _build_local, self.root)
                self.bins[h.label] = str(self.root / "build" / "bin" / program)
            else:
                home = _timed(h, "check", check, h, ("make", "cc", "tar"), None)
                h.tree_dir = _timed(h, "ship", ship, h, self.tar, self.tree, home)
                _timed(h, "build", build, h, h.tree_dir, f"build/bin/{program}")
                self.bins[h.label] = f"{h.tree_dir}/build/bin/{program}"
            off, unc = _timed(h, "clock", clock_offset, h)
            self.extra[h.label].update(clock_offset_s=off, clock_uncertainty_s=unc)
            h.status = "ready"

        Driver(self.hosts, parallel, self.save).run(ready)
        live = [h for h in self.hosts if h.status == "ready"]
        if not live:
            print(summary_text(self.hosts))
            raise RunError("no host is ready for the load")
        for h in live:
            h.status = "not run"
        return live


def fleet_load(hosts: list[Host], out: Path, io_opts: dict, parallel_prepare: bool, dirty: bool,
               root: Path, start_in: float, log: bool, interval: float = 1.0) -> int:
    """iogen on every host from one instant; each host's status streamed
    once an interval meanwhile (loadstatus.py), the results merged after."""
    io_opts = dict(io_opts, iogen_args=[*io_opts["iogen_args"], "--status", "--interval", f"{interval:g}"],
                   interval_s=interval)
    ld = Load(hosts, out, {"kind": "fleet-load", "options": io_opts}, dirty, root)
    print(f"fleet load: {len(hosts)} hosts, {ld.what}; results in {out}")
    live = ld.prepare("iogen", parallel_prepare)
    doc, extra, save, iogens = ld.doc, ld.extra, ld.save, ld.bins
    # 2. one start instant, each host told it in its own clock
    start = time.time() + start_in
    doc["start_planned_unix"] = start
    series = loadstatus.Series(out, interval)
    table = loadstatus.LiveTable(series, live, start)
    drv = Driver(live, True, save, table.say)
    stamp = _stamp()

    def go(h: Host):
        off = extra[h.label]["clock_offset_s"]
        # the log goes into the host's own fleet tree (made by osmeter, the user's), never a shared /tmp path;
        # on this machine straight into the results
        if not log:
            rlog = None
        elif h.local:
            (out / h.label).mkdir(exist_ok=True)
            rlog = str(out / h.label / store.LOAD_LOG)
        else:
            rlog = f"{h.tree_dir}/load-{stamp}.csv"
        iargs = [a.replace("{host}", h.label) for a in io_opts["iogen_args"]]
        argv = [iogens[h.label], *iargs, "--start-at", f"{start + off:.6f}"]
        if rlog:
            argv += ["--log", rlog]
        cmd = "echo $$; exec " + ssh.quote(*argv)
        target = iargs[iargs.index("--target") + 1] if "--target" in iargs else None
        made = target is not None and not _exists(h, target)  # iogen makes a missing file: removed after

        def status(line: str) -> bool:
            if not loadstatus.is_status(line):
                return False
            try:
                series.add(h.label, line, off)
            except (ValueError, KeyError, TypeError):
                return False  # a line cut short (iogen or ssh died writing it): the exit status says why
            return True

        try:
            p = _timed(h, "load", _load_step, drv, h, cmd, status)
        finally:
            if made:
                _remove_made(h, target)
            extra[h.label]["stream"] = series.summary(h.label)
        res = json.loads(p)
        res["start_unix_here"] = res["start_unix"] - off  # on this machine's clock
        (out / h.label).mkdir(exist_ok=True)
        write_json_atomic(out / h.label / store.LOAD_RESULT, res)
        extra[h.label]["iogen"] = {k: res[k] for k in ("iops", "mbps", "reads", "writes", "run_s", "start_unix",
                                                         "start_unix_here") if k in res}
        if rlog and not h.local:
            _timed(h, "fetch", _fetch_file, h, rlog, out / h.label / store.LOAD_LOG)
        h.status = "ok"

    with table:
        drv.run(go)
    done = [json.loads((out / h.label / store.LOAD_RESULT).read_text()) for h in live if h.status == "ok"]
    if done:
        doc["total"] = merge_load(done)
        starts = [r["start_unix_here"] for r in done]
        doc["start_spread_s"] = max(starts) - min(starts)
        doc["start_uncertainty_s"] = max(extra[h.label]["clock_uncertainty_s"] for h in live if h.status == "ok")
    save()
    print(load_text(doc))
    if loadstatus.summary_text(doc):
        print(loadstatus.summary_text(doc))
    print(summary_text(hosts))
    return 0 if len(done) == len(hosts) else 1


def _exists(h: Host, path: str) -> bool:
    if h.local:
        return os.path.lexists(path)
    return _ssh(h, f"test -e {ssh.quote(path)} -o -L {ssh.quote(path)} && echo have", timeout=30).stdout.strip() == "have"


def _remove_made(h: Host, path: str) -> None:
    """The load's target file that iogen made (a regular file only: never
    a device, a link or a directory someone put there meanwhile)."""
    if h.local:
        if os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
        return
    try:
        _ssh(h, f"test -f {ssh.quote(path)} && test ! -L {ssh.quote(path)} && rm -f {ssh.quote(path)}", timeout=30)
    except HostFailed as e:
        print(f"fleet: {h.target}: cannot remove the load's target {path}: {e}", file=sys.stderr)


def _step(drv: Driver, h: Host, cmd: str, program: str, on_line=None) -> str:
    """A load's program on a host to its end: its standard output, read a
    line at a time as it comes; the lines on_line takes (returns true for)
    go to it at once and are left out of what is returned."""
    p = drv.start(h, cmd)
    err: list[str] = []
    pump = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    pump.start()
    kept = []
    for line in p.stdout:
        if not (on_line and on_line(line)):
            kept.append(line)
    p.wait()
    pump.join()
    if p.returncode == 255 and not h.local:
        raise HostFailed(ssh.reason("".join(err)))
    if p.returncode != 0:
        raise HostFailed(f"{program} exited {p.returncode}: {last_lines(''.join(err))}")
    return "".join(kept)


def _load_step(drv: Driver, h: Host, cmd: str, on_line=None) -> str:
    outp = _step(drv, h, cmd, "iogen", on_line)
    lines = [ln for ln in outp.splitlines() if ln.startswith("{")]
    if not lines:
        raise HostFailed("iogen printed no result")
    return lines[-1]


def _fetch_file(h: Host, remote: str, local: Path) -> None:
    if h.local:
        os.replace(remote, local)
        return
    with open(local, "wb") as f:
        r = subprocess.run(ssh.argv(h.target, f"cat {ssh.quote(remote)} && rm -f {ssh.quote(remote)}"), stdout=f,
                           stderr=subprocess.PIPE, timeout=600)
    if r.returncode != 0:
        raise HostFailed(f"fetching {remote}: {r.stderr.decode(errors='replace').strip()}")


def load_text(doc: dict) -> str:
    from .present import fmt_value, text_table

    rows = []
    for h in doc["hosts"]:
        g = h.get("iogen")
        off = h.get("clock_offset_s")
        offs = "-" if off is None else f"{off * 1e3:+.3f} ± {h['clock_uncertainty_s'] * 1e3:.3f} ms"
        if not g:
            rows.append((h["target"], h["status"], "-", "-", offs, "-", h.get("reason", "").split("\n")[0]))
            continue
        late = (g["start_unix_here"] - doc["start_planned_unix"]) * 1e3
        rows.append((h["target"], h["status"], fmt_value(g["iops"], "IOPS"), fmt_value(g["mbps"], "MB/s"), offs,
                     f"{late:+.3f} ms", ""))
    t = doc.get("total")
    if t:
        lat = t["lat_ns"]
        rows.append(("total", "", fmt_value(t["iops"], "IOPS"), fmt_value(t["mbps"], "MB/s"), "", "", ""))
    text = text_table(("host", "status", "IOPS", "MB/s", "clock offset", "start vs plan", "reason"), rows)
    if t and lat.get("count"):
        text += ("\nmerged latency (histograms added): " + ", ".join(
            f"{n.replace('_', '.')} {fmt_value(lat[n], 'ns')}" for n, _ in PCTS) + f", max {fmt_value(lat['max'], 'ns')}")
        text += (f"\nstarts agree within {doc['start_spread_s'] * 1e3:.3f} ms "
                 f"(clock uncertainty ±{doc['start_uncertainty_s'] * 1e3:.3f} ms)")
    return text


# ------------------------------------------------------------ fleet load --net

def _net_server(server: str, root: Path):
    """A context manager yielding HOST:PORT of one netpeer: `local:ADDR`
    starts it here (clients connect to ADDR), USER@HOST starts it there."""
    import contextlib

    from .osmnet import remote_peer

    netpeer = root / "build" / "bin" / "netpeer"
    if server.startswith("local:"):
        addr = server.split(":", 1)[1]
        if not addr:
            raise RunError("--net local:ADDR: give the address the clients reach this machine at")

        @contextlib.contextmanager
        def here():
            p = subprocess.Popen([str(netpeer), "--port", "0", "--bind", "0.0.0.0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                line = p.stdout.readline()
                if not line.startswith("listening on "):
                    raise RunError(f"netpeer did not start here: {p.stderr.read().strip()}")
                yield f"{addr}:{line.split()[-1].rsplit(':', 1)[-1]}"
            finally:
                p.terminate()
                p.wait()
        return here()
    _check_server(server)
    return remote_peer(server, netpeer, "--net")


def _check_server(server: str) -> None:
    if server.startswith("local:") and server[6:]:
        return
    if server in LOCAL or not _HOST_RE.match(server):
        raise RunError(f"--net {server!r}: expected USER@HOST (netpeer started there) or local:ADDR (netpeer here, "
                       "the clients reaching this machine at ADDR)")


def fleet_net(hosts: list[Host], out: Path, server: str, secs: float, parallel_prepare: bool, dirty: bool,
              root: Path, start_in: float) -> int:
    _check_server(server)
    ld = Load(hosts, out, {"kind": "fleet-net", "server": server, "seconds": secs}, dirty, root)
    print(f"fleet load --net: {len(hosts)} clients against one netpeer on {server}; results in {out}")
    _build_local(root)  # the netpeer of local:ADDR, and the one --net USER@HOST copies there
    live = ld.prepare("net_bw", parallel_prepare)
    doc, extra, save, bins = ld.doc, ld.extra, ld.save, ld.bins
    with _net_server(server, root) as peer:
        doc["peer"] = peer
        start = time.time() + start_in
        doc["start_planned_unix"] = start
        drv = Driver(live, True, save)

        def go(h: Host):
            at = start + extra[h.label]["clock_offset_s"]
            wait = (f"t=$(({int(at * 1e6)} - $(date +%s%6N))); [ $t -gt 0 ] && "
                    f"sleep $(printf '%d.%06d' $((t / 1000000)) $((t % 1000000))); ")
            cmd = (f"echo $$; {wait}exec " + ssh.quote(bins[h.label], "--peer", peer, "--seconds", f"{secs:g}",
                                                         "--samples", "1", "--warmup", "0", "--timeout", "10000"))
            text = _timed(h, "load", _step, drv, h, cmd, "net_bw")
            res = {}
            for line in text.splitlines():
                if line.startswith("{"):
                    m = json.loads(line)
                    if m.get("samples"):
                        key = "recv_mbps" if m["params"].get("direction") == "receive" else "send_mbps"
                        res[key] = float(m["samples"][0])
            if "send_mbps" not in res:
                raise HostFailed("net_bw printed no bandwidth")
            extra[h.label]["net"] = res
            h.status = "ok"

        drv.run(go)
    done = [extra[h.label]["net"] for h in live if h.status == "ok"]
    if done:
        doc["total"] = {k: round(sum(d.get(k, 0.0) for d in done), 3) for k in ("send_mbps", "recv_mbps")}
    save()
    from .present import fmt_value, text_table

    rows = [(h.target, h.status, *(fmt_value(extra[h.label].get("net", {}).get(k), "MB/s") if "net" in extra[h.label]
                                   else "-" for k in ("send_mbps", "recv_mbps")), h.reason.split("\n")[0])
            for h in hosts]
    if done:
        rows.append(("total", "", fmt_value(doc["total"]["send_mbps"], "MB/s"), fmt_value(doc["total"]["recv_mbps"],
                                                                                          "MB/s"), ""))
    print(text_table(("client", "status", "to server", "from server", "reason"), rows))
    print(summary_text(hosts))
    return 0 if len(done) == len(hosts) else 1
