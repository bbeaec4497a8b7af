"""Paths are bytes: every probe and every path option must give valid JSON
whatever a path holds (a quote, a backslash, a newline, a space, non-ASCII
and non-UTF-8 bytes), and the harness must carry them through to
results.json. One JSON writer in C (bench/common/json.c) makes this so."""
from __future__ import annotations

import json
import os
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
