"""osmeter export --format F and compare/decide --junit: one side's runs in the formats other tools read,
each read by the real client: benchstat built from its Go module (skipped with the reason where Go or the
module proxy is not there), pyperf and junitparser from PyPI (make test-deps), promtool from Debian's
prometheus package. Each is given a full quick-preset run's every id (every unit osmeter has), five copies a
side with a planted change in one id, and must read it without a word of warning and name that id alone
(analysis/formats: benchstat.py, pyperf.py, openmetrics.py, gab.py, junit.py)."""
from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, osmeter

JITTER_A = (0.994, 1.006, 0.998, 1.003, 1.0)  # five runs' figures around the measured one, +-0.6%
JITTER_B = (1.002, 0.996, 1.004, 0.999, 1.001)
PLANTED = "cpu.syscall.getppid"  # 10% slower on B: a time, so B's figure times 1.1


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


def campaign(run: Path, base: Path, jitter, planted: str | None = None, factor: float = 1.0) -> Path:
    """A campaign of len(jitter) copies of a run's results.json and samples, each id's figure times the run's jitter, the
    planted id's by factor too."""
    doc = json.loads((run / "results.json").read_text())
    names = []
    for k, j in enumerate(jitter):
        d = base / f"run-{k + 1:02d}"
        (d / "samples").mkdir(parents=True)
        for f in (run / "samples").glob("*.npz"):  # compare reads them (--junit): moved as the figures are
            z = dict(np.load(f))
            z["values"] = z["values"] * j * (factor if f.stem == planted else 1.0)
            np.savez(d / "samples" / f.name, **z)
        out = json.loads(json.dumps(doc))
        for m in out["measurements"]:
            if m.get("figure") is not None:
                m["figure"] = m["figure"] * j * (factor if m["id"] == planted else 1.0)
        (d / "results.json").write_text(json.dumps(out))
        names.append({"name": d.name, "status": "complete"})
    (base / "campaign.json").write_text(json.dumps({"schema": "osmeter-campaign/1", "runs": names}))
    return base


@pytest.fixture(scope="module")
def sides(quick_run, tmp_path_factory) -> dict[str, Path]:
    """A, B (the planted change) and A2 (A again, other jitter: an A/A), each a campaign of five runs."""
    run, _ = quick_run
    t = tmp_path_factory.mktemp("export")
    return {"a": campaign(run, t / "a", JITTER_A), "b": campaign(run, t / "b", JITTER_B, PLANTED, 1.10),
            "a2": campaign(run, t / "a2", JITTER_B)}


def exported(d: Path, fmt: str, out: Path) -> Path:
    r = osmeter("export", str(d), "--format", fmt, "--out", str(out))
    assert r.returncode == 0 and r.stdout == "", r.stderr
    return out


def ids_of(run: Path) -> dict[str, dict]:
    return {m["id"]: m for m in json.loads((run / "results.json").read_text())["measurements"]}


def test_benchstat_reads_the_export_and_names_a_planted_change_alone(sides, benchstat, tmp_path):
    """5 v 5 runs, one id 10% slower on B: benchstat reads both files without a word on stderr, calls that id
    changed (+10%, p < 0.05, n=5) in osmeter's direction and every other id unchanged (~); A v A2 none."""
    ids = set(ids_of(sides["a"] / "run-01"))
    a, b, a2 = (exported(sides[s], "benchstat", tmp_path / f"{s}.txt") for s in ("a", "b", "a2"))
    r = subprocess.run([str(benchstat), str(a), str(b)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    rows = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.split() and ln.split()[0] in ids}
    assert len(rows) >= len(ids) - 2, r.stdout  # all but ids with no figure
    assert "+10.11%" in rows[PLANTED] and "n=5" in rows[PLANTED], rows[PLANTED]  # 1.1 x 1.001 / 1.0
    assert float(rows[PLANTED].split("p=")[1].split()[0]) < 0.05
    assert [k for k, ln in rows.items() if " ~ " not in ln] == [PLANTED]
    r = subprocess.run([str(benchstat), str(a), str(a2)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert not [ln for ln in r.stdout.splitlines() if ln.split() and ln.split()[0] in ids and " ~ " not in ln]


def pyperf(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyperf", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_pyperf_reads_the_export_names_the_planted_change_and_it_comes_back_exact(sides, tmp_path):
    """pyperf compare_to calls the planted id 1.10x slower, and nothing else significant, of A v B; nothing
    of A v A2; pyperf stats reads a side without a warning; and read gives back every run's figure
    exactly, in osmeter's unit."""
    pytest.importorskip("pyperf", reason="pyperf from PyPI (make test-deps)")
    a, b, a2 = (exported(sides[s], "pyperf", tmp_path / f"{s}.json") for s in ("a", "b", "a2"))
    r = pyperf("compare_to", a, b)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    named = re.findall(r"^(\S+): Mean \+- std dev: .*: ([\d.]+)x (slower|faster)$", r.stdout, re.M)
    assert named == [(PLANTED, "1.10", "slower")], r.stdout[:3000]
    r = pyperf("compare_to", a, a2)
    assert r.returncode == 0 and "Benchmark hidden because not significant (129)" in r.stdout, r.stdout[:3000]
    assert not re.findall(r"^(\S+): Mean", r.stdout, re.M)
    st = pyperf("stats", a)
    assert st.returncode == 0 and st.stderr == ""
    # pyperf's one check left: a value timed in one reading under 1 ms, its rule for Python's clock; osmeter
    # reads a cycle counter and subtracts its overhead (the pyperf.py docstring)
    assert {ln.split(" only ")[0] for ln in st.stdout.splitlines() if ln.startswith("* ")} == \
        {"* the shortest raw value is"}
    assert "Number of run with values: 5" in st.stdout

    sys.path.insert(0, str(ROOT / "harness"))
    from osmeter.analysis.formats.pyperf import read  # noqa: PLC0415 - the harness is not installed here

    back = read(b.read_text())[0]
    assert sorted(back) == [f"b/run-{k:02d}" for k in range(1, 6)]
    want = ids_of(sides["b"] / "run-03")
    got = back["b/run-03"]
    left = json.loads(b.read_text())["metadata"]["osmeter_left_out"].split()
    assert set(got) | set(left) >= {k for k, m in want.items() if m.get("figure") is not None}
    for mid, e in got.items():
        assert e["figure"] == want[mid]["figure"] and e["unit"] == want[mid]["unit"], mid
    assert {want[k]["unit"] for k in left} & {"ns", "MB/s", "IOPS", "files/s"} == set()
    # a rate goes as its time per unit, so that pyperf's "slower" is osmeter's lower rate
    bench = {x["metadata"]["name"]: x for x in json.loads(b.read_text())["benchmarks"]}
    bw = next(k for k, m in want.items() if m["unit"] == "MB/s" and m.get("figure"))
    got_run = next(r for r in bench[bw]["runs"] if r["metadata"]["osmeter_run"] == "b/run-03")
    assert math.isclose(got_run["values"][0], 1 / (want[bw]["figure"] * 1e6), rel_tol=1e-12)
    assert bench[PLANTED]["metadata"]["unit"] == "second"


def test_promtool_accepts_the_gauges_and_they_hold_the_figures_in_base_units(sides, tmp_path):
    """promtool check metrics (Prometheus's own lint) says nothing of the export of a side; each gauge is the
    median of its runs' figures in Prometheus's base unit (seconds, bytes per second)."""
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool is not installed (Debian's prometheus package)")
    out = exported(sides["b"], "openmetrics", tmp_path / "osmeter.prom")
    text = out.read_text()
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stdout + r.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["osmeter.prom"]  # written whole, nothing left beside it
    want = ids_of(sides["b"] / "run-05")
    got = dict(re.findall(r'^(osmeter_\S+)\{[^}]*runs="5"\} (\S+)$', text, re.M))
    planted = float(got["osmeter_cpu_syscall_getppid_seconds"])
    assert math.isclose(planted, want[PLANTED]["figure"] * 1e-9, rel_tol=1e-12)  # run 5: jitter 1.001, median
    bw = next(k for k, m in want.items() if m["unit"] == "MB/s" and m.get("figure"))
    name = "osmeter_" + re.sub(r"[.-]", "_", bw) + "_bytes_per_second"
    assert math.isclose(float(got[name]), want[bw]["figure"] * 1e6, rel_tol=1e-12)


def test_gab_writes_each_direction_to_its_own_file(sides, tmp_path):
    """github-action-benchmark takes one direction per file: times in gab-smaller, rates in gab-bigger, each
    entry with the fields the action reads (name, unit, value a finite number, range and extra strings)."""
    want = ids_of(sides["a"] / "run-05")
    for fmt, units in (("gab-smaller", {"ns", "cycles"}), ("gab-bigger", {"MB/s", "IOPS", "files/s"})):
        doc = json.loads(exported(sides["a"], fmt, tmp_path / f"{fmt}.json").read_text())
        assert isinstance(doc, list) and doc
        assert {e["unit"] for e in doc} <= units
        assert {e["name"] for e in doc} == {k for k, m in want.items() if m["unit"] in units and m.get("figure")}
        for e in doc:
            assert set(e) == {"name", "unit", "value", "range", "extra"}
            assert isinstance(e["value"], float) and math.isfinite(e["value"])
            assert math.isclose(e["value"], want[e["name"]]["figure"], rel_tol=1e-12)  # run 5 holds the median
            assert e["range"].startswith("± ") and "5 runs" in e["extra"]


def test_compare_junit_fails_the_planted_id_alone(sides, tmp_path):
    """compare --junit: junitparser reads one test per id and one failure, the planted id's; A v A2 none."""
    junitparser = pytest.importorskip("junitparser", reason="junitparser from PyPI (make test-deps)")
    for other, failed in (("b", [PLANTED]), ("a2", [])):
        out = tmp_path / f"{other}.xml"
        r = osmeter("compare", str(sides["a"]), str(sides[other]), "--junit", str(out), "--csv", str(out) + ".csv")
        assert r.returncode == 0, r.stderr
        xml = junitparser.JUnitXml.fromfile(str(out))
        cases = [c for s in xml for c in s]
        assert sorted(c.name for c in cases) == sorted(ids_of(sides["a"] / "run-01"))
        bad = [c.name for c in cases if any(isinstance(x, junitparser.Failure) for x in c.result)]
        assert bad == failed
        assert sum(s.failures for s in xml) == len(failed)
        # skipped: what compare could not tell yet (its CSV's verdict column), and nothing else
        rows = csv.DictReader(ln for ln in Path(str(out) + ".csv").read_text().splitlines() if not ln.startswith("#"))
        verdicts = {row["id"]: row["verdict"] for row in rows}
        skipped = {c.name for c in cases if any(isinstance(x, junitparser.Skipped) for x in c.result)}
        assert skipped == {k for k, v in verdicts.items() if v == "too few runs"} and skipped


def test_a_pyperf_export_imported_is_the_side_it_was(sides, tmp_path):
    """osmeter import of a side's pyperf export: a campaign of the five runs, each id's figure in each run
    exactly the figure it went out with (in its unit), which exports to the same pyperf values again, and
    which compare reads as a side."""
    b = exported(sides["b"], "pyperf", tmp_path / "b.json")
    r = osmeter("import", str(b), "--out", str(tmp_path / "back"))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "back").iterdir()) == ["campaign.json", *(f"run-{k:02d}" for k in range(1, 6))]
    names = {x["metadata"]["name"] for x in json.loads(b.read_text())["benchmarks"]}
    for k in range(1, 6):
        was, now = ids_of(sides["b"] / f"run-{k:02d}"), ids_of(tmp_path / "back" / f"run-{k:02d}")
        assert set(now) == names
        assert all((now[i]["figure"], now[i]["unit"]) == (was[i]["figure"], was[i]["unit"]) for i in now)
    again = exported(tmp_path / "back", "pyperf", tmp_path / "again.json")
    values = [{x["metadata"]["name"]: [r["values"] for r in x["runs"]] for x in json.loads(f.read_text())["benchmarks"]}
              for f in (b, again)]
    assert values[0] == values[1]
    r = osmeter("compare", str(sides["a"]), str(tmp_path / "back"), "--csv", str(tmp_path / "c.csv"))
    assert r.returncode == 0, r.stderr
    rows = {x["id"]: x for x in csv.DictReader(ln for ln in (tmp_path / "c.csv").read_text().splitlines()
                                                if not ln.startswith("#"))}
    assert set(rows) == names and rows[PLANTED]["verdict"] == "slower"


def test_pyperfs_own_files_import_as_one_run_of_its_processes(tmp_path):
    """pyperf's own result files (its test data: list multiplication under CPython 3.6 and 3.7, telco):
    one run each, pyperf's worker processes its processes; compare of 3.6 v 3.7 sees what pyperf's
    compare_to sees ([1,2]*1000 1.42x slower), and calls nothing changed on one run a side. Bad input: a
    JSON that is not pyperf's, an --out that holds something, are refused in one line."""
    pyperf_dir = pytest.importorskip("pyperf", reason="pyperf from PyPI (make test-deps)").__file__
    data = Path(pyperf_dir).parent / "tests"
    for name in ("mult_list_py36", "mult_list_py37", "telco"):
        r = osmeter("import", str(data / f"{name}.json"), "--out", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
    telco = json.loads((tmp_path / "telco" / "results.json").read_text())["measurements"]
    assert [(m["id"], m["unit"], m["processes"]["n"], m["n"]) for m in telco] == [("telco", "ms", 40, 120)]
    r = osmeter("compare", str(tmp_path / "mult_list_py36"), str(tmp_path / "mult_list_py37"), "--csv",
                str(tmp_path / "c.csv"))
    assert r.returncode == 0, r.stderr
    rows = {x["id"]: x for x in csv.DictReader(ln for ln in (tmp_path / "c.csv").read_text().splitlines()
                                                if not ln.startswith("#"))}
    assert set(rows) == {"[1]*1000", "[1,2]*1000", "[1,2,3]*1000"}
    assert 1.40 < float(rows["[1,2]*1000"]["ratio"]) < 1.44
    assert {x["verdict"] for x in rows.values()} == {"too few runs"}
    pp = pyperf("compare_to", data / "mult_list_py36.json", data / "mult_list_py37.json")
    assert "[1,2]*1000: Mean +- std dev: [mult_list_py36] 3.70 us +- 0.05 us -> [mult_list_py37] 5.28 us +- 0.09 us: " \
        "1.42x slower" in pp.stdout, pp.stdout
    (tmp_path / "not.json").write_text(json.dumps({"schema": "osmeter/1"}))
    odd = json.loads((data / "telco.json").read_text())  # pyperf's shape with a field of the wrong type
    odd["benchmarks"][0]["runs"][1]["metadata"] = ["not", "an", "object"]
    (tmp_path / "odd.json").write_text(json.dumps(odd))
    for args in ((str(tmp_path / "not.json"), "--out", str(tmp_path / "x")),
                 (str(tmp_path / "odd.json"), "--out", str(tmp_path / "x")),
                 (str(data / "telco.json"), "--out", str(tmp_path / "telco"))):
        r = osmeter("import", *args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_an_abs_side_is_exported_by_name_and_bad_requests_are_one_line(sides, tmp_path, benchstat):
    """An ab's home (a/ and b/, each a campaign): --side b exports B's runs; without --side, with --side on a
    run, a format that cannot carry an id, or a directory that is no run: exit 2 in one line, nothing
    written."""
    ab = tmp_path / "ab"
    for s in ("a", "b"):
        shutil.copytree(sides[s], ab / s, ignore=shutil.ignore_patterns("samples"))
    out = tmp_path / "b.txt"
    r = osmeter("export", str(ab), "--format", "benchstat", "--side", "b", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text() == exported(sides["b"], "benchstat", tmp_path / "b0.txt").read_text()
    r = subprocess.run([str(benchstat), str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "" and PLANTED in r.stdout
    odd = tmp_path / "odd"
    shutil.copytree(sides["a"] / "run-01", odd, ignore=shutil.ignore_patterns("samples"))
    doc = json.loads((odd / "results.json").read_text())
    doc["measurements"][0]["id"] = "cpu.odd id"
    (odd / "results.json").write_text(json.dumps(doc))
    for args in ((str(ab), "--format", "pyperf"), (str(sides["a"] / "run-01"), "--format", "pyperf", "--side", "a"),
                 (str(odd), "--format", "openmetrics"), (str(tmp_path / "none"), "--format", "gab-bigger")):
        r = osmeter("export", *args, "--out", str(tmp_path / "x"))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
        assert not (tmp_path / "x").exists()
