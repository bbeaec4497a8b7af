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


ADIOS_EXAMPLE = Path("/usr/share/doc/libadios-examples/examples/C/global-array")
ADIOS_PC = Path("/usr/lib/x86_64-linux-gnu/pkgconfig/adios-openmpi.pc")


def adios_flags() -> list[str] | None:
    """The compiler's flags for ADIOS 1.13 under Open MPI, from Debian's adios-openmpi.pc (its library is
    in adios/openmpi/), or None where it is not installed."""
    if not (ADIOS_EXAMPLE / "adios_global.c").exists() or not ADIOS_PC.exists():
        return None
    var = dict(ln.split("=", 1) for ln in ADIOS_PC.read_text().splitlines() if "=" in ln and not ln.startswith("#"))
    inc = var["ADIOS_INC"].replace("${ADIOS_DIR}", "/usr").split()
    lib = var["ADIOS_CLIB"].replace("-L${libdir} -ladios", "-L/usr/lib/x86_64-linux-gnu/adios/openmpi -ladios")
    return inc + lib.split()


@pytest.mark.parametrize("method", ["MPI", "MPI_AGGREGATE"])
def test_adios_examples_replay_under_each_transport(built, tmp_path, method):
    """ADIOS 1.13's global-array example, from Debian's libadios-examples, built here against Open MPI: rank 0
    makes its file on MPI_COMM_SELF and the other opens it without MPI_MODE_CREATE (the MPI method), or one
    aggregator writes for both (MPI_AGGREGATE). Recorded and replayed at 2 ranks: exit 0, no mismatch, every
    rank's calls and bytes again (the MPI method failed before opens were ordered after another rank's
    create)."""
    why = have("openmpi")
    flags = adios_flags()
    if why or flags is None:
        pytest.skip(why or "ADIOS's example is not installed (libadios-examples, libadios-openmpi-dev)")
    prog = tmp_path / "adios_global"
    r = subprocess.run(["mpicc.openmpi", "-O2", "-w", "-o", str(prog), str(ADIOS_EXAMPLE / "adios_global.c"), *flags],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    work, out, trace = tmp_path / "work", tmp_path / "out", tmp_path / "adios.trace"
    work.mkdir()
    out.mkdir()
    xml = (ADIOS_EXAMPLE / "adios_global.xml").read_text()
    if method == "MPI_AGGREGATE":
        xml = xml.replace('<method group="temperature" method="MPI"/>', "").replace(
            '<!--method group="temperature" method="MPI_AGGREGATE">', '<method group="temperature" method="MPI_AGGREGATE">'
        ).replace("num_aggregators=2;merging_pgs=0;num_ost=2</method-->", "num_aggregators=1;merging_pgs=0;num_ost=1</method>")
    assert f'method="{method}"' in xml and xml.count("<method ") == 1, xml
    (work / "adios_global.xml").write_text(xml)
    env = env_for("openmpi")
    r = subprocess.run([str(IOTRACE), "record", "--out", str(trace), "--launcher", "mpirun.openmpi -np 2", "--",
                        str(prog)], capture_output=True, text=True, timeout=120, env=env, cwd=work)
    assert r.returncode == 0 and (work / "adios_global.bp").stat().st_size > 0, r.stderr[-3000:]
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--launcher", "mpirun.openmpi -np 2",
                        "--timeout", "30"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    doc = json.loads(r.stdout)
    assert doc["mismatch_count"] == 0, doc["mismatches"]
    assert all(x["moved_replayed"] == x["moved_recorded"] for x in doc["rank_calls"]), doc["rank_calls"]
    assert sum(x["moved_replayed"] for x in doc["rank_calls"]) > 0
