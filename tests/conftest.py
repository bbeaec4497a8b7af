"""Shared fixtures: the repository, the built probes, and one real quick run."""
from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "build" / "bin"
sys.path.insert(0, str(ROOT / "harness"))


def osmeter(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    """Runs the harness the way a person does, through the launcher."""
    return subprocess.run([str(ROOT / "osmeter"), *args], capture_output=True, text=True, timeout=timeout, **kw)


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
