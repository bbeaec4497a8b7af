"""Every history command on hostile data (issue 57): a one-line error or a
page with the bad series marked, never a traceback; bounds on alpha, on
JSON's nesting (one bounded reader for every results reader) and on what
is read from a device or FIFO; nothing from a run sent raw to a terminal."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, osmeter, read_only_copy


def env(db: Path) -> dict:
    return dict(os.environ, OSMETER_HISTORY=str(db))


def hx(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "osmeter"), "history", *args], capture_output=True, text=True, env=env(db),
                          timeout=timeout)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr + r.stdout, r.stderr[-3000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("osmeter: error: "), r.stderr
    return lines[0]


def variant(base: Path, dst: Path, change) -> Path:
    """A copy of the real run's results.json, changed by change(doc)."""
    dst.mkdir(parents=True)
    doc = json.loads((base / "results.json").read_text())
    change(doc)
    (dst / "results.json").write_text(json.dumps(doc))
    return dst


def at(when: str, median: float | None = None, mid: str = "cpu.syscall.getppid", name: str | None = None):
    def change(doc):
        doc["conditions"]["started_utc"] = when
        for m in doc["measurements"]:
            if m["id"] == mid and median is not None:
                m["figure"], m["figure_ci95"] = m["median"], m["ci95"] = median, [median, median]
            if m["id"] == mid and name:
                m["id"] = name
    return change


def test_the_page_marks_a_series_with_nothing_to_plot_and_keeps_the_rest(small_run, tmp_path):
    """An id whose medians are all 0 or negative, and a run started in year 1
    at +14:00 (year 0 in UTC): `history html` exits 0, the bad series is a
    marked line (data-bad: how many runs), the run of year 1 is counted out
    of the other id's chart, which is still drawn. Before, the whole page was
    lost to a traceback (min() of an empty sequence; year 0 out of range).
    Mutant caught: every run plotted."""
    db = tmp_path / "h.sqlite"
    runs = [variant(small_run, tmp_path / f"z{k}", at(f"2026-11-0{k + 1}T00:00:00+00:00", v))
            for k, v in enumerate((0.0, -5.0, 0.0, -1.0))]
    runs.append(variant(small_run, tmp_path / "y1", at("0001-01-01T00:00:00+14:00", 0.0)))
    assert hx(db, "add", *map(str, runs)).returncode == 0
    r = hx(db, "html", "--out", str(tmp_path / "page"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    page = (tmp_path / "page" / "index.html").read_text()
    assert '<p class="none bad" data-id="cpu.syscall.getppid" data-bad="5">' in page
    assert 'data-bad="1">1 of 5 runs not plotted' in page  # the other id: year 1 left out, four runs drawn
    assert page.count('data-id="cpu.syscall.getppid.libc"') == 1 and page.count("<circle") == 4


def test_csv_keeps_its_columns_when_an_id_is_named_as_one(small_run, tmp_path):
    """An id named `time` (a hand-made or hostile results.json): the csv has
    one `time` column holding the runs' times, the id left out with a
    warning. Before, a second `time` column overwrote the times. Mutant
    caught: the clash not left out."""
    db = tmp_path / "h.sqlite"
    runs = [variant(small_run, tmp_path / f"r{k}", at(f"2026-11-0{k + 1}T00:00:00+00:00", name="time"))
            for k in range(2)]
    assert hx(db, "add", *map(str, runs)).returncode == 0
    r = hx(db, "csv")
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.strip().splitlines()
    assert head.split(",") == ["time", "commit", "kernel", "run", "cpu.syscall.getppid.libc"]
    assert [row.split(",")[0] for row in rows] == ["2026-11-01T00:00:00+00:00", "2026-11-02T00:00:00+00:00"]
    assert "id(s) time left out" in r.stderr


def test_json_nested_deep_is_one_line_in_every_reader(small_run, tmp_path):
    """A results.json nested 200,000 deep: `history add`, `compare` and
    `report` each exit 2 with one line naming the file and its depth (Python's
    decoder raised RecursionError before). A results.json that is /dev/zero
    through a link, and a FIFO, are refused without being read. The depth scan
    counts no bracket inside a string. Mutant caught: the depth not checked."""
    from osmeter.results import reader
    deep = tmp_path / "deep"
    deep.mkdir()
    text = (small_run / "results.json").read_text().rstrip()
    (deep / "results.json").write_text(text[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    for args in (("history", "add", str(deep)), ("compare", str(small_run), str(deep)), ("report", str(deep))):
        r = subprocess.run([str(ROOT / "osmeter"), *args], capture_output=True, text=True, timeout=120,
                           env=env(tmp_path / "h.sqlite"))
        line = one_line_error(r)
        assert "nested 200001 deep" in line and str(deep) in line, (args, line)
    assert reader.depth(b'{"a": "[[[[{{{{\\"[[", "b": [[1]]}') == 3
    assert reader.depth(b"[]") == 1 and reader.depth(b"3") == 0
    for name, make in (("zero", lambda p: p.symlink_to("/dev/zero")), ("fifo", os.mkfifo)):
        d = tmp_path / name
        d.mkdir()
        make(d / "results.json")
        t0 = time.monotonic()
        r = subprocess.run([str(ROOT / "osmeter"), "compare", str(small_run), str(d)], capture_output=True,
                           text=True, timeout=60)
        assert "not a file" in one_line_error(r) and time.monotonic() - t0 < 30
        with pytest.raises(ValueError, match="not a regular file"):  # the reader itself, without store's check
            reader.read_json(d / "results.json")


def test_alpha_is_bounded_and_the_terminal_gets_no_escape_from_a_host_name(small_run, tmp_path):
    """--alpha 5e-324 (OverflowError before), 1e-300 (10/alpha shuffles:
    never returned), NaN and 0.6: one line each, at once. A host name with a
    newline, a colour and a window title: `history list` and the error that
    lists the hosts show it in caret notation, no ESC or BEL or newline in
    it. Mutants caught: alpha unbounded; names printed raw."""
    db = tmp_path / "h.sqlite"
    evil = "evil\n\x1b[31mhost\x1b]0;pwn\x07"

    def host(doc):
        doc["machine"]["hostname"] = evil
    runs = [variant(small_run, tmp_path / "e", host), variant(small_run, tmp_path / "v", at("2026-11-01T00:00:00Z"))]
    assert hx(db, "add", *map(str, runs)).returncode == 0
    for alpha in ("5e-324", "1e-300", "nan", "0.6"):
        line = one_line_error(hx(db, "changes", "--host", evil, "--alpha", alpha, timeout=30))
        assert "--alpha" in line and "0.0001" in line
    r = hx(db, "list")
    assert r.returncode == 0 and "evil^J^[[31mhost^[]0;pwn^G" in r.stdout, r.stdout
    line = one_line_error(hx(db, "changes"))
    for out in (r.stdout, line):
        assert "\x1b" not in out and "\x07" not in out and "evil\n" not in out


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only file system is mounted as root")
def test_a_read_only_history_is_read_and_its_writer_told_why(small_run, tmp_path):
    """A history on a read-only file system (a snapshot, a CD, a read-only
    NFS export): list and show read it (immutable: no -shm can be made
    there), and `history add` says the file system is read-only, not
    "damaged, or not SQLite". Mutant caught: the reader opened read-write."""
    db = tmp_path / "h.sqlite"
    runs = [variant(small_run, tmp_path / f"r{k}", at(f"2026-11-0{k + 1}T00:00:00+00:00")) for k in range(3)]
    assert hx(db, "add", *map(str, runs)).returncode == 0
    with read_only_copy(db, tmp_path) as ro:
        r = hx(ro, "list")
        assert r.returncode == 0 and " 3 " in r.stdout, r.stdout + r.stderr
        assert hx(ro, "show", "--id", "cpu.syscall.getppid").returncode == 0
        line = one_line_error(hx(ro, "add", str(small_run)))
        assert "read-only file system" in line and "damaged" not in line


def test_app_trace_reads_no_device_or_fifo(tmp_path):
    """--app-trace /dev/zero read without bound before (MemoryError at
    2.9 GB); a FIFO would block. Both are refused at once, one line, and a
    file whose first line is not a trace's is not read further."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for trace in ("/dev/zero", str(fifo)):
        t0 = time.monotonic()
        r = osmeter("run", "--probes", "app.wall", "--app-trace", trace, "--out", str(tmp_path / "o"),
                    "--no-report", "--no-history", timeout=60)
        assert "not a regular file" in one_line_error(r) and time.monotonic() - t0 < 30
    assert not (tmp_path / "o").exists()


def test_the_tests_history_lives_in_pytests_own_temporary_directory(tmp_path_factory):
    """The suite's history is in pytest's temporary directory, which pytest
    prunes, never a mkdtemp of /tmp left behind per session (227 after one
    CI)."""
    assert Path(os.environ["OSMETER_HISTORY"]).is_relative_to(tmp_path_factory.getbasetemp())
