"""osmeter run --app-trace: an application's recorded I/O replayed as a
measurement (harness/osmeter/probes/areas/app.py), a POSIX trace and one
recorded under MPI, then read by compare and the report like any probe."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, osmeter
from test_iotrace_mpi import RANKS, env_for, every_form, have, impl, read_rows, recorded  # noqa: F401

IOTRACE = ROOT / "build" / "bin" / "iotrace"
WRITES, SIZE = 40, 65536
# the recorded program: 40 blocks of 64 KiB from /dev/zero into a file, then the file read into /dev/null
PROGRAM = (f"dd if=/dev/zero of=data bs={SIZE} count={WRITES} 2>/dev/null && "
           f"dd if=data of=/dev/null bs={SIZE} 2>/dev/null")


def ids(run: Path) -> dict[str, dict]:
    """The app ids of a run, each with its kept samples (results/samples/ID.npz) under "samples"."""
    from osmeter.results.store import kept_samples

    doc = json.loads((run / "results.json").read_text())
    return {m["id"]: dict(m, samples=[float(v) for v in kept_samples(run, m)]) for m in doc["measurements"]
            if m["id"].startswith("app.")}


@pytest.fixture(scope="module")
def posix_trace(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("app")
    trace = base / "app.trace"
    r = subprocess.run([str(IOTRACE), "record", "--out", str(trace), "--", "sh", "-c", PROGRAM], cwd=base,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return trace


@pytest.fixture(scope="module")
def posix_runs(posix_trace, tmp_path_factory) -> list[Path]:
    """Two runs of the app probe alone on the POSIX trace."""
    out = []
    for k in range(2):
        d = tmp_path_factory.mktemp(f"app-run{k}") / "run"
        r = osmeter("run", "--app-trace", str(posix_trace), "--probes", "app", "--out", str(d), "--no-report",
                    timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        out.append(d)
    return out


def test_a_posix_trace_is_measured_as_app_ids_with_its_bytes(posix_runs, posix_trace):
    """Every app id measured, one sample per replay; each replay moved the
    program's bytes in its class (the writes' and the reads'), a class's
    bandwidth is its bytes over that replay's wall time, its percentiles
    rise with the percentile, and the replay's directory is gone. Mutants
    caught: a class's calls counted in another; the directory kept."""
    doc = json.loads((posix_runs[0] / "results.json").read_text())
    m = ids(posix_runs[0])
    assert len(m) == 13, sorted(m)
    p = m["app.wall"]["params"]
    n = len(m["app.wall"]["samples"])
    assert n >= 5 and len(p["replayed_wall_ns"]) == n
    # each dd's blocks: read from /dev/zero and written to the file, read from the file and written to /dev/null
    assert p["classes"]["write"]["moved"] == n * 2 * WRITES * SIZE, p["classes"]["write"]
    assert p["classes"]["read"]["moved"] == n * 2 * WRITES * SIZE, p["classes"]["read"]
    calls = {}
    for x in read_rows(posix_trace):
        calls[x["call"]] = calls.get(x["call"], 0) + 1
    assert p["classes"]["write"]["count"] == n * calls["write"] == n * 2 * WRITES
    assert p["classes"]["read"]["count"] == n * calls["read"]
    assert p["mismatch_count"] == 0
    walls = m["app.wall"]["samples"]
    for c in ("read", "write"):
        per_replay = p["classes"][c]["moved"] / n
        for mbps, wall in zip(m[f"app.{c}.mbps"]["samples"], walls):
            assert mbps * wall / 1e3 == pytest.approx(per_replay, rel=1e-6)
        for lo, mid, hi in zip(*(m[f"app.{c}.{k}"]["samples"] for k in ("lat_p50", "lat_p99", "lat_p99_9"))):
            assert 0 < lo <= mid <= hi
    assert not (posix_runs[0] / "app-replay").exists()
    assert "app.replay" in doc["conditions"]["order"]


def test_compare_and_the_report_treat_the_app_ids_as_any_other(posix_runs, tmp_path):
    """compare sets the two runs' app ids side by side; the report has an
    Application I/O section with its table and both figures."""
    r = osmeter("compare", str(posix_runs[0]), str(posix_runs[1]), "--csv", str(tmp_path / "c.csv"))
    assert r.returncode == 0, r.stderr[-2000:]
    rows = (tmp_path / "c.csv").read_text()
    for i in ("app.wall", "app.write.lat_p99", "app.read.mbps"):
        assert f"\n{i}," in rows or rows.startswith(f"{i},"), i
    r = osmeter("report", str(posix_runs[0]), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    tex = (posix_runs[0] / "report" / "report.tex").read_text()
    assert r"\section{Application I/O}" in tex and "app.write.lat" in tex
    figs = sorted(p.name for p in (posix_runs[0] / "report" / "figures").iterdir())
    assert figs == ["app-0.pdf", "app-1.pdf"], figs


def test_an_mpi_trace_is_replayed_under_its_launcher(recorded, impl, tmp_path):
    """every_form's trace (3 ranks) under the launcher given: the app ids
    with the ranks in params and, per replay, the bytes the MPI-IO calls
    moved (as the trace recorded them) counted in their classes, a
    nonblocking call's completion in its request's."""
    rows, _, _, trace = recorded
    started = {(x["rank"], x["args"]["req"]): x["call"] for x in rows
               if x["call"].startswith("MPI_File_i") and "req" in x["args"]}
    want = {"read": 0, "write": 0}
    for x in rows:
        moved = int(x["args"].get("moved", 0) or 0)
        if x["rank"] < 0 or x["parent"] >= 0 or moved <= 0:
            continue
        call = started[(x["rank"], x["args"]["req"])] if x["call"].startswith(("MPI_Wait", "MPI_Test")) else x["call"]
        want["read" if "read" in call else "write"] += moved
    d = tmp_path / "run"
    r = osmeter("run", "--app-trace", str(trace), "--app-launcher", f"mpirun.{impl} -np {RANKS}", "--probes", "app",
                "--out", str(d), "--no-report", timeout=600, env=env_for(impl))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    m = ids(d)
    p = m["app.wall"]["params"]
    n = len(m["app.wall"]["samples"])
    assert p["ranks"] == RANKS and p["mismatch_count"] == 0
    for c in ("read", "write"):
        assert p["classes"][c]["moved"] == n * want[c] > 0, (c, p["classes"][c]["moved"], n, want[c])


def test_the_app_options_are_refused_where_they_do_not_fit(recorded, posix_trace, tmp_path):
    _, _, _, mpi_trace = recorded
    bad = tmp_path / "bad.trace"
    bad.write_text("seq,pid\n")
    for args, said in ((["--app-trace", str(mpi_trace)], "was recorded under MPI: give --app-launcher"),
                       (["--app-trace", str(posix_trace), "--app-launcher", "mpirun -np 2"], "not recorded under MPI"),
                       (["--app-launcher", "mpirun -np 2"], "--app-launcher goes with --app-trace"),
                       (["--app-timeout", "5"], "--app-timeout goes with --app-trace"),
                       (["--app-trace", str(posix_trace), "--app-timeout", "0"], "expected 1 to 2592000 seconds"),
                       (["--app-trace", str(bad)], "not a trace iotrace recorded"),
                       (["--app-trace", str(tmp_path / "none")], "No such file"),
                       (["--probes", "app"], "need --app-trace")):
        r = osmeter("run", *args, "--out", str(tmp_path / "out"), "--no-report", timeout=120)
        assert r.returncode != 0 and said in r.stderr, (args, r.stderr[-1000:])
        assert not (tmp_path / "out").exists()
