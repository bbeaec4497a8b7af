"""osmeter export --format F: one side's runs in the formats other tools read, each read by the real client
(benchstat built from its Go module; skipped with the reason where Go or the module proxy is not there) and
its verdict set against a planted change (analysis/formats: benchstat.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, osmeter

JITTER = (0.994, 1.006, 0.998, 1.003, 1.0)  # five runs' figures around the measured one, +-0.6%


@pytest.fixture(scope="session")
def benchstat() -> Path:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if not go:
        pytest.skip("Go is not installed: benchstat is built from its module (golang.org/x/perf)")
    out = ROOT / "build" / "test" / "gobin"
    env = dict(os.environ, GOPATH=str(ROOT / "build" / "test" / "gopath"), GOCACHE=str(ROOT / "build" / "test" / "gocache"),
               GOBIN=str(out), GOFLAGS="-modcacherw")
    if not (out / "benchstat").exists():
        r = subprocess.run([go, "install", "golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"],
                           capture_output=True, text=True, timeout=600, env=env)
        if r.returncode:
            pytest.skip(f"benchstat could not be built from its module: {r.stderr.strip()[-300:]}")
    return out / "benchstat"


def side(small_run: Path, base: Path, planted: str | None, factor: float) -> list[Path]:
    """Five copies of a run, each id's figure moved by JITTER, the planted id's by factor too."""
    runs = []
    for k, j in enumerate(JITTER):
        d = base / f"run{k}"
        shutil.copytree(small_run, d)
        doc = json.loads((d / "results.json").read_text())
        for m in doc["measurements"]:
            m["figure"] = m["figure"] * j * (factor if m["id"] == planted else 1.0)
        (d / "results.json").write_text(json.dumps(doc))
        runs.append(d)
    return runs


def exported(runs: list[Path], out: Path) -> Path:
    text = ""
    for d in runs:
        r = osmeter("export", str(d), "--format", "benchstat")
        assert r.returncode == 0, r.stderr
        text += r.stdout
    out.write_text(text)
    return out


def test_benchstat_reads_the_export_and_names_a_planted_change_alone(small_run, benchstat, tmp_path):
    """5 v 5 runs, one id 10% slower on B: benchstat reads both files without a word on stderr, calls that id
    changed (+10%, p < 0.05, n=5) in osmeter's direction and the other unchanged (~)."""
    ids = [m["id"] for m in json.loads((small_run / "results.json").read_text())["measurements"]]
    planted = ids[0]
    a = exported(side(small_run, tmp_path / "a", None, 1.0), tmp_path / "a.txt")
    b = exported(side(small_run, tmp_path / "b", planted, 1.10), tmp_path / "b.txt")
    r = subprocess.run([str(benchstat), str(a), str(b)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    rows = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.split() and ln.split()[0] in ids}
    assert set(rows) == set(ids), r.stdout
    assert "+10.00%" in rows[planted] and "n=5" in rows[planted], rows[planted]
    p = float(rows[planted].split("p=")[1].split()[0])
    assert p < 0.05
    for other in set(ids) - {planted}:
        assert " ~ " in rows[other], rows[other]
