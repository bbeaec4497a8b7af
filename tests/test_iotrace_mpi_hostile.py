"""iotrace's MPI replay given a hostile trace or directory (issue 56): each
damage a trace can hold, or a link planted where the replay writes, is named
with its trace line and a non-zero exit, nothing is written outside DIR, no
rank is left running, and a replay that cannot end is ended at its bound
with where each rank waited. The traces are real recordings of
tests/mpi/rank_io.c, edited as a hostile run directory would."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, osmeter
from test_iotrace_mpi import IMPLS, IOTRACE, env_for, have

RANKS = 2


def launcher(impl: str, ranks: int = RANKS) -> str:
    return f"mpirun.{impl} -np {ranks}"


@pytest.fixture(scope="module", params=IMPLS)
def base(request, built, tmp_path_factory):
    """rank_io recorded under each MPI: (impl, the trace's lines, the program's directory)."""
    impl = request.param
    why = have(impl)
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp(f"hostile-{impl}")
    prog, work = d / "rank_io", d / "work"
    work.mkdir()
    r = subprocess.run([f"mpicc.{impl}", "-O2", "-Wall", "-o", str(prog), str(ROOT / "tests" / "mpi" / "rank_io.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    trace = d / "rank_io.trace"
    r = subprocess.run([str(IOTRACE), "record", "--out", str(trace), "--launcher", launcher(impl), "--",
                        str(prog), str(work)], capture_output=True, text=True, timeout=120, env=env_for(impl))
    assert r.returncode == 0, r.stderr
    return impl, trace.read_text().splitlines(keepends=True), work


HEAD = "seq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno,rank,parent,args"
COL = {k: i for i, k in enumerate(HEAD.split(","))}


def edited(lines: list[str], tmp: Path, match, change) -> tuple[Path, list[int]]:
    """The trace with every row match(fields) is true for changed by change(fields) (in place); the trace's
    path and the lines (1-based) changed."""
    assert lines[1].rstrip("\n") == HEAD
    out, at = list(lines), []
    for i, ln in enumerate(lines[2:], 2):
        f = ln.rstrip("\n").split(",")
        if match(f):
            change(f)
            out[i] = ",".join(f) + "\n"
            at.append(i + 1)
    assert at, "no row matched"
    p = tmp / "edited.trace"
    p.write_text("".join(out))
    return p, at


def replay(impl: str, trace: Path, out: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--launcher", launcher(impl),
                           *extra], capture_output=True, text=True, timeout=timeout, env=env_for(impl))


def no_rank_left(trace: Path) -> None:
    """No replaying rank of this trace alive (iotrace waits for its launcher's group; a second for the
    kernel to reap what it killed)."""
    for _ in range(10):
        r = subprocess.run(["pgrep", "-f", f"iotrace-mpi-replay-.* {trace}"], capture_output=True, text=True)
        if r.stdout == "":
            return
        time.sleep(0.1)
    assert r.stdout == "", f"ranks left running: {r.stdout}"


def only_names(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


def test_a_clean_replay_of_the_base_moves_what_the_program_did(base, tmp_path):
    impl, lines, _ = base
    trace = tmp_path / "t.trace"
    trace.write_text("".join(lines))
    r = replay(impl, trace, tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mismatch_count"] == 0 and doc["rows_of_no_rank"] == 0, doc["mismatches"]
    assert doc["calls"]["MPI_File_write_at"]["moved_replayed"] == 2 * 8
    assert doc["calls"]["write"]["moved_replayed"] == 2 * 4096


def test_a_type_with_a_negative_lower_bound_is_read_from_inside_its_buffer(base, tmp_path):
    """The hindexed memory type's first block moved 64 MiB below its base (its row's lb and extent to match):
    its size is still 8, and the replay must give MPI a buffer that holds both blocks. The file's bytes at
    rank x 64 are the replaying rank's fill (0x5a ^ rank), read from inside that buffer. Mutant caught: the
    buffer from the base up (as before: MPI read 64 MiB below it)."""
    impl, lines, _ = base
    x = 64 << 20

    def change(f):
        f[COL["args"]] = (f[COL["args"]].replace("lb=0;extent=12", f"lb={-x};extent={x + 12}")
                          .replace("addrs=0 8", f"addrs={-x} 8"))
    trace, _ = edited(lines, tmp_path, lambda f: f[COL["call"]] == "MPI_Type" and "comb=hindexed" in f[COL["args"]],
                      change)
    out = tmp_path / "out"
    out.mkdir()
    r = replay(impl, trace, out)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["calls"]["MPI_File_write_at"]["moved_replayed"] == 16 and doc["mismatch_count"] == 0
    shared = next(p for p in out.iterdir() if p.stat().st_size >= 1 << 20)
    data = shared.read_bytes()
    for rank in range(RANKS):
        assert data[rank * 64: rank * 64 + 8] == bytes([0x5A ^ rank]) * 8, (rank, data[rank * 64: rank * 64 + 8])


@pytest.mark.parametrize("comb, ints, why", [
    ("vector", "-4 1 1", "cannot be rebuilt from its row"),           # MPI itself refuses it (MPI_ERR_COUNT)
    ("indexed", "1073741824 4 4", "its arguments are fewer than its combiner needs"),  # 1 + 2 x count > 2^31
    ("hindexed", "2 4 99999999999", "not a number MPI takes"),        # a block length beyond an int
])
def test_a_datatype_mpi_or_the_guards_refuse_is_named_with_its_line_and_nothing_runs(base, tmp_path, comb, ints,
                                                                                      why):
    """Mutants caught: MPI's errors fatal on the replay's types (the job ended by MPI's handler, no line);
    the argument counts computed in int."""
    impl, lines, _ = base

    def change(f):
        a = f[COL["args"]].replace("comb=hindexed", f"comb={comb}").replace("ints=2 4 4", f"ints={ints}")
        f[COL["args"]] = a
    trace, at = edited(lines, tmp_path, lambda f: f[COL["call"]] == "MPI_Type" and "comb=hindexed" in f[COL["args"]],
                       change)
    out = tmp_path / "out"
    out.mkdir()
    r = replay(impl, trace, out)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert any(f"line {n}: datatype t1" in r.stderr for n in at) and why in r.stderr, r.stderr[-2000:]
    assert only_names(out) == set(), "nothing ran"
    no_rank_left(trace)


@pytest.mark.parametrize("which", ["posix", "mpi"])
def test_a_link_planted_at_a_replayed_file_is_refused_and_its_target_untouched(base, tmp_path, which):
    """DIR/f<id> a symbolic link to a file outside DIR. For a file a rank opened itself (POSIX): exit 2
    naming the link. For the shared MPI file, which MPI_File_open opens by path: the preparation removes the
    link (not its target) and the replay makes its own file (a link planted after that is refused by the
    replayer's check: tests/c/test_confine.c). Either way the target is as it was and nothing is made
    outside DIR. Mutant caught: the rank's own files opened by path (as before: the target overwritten)."""
    impl, lines, _ = base
    trace = tmp_path / "t.trace"
    trace.write_text("".join(lines))
    f = next(ln.split(",") for ln in lines[2:]
             if ln.split(",")[COL["call"]] == ("open" if which == "posix" else "MPI_File_open"))
    fid = f[COL["file"]]
    outside, target = tmp_path / "outside", tmp_path / "outside" / "precious"
    outside.mkdir()
    target.write_bytes(b"keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / fid).symlink_to(target)
    r = replay(impl, trace, out)
    if which == "posix":
        assert r.returncode == 2 and "symbolic link" in r.stderr and f"/{fid}:" in r.stderr, (r.returncode, r.stderr)
    else:
        assert r.returncode == 0 and not (out / fid).is_symlink() and (out / fid).stat().st_size >= 1 << 20, \
            r.stderr[-2000:]
    assert target.read_bytes() == b"keep me" and only_names(outside) == {"precious"}
    no_rank_left(trace)


def test_a_preallocate_over_the_prepare_limit_is_refused_before_any_call(base, tmp_path):
    """rank_io preallocates 1 MiB: under --prepare-limit 65536 the replay says which line, exit 2, DIR as it
    was. Mutant caught: the replayer not told the limit."""
    impl, lines, _ = base
    trace = tmp_path / "t.trace"
    trace.write_text("".join(lines))
    out = tmp_path / "out"
    out.mkdir()
    r = replay(impl, trace, out, "--prepare-limit", "65536")
    lines_at = [i + 1 for i, ln in enumerate(lines) if ",MPI_File_preallocate," in ln]
    assert r.returncode == 2 and "over the limit of 65536 (--prepare-limit)" in r.stderr, r.stderr[-2000:]
    assert any(f"line {n}: MPI_File_preallocate to 1048576 bytes" in r.stderr for n in lines_at), r.stderr
    assert only_names(out) == set()


def test_a_row_of_a_rank_the_trace_does_not_have_is_refused(base, tmp_path):
    impl, lines, _ = base

    def change(f):
        f[COL["rank"]] = "5"
    trace, at = edited(lines, tmp_path, lambda f: f[COL["call"]] == "MPI_File_read_at" and f[COL["rank"]] == "1",
                       change)
    out = tmp_path / "out"
    out.mkdir()
    r = replay(impl, trace, out)
    assert r.returncode == 2 and f"line {at[0]}: a row of rank 5, which the trace does not have" in r.stderr, \
        r.stderr[-2000:]
    assert only_names(out) == set()


def test_a_directory_with_a_quote_gives_json_that_reads(base, tmp_path):
    """Mutant caught: the replay's JSON printed without escaping."""
    impl, lines, _ = base
    trace = tmp_path / "t.trace"
    trace.write_text("".join(lines))
    out = tmp_path / 'a "quoted" dir\\'
    out.mkdir()
    r = replay(impl, trace, out)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["dir"] == str(out)


def test_a_communicator_a_member_never_makes_is_ended_at_the_bound_with_where_each_rank_waits(base, tmp_path):
    """Rank 1's row of the world communicator names rank 1 alone: rank 0 waits in MPI_Comm for a peer that
    never comes. Under --timeout 4 every rank says where it waits (rank 0 in MPI_Comm at its line, rank 1
    past its last call), the replay exits 124 within the bound and half a minute, no rank is left. Mutant
    caught: the ranks' watch never started (only iotrace's own kill, without the ranks' lines)."""
    impl, lines, _ = base

    def change(f):
        f[COL["args"]] = f[COL["args"]].replace("size=2;ranks=0-1", "size=1;ranks=1")
    trace, _ = edited(lines, tmp_path, lambda f: f[COL["call"]] == "MPI_Comm" and f[COL["rank"]] == "1", change)
    comm0 = next(i + 1 for i, ln in enumerate(lines) if ",MPI_Comm," in ln and ln.split(",")[COL["rank"]] == "0")
    out = tmp_path / "out"
    out.mkdir()
    r = replay(impl, trace, out, "--timeout", "4", timeout=90)
    assert r.returncode == 124, (r.returncode, r.stderr[-3000:])
    assert "did not end within its bound of 4 s (--timeout)" in r.stderr
    assert f"rank 0 " in r.stderr and f"in MPI_Comm at line {comm0}" in r.stderr, r.stderr[-3000:]
    assert "rank 1 " in r.stderr and "after its last call" in r.stderr, r.stderr[-3000:]
    no_rank_left(trace)


def test_the_bound_is_124_whatever_status_the_launcher_gives_its_killed_ranks(base, tmp_path):
    """MPICH's hydra, once a rank has ended at the bound, may kill the rest and exit 9 (a CI saw 9 for
    124). A launcher that turns any failure into 9: the deadlock is still 124, since rank 0's mark
    says the ranks ran past the bound. Mutant caught: the launcher's status taken as it is."""
    impl, lines, _ = base

    def change(f):
        f[COL["args"]] = f[COL["args"]].replace("size=2;ranks=0-1", "size=1;ranks=1")
    trace, _ = edited(lines, tmp_path, lambda f: f[COL["call"]] == "MPI_Comm" and f[COL["rank"]] == "1", change)
    wrap = tmp_path / "launch9"
    wrap.write_text(f'#!/bin/sh\n{launcher(impl)} "$@" || exit 9\n')
    wrap.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([str(IOTRACE), "replay", str(trace), "--dir", str(out), "--launcher", str(wrap),
                        "--timeout", "4"], capture_output=True, text=True, timeout=90, env=env_for(impl))
    assert r.returncode == 124, (r.returncode, r.stderr[-3000:])
    assert "did not end within its bound of 4 s (--timeout)" in r.stderr
    no_rank_left(trace)


def test_a_run_bounds_its_app_replay_by_app_timeout(base, tmp_path):
    """The same deadlock under osmeter run --app-trace --app-timeout 3: the probe fails (named in the
    results' failures with where rank 0 waited), the run ends within a minute, no rank is left. Mutant caught:
    the harness not passing --app-timeout (the replay's own default, a minute and more, would hold it)."""
    impl, lines, _ = base

    def change(f):
        f[COL["args"]] = f[COL["args"]].replace("size=2;ranks=0-1", "size=1;ranks=1")
    trace, _ = edited(lines, tmp_path, lambda f: f[COL["call"]] == "MPI_Comm" and f[COL["rank"]] == "1", change)
    out = tmp_path / "run"
    r = osmeter("run", "--app-trace", str(trace), "--app-launcher", launcher(impl), "--app-timeout", "3",
                "--probes", "app", "--out", str(out), "--no-report", timeout=55, env=env_for(impl))
    doc = json.loads((out / "results.json").read_text())
    failed = json.dumps(doc.get("failures"))
    assert "app.replay" in failed and "did not end within its bound of 3 s" in failed, (failed, r.stderr[-2000:])
    assert "in MPI_Comm at line" in failed
    no_rank_left(trace)


def test_record_never_removes_a_trace_it_did_not_write(base, tmp_path):
    """--out naming a trace kept there: a command that is not found and a program that is not an MPI program
    leave it as it was. Mutant caught: the trace opened (truncated) at --out before the program ran."""
    impl, _, _ = base
    keep = tmp_path / "keep.trace"
    for cmd in (["/nonexistent/program"], ["true"]):
        keep.write_text("my trace\n")
        r = subprocess.run([str(IOTRACE), "record", "--out", str(keep), "--launcher", launcher(impl), "--", *cmd],
                           capture_output=True, text=True, timeout=120, env=env_for(impl))
        assert r.returncode != 0, (cmd, r.stderr)
        assert keep.read_text() == "my trace\n", cmd
        assert only_names(tmp_path) == {"keep.trace"}, (cmd, only_names(tmp_path))
