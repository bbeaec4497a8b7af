"""Shared fixtures: the repository, the built probes, and one real quick run.

Test files are named test_<room>[_<topic>].py, the room a harness package, a
folder of bench/, tools or tree (tests/README.md)."""
from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "build" / "bin"
sys.path.insert(0, str(ROOT / "harness"))


@pytest.fixture(scope="session", autouse=True)
def own_history(tmp_path_factory):
    """The runs the tests make go into a history of their own, not the tree's results/history.sqlite: in
    pytest's own temporary directory, which pytest prunes (a mkdtemp of /tmp per session was never removed:
    227 of them after one CI)."""
    os.environ["OSMETER_HISTORY"] = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    yield


@pytest.fixture(scope="session")
def small_run(tmp_path_factory) -> Path:
    """One small real run (cpu.syscall.getppid: two ids), made once: the tests copy it, change the copy, or
    take it as a baseline, and never write into it."""
    d = tmp_path_factory.mktemp("small-run") / "run"
    r = osmeter("run", "--probes", "cpu.syscall.getppid", "--out", str(d), "--no-report", "--no-history")
    assert r.returncode == 0, r.stderr[-2000:]
    return d


@contextlib.contextmanager
def read_only_copy(src: Path, tmp: Path):
    """src copied onto a small tmpfs mounted read-only under tmp (a snapshot, a CD, a read-only NFS
    export): yields the copy's path; unmounted after. Root only."""
    mnt = tmp / "ro"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], check=True)
    try:
        shutil.copy(src, mnt / src.name)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        yield mnt / src.name
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def osmeter(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    """Runs the harness the way a person does, through the launcher."""
    return subprocess.run([str(ROOT / "osmeter"), *args], capture_output=True, text=True, timeout=timeout, **kw)


def run_group(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own whose whole process group is
    killed on a timeout: a traced program (strace -f) outlives a tracer
    killed alone, and would go on loading the machine."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def watchdogs() -> list[int]:
    """The pids of osmeter's run watchdogs (running/recover.py) on this machine."""
    out = subprocess.run(["pgrep", "-f", "osmeter.running.recover"], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def kill_run(p: subprocess.Popen, watchdog_too: bool) -> None:
    """SIGKILL to a run started in a session of its own (its whole group), and first, when watchdog_too, to
    its watchdog: a machine whose run and watchdog both died (a power cut, an OOM kill of both)."""
    if watchdog_too:
        for pid in watchdogs():
            os.kill(pid, signal.SIGKILL)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=60)


def probe(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=timeout)


def takes_samples(name: str) -> bool:
    """Whether a probe takes --samples: one whose count comes from elsewhere
    (sched_timer's --seconds, fs_cache's sizes) refuses it, and its --help says so."""
    return "--samples N" in subprocess.run([str(BIN / name), "--help"], capture_output=True, text=True).stdout


def probe_lines(name: str, *args: str) -> dict[str, dict]:
    r = probe(name, *args)
    assert r.returncode == 0, r.stderr
    return {o["id"]: o for o in map(json.loads, r.stdout.splitlines())}


@pytest.fixture(scope="session", autouse=True)
def built():
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "all"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return BIN


def sources_stamp() -> str:
    """A hash of the tracked probe and harness sources: a saved quick run
    stands for this tree only while it matches."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "bench", "harness", "Makefile"],
                           capture_output=True, check=True).stdout.split(b"\0")
    h = hashlib.sha256()
    for f in sorted(x for x in files if x):
        p = ROOT / os.fsdecode(f)
        h.update(f + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return h.hexdigest()[:16]


QUICK_STAMP = ".osmeter-test-stamp"


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory) -> tuple[Path, dict]:
    """One real `osmeter run --preset quick` shared by the tests that read results.

    OSMETER_TEST_QUICK_RUN=DIR: a copy of DIR instead of a new run. `make
    mutants` passes the run `make test` saved (OSMETER_TEST_QUICK_RUN_SAVE=DIR
    copies the new run there, stamped with sources_stamp(), which the
    mutants runner checks before it changes any source): a mutant of the
    code that reads results is tested on a run the unchanged tree made."""
    out = tmp_path_factory.mktemp("quick") / "run"
    given = os.environ.get("OSMETER_TEST_QUICK_RUN")
    if given:
        shutil.copytree(given, out, ignore=shutil.ignore_patterns(QUICK_STAMP))
    else:
        stamp = sources_stamp()
        r = osmeter("run", "--preset", "quick", "--out", str(out))
        assert r.returncode == 0, r.stdout + r.stderr
        save = os.environ.get("OSMETER_TEST_QUICK_RUN_SAVE")
        if save:
            shutil.rmtree(save, ignore_errors=True)
            shutil.copytree(out, save)
            (Path(save) / QUICK_STAMP).write_text(stamp + "\n")
    return out, json.loads((out / "results.json").read_text())


def by_id(doc: dict) -> dict[str, dict]:
    return {m["id"]: m for m in doc["measurements"]}


def cgroup2_with(controller: str) -> Path | None:
    """A mounted cgroup v2 hierarchy whose root offers `controller` (a
    controller bound to a v1 hierarchy is offered by none), or None."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        f = line.split()
        if f[f.index("-") + 1] == "cgroup2":
            root = Path(f[4])
            with contextlib.suppress(OSError):
                if controller in (root / "cgroup.controllers").read_text().split():
                    return root
    return None


@contextlib.contextmanager
def limited_cgroup(v1: tuple[str, str, str], v2: tuple[str, str, str], name: str):
    """A cgroup of this test's own with one limit, on cgroup v1 where the
    controller has a v1 hierarchy, else on cgroup v2: v1 = (controller's v1
    directory name, file, value), v2 = (controller, file, value). Yields the
    directory (a process joins by writing its pid to cgroup.procs); removes
    it afterwards, and turns the controller off again in the v2 root's
    subtree_control if it was turned on for the test. Skips, saying why,
    where neither is there."""
    d1 = Path("/sys/fs/cgroup") / v1[0]
    if (d1 / v1[1]).exists():
        root, enabled = d1, False
    else:
        root = cgroup2_with(v2[0])
        if root is None:
            pytest.skip(f"neither cgroup v1 {v1[0]} ({v1[1]}) nor a cgroup v2 with the {v2[0]} controller "
                        f"({v2[1]}) is available here")
        enabled = v2[0] not in (root / "cgroup.subtree_control").read_text().split()
        if enabled:
            (root / "cgroup.subtree_control").write_text(f"+{v2[0]}")
    file, value = (v1[1], v1[2]) if root == d1 else (v2[1], v2[2])
    cg = root / f"osmeter-test-{name}-{os.getpid()}"
    cg.mkdir()
    try:
        (cg / file).write_text(value)
        yield cg
    finally:
        with contextlib.suppress(OSError):
            cg.rmdir()
        if enabled:
            with contextlib.suppress(OSError):
                (root / "cgroup.subtree_control").write_text(f"-{v2[0]}")


def ncpus() -> int:
    return len(os.sched_getaffinity(0))


def pytest_terminal_summary(terminalreporter):
    """The skips counted by reason, last, so a host where ground truths
    are skipped is seen at once (each skip's own line is in -rs above)."""
    reasons: collections.Counter[str] = collections.Counter()
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = rep.longrepr
        why = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[why.removeprefix("Skipped: ")] += 1
    if not reasons:
        return
    terminalreporter.section(f"skips by reason ({sum(reasons.values())})")
    for why, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{n:4d}  {why}")
