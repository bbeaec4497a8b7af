"""iotrace: record a program's file I/O with the LD_PRELOAD recorder, show
the trace, replay it (bench/iotrace, docs/iotrace.md).

The recorded program is tests/fixtures/iotrace/workload.c, compiled here:
its I/O is fixed, so the trace is checked call by call against WORKLOAD."""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

ROOT = Path(__file__).resolve().parents[1]
IOTRACE = ROOT / "build" / "bin" / "iotrace"
WORKLOAD_C = ROOT / "tests" / "fixtures" / "iotrace" / "workload.c"

O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC = 0, 1, 2, 0o100, 0o1000

# What workload.c does, per thread: (call, file, offset, bytes, ret, flags).
# Opens: offset -1, bytes 0, ret None (any descriptor), flags the open flags.
# readv/writev: flags is iovcnt; lseek: flags is whence, offset the argument.
OPEN = None
PARENT_MAIN = [
    ("open", "a.dat", -1, 0, OPEN, O_RDWR | O_CREAT | O_TRUNC),
    ("pwrite", "a.dat", 0, 4096, 4096, 0),
    ("write", "a.dat", 0, 1000, 1000, 0),
    ("lseek", "a.dat", 8192, 0, 8192, 0),
    ("writev", "a.dat", 8192, 600, 600, 3),
    ("fsync", "a.dat", -1, 0, 0, 0),
    ("ftruncate", "a.dat", 10000, 0, 0, 0),
    ("lseek", "a.dat", 0, 0, 0, 0),
    ("read", "a.dat", 0, 2048, 2048, 0),
    ("readv", "a.dat", 2048, 1024, 1024, 2),
    ("pread", "a.dat", 9000, 4096, 1000, 0),  # short: the file ends at 10000
    ("fdatasync", "a.dat", -1, 0, 0, 0),
    ("creat", "b.dat", -1, 0, OPEN, O_WRONLY | O_CREAT | O_TRUNC),
    ("write", "b.dat", 0, 3000, 3000, 0),
    ("open", "missing.dat", -1, 0, -1, O_RDONLY),
    ("write", "b.dat", 3500, 200, 200, 0),  # after the child wrote 500 bytes at the shared offset
    ("close", "b.dat", -1, 0, 0, 0),
    ("lseek", "a.dat", 0, 0, 10000, 2),
    ("close", "a.dat", -1, 0, 0, 0),
]
CHILD = [
    ("open", "c.dat", -1, 0, OPEN, O_WRONLY | O_CREAT | O_TRUNC),
    ("write", "c.dat", 0, 5000, 5000, 0),
    ("pwrite", "c.dat", 10000, 100, 100, 0),
    ("close", "c.dat", -1, 0, 0, 0),
    ("write", "b.dat", 3000, 500, 500, 0),  # inherited descriptor, offset shared with the parent
    ("pread", "a.dat", 0, 100, 100, 0),  # inherited
]


def thread_calls(i: int) -> list[tuple]:
    t = f"t{i}.dat"
    return ([("open", t, -1, 0, OPEN, O_RDWR | O_CREAT | O_TRUNC)]
            + [("pwrite", t, k * 1024, 1024, 1024, 0) for k in range(4)]
            + [("pread", t, 0, 4096, 4096, 0), ("pread", "a.dat", 256 * i, 256, 256, 0), ("close", t, -1, 0, 0, 0)])


OUTPUT_FILES = ["a.dat", "b.dat", "c.dat", "t1.dat", "t2.dat"]


def run(*args, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kw)


def iotrace(*args, **kw) -> subprocess.CompletedProcess:
    return run(IOTRACE, *args, **kw)


def read_trace(path: Path) -> list[dict]:
    """The CSV of docs/iotrace.md (format 2), checked on the way."""
    lines = path.read_bytes().split(b"\n")
    assert lines[0] == b"# iotrace 2"
    header = lines[1].decode().split(",")
    assert header == ["seq", "pid", "tid", "call", "t_start_ns", "t_end_ns", "fd", "file", "path", "flags",
                      "mode", "offset", "bytes", "ret", "errno", "rank", "parent", "args"]
    assert lines[-1] == b"", "the last row ends with a newline"
    rows = []
    for line in lines[2:-1]:
        f = dict(zip(header, line.decode().split(",")))
        assert len(f) == 18 and line.count(b",") == 17
        row = {k: int(f[k]) for k in ("seq", "pid", "tid", "t_start_ns", "t_end_ns", "fd", "offset", "bytes",
                                       "ret", "errno", "rank", "parent")}
        row.update(call=f["call"], file=f["file"], path=unquote_to_bytes(f["path"]).decode(),
                   flags=int(f["flags"], 16), mode=int(f["mode"], 8), args=f["args"])
        rows.append(row)
    return rows


def ours(rows: list[dict], workdir: Path) -> list[dict]:
    """The rows of files in workdir (a dynamically linked libc may open others)."""
    return [r for r in rows if r["path"].startswith(str(workdir) + "/")]


@pytest.fixture(scope="session")
def iotrace_built() -> Path:
    r = run("make", "-s", "-C", ROOT, "build/bin/iotrace", "build/lib/libiotrace.so", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return IOTRACE


@pytest.fixture(scope="session")
def workload(iotrace_built, tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("workload") / "workload"
    r = run("cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-pthread", "-o", exe,
            WORKLOAD_C)
    assert r.returncode == 0, r.stderr
    return exe


@pytest.fixture(scope="session")
def recorded(workload, tmp_path_factory):
    """One recording of the workload: (trace, rows, the directory it wrote, the run, TMPDIR)."""
    base = tmp_path_factory.mktemp("recorded")
    work, tmp = base / "work", base / "tmp"
    work.mkdir(), tmp.mkdir()
    trace = base / "workload.trace"
    r = iotrace("record", "--out", trace, "--", workload, work, env={**os.environ, "TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    return trace, read_trace(trace), work, r, tmp


def by_thread(rows: list[dict]) -> dict[tuple[int, int], list[dict]]:
    out: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        out.setdefault((r["pid"], r["tid"]), []).append(r)
    return out


def as_calls(rows: list[dict]) -> list[tuple]:
    return [(r["call"], Path(r["path"]).name, r["offset"], r["bytes"],
             OPEN if r["call"] in ("open", "creat") and r["ret"] >= 0 else r["ret"], r["flags"]) for r in rows]


# ------------------------------------------------------------------ record


def test_trace_is_exactly_what_the_program_did(recorded):
    trace, rows, work, r, _ = recorded
    rows = ours(rows, work)
    assert f"-> {trace}" in r.stderr
    threads = by_thread(rows)
    pids = sorted({pid for pid, _ in threads})
    assert len(pids) == 2
    parent = min(pids, key=lambda p: min(x["seq"] for x in rows if x["pid"] == p))
    child = next(p for p in pids if p != parent)
    assert sum(1 for pid, _ in threads if pid == parent) == 3  # main and two threads
    assert sum(1 for pid, _ in threads if pid == child) == 1

    assert as_calls(threads[(parent, parent)]) == PARENT_MAIN
    assert as_calls(threads[(child, child)]) == CHILD
    workers = [as_calls(v) for (pid, tid), v in threads.items() if pid == parent and tid != parent]
    assert sorted(workers) == sorted([thread_calls(1), thread_calls(2)])

    # the open that failed, with its errno; creat and open modes
    missing = next(x for x in rows if x["path"].endswith("missing.dat"))
    assert (missing["fd"], missing["ret"], missing["errno"]) == (-1, -1, 2)
    assert next(x for x in rows if x["call"] == "creat")["mode"] == 0o600
    assert all(x["errno"] == 0 for x in rows if x is not missing)


def test_trace_is_merged_in_order_with_stable_file_ids(recorded):
    _, rows, work, _, tmp = recorded
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    starts = [r["t_start_ns"] for r in rows]
    assert starts == sorted(starts)
    assert all(r["t_end_ns"] >= r["t_start_ns"] for r in rows)
    ids: dict[str, str] = {}
    for r in rows:  # one id per path, numbered in order of first appearance
        ids.setdefault(r["path"], f"f{len(ids)}")
        assert r["file"] == ids[r["path"]]
    parent = rows[0]["pid"]
    opened: dict[tuple[int, int], str] = {}  # (pid, fd) -> file, from the opens so far
    for r in rows:
        if r["call"] in ("open", "creat"):
            assert r["fd"] == r["ret"]  # an open's fd is the one it returned
            opened[r["pid"], r["fd"]] = r["file"]
        else:  # other calls name the file their descriptor was opened on (the parent's when inherited)
            assert r["file"] == opened.get((r["pid"], r["fd"]), opened.get((parent, r["fd"]))), r
    assert list(tmp.iterdir()) == [], "record removes its temporary directory"


def test_recorder_does_not_change_the_program(workload, recorded, tmp_path):
    _, _, work, r, _ = recorded
    plain = run(workload, tmp_path)
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "workload ok (descriptors 3 4)\n", "")
    assert r.stdout == plain.stdout  # errno checks passed, and the same descriptor numbers
    assert sorted(p.name for p in work.iterdir()) == sorted(p.name for p in tmp_path.iterdir()) == OUTPUT_FILES
    for name in OUTPUT_FILES:
        assert (work / name).read_bytes() == (tmp_path / name).read_bytes(), name
        assert (work / name).stat().st_mode == (tmp_path / name).stat().st_mode, name


def test_long_multithreaded_trace(workload, tmp_path):
    """80000 rows from four threads: several 1 MiB chunks of the recorder's file."""
    trace = tmp_path / "many.trace"
    r = iotrace("record", "--out", trace, "--", workload, tmp_path, "many", 20000)
    assert r.returncode == 0, r.stderr
    rows = ours(read_trace(trace), tmp_path)
    assert Counter(r["call"] for r in rows) == {"open": 4, "pwrite": 80000, "close": 4}
    for i, calls in enumerate(sorted(by_thread(rows).values(), key=lambda v: v[0]["path"])):
        assert [(c["offset"], c["ret"]) for c in calls if c["call"] == "pwrite"] == [(k, 1) for k in range(20000)]
        assert calls[0]["path"].endswith(f"m{i}.dat")


def test_rows_before_exec_survive(workload, tmp_path):
    trace = tmp_path / "exec.trace"
    r = iotrace("record", "--out", trace, "--", workload, tmp_path, "exec")
    assert (r.returncode, r.stdout) == (0, "written before exec\n"), r.stderr
    rows = ours(read_trace(trace), tmp_path)
    assert len({x["pid"] for x in rows}) == 1  # exec keeps the process
    before, after = rows[:2], rows[2:]
    assert [(x["call"], x["offset"], x["bytes"], x["ret"]) for x in before] == [
        ("open", -1, 0, before[0]["fd"]), ("write", 0, 20, 20)]
    assert after and after[0]["call"].startswith("open") and after[0]["file"] == before[0]["file"]
    assert after[0]["fd"] != before[0]["fd"]  # e.dat is still open across the exec
    reads = [x["ret"] for x in after if x["call"] == "read"]  # cat's reads (unless it copies without read(2))
    assert reads in ([], [20, 0])


def test_standard_tools_under_the_recorder(iotrace_built, tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(os.urandom(300_000))
    trace = tmp_path / "cp.trace"
    r = iotrace("record", "--out", trace, "--", "cp", src, dst)
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == src.read_bytes()
    opened = {Path(x["path"]).name for x in read_trace(trace) if x["call"].startswith(("open", "creat"))
              and x["ret"] >= 0}
    assert {"src", "dst"} <= opened

    # cat into a pipe reads with read(2) (into a regular file it may use copy_file_range)
    trace = tmp_path / "cat.trace"
    out = subprocess.run([str(IOTRACE), "record", "--out", str(trace), "--", "cat", str(src)],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == src.read_bytes()
    reads = [x for x in read_trace(trace) if x["call"] == "read" and x["path"] == str(src)]
    if not reads:
        pytest.skip("this cat copies without read(2); the replay of a read-only file is not checked")
    assert sum(x["ret"] for x in reads) == 300_000 and reads[-1]["ret"] == 0
    offsets = [x["offset"] for x in reads]
    assert offsets == [sum(x["ret"] for x in reads[:k]) for k in range(len(reads))]

    # replay: the file cat only read is made first, so the same reads return the same counts
    out_dir = tmp_path / "replay"
    out_dir.mkdir()
    rep = iotrace("replay", trace, "--dir", out_dir)
    assert rep.returncode == 0, rep.stderr
    doc = json.loads(rep.stdout)
    assert doc["mismatches"] == []
    assert doc["calls"]["read"]["transferred_replayed"] == 300_000
    fid = reads[0]["file"]
    assert (out_dir / fid).stat().st_size == 300_000


def test_exit_status_and_a_program_that_cannot_run(iotrace_built, tmp_path):
    trace = tmp_path / "t"
    r = iotrace("record", "--out", trace, "--", "sh", "-c", "exit 3")
    assert r.returncode == 3, r.stderr
    assert read_trace(trace) == []
    r = iotrace("record", "--out", trace, "--", tmp_path / "no-such-program")
    assert r.returncode == 127
    assert "cannot run" in r.stderr and "no-such-program" in r.stderr
    r = iotrace("record", "--", "true")
    assert r.returncode == 2 and "--out" in r.stderr


def _help_options(text: str) -> set[str]:
    return set(re.findall(r"^  --([a-z-]+)", text, re.M))


@pytest.mark.parametrize("command, options", [
    ("replay", {"dir", "processes", "prepare-limit", "timeout", "launcher", "mpi", "timing", "start-timeout",
                "unpin", "timeline"}),
    ("record", {"out", "launcher", "mpi", "start-timeout"}),
    ("show", {"perfetto"}),
    ("import", {"out"}),
    ("rank", {"dir", "mpi"}),
    ("replay-rank", {"mpi"}),
])
def test_each_command_lists_its_options_in_its_help(iotrace_built, command, options):
    """Each command parses its words by bench/common's option rows (osm_parse_command): --help names the
    command, lists every option it takes and each default, and exits 0, writing nothing else."""
    r = iotrace(command, "--help")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith(f"usage: iotrace {command} [options]")
    assert _help_options(r.stdout) == options | {"help"}
    if command == "replay":
        assert re.search(r"^  --prepare-limit BYTES .*\(default 4G\)$", r.stdout, re.M), r.stdout
        assert re.search(r"^  --start-timeout S .*\(default 120\)$", r.stdout, re.M), r.stdout


def test_the_option_rows_hold_their_limits_and_forms(iotrace_built, tmp_path):
    """--name=VALUE as --name VALUE; a value out of the row's range, a flag given a value, an option
    without its value, an unknown option or a second trace: exit 2 and the fault named, nothing written;
    after "--", a word that looks like an option is record's command."""
    missing = tmp_path / "nope"
    r = iotrace("replay", "t", f"--dir={missing}", "--prepare-limit=4K", "--timeout=5")
    assert r.returncode == 2 and f"--dir {missing}: No such file" in r.stderr, r.stderr
    for args, said in ((("--processes", "0"), "--processes: expected a whole number from 1 to 1000000, got '0'"),
                       (("--prepare-limit", "4Q"), "--prepare-limit: expected a size such as 4096"),
                       (("--unpin=yes",), "--unpin takes no value"),
                       (("--timeout",), "--timeout needs a value"),
                       (("--no-such",), "unknown option '--no-such'"),
                       (("second",), "unexpected 'second'")):
        r = iotrace("replay", "t", "--dir", tmp_path, *args)
        assert r.returncode == 2 and said in r.stderr and r.stdout == "", (args, r.stderr)
    assert list(tmp_path.iterdir()) == []
    r = iotrace("record", "--out", tmp_path / "t")
    assert r.returncode == 2 and "needs a command" in r.stderr, r.stderr
    r = iotrace("record", "--out", tmp_path / "t", "--", "--looks-like-an-option")
    assert r.returncode == 127 and "cannot run '--looks-like-an-option'" in r.stderr, r.stderr


# ------------------------------------------------------------------ show


def test_show(recorded):
    trace, rows, work, _, _ = recorded
    r = iotrace("show", trace)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert re.search(r"\b2 processes, 4 threads\b", out), out
    ids = {row["path"]: row["file"] for row in rows}
    for name, (nread, nwritten) in {"a.dat": (2048 + 1024 + 1000 + 100 + 256 + 256, 4096 + 1000 + 600),
                                    "b.dat": (0, 3700), "c.dat": (0, 5100)}.items():
        path = str(work / name)
        line = next(x for x in out.splitlines() if x.endswith(path))
        assert line.split()[0] == ids[path]
        assert [int(v) for v in line.split()[3:6:2]] == [nread, nwritten], line
    counts = Counter(row["call"] for row in rows)
    table = {x.split()[0]: x.split()[1:] for x in out.split("mean ns")[1].strip().splitlines()}
    for call, n in counts.items():
        assert int(table[call][0]) == n, call
    assert int(table["total"][0]) == len(rows)
    assert int(table["pwrite"][1]) == sum(row["bytes"] for row in rows if row["call"] == "pwrite")


# ------------------------------------------------------------------ replay


@pytest.fixture(scope="session")
def replayed(recorded, tmp_path_factory):
    trace = recorded[0]
    out = tmp_path_factory.mktemp("replayed")
    r = iotrace("replay", trace, "--dir", out)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), out


def test_replay_issues_the_recorded_calls(recorded, replayed):
    trace, rows, work, _, _ = recorded
    doc, out = replayed
    assert doc["trace"] == str(trace)
    assert (doc["processes"], doc["threads"]) == (2, 4)
    assert doc["mismatch_count"] == 0 and doc["mismatches"] == []
    calls = Counter(r["call"] for r in rows)
    assert {c: v["count"] for c, v in doc["calls"].items()} == calls
    for call, v in doc["calls"].items():
        mine = [r for r in rows if r["call"] == call]
        assert v["bytes"] == sum(r["bytes"] for r in mine), call
        assert v["transferred_recorded"] == v["transferred_replayed"], call
        assert v["recorded_ns"] == sum(r["t_end_ns"] - r["t_start_ns"] for r in mine), call
        assert v["replayed_ns"] > 0, call
    assert doc["total"]["count"] == len(rows)
    assert doc["total"]["transferred_replayed"] == sum(max(r["ret"], 0) for r in rows
                                                       if r["call"] in ("read", "write", "pread", "pwrite",
                                                                        "readv", "writev"))


def test_replay_writes_where_the_program_wrote(recorded, replayed):
    """Every write at its recorded offset and size: the replayed files have
    the sizes of the program's, and only DIR/f<id> exist."""
    _, rows, work, _, _ = recorded
    _, out = replayed
    ids = {Path(r["path"]).name: r["file"] for r in rows}
    for name in OUTPUT_FILES:
        assert (out / ids[name]).stat().st_size == (work / name).stat().st_size, name
    assert not (out / ids["missing.dat"]).exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(ids[n] for n in OUTPUT_FILES)


def test_replay_of_a_hand_written_trace(iotrace_built, tmp_path):
    """The format is simple enough to write by hand. A file the program only
    read is made first, as long as its furthest read, so the same reads get
    the same counts (the end of file included); a thread uses a descriptor
    another thread opened; an O_EXCL open of a file that exists fails again."""
    rows = [  # tid, call, fd, path, flags, mode, offset, bytes, ret, errno
        (100, "open", 3, "in.dat", 0, 0, -1, 0, 3, 0),
        (100, "read", 3, "in.dat", 0, 0, 0, 4096, 4096, 0),
        (100, "pread", 3, "in.dat", 0, 0, 10000, 200, 100, 0),
        (101, "pread", 3, "in.dat", 0, 0, 0, 10, 10, 0),
        (100, "read", 3, "in.dat", 0, 0, 4096, 8192, 6004, 0),
        (100, "read", 3, "in.dat", 0, 0, 10100, 10, 0, 0),
        (100, "lseek", 3, "in.dat", 2, 0, 0, 0, 10100, 0),
        (100, "close", 3, "in.dat", 0, 0, -1, 0, 0, 0),
        (100, "open", 3, "out.dat", O_WRONLY | O_CREAT | 0o200, 0o644, -1, 0, 3, 0),
        (100, "write", 3, "out.dat", 0, 0, 0, 5, 5, 0),
        (100, "close", 3, "out.dat", 0, 0, -1, 0, 0, 0),
        (100, "open", -1, "out.dat", O_WRONLY | O_CREAT | 0o200, 0o644, -1, 0, -1, 17),
    ]
    ids = {"in.dat": "f0", "out.dat": "f1"}
    text = "# iotrace 1\nseq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno\n"
    for seq, (tid, call, fd, path, flags, mode, offset, nbytes, ret, err) in enumerate(rows):
        t = 1000 * (seq + 1)
        text += (f"{seq},100,{tid},{call},{t},{t + 500},{fd},{ids[path]},{path},{flags:#x},0{mode:o},"
                 f"{offset},{nbytes},{ret},{err}\n")
    trace = tmp_path / "hand.trace"
    trace.write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    r = iotrace("replay", trace, "--dir", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["processes"], doc["threads"], doc["mismatches"]) == (1, 2, [])
    assert doc["calls"]["read"]["transferred_replayed"] == 4096 + 6004
    assert (out / "f0").stat().st_size == 10100 and (out / "f1").stat().st_size == 5
    show = iotrace("show", trace)
    assert show.returncode == 0 and "10210" in show.stdout  # bytes read from in.dat


def test_replay_with_fewer_processes_is_refused(recorded, tmp_path):
    r = iotrace("replay", recorded[0], "--dir", tmp_path, "--processes", 1)
    assert r.returncode == 2
    assert "the trace has 2 processes; replaying with 1 is not possible" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_replay_into_a_missing_directory_is_refused(recorded, tmp_path):
    r = iotrace("replay", recorded[0], "--dir", tmp_path / "nope")
    assert r.returncode == 2
    assert "nope" in r.stderr and "No such file or directory" in r.stderr


# ------------------------------------------------------------------ bad traces


def mutate(text: str, kind: str) -> tuple[str, int | None]:
    """A broken copy of a trace and the line the error must name (None: the file)."""
    lines = text.split("\n")
    row = 5  # the third row, line 5
    if kind == "empty":
        return "", None
    if kind == "no version line":
        return "\n".join(lines[1:]), 1
    if kind == "other version":
        return "\n".join(["# iotrace 7"] + lines[1:]), 1
    if kind == "bad header":
        return "\n".join(lines[:1] + [lines[1].replace("offset", "ofset")] + lines[2:]), 2
    if kind == "no header":
        return lines[0] + "\n", None
    if kind == "missing field":
        lines[row - 1] = lines[row - 1].rsplit(",", 1)[0]
    elif kind == "extra field":
        lines[row - 1] += ",7"
    elif kind == "non-numeric":
        f = lines[row - 1].split(",")
        f[12] = "12x"
        lines[row - 1] = ",".join(f)
    elif kind == "negative time":
        f = lines[row - 1].split(",")
        f[4] = "-5"
        lines[row - 1] = ",".join(f)
    elif kind == "unknown call":
        f = lines[row - 1].split(",")
        f[3] = "mmap"
        lines[row - 1] = ",".join(f)
    elif kind == "bad escape":
        f = lines[row - 1].split(",")
        f[8] += "%g1"
        lines[row - 1] = ",".join(f)
    elif kind == "truncated":
        cut = "\n".join(lines[:row - 1]) + "\n" + lines[row - 1][:20]
        return cut, row
    return "\n".join(lines), row


BAD = ["empty", "no version line", "other version", "bad header", "no header", "missing field", "extra field",
       "non-numeric", "negative time", "unknown call", "bad escape", "truncated"]


@pytest.mark.parametrize("kind", BAD)
def test_bad_traces_are_refused_clearly(recorded, tmp_path, kind):
    text, line = mutate(recorded[0].read_text(), kind)
    bad = tmp_path / "bad.trace"
    bad.write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    for args in (["show", bad], ["replay", bad, "--dir", out]):
        r = iotrace(*args)
        assert r.returncode == 2, (kind, args[0], r.returncode, r.stderr)
        assert r.stdout == ""
        msg = r.stderr.strip()
        assert msg.startswith(f"iotrace: error: {bad}") and "\n" not in msg, msg
        if line is not None:
            assert msg.startswith(f"iotrace: error: {bad}:{line}: "), msg
    assert list(out.iterdir()) == []


def test_random_damage_never_crashes(recorded, tmp_path):
    """Bytes changed, removed, or the file cut: exit 0 (still a valid trace) or 2, never a crash."""
    rng = random.Random(221)
    data = recorded[0].read_bytes()
    bad = tmp_path / "bad.trace"
    for _ in range(60):
        b = bytearray(data)
        pos = rng.randrange(len(b))
        op = rng.randrange(3)
        if op == 0:
            b[pos] = rng.choice(b"0123456789,-x%\n\x00")
        elif op == 1:
            del b[pos:pos + rng.randint(1, 30)]
        else:
            del b[pos:]
        bad.write_bytes(bytes(b))
        r = iotrace("show", bad)
        assert r.returncode in (0, 2), r.stderr
        if r.returncode == 2:
            assert r.stderr.startswith(f"iotrace: error: {bad}")


def test_descriptors_moved_with_dup2_stay_recorded(iotrace_built, tmp_path):
    """dd moves its input onto fd 0 and its output onto fd 1 with dup2: the
    reads and writes on those descriptors are recorded against the files,
    and a replay issues the same calls and bytes."""
    if not shutil.which("dd"):
        pytest.skip("dd is not installed")
    src, dst, trace = tmp_path / "src.bin", tmp_path / "dst.bin", tmp_path / "dd.csv"
    src.write_bytes(os.urandom(1 << 20))
    r = iotrace("record", "--out", trace, "--", "dd", f"if={src}", f"of={dst}", "bs=64k", "status=none")
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == src.read_bytes()
    rows = read_trace(trace)
    reads = [x for x in rows if x["call"] == "read" and x["path"] == str(src)]
    writes = [x for x in rows if x["call"] == "write" and x["path"] == str(dst)]
    assert len(reads) == 17 and sum(int(x["ret"]) for x in reads) == 1 << 20  # 16 full reads and the end
    assert len(writes) == 16 and all(int(x["bytes"]) == 65536 for x in writes)
    assert [int(x["offset"]) for x in writes] == [i * 65536 for i in range(16)]
    out = tmp_path / "replay"
    out.mkdir()
    rep = json.loads(iotrace("replay", trace, "--dir", out).stdout)
    assert rep["calls"]["read"]["count"] == 17 and rep["calls"]["write"]["bytes"] == 1 << 20
    assert rep["mismatch_count"] == 0


def one_read_trace(tmp_path: Path, offset: int, nbytes: int) -> Path:
    """A 3-call trace by hand: open a file the program found there, one pread at offset, close."""
    head = "# iotrace 1\nseq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno\n"
    rows = [f"0,100,100,open,1000,1500,3,f0,in.dat,0x0,0,-1,0,3,0",
            f"1,100,100,pread,2000,2500,3,f0,in.dat,0x0,0,{offset},{nbytes},{nbytes},0",
            "2,100,100,close,3000,3500,3,f0,in.dat,0x0,0,-1,0,0,0"]
    trace = tmp_path / f"read-at-{offset}.trace"
    trace.write_text(head + "\n".join(rows) + "\n")
    return trace


def test_a_replay_never_fills_the_disk_from_a_short_trace(iotrace_built, tmp_path):
    """A pread at 100 TiB would have the preparation write 100 TiB: refused
    over --prepare-limit, and a file larger than DIR's free space (a 1 MiB
    tmpfs) refused before its first byte, naming the trace's line; a read whose end is past 2^63 is
    refused, not taken as an empty file. Nothing is written in DIR.
    Mutants caught: the limit not checked, the free space not checked, the
    furthest byte's overflow not checked."""
    out = tmp_path / "out"
    out.mkdir()
    far = one_read_trace(tmp_path, 100 << 40, 4096)
    r = iotrace("replay", far, "--dir", out)
    assert r.returncode == 2 and f"{far}:4:" in r.stderr and "--prepare-limit" in r.stderr, r.stderr
    if os.geteuid() == 0:  # DIR on a 1 MiB tmpfs: the mutant that writes anyway stops at its end, not the disk's
        small = tmp_path / "small"
        small.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "osmeter-test", str(small)], check=True)
        try:
            r = iotrace("replay", one_read_trace(tmp_path, 2 << 20, 4096), "--dir", small)
            assert r.returncode == 2 and ":4:" in r.stderr and "bytes free" in r.stderr, r.stderr
            assert list(small.iterdir()) == []
        finally:
            subprocess.run(["umount", str(small)], check=True)
    end = one_read_trace(tmp_path, 2**63 - 1, 1 << 30)
    r = iotrace("replay", end, "--dir", out)
    assert r.returncode == 2 and f"{end}:4:" in r.stderr and "beyond the largest file offset" in r.stderr, r.stderr
    assert list(out.iterdir()) == []
    ok = one_read_trace(tmp_path, 1 << 20, 4096)
    r = iotrace("replay", ok, "--dir", out)
    assert r.returncode == 0, r.stderr
    assert (out / "f0").stat().st_size == (1 << 20) + 4096


def test_an_interrupted_preparation_removes_what_it_wrote(iotrace_built, tmp_path):
    """SIGTERM while the replay writes a 3 GiB file the program found
    there: the file is removed, the exit is 128 + 15 and says so. Mutant
    caught: the prepared files kept."""
    out = tmp_path / "out"
    out.mkdir()
    p = subprocess.Popen([str(IOTRACE), "replay", str(one_read_trace(tmp_path, 3 << 30, 4096)), "--dir", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ((out / "f0").exists() and (out / "f0").stat().st_size > 0) and time.monotonic() < deadline:
        time.sleep(0.005)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM and "removed" in err, (p.returncode, err)
    assert list(out.iterdir()) == []


def chain_trace(tmp_path: Path, n: int, threads: bool) -> Path:
    """n processes (or n threads of one) in a chain: each opens, without
    O_CREAT, the file the one before it created and closed, then creates its
    own. Replayed out of order, an open finds no file: a mismatch."""
    head = "# iotrace 1\nseq,pid,tid,call,t_start_ns,t_end_ns,fd,file,path,flags,mode,offset,bytes,ret,errno\n"
    rows = []
    for k in range(n):
        pid, tid = (100, 1000 + k) if threads else (1000 + k, 1000 + k)
        t = 10 * k + 10
        if k:
            rows.append((pid, tid, "open", t - 5, t - 4, 4, k - 1, "0x0", 4))
            rows.append((pid, tid, "close", t - 3, t - 2, 4, k - 1, "0x0", 0))
        rows.append((pid, tid, "open", t, t + 1, 3, k, "0x41", 3))
        rows.append((pid, tid, "close", t + 2, t + 3, 3, k, "0x0", 0))
    rows.sort(key=lambda r: r[3])
    text = head + "".join(f"{i},{pid},{tid},{call},{a},{b},{fd},f{f},c{f},{fl},0644,-1,0,{ret},0\n"
                          for i, (pid, tid, call, a, b, fd, f, fl, ret) in enumerate(rows))
    trace = tmp_path / ("threads" if threads else "procs") / "chain.trace"
    trace.parent.mkdir()
    trace.write_text(text)
    return trace


@pytest.mark.parametrize("threads", [False, True])
def test_a_long_chain_of_processes_or_threads_replays_in_order(iotrace_built, tmp_path, threads):
    """1,000 processes (or threads), each needing the file the one before it
    made: every open finds its file (no mismatch), so each started only
    after the calls that ended before its first one had been replayed. (The
    start order is near-linear in the number of threads: benchmark in
    docs/notes/2026-11-29-iotrace-replay-scale.md.) Mutant caught: threads
    let go before their need."""
    trace = chain_trace(tmp_path, 1000, threads)
    out = trace.parent / "out"
    out.mkdir()
    r = iotrace("replay", trace, "--dir", out, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["processes"], doc["threads"]) == ((1, 1000) if threads else (1000, 1000))
    assert doc["mismatch_count"] == 0, doc["mismatches"][:3]
    assert doc["calls"]["open"]["count"] == 1999 and len(list(out.iterdir())) == 1000
