"""The MPI-IO patterns real applications use beyond one communicator opened
alike on every rank (tests/mpi/patterns.c: files on MPI_COMM_SELF beside a
shared one, split and duplicated communicators, noncontiguous and darray
views, shared and ordered pointers, split collectives, nonblocking I/O
completed out of order, atomic mode, a file one rank makes and the others
then open), each recorded and replayed under Open
MPI and MPICH (issue 56): the replay ends within its bound, exits 0, reports
no mismatch and moves per call type what the recording moved.
tools/compare-mpiio runs the same with IOR and the rest of the corpus."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from test_iotrace_mpi import IMPLS, IOTRACE, env_for, have

PATTERNS = ("self", "split", "views", "shared", "splitcoll", "nonblock", "atomic", "handoff", "large")
# at 4 ranks too: halves of two ranks each, and a shared pointer four ranks race for
FOUR = ("split", "shared")


@pytest.fixture(scope="module", params=IMPLS)
def program(request, built, tmp_path_factory) -> tuple[str, Path]:
    impl = request.param
    why = have(impl)
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp(f"patterns-{impl}") / "patterns"
    r = subprocess.run([f"mpicc.{impl}", "-O2", "-Wall", "-Wextra", "-o", str(out),
                        str(ROOT / "tests" / "mpi" / "patterns.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return impl, out


@pytest.mark.parametrize("pattern, ranks", [(p, 2) for p in PATTERNS] + [(p, 4) for p in FOUR])
def test_each_pattern_replays_its_calls_and_bytes(program, pattern, ranks, tmp_path):
    """Mutants caught: communicators made with their per-process ids as tags (self: the ranks wait on
    different tags until --timeout); no wait before a shared seek (shared at 4 ranks: a rank's shared write
    moves the pointer after the seek, its peers' shared reads then read past the end); opens not ordered
    after another rank's create (handoff: rank 1 opens a file rank 0 has not made yet); MPI-4's large-count
    routines not recorded (large under MPICH: no MPI rows, the library's POSIX calls taken as the rank's)."""
    impl, prog = program
    work, out, trace = tmp_path / "work", tmp_path / "out", tmp_path / f"{pattern}.trace"
    work.mkdir()
    out.mkdir()
    launcher = f"mpirun.{impl} -np {ranks}"
    r = subprocess.run([str(IOTRACE), "record", "--out", str(trace), "--launcher", launcher, "--", str(prog), pattern,
                        str(work)], capture_output=True, text=True, timeout=120, env=env_for(impl))
    assert r.returncode == 0, r.stderr[-3000:]
    said = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert sorted(d["rank"] for d in said) == list(range(ranks)), r.stdout
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--launcher", launcher,
                        "--timeout", "30"], capture_output=True, text=True, timeout=120, env=env_for(impl))
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    doc = json.loads(r.stdout)
    assert doc["mismatch_count"] == 0, doc["mismatches"]
    want: dict[str, list[int]] = {}
    for d in said:
        for call, (n, nbytes) in d["calls"].items():
            want.setdefault(call, [0, 0])
            want[call][0] += n
            want[call][1] += nbytes
    rows = [ln.split(",") for ln in trace.read_text().splitlines()[2:]]
    for rank, got in enumerate(doc["rank_calls"]):  # every row of the rank replayed, its bytes moved again
        mine = [f for f in rows if int(f[15]) == rank and f[3] not in ("MPI_Init", "MPI_Init_thread", "MPI_Finalize",
                                                                      "MPI_Type", "MPI_Comm")
                and (f[3].startswith("MPI_") or int(f[16]) < 0)]
        assert got["count"] == len(mine) and got["moved_replayed"] == got["moved_recorded"] > 0, (rank, got)
    for call, (n, nbytes) in want.items():
        got = doc["calls"][call]
        assert (got["count"], got["bytes"]) == (n, nbytes), (call, got, n, nbytes)
        assert got["moved_replayed"] == got["moved_recorded"], (call, got)


def test_compare_mpiio_prints_a_row_per_run_and_names_what_failed(program, tmp_path):
    """tools/compare-mpiio on a corpus of two lines: a pattern (recorded, replayed, its row whole) and a
    program that fails (its row says at which step, the exit is 1); a name not built is said, not run."""
    impl, prog = program
    d = tmp_path / "corpus"
    (d / impl).mkdir(parents=True)
    (d / impl / "patterns").symlink_to(prog)
    (d / impl / "fails").write_text("#!/bin/sh\nexit 3\n")
    (d / impl / "fails").chmod(0o755)
    (d / "corpus.txt").write_text("# a comment\npat-split  patterns split {dir}\nbroken  fails {dir}\n"
                                  "absent  nothing-here\n")
    r = subprocess.run([str(ROOT / "tools" / "compare-mpiio"), str(d), "--ranks", "2", "--mpi", impl, "--timeout",
                        "60", "--json", str(tmp_path / "rows.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {x["name"]: x for x in json.loads((tmp_path / "rows.json").read_text())}
    split = rows["pat-split"]
    assert split["status"] == "ok" and split["per_rank"] == "ok" and split["mismatches"] == 0, split
    assert split["calls"] == [8, 8] and split["moved_recorded"] == split["moved_replayed"] > 0, split
    assert rows["broken"]["status"].startswith("record: "), rows["broken"]
    assert rows["absent"]["status"].startswith("not built"), rows["absent"]
    assert "1 of 3 rows replayed whole" in r.stdout, r.stdout
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("compare-mpiio.*")), "scratch directories left"
