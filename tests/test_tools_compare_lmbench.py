"""tools/compare-lmbench against a stand-in lmbench directory: programs
that print what lmbench's print, or hang. It runs the real osmeter probe
beside them, so each test is one quick row ("null call")."""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT

TOOL = ROOT / "tools" / "compare-lmbench"


def stand_in(d: Path, body: str) -> Path:
    """A directory holding a lat_syscall made of `body` (a shell script)
    and a hello, as lmbench's bin/<os>/ holds."""
    d.mkdir(exist_ok=True)
    for name, text in (("lat_syscall", body), ("hello", "#!/bin/sh\necho Hello world\n")):
        (d / name).write_text("#!/bin/sh\n" + text if not text.startswith("#!") else text)
        (d / name).chmod(0o755)
    return d


def run(lmb: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), str(lmb), "--cpu", "0", "--rounds", "1",
                           "--only", "null call", *args], capture_output=True, text=True, timeout=timeout)


def row(out: str, label: str) -> str:
    return next(line for line in out.splitlines() if f"  {label}  " in line)


def test_lmbench_figure_is_read_and_set_beside_osmeter(tmp_path):
    """The row's lmbench cell is what the program printed, in lmbench's
    microseconds turned into ns, and the ratio is osmeter's over it."""
    lmb = stand_in(tmp_path / "lmb", 'echo "Simple syscall: 0.2000 microseconds" >&2\n')
    r = run(lmb)
    assert r.returncode == 0, r.stderr
    line = row(r.stdout, "null call")
    assert "200 ns .. 200 ns (lat_syscall -P 1 null)" in line, line
    m = re.search(r"null call\s+([\d.]+) (ns|us) \.\.", line)
    osm = float(m[1]) * (1e3 if m[2] == "us" else 1)
    ratio = re.search(r"([\d.]+) \(([\d.]+) \.\. ([\d.]+)\)(;|$)", line.rstrip())
    assert ratio, line
    assert all(abs(float(x) - osm / 200) < 0.02 for x in ratio.groups()[:3]), line  # one round: median = range
    assert re.search(r"Core clock .*: median [\d,]+ MHz", r.stdout), r.stdout  # the clocks were read


def test_rounds_on_a_slowed_core_are_set_aside_where_others_remain():
    """A round in which either tool's clock reading fell below 85% of the
    session's median was run on a core the host slowed: its ratio is left
    out of the median and range, and the cell says how many were. With
    every round slowed, all are kept and the cell says so. Mutant: a
    reading counted slowed above the threshold, not below."""
    import importlib.util
    from importlib.machinery import SourceFileLoader

    loader = SourceFileLoader("compare_lmbench", str(TOOL))
    tool = importlib.util.module_from_spec(importlib.util.spec_from_loader("compare_lmbench", loader))
    loader.exec_module(tool)
    o, lv = [100.0, 102.0, 170.0], [100.0, 100.0, 100.0]
    cell, aside = tool.ratio_cell(o, lv, [(3000, 2990), (2995, 3001), (1750, 2990)], 3000)
    assert aside and cell.startswith("1.01 (1.00 .. 1.02); 1 of 3 rounds on a slowed core set aside"), cell
    cell, aside = tool.ratio_cell(o, lv, [(3000, 2990), (2995, 3001), (2980, 2990)], 3000)
    assert not aside and cell == "1.02 (1.00 .. 1.70)", cell
    cell, aside = tool.ratio_cell(o, lv, [(1700, 2990)] * 3, 3000)
    assert not aside and cell.endswith("; every round on a slowed core"), cell


def test_a_hanging_lmbench_program_is_killed_and_its_row_says_so(tmp_path):
    """lat_mem_rd -t hung on one machine: the program gets --timeout
    seconds, then it and its children are killed and the row says so."""
    mark = "987654.25"  # an argument no other sleep on the machine has
    lmb = stand_in(tmp_path / "lmb", f"sleep {mark} &\nwait\n")
    t0 = time.monotonic()
    r = run(lmb, "--timeout", "3")
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 60
    line = row(r.stdout, "null call")
    assert "killed after 3 s in 1 of 1 rounds" in line, line
    assert line.rstrip().endswith("-"), line  # no ratio against a figure that never came
    left = subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True, text=True).stdout
    subprocess.run(["pkill", "-f", f"sleep {mark}"])
    assert not left.strip(), f"the hung program's child outlived it: {left}"


def test_sigterm_removes_its_files_and_the_program_it_started(tmp_path):
    """Stopped by SIGTERM mid-run, the tool exits non-zero and leaves
    nothing behind: its work directory under /var/tmp (the 64 MiB file),
    /tmp/hello when it made it, and the lmbench program's group."""
    mark = "987653.75"
    started = tmp_path / "started"
    lmb = stand_in(tmp_path / "lmb", f"touch {started}\nsleep {mark} &\nwait\n")
    before = set(Path("/var/tmp").glob("osmeter-cmp-lmb-*"))
    hello_was_there = Path("/tmp/hello").exists()
    p = subprocess.Popen([sys.executable, str(TOOL), str(lmb), "--cpu", "0", "--rounds", "1", "--only", "null call"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while not started.exists():
            assert p.poll() is None and time.monotonic() < deadline, "the stand-in lmbench never started"
            time.sleep(0.05)
        mine = set(Path("/var/tmp").glob("osmeter-cmp-lmb-*")) - before
        assert len(mine) == 1
        if not hello_was_there:
            assert Path("/tmp/hello").exists()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    left = subprocess.run(["pgrep", "-f", f"sleep {mark}"], capture_output=True, text=True).stdout
    kept = [d for d in mine if d.exists()]
    hello_kept = not hello_was_there and Path("/tmp/hello").exists()
    subprocess.run(["pkill", "-f", f"sleep {mark}"])  # a failing run leaves nothing either
    for d in kept:
        shutil.rmtree(d, ignore_errors=True)
    if hello_kept:
        Path("/tmp/hello").unlink()
    assert p.returncode != 0
    assert "stopped by signal" in err, err
    assert not kept and not hello_kept, (kept, hello_kept)
    assert not left.strip(), f"the lmbench program outlived the tool: {left}"


def test_a_row_lmbench_printed_no_figure_for_is_marked_and_the_table_streams(tmp_path):
    """lat_syscall prints its null figure but nothing for read (on one guest
    lat_ops printed no "integer mul" line and the whole 13-minute comparison
    stopped with no table): every row is printed, the one without a figure
    marked, exit 0; and each row is printed as it finishes, while the
    next row's program still runs. Mutants caught: a missing figure ending
    the comparison; the table printed only at the end."""
    body = ('case "$*" in *null*) echo "Simple syscall: 0.2000 microseconds" >&2;; '
            '*write*) sleep 4; echo "Simple write: 0.3000 microseconds" >&2;; *) echo "nothing here" >&2;; esac\n')
    lmb = stand_in(tmp_path / "lmb", body)
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # its stdout a pipe, as in `| tee`
    p = subprocess.Popen([sys.executable, str(TOOL), str(lmb), "--cpu", "0", "--rounds", "1", "--only", "null"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = ""
    while "null I/O: read" not in first:
        line = p.stdout.readline()
        assert line, p.stderr.read()
        first += line
    assert p.poll() is None, "the rows before the last were held back until the end"
    out, err = p.communicate(timeout=120)
    out = first + out
    assert p.returncode == 0, err
    assert "  null call  " in out and re.search(r"null call\s.*\(lat_syscall -P 1 null\)\s+[\d.]+ \(", out), out
    line = row(out, "null I/O: read")
    assert "no figure in its output in 1 of 1 rounds" in line and line.rstrip().endswith("-"), line
    assert "no 'null I/O: read' figure in its output" in err, err
    assert re.search(r"null I/O: write\s.*\s[\d.]+ \(", out), out


def test_a_missing_hello_is_named_as_lmbenchs(tmp_path):
    lmb = stand_in(tmp_path / "lmb", "true\n")
    (lmb / "hello").unlink()
    for f in ("lat_proc",):
        (lmb / f).write_text("#!/bin/sh\ntrue\n")
        (lmb / f).chmod(0o755)
    if Path("/tmp/hello").exists():
        import pytest
        pytest.skip("/tmp/hello exists on this machine: the tool would use it")
    r = subprocess.run([sys.executable, str(TOOL), str(lmb), "--cpu", "0", "--rounds", "1", "--only", "exec proc"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and f"lmbench's hello is not in {lmb}" in r.stderr, r.stderr
