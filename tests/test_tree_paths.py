"""Paths are bytes: every probe and every path option must give valid JSON
whatever a path holds (a quote, a backslash, a newline, a space, non-ASCII
and non-UTF-8 bytes), and the harness must carry them through to
results.json. One JSON writer in C (bench/common/json.c) makes this so."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, ROOT

# a directory name with everything a path may hold that JSON must escape
NASTY = b'we"ird \\ na\nme \xc3\xa9 \xff'


@pytest.fixture
def nasty(tmp_path) -> Path:
    d = Path(os.fsdecode(bytes(tmp_path) + b"/" + NASTY))
    d.mkdir()
    return d


def _lines(argv: list) -> list[dict]:
    r = subprocess.run([str(a) for a in argv], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    out = []
    for raw in r.stdout.splitlines():
        out.append(json.loads(raw.decode("utf-8")))  # valid UTF-8 JSON, whatever the path's bytes
    return out


def test_the_c_json_writer():
    r = subprocess.run([str(ROOT / "build" / "test" / "test_json")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr


def test_files_are_opened_only_inside_their_directory():
    """bench/common/confine.c, which iotrace's replays open every file through (tests/c/test_confine.c)."""
    r = subprocess.run([str(ROOT / "build" / "test" / "test_confine")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "FAIL" not in r.stdout and " 0 failed" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("binary, args", [
    ("fs_read", ("--sizes", "1M", "--samples", "1")),
    ("fs_contention", ("--max-procs", "1", "--size", "2M", "--samples", "1")),
    ("fs_meta", ("--files", "20", "--samples", "1")),
    ("fs_cache", ("--min", "16M", "--max", "16M")),
    ("mem_pagefault", ("--file-size", "8M", "--samples", "3")),
])
def test_every_dir_option_gives_valid_json(nasty, binary, args):
    for line in _lines([BIN / binary, "--cpu", "0", "--dir", nasty, *args]):
        if "dir" in line["params"]:
            assert os.fsencode(line["params"]["dir"]) == os.fsencode(str(nasty))


def test_iogen_target_and_log_paths(nasty):
    target = nasty / "t.dat"
    log = nasty / "log.csv"
    o = _lines([BIN / "iogen", "--target", target, "--size", "8M", "--workload", "4k-random-read", "--time",
                "0.2", "--ramp", "0", "--log", log])[0]
    assert os.fsencode(o["target"]) == os.fsencode(str(target))
    assert log.exists()


def test_a_spec_with_non_utf8_names_dumps_valid_json(tmp_path):
    spec = tmp_path / "n.spec"
    spec.write_bytes(b"[spec caf\xe9 \"q\"]\n4K 100 100 100\n")
    o = _lines([BIN / "iogen", "--spec", spec, "--dump-spec"])[0]
    assert os.fsencode(o["specs"][0]["name"]) == b'caf\xe9 "q"'


def test_iotrace_replay_dir(nasty, tmp_path):
    trace = tmp_path / "t.csv"
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * 65536)
    r = subprocess.run([str(BIN / "iotrace"), "record", "--out", str(trace), "--", "cat", str(src)],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    o = _lines([BIN / "iotrace", "replay", trace, "--dir", nasty])[0]
    assert os.fsencode(o["dir"]) == os.fsencode(str(nasty))


def test_the_harness_carries_such_paths_to_results(nasty, tmp_path):
    """--out and --fs-dir with every awkward character: valid results.json
    files with the fs ids (and the dir they were made in)."""
    fs_dir = nasty / "fs"
    fs_dir.mkdir()
    out = Path(os.fsdecode(os.fsencode(str(nasty)) + b"/out \xfe\""))
    r = subprocess.run([str(ROOT / "osmeter"), "run", "--probes", "fs.read.seq,fs.create.0k", "--fs-dir",
                        os.fsencode(str(fs_dir)), "--out", os.fsencode(str(out)), "--no-report"], capture_output=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    doc = json.loads((out / "results.json").read_bytes())
    ids = {m["id"]: m for m in doc["measurements"]}
    assert {"fs.read.seq", "fs.create.0k"} <= set(ids)
    assert os.fsencode(ids["fs.read.seq"]["params"]["dir"]) == os.fsencode(str(fs_dir))
    assert (out / "summary.txt").exists() and (out / "results.csv").exists()


# ---------------------------------------------------------------- one way to make a file (issue 57)

# Calls that make a file or a directory, and the lines allowed to: the one helper of each language
# (bench/common/scratch.c and confine.c; results/writer.py's write_atomic), exclusive creates (O_EXCL: a
# planted name is refused, never followed), and each other line here with why it is safe.
C_MAKES = re.compile(r'O_CREAT|\bmkdir\(|\bmkd?temp\(|\bmkostemp\(|\bcreat\(|fopen\([^;]*"[wa]|'
                     r'"/(var/)?tmp/[^"]*%')
C_ALLOWED = {
    "bench/common/scratch.c": "the helper: mkostemp and mkdtemp in the directory given",
    "bench/common/confine.c": "the helper: openat O_NOFOLLOW in the directory given",
    "bench/iotrace/posix/preload.c": "the application's own calls, recorded as it made them",
    "bench/iotrace/replay/replay.c": "the trace's creates, through open_in_dir (osm_confined_open) in --dir; "
                                     "its start mark O_EXCL there",
    "bench/iotrace/posix/record.c": "mkdtemp for the recording",
    "bench/iotrace/base/base.c": "iot_open_beside: mkostemp beside the file it becomes (record's --out, the "
                                 "timelines), renamed over it",
    "bench/iotrace/mpiio/start.c": "the recording's own directory (mkdir 0700), its files opened 'x'",
    "bench/iogen/iogen.c": "--log, --results-csv, --save-icf: a path the user named, O_NOFOLLOW",
    "bench/iogen/run/verify.c": "mkostemp",
    "bench/mem/pagefault.c": "mkstemp, unlinked at once",
    "bench/fs/meta.c": "subdirectories of its own osm_scratch_new_dir",
}
PY_MAKES = re.compile(r'\.write_text\(|\.write_bytes\(|(?<![.\w])open\([^)]*["\'][wa]b?["\']|'
                      r'os\.open\([^)]*O_CREAT|f"[^"]*\{os\.getpid\(\)\}|\.savefig\(|np\.savez?(_compressed)?\(')
PY_ALLOWED = {
    "harness/osmeter/results/writer.py": "the helper (mkstemp beside the file, rename) and the run's lock, "
                                         "O_NOFOLLOW in the run's directory",
    "harness/osmeter/ktrace/tracefs.py": "tracefs control files, which exist (nothing is made); instance names "
                                         "in tracefs; the state file O_EXCL",
    "harness/osmeter/ktrace/kpaths.py": "tracefs's set_event_pid, which exists",
    "harness/osmeter/host/isolate.py": "/proc and /sys control files, which exist; its state O_EXCL",
    "harness/osmeter/host/cleanup.py": "the lock in its own 0700 directory, O_NOFOLLOW",
    "harness/osmeter/remote/agent.py": "a run directory os.mkdir makes (exclusive) and its lock, O_NOFOLLOW",
    "harness/osmeter/remote/ssh.py": "a mkdtemp prefix",
    "harness/osmeter/host/ramdev.py": "O_EXCL in /dev/shm (the pid lets the next run find a killed run's device)",
    "harness/osmeter/fleet/run.py": "a remote run directory the agent makes with os.mkdir (exclusive)",
    "harness/osmeter/running/recover.py": "ab's owed restore in the private 0700 state directory, written by "
                                          "write_json_atomic under cleanup's lock (the pid lets the next command "
                                          "find a killed ab's)",
}


def _makers(root: Path, globs: tuple[str, ...], pattern: re.Pattern) -> list[tuple[str, int, str]]:
    hits = []
    for g in globs:
        for f in sorted(root.glob(g)):
            for k, ln in enumerate(f.read_text(errors="replace").splitlines(), 1):
                code = ln.split("//")[0] if f.suffix in (".c", ".h") else ln.split("#")[0]
                if code.lstrip().startswith(("*", "/*")) or not pattern.search(code):
                    continue
                if "O_EXCL" in code or "tarfile.open(fileobj=" in code or '"wbex"' in code:
                    continue
                hits.append((str(f.relative_to(root)), k, ln.strip()))
    return hits


def files_made_outside_the_helpers(root: Path = ROOT) -> list[str]:
    """Every line of osmeter's C and Python that makes a file or directory and is neither one of the
    helpers, nor exclusive, nor in a file allowed above."""
    c = _makers(root, ("bench/**/*.c", "bench/**/*.h"), C_MAKES)
    py = _makers(root, ("harness/osmeter/**/*.py",), PY_MAKES)
    return [f"{f}:{k}: {ln}" for f, k, ln in c if f not in C_ALLOWED] + \
           [f"{f}:{k}: {ln}" for f, k, ln in py if f not in PY_ALLOWED]


def test_files_are_made_only_through_the_one_helper_of_each_language(tmp_path):
    """No C or Python line outside the helpers (and the allowed files, each
    with its reason) makes a file by a predictable name or through a link;
    the scan finds a planted one (cpu.select's old /var/tmp/osmeter-select-PID
    with O_TRUNC, a write_text in the harness). Mutants caught: the old
    select, a predictable --app-dir name."""
    assert files_made_outside_the_helpers() == []
    for name in list(C_ALLOWED) + list(PY_ALLOWED):  # no stale entry
        assert (ROOT / name).exists(), name
    planted = tmp_path / "tree"
    (planted / "bench/cpu").mkdir(parents=True)
    (planted / "harness/osmeter/running").mkdir(parents=True)
    (planted / "bench/cpu/select.c").write_text(
        '    snprintf(path, sizeof path, "/var/tmp/osmeter-select-%d", (int)getpid());\n'
        '    int f = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);\n')
    (planted / "harness/osmeter/running/plan.py").write_text(
        '    d = Path(o.app_dir) / f"osmeter-app-replay.{os.getpid()}"\n    (out / "x").write_text(t)\n')
    found = files_made_outside_the_helpers(planted)
    assert len(found) == 4, found


def test_cpu_select_makes_no_file_through_a_planted_link(tmp_path):
    """cpu.select used to make /var/tmp/osmeter-select-PID with O_TRUNC: a
    link planted at the next pids truncated its target. Now its file is
    new (mkostemp) and gone at once: a victim behind links at every name
    the old code could use stays whole, and /var/tmp keeps nothing."""
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    p = subprocess.Popen([str(BIN / "cpu_select"), "--samples", "2"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    links = []
    for pid in range(p.pid, p.pid + 3):  # the old name of this process (and of its next pids)
        link = Path(f"/var/tmp/osmeter-select-{pid}")
        try:
            link.symlink_to(victim)
            links.append(link)
        except FileExistsError:
            pass
    try:
        out, err = p.communicate(timeout=120)
    finally:
        for link in links:
            link.unlink(missing_ok=True)
    assert p.returncode == 0, err
    assert {ln["id"] for ln in map(json.loads, out.splitlines())} == {"cpu.select.tcp", "cpu.select.file"}
    assert victim.read_text() == "keep me\n"
    assert not [f for f in os.listdir("/var/tmp") if f.startswith("osmeter-select-") and
                not Path("/var/tmp", f).is_symlink()]
