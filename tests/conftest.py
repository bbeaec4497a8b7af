"""Shared fixtures: the repository, the built probes, and one real quick run."""
from __future__ import annotations

import json
import os
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


def probe_lines(name: str, *args: str) -> dict[str, dict]:
    r = probe(name, *args)
    assert r.returncode == 0, r.stderr
    return {o["id"]: o for o in map(json.loads, r.stdout.splitlines())}


@pytest.fixture(scope="session", autouse=True)
def built():
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "all"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return BIN


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory) -> tuple[Path, dict]:
    """One real `osmeter run --preset quick` shared by the tests that read results."""
    out = tmp_path_factory.mktemp("quick") / "run"
    r = osmeter("run", "--preset", "quick", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return out, json.loads((out / "results.json").read_text())


def by_id(doc: dict) -> dict[str, dict]:
    return {m["id"]: m for m in doc["measurements"]}


def ncpus() -> int:
    return len(os.sched_getaffinity(0))
