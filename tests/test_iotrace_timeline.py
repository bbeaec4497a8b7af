"""iotrace show --perfetto: a trace as Chrome's trace event format (what Perfetto's UI and chrome://tracing
open), read back against the format's documented fields: a complete event ("ph": "X") per call with its
track (pid, tid), its time (ts, dur in microseconds) and its file, offset and bytes; the POSIX calls an MPI-IO
call made nested inside it on its track; the calls of one collective linked by one flow ("s", "t", "f");
written as read; and replay --timeline's own times on the same tracks (bench/iotrace/base/timeline.c,
docs/iotrace.md)."""
from __future__ import annotations

import json
import os
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import ROOT
from test_iotrace_mpi import RANKS, recorded, impl, every_form  # noqa: F401

IOTRACE = ROOT / "build" / "bin" / "iotrace"
HEAD = "seq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno,rank,parent,args"


def timeline(trace: Path, out: Path) -> dict:
    r = subprocess.run([str(IOTRACE), "show", str(trace), "--perfetto", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def checked_events(doc: dict) -> list[dict]:
    """The events, each with the fields its phase needs in the format (X: name, cat, pid, tid, ts, dur; M:
    name, pid, args.name or args.sort_index; flows: id, ts, pid, tid)."""
    assert doc["displayTimeUnit"] == "ns" and isinstance(doc["traceEvents"], list)
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "M", "s", "t", "f"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "X":
            assert isinstance(e["name"], str) and e["cat"] in ("posix", "mpi-io"), e
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and e["dur"] >= 0, e
        elif e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name"), e
        else:
            assert isinstance(e["id"], int) and e["cat"] == "collective" and (e["ph"] == "s" or e["bp"] == "e"), e
    return doc["traceEvents"]


def test_an_mpi_trace_has_a_track_per_rank_its_posix_calls_nested_and_its_collectives_linked(recorded, tmp_path):
    """every_form's trace (3 ranks, every kind of MPI-IO call): one slice per call on its rank's track, named
    by its rank; each POSIX call the MPI library made inside a call lies within that call's slice on the same
    track; each collective call of a rank on a file is linked with the same call of the other ranks, one flow
    each, starting on the first rank to enter and ending on the last. Mutants caught: no flow ended; slices
    placed at their ends."""
    rows, _, _, trace = recorded
    events = checked_events(timeline(trace, tmp_path / "t.json"))
    calls = [x for x in rows if x["call"] not in ("MPI_Type", "MPI_Comm")]
    slices = [e for e in events if e["ph"] == "X"]
    assert Counter((e["pid"], e["name"]) for e in slices) == Counter((x["pid"], x["call"]) for x in calls)
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    ranks = {x["pid"]: x["rank"] for x in rows if x["call"] == "MPI_Init"}
    assert names == {pid: f"rank {r} (pid {pid})" for pid, r in ranks.items()}
    by_seq = {e["args"]["seq"]: e for e in slices}
    t0 = min(x["t_start_ns"] for x in rows)
    for x in calls:
        e = by_seq[x["seq"]]
        assert e["ts"] == pytest.approx((x["t_start_ns"] - t0) / 1e3, abs=1e-3)
        assert e["dur"] == pytest.approx((x["t_end_ns"] - x["t_start_ns"]) / 1e3, abs=1e-3)
        assert e["args"].get("bytes") == x["bytes"] and e["args"].get("offset", -1) == max(x["offset"], -1)
    kids = [e for e in slices if "parent" in e["args"]]
    assert len(kids) >= 20
    for k in kids:
        p = by_seq[k["args"]["parent"]]
        assert (p["pid"], p["tid"]) == (k["pid"], k["tid"])
        assert p["ts"] <= k["ts"] and k["ts"] + k["dur"] <= p["ts"] + p["dur"] + 2e-3, (p, k)
    flows = defaultdict(list)
    for e in events:
        if e["ph"] in "stf":
            flows[e["id"]].append(e)
    # MPI-IO's collective routines (the standard's list), on files opened on a communicator of more than one
    # rank (a file each rank opened on MPI_COMM_SELF has no other rank to link to)
    size = {(x["rank"], x["args"]["id"]): int(x["args"]["size"]) for x in rows if x["call"] == "MPI_Comm"}
    alone = {(x["rank"], x["fd"]) for x in rows if x["call"] == "MPI_File_open" and size[(x["rank"], x["args"]["comm"])] == 1}
    collective = [x for x in calls if x["call"].startswith("MPI_File_") and (x["rank"], x["fd"]) not in alone and
                  any(w in x["call"] for w in ("_all", "ordered", "open", "close", "set_", "sync", "preallocate",
                                                "seek_shared"))]
    assert len(flows) == len(collective) // RANKS > 10
    for fl in flows.values():
        assert sorted(e["ph"] for e in fl) == ["f", "s"] + ["t"] * (RANKS - 2)
        assert len({e["name"] for e in fl}) == 1 and len({e["pid"] for e in fl}) == RANKS
        s = next(e for e in fl if e["ph"] == "s")
        assert s["ts"] == min(e["ts"] for e in fl), "the flow starts on the first rank to enter"
        for e in fl:  # each bound to its rank's slice of that call, at its start
            assert any(x["pid"] == e["pid"] and x["name"] == e["name"] and x["ts"] == e["ts"] for x in slices)


def write_posix_trace(path: Path, n: int) -> None:
    with open(path, "w") as f:
        f.write("# iotrace 3\n" + HEAD + "\n")
        f.write("0,7,7,open,100,110,3,f0,/d/a,0x42,0644,-1,0,3,0,-1,-1,\n")
        for k in range(1, n - 1):
            f.write(f"{k},7,{7 + k % 2},pwrite,{100 + 20 * k},{110 + 20 * k},3,f0,/d/a,0x0,00,{4096 * k},4096,4096,0,"
                    "-1,-1,\n")
        f.write(f"{n - 1},7,7,close,{100 + 20 * n},{101 + 20 * n},3,f0,/d/a,0x0,00,-1,0,0,0,-1,-1,\n")
        f.write("# a note\n")


def peak_kib(args: list[str]) -> int:
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0
    return usage.ru_maxrss


def test_the_timeline_is_written_as_read_in_memory_independent_of_the_traces_length(tmp_path):
    """A POSIX trace of 20,000 calls and one of 400,000 (two threads, format 3 with a note): every call a
    slice on its thread's track, and the longer trace's timeline made in less than 1.5x the shorter's peak
    memory (20x the rows)."""
    small, big = tmp_path / "small.trace", tmp_path / "big.trace"
    write_posix_trace(small, 20_000)
    write_posix_trace(big, 400_000)
    kib = [peak_kib([str(IOTRACE), "show", str(t), "--perfetto", str(tmp_path / f"{t.stem}.json")])
           for t in (small, big)]
    assert kib[1] < 1.5 * kib[0], kib
    events = checked_events(json.loads((tmp_path / "small.json").read_text()))
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == 20_000 and {(e["pid"], e["tid"]) for e in slices} == {(7, 7), (7, 8)}
    assert sum(e["ph"] == "M" and e["name"] == "thread_name" for e in events) == 2


def test_a_bad_trace_makes_no_timeline_and_leaves_nothing_beside_it(tmp_path):
    """A row out of order half-way, a trace cut short: exit 2 naming the line, no OUT, no temporary file."""
    trace = tmp_path / "t.trace"
    write_posix_trace(trace, 1000)
    lines = trace.read_text().splitlines(keepends=True)
    cases = {"out of order": "".join(lines[:500] + [lines[501], lines[500]] + lines[502:]),
             "cut": "".join(lines)[:-30]}
    for what, text in cases.items():
        trace.write_text(text)
        out = tmp_path / "out.json"
        r = subprocess.run([str(IOTRACE), "show", str(trace), "--perfetto", str(out)], capture_output=True, text=True)
        assert r.returncode == 2 and "t.trace:" in r.stderr, (what, r.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trace"], what


def sequential_per_thread(slices: list[dict]) -> None:
    """On each track the slices, in the trace's order, follow one another: a thread makes one call at a time."""
    per = defaultdict(list)
    for e in slices:
        per[(e["pid"], e["tid"])].append(e)
    for track, es in per.items():
        es.sort(key=lambda e: e["args"]["seq"])
        for a, b in zip(es, es[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 1e-3, (track, a, b)


def test_a_posix_replays_timeline_is_its_own_timing_on_the_recorded_tracks(tmp_path):
    """iotrace replay --timeline: every row of a 10-process trace (an imported Darshan log) a slice on the
    track show --perfetto gives it, at the replay's times: inside the replay's wall time and one call at a
    time on each thread, in the trace's order. Mutant caught: a row's times kept at the next row's."""
    log = ROOT / "tests" / "fixtures" / "darshan" / "hdf5_diagonal_write_bytes_range_dxt.darshan"
    trace, out = tmp_path / "t.trace", tmp_path / "out"
    out.mkdir()
    r = subprocess.run([str(IOTRACE), "import", str(log), "--out", str(trace)], capture_output=True, text=True)
    if r.returncode and "pip install darshan" in r.stderr:
        pytest.skip("PyDarshan is not installed: make test installs it")
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--timeline", str(tmp_path / "r.json")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    wall = json.loads(r.stdout)["replayed_wall_ns"] / 1e3
    replayed = checked_events(json.loads((tmp_path / "r.json").read_text()))
    recorded = checked_events(timeline(trace, tmp_path / "t.json"))
    rs = [e for e in replayed if e["ph"] == "X"]
    ts = [e for e in recorded if e["ph"] == "X"]
    assert sorted((e["args"]["seq"], e["pid"], e["tid"], e["name"]) for e in rs) == \
        sorted((e["args"]["seq"], e["pid"], e["tid"], e["name"]) for e in ts)
    assert all(0 <= e["ts"] and e["ts"] + e["dur"] <= wall + 1 for e in rs), wall
    sequential_per_thread(rs)
    assert sum(e["dur"] for e in rs) != pytest.approx(sum(e["dur"] for e in ts), rel=1e-6), "the replay's own times"


def test_an_mpi_replays_timeline_has_each_ranks_calls_and_its_collectives_linked(recorded, impl, tmp_path):
    """iotrace replay --launcher --timeline: the calls the ranks replayed (MPI-IO and their own POSIX, not
    the MPI library's nor the definitions), one at a time on each rank's track, each collective linked across
    the ranks as in the recorded timeline."""
    from test_iotrace_mpi import env_for

    rows, _, _, trace = recorded
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--launcher",
                        f"mpirun.{impl} -np {RANKS}", "--timeline", str(tmp_path / "r.json")], capture_output=True,
                       text=True, timeout=180, env=env_for(impl))
    assert r.returncode == 0, r.stderr[-2000:]
    events = checked_events(json.loads((tmp_path / "r.json").read_text()))
    slices = [e for e in events if e["ph"] == "X"]
    want = [x for x in rows if x["rank"] >= 0 and x["parent"] < 0 and x["call"] not in
            ("MPI_Type", "MPI_Comm", "MPI_Init", "MPI_Init_thread", "MPI_Finalize")]
    assert Counter((e["pid"], e["name"]) for e in slices) == Counter((x["pid"], x["call"]) for x in want)
    sequential_per_thread(slices)
    flows = defaultdict(list)
    for e in events:
        if e["ph"] in "stf":
            flows[e["id"]].append(e)
    recorded_flows = [e for e in checked_events(timeline(trace, tmp_path / "t.json")) if e["ph"] == "s"]
    assert len(flows) == len(recorded_flows) > 10
    assert all(sorted(e["ph"] for e in fl) == ["f", "s"] + ["t"] * (RANKS - 2) for fl in flows.values())
    assert [p.name for p in out.iterdir() if p.name.startswith(".iotrace")] == [], "the times file is removed"
