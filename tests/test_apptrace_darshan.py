"""iotrace import: Darshan logs nobody here wrote (tests/fixtures/darshan, from darshan-hpc/darshan-logs) as
traces that replay moves the same bytes to the same offsets with, checked against each log's own counters as
PyDarshan's report reads them (harness/osmeter/apptrace/, docs/iotrace.md "Importing a Darshan log")."""
from __future__ import annotations

import json
import os
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import ROOT
from test_iotrace_mpi import IMPLS, env_for, have

darshan = pytest.importorskip("darshan", reason="PyDarshan (PyPI 'darshan') is not installed: make test installs it")

IOTRACE = ROOT / "build" / "bin" / "iotrace"
LOGS = ROOT / "tests" / "fixtures" / "darshan"
WHOLE = ("mpi-io-test-32ranks-dxt", "hdf5_diagonal_write_bytes_range_dxt", "nonmpi_dxt_anonymized",
         "runtime_and_dxt_heatmaps_diagonal_write_only")
PARTIAL = "partial_data_dxt"


def imported(name: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(IOTRACE), "import", str(LOGS / f"{name}.darshan"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)


def parse(trace: Path) -> tuple[list[dict], list[str]]:
    """A trace's rows and notes, read here from the text (format 3: the rows, then '# ' notes)."""
    lines = trace.read_text().splitlines()
    assert lines[0] in ("# iotrace 2", "# iotrace 3")
    head = lines[1].split(",")
    rows, notes = [], []
    for ln in lines[2:]:
        if ln.startswith("# "):
            notes.append(ln[2:])
            continue
        assert not notes, "a row after the notes"
        f = dict(zip(head, ln.split(",")))
        row = {k: int(f[k]) for k in ("seq", "pid", "tid", "t_start_ns", "t_end_ns", "fd", "offset", "bytes", "ret",
                                       "rank", "parent")}
        row.update(call=f["call"], file=f["file"], path=unquote(f["path"]), args=f["args"])
        rows.append(row)
    return rows, notes


def log_facts(name: str):
    """What PyDarshan's own report says of the log: per (MPI-IO or POSIX, rank, path) the counters' bytes
    read and written, and the DXT segments' count and bytes."""
    rep = darshan.DarshanReport(str(LOGS / f"{name}.darshan"), read_all=True)
    counters = {}
    for mod, pre in (("POSIX", "POSIX"), ("MPI-IO", "MPIIO")):
        if mod in rep.records:
            for rec in rep.records[mod].to_dict():
                c = rec["counters"]
                counters[(mod == "MPI-IO", rec["rank"], rep.name_records[rec["id"]])] = (
                    c[f"{pre}_BYTES_READ"], c[f"{pre}_BYTES_WRITTEN"])
    segs = defaultdict(lambda: [0, 0, 0])  # (mpi, rank, path) -> count, read, written
    for mod in ("DXT_POSIX", "DXT_MPIIO"):
        if mod in rep.modules:
            rep.mod_read_all_dxt_records(mod, dtype="dict")
            for rec in rep.records[mod].to_dict():
                s = segs[(mod == "DXT_MPIIO", rec["rank"], rep.name_records[rec["id"]])]
                s[0] += rec["read_count"] + rec["write_count"]
                s[1] += sum(x["length"] for x in rec["read_segments"])
                s[2] += sum(x["length"] for x in rec["write_segments"])
    return counters, segs


def traced(rows: list[dict]) -> dict:
    """Per (mpi, rank, path): the data rows' count, bytes read and written (a POSIX trace's process p is
    rank p - 1)."""
    out = defaultdict(lambda: [0, 0, 0])
    for x in rows:
        mpi = x["call"].startswith("MPI_File_")
        if x["call"] not in ("pread", "pwrite", "MPI_File_read_at", "MPI_File_write_at"):
            continue
        rank = x["rank"] if x["rank"] >= 0 else x["pid"] - 1
        t = out[(mpi, rank, x["path"])]
        t[0] += 1
        t[1 + ("write" in x["call"])] += x["bytes"]
    return out


@pytest.mark.parametrize("name", WHOLE)
def test_every_dxt_call_is_a_row_and_each_rank_and_file_holds_the_bytes_its_counters_count(name, tmp_path):
    """Per rank and file, as many data rows as the log has DXT segments, moving the bytes the log's
    POSIX_BYTES_* and MPIIO_BYTES_* count (a shared record, rank -1, against the sum over ranks); the notes
    say what the log could not give and that the bytes agree. Mutant caught: a segment's length cut by one."""
    out = tmp_path / "t.trace"
    r = imported(name, out)
    assert r.returncode == 0, r.stderr
    rows, notes = parse(out)
    counters, segs = log_facts(name)
    got = traced(rows)
    assert {k: v for k, v in got.items()} == {k: v for k, v in segs.items()}
    checked = 0
    for (mpi, rank, path), (rd, wr) in counters.items():
        keys = [k for k in got if k[0] == mpi and k[2] == path and (rank == -1 or k[1] == rank)]
        if not keys and not any(k[0] == mpi for k in segs):
            continue  # a module DXT did not trace
        assert (sum(got[k][1] for k in keys), sum(got[k][2] for k in keys)) == (rd, wr), (mpi, rank, path)
        checked += 1
    assert checked >= 10
    assert any("equal the log's counters" in n for n in notes), notes
    assert any("not opens, closes" in n for n in notes), notes
    mpi = any(k[0] for k in segs)
    assert any("independent MPI_File_read_at" in n for n in notes) == mpi
    assert all(x["rank"] >= 0 for x in rows) == mpi, "rank -1 on a POSIX trace, the rank on an MPI one"


def test_a_partial_log_is_imported_as_far_as_it_goes_and_says_so(tmp_path):
    out = tmp_path / "t.trace"
    r = imported(PARTIAL, out)
    assert r.returncode == 0, r.stderr
    assert "partial: DXT_POSIX, DXT_MPIIO" in r.stderr
    rows, notes = parse(out)
    counters, segs = log_facts(PARTIAL)
    got = traced(rows)
    (mpi_key,) = [k for k in segs if k[0]]
    (posix_key,) = [k for k in segs if not k[0]]
    assert got[mpi_key] == segs[mpi_key] and segs[mpi_key][0] == 65529
    # the MPI-IO buffer filled before the POSIX one: the POSIX calls past the last MPI-IO call kept were made
    # inside MPI-IO calls DXT lost, and are left out (said)
    rep = darshan.DarshanReport(str(LOGS / f"{PARTIAL}.darshan"), read_all=False)
    times = {}
    for mod in ("DXT_POSIX", "DXT_MPIIO"):
        rep.mod_read_all_dxt_records(mod, dtype="dict")
        (rec,) = rep.records[mod].to_dict()
        times[mod] = [x["start_time"] for x in rec["read_segments"]], [x["end_time"] for x in rec["read_segments"]]
    last = max(times["DXT_MPIIO"][1])
    past = sum(t > last for t in times["DXT_POSIX"][0])
    left = segs[posix_key][0] - got[posix_key][0]
    assert left == past > 0 and any(n.startswith(f"{left} POSIX calls on MPI files after") for n in notes), notes
    assert sum(n.startswith("DXT_") and "is partial" in n for n in notes) == 2, notes
    assert sum(n.startswith("bytes not in DXT") for n in notes) == 2, notes
    assert all(x["parent"] >= 0 for x in rows if x["call"] in ("pread", "open", "close")), \
        "every POSIX call kept lies inside an MPI-IO call"


def per_process_calls(rows: list[dict], files: dict[str, str]) -> Counter:
    """Each process's data calls in order, (read or write, file, offset, bytes), as a multiset over the
    processes: the processes' ids differ between a trace and its replay."""
    seqs = defaultdict(list)
    for x in rows:
        if x["call"] in ("pread", "pwrite", "read", "write", "pread64", "pwrite64") and x["path"] in files:
            seqs[x["pid"]].append(("w" if "write" in x["call"] else "r", files[x["path"]], x["offset"],
                                   x["ret"]))
    return Counter(tuple(s) for s in seqs.values())


@pytest.mark.parametrize("name", ("hdf5_diagonal_write_bytes_range_dxt", "runtime_and_dxt_heatmaps_diagonal_write_only"))
def test_a_posix_import_replays_each_processs_calls_at_the_same_offsets(name, tmp_path):
    """The replay run under the recorder: every process of the import again, each making the same reads and
    writes of the same files at the same offsets and sizes in the same order, with no mismatch."""
    trace, again, out = tmp_path / "t.trace", tmp_path / "again.trace", tmp_path / "out"
    out.mkdir()
    assert imported(name, trace).returncode == 0
    r = subprocess.run([str(IOTRACE), "record", "--out", str(again), "--", str(IOTRACE), "replay", str(trace),
                        "--dir", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout.splitlines()[-1])
    assert doc["mismatch_count"] == 0, doc["mismatches"][:3]
    rows, _ = parse(trace)
    ids = {x["path"]: x["file"] for x in rows}
    want = per_process_calls(rows, ids)
    replayed, _ = parse(again)
    fk = {f: f for f in ids.values()}  # the replay opens DIR/fK by its name beside DIR's descriptor
    root = replayed[0]["pid"]  # the replay's own process prepares the files; its children replay
    got = per_process_calls([x for x in replayed if x["pid"] != root], fk)
    assert got == want
    assert doc["processes"] == len({x["pid"] for x in rows})


@pytest.mark.parametrize("under", IMPLS)
@pytest.mark.parametrize("name, ranks", ((PARTIAL, 1), ("mpi-io-test-32ranks-dxt", 32)))
def test_an_mpi_import_replays_its_mpi_io_calls_under_either_mpi(name, ranks, under, tmp_path):
    """Each rank of the log under each MPI, the replayer run under the recorder: the imported MPI-IO calls
    again, rank by rank in order, at the same offsets and sizes, no mismatch, each write's first and last
    byte the writing rank's (0x5a ^ rank), and none of the POSIX calls DXT saw inside an MPI-IO call
    replayed as the rank's own (the MPI library makes its own). Mutant caught: a POSIX call inside an MPI-IO
    call given no parent."""
    why = have(under)
    if why:
        pytest.skip(why)
    trace, again, out = tmp_path / "t.trace", tmp_path / "again.trace", tmp_path / "out"
    out.mkdir()
    assert imported(name, trace).returncode == 0
    launcher = f"mpirun.{under} -np {ranks}"
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--launcher", launcher],
                       capture_output=True, text=True, timeout=300, env=env_for(under))
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout.splitlines()[-1])
    rows, _ = parse(trace)
    data = [x for x in rows if x["call"] in ("MPI_File_read_at", "MPI_File_write_at")]
    assert doc["mismatch_count"] == 0 and doc["ranks"] == ranks
    for call in ("MPI_File_read_at", "MPI_File_write_at"):
        mine = [x for x in data if x["call"] == call]
        assert doc["calls"].get(call, {}).get("count", 0) == len(mine)
        assert doc["calls"].get(call, {}).get("moved_replayed", 0) == sum(x["bytes"] for x in mine)
    own = sum(1 for x in rows if x["call"] == "pread" and x["parent"] < 0)
    assert doc["calls"].get("pread", {}).get("count", 0) == own, "the MPI library's POSIX calls are not replayed"
    for x in (x for x in data if x["call"] == "MPI_File_write_at"):
        with open(out / x["file"], "rb") as f:
            for at in (x["offset"], x["offset"] + x["bytes"] - 1):
                f.seek(at)
                assert f.read(1) == bytes([0x5A ^ x["rank"]]), (x["rank"], at)
    if ranks > 1 and under != "openmpi":
        return  # the calls' offsets rank by rank once (32 ranks recorded under MPICH take 25 s more)
    prog = ROOT / "build" / "bin" / f"iotrace-mpi-replay-{under}"
    r = subprocess.run([str(IOTRACE), "record", "--out", str(again), "--launcher", launcher, "--", str(prog),
                        str(trace), "--dir", str(out)], capture_output=True, text=True, timeout=300,
                       env=env_for(under))
    assert r.returncode == 0, r.stderr[-2000:]
    replayed, _ = parse(again)
    for rank in range(ranks):
        assert [(x["call"], x["offset"], x["bytes"]) for x in replayed if x["rank"] == rank and x["call"].endswith("_at")] == \
            [(x["call"], x["offset"], x["bytes"]) for x in data if x["rank"] == rank], rank


def test_an_imported_trace_is_an_app_measurement_like_a_recorded_one(tmp_path):
    """osmeter run --app-trace takes the import as it takes a recording: the app ids measured, each replay
    moving the log's bytes in its classes, no mismatch."""
    from conftest import osmeter

    trace, run = tmp_path / "t.trace", tmp_path / "run"
    assert imported("hdf5_diagonal_write_bytes_range_dxt", trace).returncode == 0
    r = osmeter("run", "--app-trace", str(trace), "--probes", "app", "--out", str(run), "--no-report",
                "--no-history", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((run / "results.json").read_text())
    wall = next(m for m in doc["measurements"] if m["id"] == "app.wall")
    p, n = wall["params"], len(wall["params"]["replayed_wall_ns"])
    rows, _ = parse(trace)
    for c, call in (("read", "pread"), ("write", "pwrite")):
        assert p["classes"][c]["moved"] == n * sum(x["ret"] for x in rows if x["call"] == call) > 0, c
    assert n >= 5 and p["mismatch_count"] == 0


def damaged(tmp_path: Path) -> dict[str, Path]:
    src = (LOGS / "runtime_and_dxt_heatmaps_diagonal_write_only.darshan").read_bytes()
    cases = {"cut in its records": src[:len(src) // 2], "cut in its header": src[:100],
             "of a newer Darshan": b"3.99" + src[4:], "not a Darshan log": b"# iotrace 2\nseq\n" * 20}
    out = {}
    for what, data in cases.items():
        p = tmp_path / (what.replace(" ", "-") + ".darshan")
        p.write_bytes(data)
        out[what] = p
    out["counters only"] = LOGS / "mpi-io-test-x86_64-3.5.0-counters-only.darshan"
    return out


def test_bad_logs_are_one_line_errors_and_write_nothing(tmp_path):
    """A log cut short (in its records or its header), one of a newer format, a file that is no Darshan log
    and a log without DXT: exit 2, one line saying which, and TRACE as it was (absent, or its old
    contents). Mutant caught: the library's messages not read (a cut log imported as a shorter job)."""
    said = {"cut in its records": "truncated or damaged", "cut in its header": "truncated or damaged",
            "of a newer Darshan": "got 3.99", "not a Darshan log": "not a Darshan log",
            "counters only": "no DXT records"}
    keep = tmp_path / "kept.trace"
    keep.write_text("old\n")
    for what, log in damaged(tmp_path).items():
        for out in (tmp_path / "new.trace", keep):
            r = subprocess.run([str(IOTRACE), "import", str(log), "--out", str(out)], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 2, (what, r.stderr)
            assert len(r.stderr.strip().splitlines()) == 1 and said[what] in r.stderr, (what, r.stderr)
            assert not (tmp_path / "new.trace").exists() and keep.read_text() == "old\n", what
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp" or p.name.startswith(".")) == []


def test_without_pydarshan_import_says_how_to_get_it(tmp_path):
    fake = tmp_path / "site" / "darshan"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no darshan here')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    r = subprocess.run([str(IOTRACE), "import", str(LOGS / f"{PARTIAL}.darshan"), "--out", str(tmp_path / "t")],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "pip install darshan" in r.stderr and not (tmp_path / "t").exists()


def test_format_3_notes_end_the_trace_and_show_prints_them(tmp_path):
    head = "# iotrace 3\n" + ",".join(("seq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,"
                                        "bytes,ret,errno,rank,parent,args").split(",")) + "\n"
    row = "0,1,1,open,10,20,3,f0,a,0x0,00,-1,0,3,0,-1,-1,\n"
    good, bad = tmp_path / "good.trace", tmp_path / "bad.trace"
    good.write_text(head + row + "# first note\n# second, with a comma\n")
    bad.write_text(head + "# a note\n" + row)
    r = subprocess.run([str(IOTRACE), "show", str(good)], capture_output=True, text=True)
    assert r.returncode == 0 and "- first note\n- second, with a comma\n" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([str(IOTRACE), "show", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "bad.trace:4: a row after the notes" in r.stderr, r.stderr


def write_trace(log, out: Path) -> None:
    from osmeter.apptrace.totrace import build, lines

    rows, notes, mpi = build(log)
    out.write_text("".join(lines(rows, notes, mpi)))


def a_log(accesses, nprocs: int = 1):
    from osmeter.apptrace.darshan import Log

    return Log(Path("made.darshan"), nprocs, "3.41", "3.5.0", "app", {}, list(accesses), [], {})


def test_calls_of_a_rank_that_overlap_in_time_are_given_threads_and_replay(tmp_path):
    """DXT records no threads: two reads of rank 0 that overlap in time cannot be one thread's (replay
    refuses a thread whose call starts before its previous one ended). They are two threads, the replay
    takes them, and the notes say so. Mutant caught: every call of a rank on one thread."""
    from osmeter.apptrace.darshan import Access

    acc = [Access(0, "/data/a", False, False, 0, 4096, 1.0, 1.5), Access(0, "/data/b", False, True, 0, 100, 1.2, 1.3),
           Access(0, "/data/a", False, False, 4096, 4096, 1.6, 1.7)]
    trace, out = tmp_path / "t.trace", tmp_path / "out"
    out.mkdir()
    write_trace(a_log(acc), trace)
    rows, notes = parse(trace)
    assert len({x["tid"] for x in rows}) == 2 and any("threads beside" in n for n in notes), (rows, notes)
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["threads"] == 2 and doc["mismatch_count"] == 0 and doc["total"]["transferred_replayed"] == 8292


def test_a_rank_outside_the_job_is_refused_and_an_idle_rank_still_starts(tmp_path):
    """A DXT record of rank 4 in a job of 4 processes is refused (the launcher could not start it); in an MPI
    trace every rank of the job has its MPI_Init and MPI_Finalize, those without I/O too (the replay starts as
    many ranks as the job had)."""
    from osmeter.apptrace.darshan import Access
    from osmeter.apptrace.totrace import build

    with pytest.raises(ValueError, match="rank 4, but the job had 4 processes"):
        build(a_log([Access(4, "/f", True, True, 0, 8, 0.1, 0.2)], nprocs=4))
    rows, _, mpi = build(a_log([Access(0, "/f", True, True, 0, 8, 0.1, 0.2), Access(2, "/f", True, True, 8, 8, 0.1, 0.2)],
                               nprocs=3))
    assert mpi and sorted(r.rank for r in rows if r.call == "MPI_Init") == [0, 1, 2]
    assert sorted(r.rank for r in rows if r.call == "MPI_Finalize") == [0, 1, 2]
