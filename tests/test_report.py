"""Estimates, the LaTeX report and its PDF, the notebook, compare, export."""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, osmeter
from osmeter.probes import registry
from osmeter.analysis.compare import compare_paths
from osmeter.core.inference import mann_whitney
from osmeter.report.estimates import EstimateError, load as load_estimates
from osmeter.report.latex import cell, esc
from osmeter.results.writer import Results

EXAMPLE = ROOT / "estimates" / "example.toml"


# --- estimates ---------------------------------------------------------------

def test_the_example_estimates_are_optional_and_each_given_one_fits_its_id(tmp_path):
    """Estimates are optional per id (DESIGN, probe.py): a new probe needs
    none. Each estimate the example gives names a real id that is not a
    curve, has a number and its reasoning, and is in the id's unit or, for
    a rate, its time per unit; a file of one estimate loads as just that
    one. Mutant caught: a rate estimated as time per unit predicted as that
    time."""
    from osmeter.core.units import time_per

    est = load_estimates(EXAMPLE)
    measures = {m.id: m for _, m in registry.all_measures()}
    assert est and set(est) <= set(measures)
    for mid, e in est.items():
        m = measures[mid]
        assert not m.curve and e.total is not None and e.note, mid
        assert e.unit in (m.unit, time_per(m.unit)), (mid, e.unit, m.unit)
        assert e.predicted > 0 and math.isfinite(e.predicted), mid
        if e.unit != m.unit:  # a rate as time per unit: predicted back as the rate
            assert e.predicted == pytest.approx(1e3 / e.total if m.unit == "MB/s" else 1e6 / e.total), mid
    one = tmp_path / "one.toml"
    one.write_text('["cpu.loop"]\ntotal = 0.3\nreasoning = "one add and a branch"\n')
    assert set(load_estimates(one)) == {"cpu.loop"}
    # rates are estimated as time per unit, and predicted back as rates
    bw = est["mem.bw.read"]
    assert bw.unit == "ns/B" and bw.hw + bw.sw == pytest.approx(bw.total)
    assert bw.predicted == pytest.approx(1000 / bw.total)


@pytest.mark.parametrize(
    "text, words",
    [
        ('["cpu.syscal.getppid"]\nhw = 1\nsw = 2\n', "did you mean 'cpu.syscall.getppid'"),
        ('["cpu.loop"]\nunit = "us"\ntotal = 1\n', "measured in 'ns'"),
        ('["cpu.loop"]\nhw = "fast"\nsw = 1\n', "is not a number"),
        ('["cpu.loop"]\nhw = 1\n', "needs total, or both hw and sw"),
        ('["cpu.loop"]\ntotal = 1\nspeed = 3\n', "unknown keys: speed"),
        ('["cpu.loop"\n', "not valid TOML"),
        ('["mem.bw.read"]\nhw = 40000\nsw = 1000\n', "rates do not add"),
        ('["mem.bw.read"]\nunit = "us/IO"\ntotal = 1\n', "use 'MB/s' or 'ns/B'"),
        ('["mem.lat.curve"]\ntotal = 1\n', "is a curve"),
        # no figure a machine could have (mutants caught: negatives taken, the plausible range unchecked)
        ('["cpu.syscall.getppid"]\nhw = 50\nsw = -20\n', "sw = -20 is negative"),
        ('["cpu.syscall.getppid"]\nhw = 1e308\nsw = 1e308\n', "hw = 1e.308 ns is not a plausible figure"),
        ('["cpu.syscall.getppid"]\ntotal = 1e-300\n', "total = 1e-300 ns is not a plausible figure"),
    ],
)
def test_bad_estimates_are_refused(tmp_path, text, words):
    f = tmp_path / "e.toml"
    f.write_text(text)
    with pytest.raises(EstimateError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_estimates(f)


def test_report_command_refuses_a_bad_estimates_file(quick_run, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('["no.such.id"]\ntotal = 1\n')
    r = osmeter("report", str(quick_run[0]), "--estimates", str(bad))
    assert r.returncode == 2 and "unknown measurement id 'no.such.id'" in r.stderr


def test_latex_escaping():
    # an underscore may break a line after it (long identifiers in prose)
    assert esc("a_b%c$d#e&f{g}h~i^j\\k") == (r"a\_\allowbreak{}b\%c\$d\#e\&f\{g\}h\textasciitilde{}i"
                                             r"\textasciicircum{}j\textbackslash{}k")


# --- the report ------------------------------------------------------------------

@pytest.fixture(scope="module")
def report(quick_run, tmp_path_factory):
    """The quick run's report, with an estimates file that leaves one id out
    and has LaTeX's special characters in a note."""
    est = tmp_path_factory.mktemp("est") / "partial.toml"
    text = EXAMPLE.read_text().replace('note = "syscall and sysret', 'note = "50% & $5 of_it; syscall and sysret')
    cut = text.index('["cpu.syscall.gettid"]')
    end = text.index("\n\n", cut)
    est.write_text(text[:cut] + text[end + 2:])
    # an earlier report's figure, of an area this run may not have: the new report must not keep it
    (quick_run[0] / "report" / "figures").mkdir(parents=True, exist_ok=True)
    (quick_run[0] / "report" / "figures" / "net-99.pdf").write_bytes(b"%PDF-1.4 stale\n%%EOF\n")
    r = osmeter("report", str(quick_run[0]), "--estimates", str(est), "--pdf")
    return r, quick_run[0] / "report"


def test_report_tex_has_every_section_table_and_figure(report, quick_run):
    r, out = report
    tex = (out / "report.tex").read_text()
    for title in ("Introduction", "CPU and operating-system services", "Memory", "Disk", "Network",
                  "File system", "Findings", "Summary"):
        assert f"\\section{{{title}}}" in tex
    assert r"\subsection{Machine and conditions}" in tex and r"\begin{thebibliography}" in tex
    for words in (r"Base Hardware\\Performance", r"Estimated Software\\Overhead", r"Predicted\\Time",
                  r"Measured\\Time (mean)"):
        assert words in tex
    assert r"cpu.syscall.gettid & ns & - & - & no estimate" in tex  # the id left out of the estimates
    # every figure numbered, with a caption, at its drawn size (one font size on every page)
    assert tex.count(r"\begin{figure}") >= 5 and tex.count(r"\begin{figure}") == tex.count(r"\caption{")
    assert not re.search(r"\\includegraphics\[", tex)
    # every figure the text includes is a whole PDF in figures/, no wider than A4's text (16.6 cm, set
    # unscaled), and figures/ holds nothing else
    included = re.findall(r"\\includegraphics\{figures/([^}]+)\}", tex)
    assert len(included) == tex.count(r"\begin{figure}") and len(set(included)) == len(included)
    assert sorted(included) == sorted(f.name for f in (out / "figures").iterdir())
    for name in included:
        pdf = (out / "figures" / name).read_bytes()
        assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF"), name
        box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", pdf)
        assert box and 100 < float(box.group(1)) <= 16.6 / 2.54 * 72, (name, box and box.groups())
    # every area table quotes mean and standard deviation, with median, p99 and n beside them
    heads = [ln for ln in tex.splitlines() if ln.startswith("Operation & Unit & HW est.")]
    assert heads and all(r"Measured: mean $\pm$ std & Median & p99 & n & Error" in h for h in heads)
    assert r"Error $=$ (measured $-$ predicted) / predicted" in tex  # the footnote that defines it
    for p in registry.PROBES:  # the methodology of every probe that ran
        if any(m["id"] in p.ids() for m in quick_run[1]["measurements"]):
            assert esc(p.method_text("quick"))[:60] in tex and esc(p.shared_method)[:60] in tex
    # a method several probes share is printed once per section
    disk = next(p for p in registry.PROBES if p.area == "disk")
    assert tex.count(esc(disk.shared_method)[:80]) == 1
    # curves are drawn, not set against one estimate
    for curve in (m.id for _, m in registry.all_measures() if m.curve):
        assert f"{esc(curve)} &" not in tex
    # the quick preset's cache size is a lower bound: shown as one, compared only when above the estimate
    cache = next(m for m in quick_run[1]["measurements"] if m["id"] == "fs.cache_size")
    if cache["params"].get("lower_bound"):
        row = next(ln for ln in tex.splitlines() if ln.startswith(esc("fs.cache_size") + " &")
                   and r"$\pm$" in ln)
        assert r"$\geq$ " in row and (r"$\geq$ +" in row or row.rstrip(" \\").endswith("& -")), row


def test_report_pdf(report, quick_run):
    r, out = report
    if not shutil.which("pdflatex"):
        if os.environ.get("CI"):
            pytest.fail("CI installs texlive, yet pdflatex is missing")
        pytest.skip("pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
    assert r.returncode == 0, r.stderr
    text = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    for title in ("Introduction", "Machine and conditions", "CPU and operating-system services", "Memory", "Disk",
                  "Network", "File system", "Findings", "Summary", "Base Hardware", "Estimated Software", "Predicted",
                  "Measured", "References"):
        assert title in text
    getppid = next(m for m in quick_run[1]["measurements"] if m["id"] == "cpu.syscall.getppid")
    from osmeter.present.rows import display_unit, num3
    k, _ = display_unit(getppid["mean"], "ns")
    assert f"{num3(getppid['mean'] / k)} ± {num3(getppid['std'] / k)}" in text  # mean ± std, as CSE 221 asks
    # nothing a reader should never see: Python's None, a NaN, a TeX caret
    words = re.findall(r"[A-Za-z]+", text)
    assert "None" not in words and "nan" not in words and "NaN" not in words and "^" not in text
    assert re.search(r"Figure 1: ", text)  # numbered captions
    # every area's figures are set inside its own section, before the next one starts
    from osmeter.probes.registry import AREAS
    lines = text.splitlines()
    titles = {a.title for a in AREAS} | {"Findings", "lmbench summary", "Summary"}
    heads = [(i, m.group(1)) for i, ln in enumerate(lines)
             if (m := re.match(r"\s*\d+\s+(\S.*?)\s*$", ln)) and m.group(1) in titles]
    for area in AREAS:
        if area.name == "app":  # measured only with --app-trace (tests/test_iotrace_app.py has its section)
            continue
        start = next(i for i, t in heads if t == area.title)
        end = next((i for i, _ in heads if i > start), len(lines))
        captions = [i for i, ln in enumerate(lines) if re.match(rf"Figure \d+: {re.escape(area.title)}\. ", ln)]
        assert captions and all(start < i < end for i in captions), (area.title, start, end, captions)
    assert "50% & $5 of_it" in text  # special characters came through as text


def test_notebook_runs_headless(quick_run):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "notebooks" / "estimates_vs_measured.ipynb", as_version=4)
    os.environ["OSMETER_RESULTS"] = str(quick_run[0])
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    finally:
        del os.environ["OSMETER_RESULTS"]
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not any(o.get("output_type") == "error" for o in outputs)
    md = "\n".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert str(quick_run[0]).replace("_", "\\_") in md  # the results it read, said
    # the report's structure: a table per area (numbers right-aligned), a heading per figure, the tails
    assert "### CPU and operating" in md and "|:---|:---|---:|" in md and "#### Memory" in md
    assert "| id | p50 | p90 | p99 | p99.9 | max | n |" in md
    assert "cpu.syscall.getppid" in md and "no estimate" in md.split("cpu.syscall.getppid")[1][:300]


# --- compare ------------------------------------------------------------------------

def fake_run(d: Path, samples: dict[str, tuple[str, np.ndarray]], kernel="6.1") -> Path:
    r = Results(d, {"kernel": kernel, "cpu_model": "X"}, {"pinned_cpu": 1, "thp": "madvise"})
    for mid, (unit, v) in samples.items():
        r.add_line({"id": mid, "unit": unit, "samples": v.tolist(), "disturbed": []}, "fake", mid)
    r.save()
    return d


def test_compare_of_two_single_runs_flags_a_known_change_in_the_right_direction(tmp_path):
    rng = np.random.default_rng(7)
    noise = lambda: rng.normal(1, 0.03, 60)  # noqa: E731
    a = fake_run(tmp_path / "a", {"t.slow": ("ns", 100 * noise()), "t.same": ("ns", 50 * noise()),
                                  "t.rate": ("MB/s", 1000 * noise()), "t.size": ("bytes", 10 * noise())})
    b = fake_run(tmp_path / "b", {"t.slow": ("ns", 120 * noise()), "t.same": ("ns", 50 * noise()),
                                  "t.rate": ("MB/s", 1300 * noise()), "t.size": ("bytes", 8 * noise())},
                 kernel="6.2")
    c = compare_paths([a], [b])
    v = {r.id: r for r in c.rows}
    assert c.basis == "within-run"
    # one run a side: nothing is called changed, the within-run test is there to read
    assert {r.verdict for r in c.rows} == {"too few runs"}
    assert v["t.slow"].ratio == pytest.approx(1.2, rel=0.03)
    assert v["t.slow"].ci[0] < 1.2 < v["t.slow"].ci[1] and v["t.slow"].p_within < 1e-6
    assert v["t.same"].p_within > 0.01
    # a fleet's hosts keep within-run verdicts, in the right direction
    from osmeter.results.store import load_side
    from osmeter.analysis.compare import compare_sides

    f = {r.id: r for r in compare_sides(load_side([a]), load_side([b]), within_run_verdicts=True).rows}
    assert f["t.slow"].verdict == "slower" and f["t.same"].verdict == "~"
    assert f["t.rate"].verdict == "faster" and f["t.size"].verdict == "lower"
    assert ("machine.kernel", "6.1", "6.2") in c.conditions
    r = osmeter("compare", str(a), str(b), "--csv", str(tmp_path / "c.csv"), "--tex", str(tmp_path / "c.tex"),
                "--plot", str(tmp_path / "c.png"))
    assert r.returncode == 0, r.stderr
    assert "machine.kernel: 6.1  ->  6.2" in r.stdout and "p within-run" in r.stdout
    text = (tmp_path / "c.csv").read_text()
    assert text.startswith("# condition differs: machine.kernel: 6.1 -> 6.2\n")
    rows_csv = list(csv.DictReader(ln for ln in io.StringIO(text) if not ln.startswith("#")))
    assert {x["id"]: x["verdict"] for x in rows_csv}["t.rate"] == "too few runs"
    assert r"\section{Before and after}" in (tmp_path / "c.tex").read_text()
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_a_tiny_but_significant_shift_is_no_change(tmp_path):
    # quantized timer readings: 52 cycles against a few more 53s; p is tiny, the ratio is 1.00
    a = fake_run(tmp_path / "a", {"q": ("ns", np.array([52.0] * 900 + [53.0] * 100))})
    b = fake_run(tmp_path / "b", {"q": ("ns", np.array([52.0] * 800 + [53.0] * 200))})
    from osmeter.results.store import load_side
    from osmeter.analysis.compare import compare_sides

    r = compare_sides(load_side([a]), load_side([b]), within_run_verdicts=True).rows[0]
    assert r.p_within < 0.001 and r.ratio == 1.0 and r.verdict == "~"


def test_a_run_compared_with_itself_changes_nothing(quick_run):
    c = compare_paths([quick_run[0]], [quick_run[0]])
    assert c.rows and c.conditions == [] and all(r.verdict == "too few runs" for r in c.rows)
    assert all(r.ratio == 1.0 or not math.isfinite(r.ratio) for r in c.rows)


def test_mann_whitney_against_known_values():
    # all of b above all of a: U = 0; equal samples: p = 1
    u, p = mann_whitney(np.arange(10.0), np.arange(10.0) + 100)
    assert u == 0 and p < 0.001
    assert mann_whitney(np.ones(5), np.ones(5))[1] == 1.0
    # a textbook case (ties averaged): a = [1,2,3,4], b = [3,4,5,6] -> U_a = 2
    assert mann_whitney(np.array([1, 2, 3, 4.0]), np.array([3, 4, 5, 6.0]))[0] == 2


def test_export_csv(quick_run):
    r = osmeter("export", str(quick_run[0]))
    assert r.returncode == 0
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [x["id"] for x in rows] == [m["id"] for m in quick_run[1]["measurements"]]
    assert (quick_run[0] / "results.csv").read_text() == r.stdout
    r = osmeter("export", "/nonexistent")
    assert r.returncode == 2 and "cannot read" in r.stderr


# --- what a person sees (issue 18) -----------------------------------------------

def test_run_executes_the_notebook_into_the_results(quick_run):
    """`run` leaves notebook.ipynb with its outputs (tables and figures) and
    notebook.html beside results.json, the parameters filled in."""
    import nbformat

    nb = nbformat.read(quick_run[0] / "notebook.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    params = {}
    exec(code[0].source, {}, params)  # the parameters, filled in: paths relative to the results directory
    assert params["RESULTS"] == "." and (quick_run[0] / params["OSMETER_ROOT"]).resolve() == ROOT.resolve()
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not any(o.get("output_type") == "error" for o in outputs)
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) >= 5  # the areas' figures and the latency distributions
    assert any("cpu.syscall.getppid" in o.get("data", {}).get("text/markdown", "") for o in outputs)
    html = (quick_run[0] / "notebook.html").read_text()
    assert html.count("data:image/png;base64") >= len(pngs) and "cpu.syscall.getppid" in html
    host = quick_run[1]["machine"]["hostname"]
    assert f"<title>osmeter: {host}</title>" in html and "<h1" in html and "estimates against measurements" in html


def test_report_builds_the_pdf_by_default(quick_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(quick_run[0], run, ignore=shutil.ignore_patterns("report", "notebook.*"))
    r = osmeter("report", str(run))
    assert r.returncode == 0, r.stderr
    assert (run / "report" / "report.pdf").stat().st_size > 10_000 and "PDF:" in r.stdout
    # LaTeX's own files of a whole build are gone (mutant caught: report-partial.aux and .log kept)
    assert not [p.name for p in (run / "report").rglob("*-partial*")], list((run / "report").rglob("*"))
    # without LaTeX on PATH: the .tex, one line saying how to get the PDF, and success
    (run / "report" / "report.pdf").unlink()
    env = dict(os.environ, PATH=str(tmp_path / "empty"), OSMETER_ROOT=str(ROOT))
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "osmeter", "report", str(run)], env=env,
                       capture_output=True, text=True, cwd=ROOT / "harness", timeout=300)
    assert r.returncode == 0, r.stderr
    hint = [ln for ln in r.stdout.splitlines() if "apt-get install texlive" in ln]
    assert len(hint) == 1 and (run / "report" / "report.tex").exists() and not (run / "report" / "report.pdf").exists()
    # --pdf insists on it
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "osmeter", "report", str(run), "--pdf"],
                       env=env, capture_output=True, text=True, cwd=ROOT / "harness", timeout=300)
    assert r.returncode == 1 and "texlive" in r.stderr


def _run_on(tty: bool, out: Path) -> str:
    """`osmeter run --probes sched.timer.latency` with stdout a pseudo-terminal or a pipe; what it printed."""
    import pty
    import select

    argv = [str(ROOT / "osmeter"), "run", "--probes", "sched.timer.latency", "--out", str(out), "--no-report"]
    if not tty:
        return subprocess.run(argv, capture_output=True, text=True, timeout=300).stdout
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


def test_progress_shows_on_a_terminal_and_not_in_a_pipe(tmp_path):
    """On a pseudo-terminal the probe's steps (its wake-up count) and the
    time against its budget redraw one line; in a pipe none of it, and the
    results are the same either way."""
    seen = _run_on(True, tmp_path / "tty")
    assert "\r\x1b[K" in seen and "wake-ups" in seen and "of ~" in seen and "left" in seen
    plain = _run_on(False, tmp_path / "pipe")
    assert "\x1b[" not in plain and "wake-ups" not in plain and "\r" not in plain
    assert "sched.timer.latency" in plain
    for d in ("tty", "pipe"):
        assert '"sched.timer.latency"' in (tmp_path / d / "results.json").read_text()


def test_osmeter_notebook_serves_the_executed_notebook(quick_run, tmp_path):
    """`osmeter notebook DIR`: executes the notebook into DIR when it is missing, then Jupyter's
    server (in osmeter's place) serves it: its contents API returns the executed copy."""
    import json
    import signal
    import socket
    import time
    import urllib.request

    d = tmp_path / "run"
    shutil.copytree(quick_run[0], d)
    for f in ("notebook.ipynb", "notebook.html"):
        (d / f).unlink(missing_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([str(ROOT / "osmeter"), "notebook", str(d), "--", "--no-browser", f"--port={port}",
                          "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=osmtest"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/api/contents/notebook.ipynb?token=osmtest"
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    doc = json.loads(r.read())
                break
            except OSError:
                assert p.poll() is None and time.monotonic() < deadline, p.stdout.read() if p.poll() is not None else ""
                time.sleep(0.5)
        assert doc["type"] == "notebook" and (d / "notebook.ipynb").is_file()
        outputs = [o for c in doc["content"]["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
        assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_report_no_pdf_writes_the_tex_only(quick_run, tmp_path):
    """--no-pdf: the .tex and its figures, no LaTeX run, even where LaTeX is installed."""
    run = tmp_path / "run"
    shutil.copytree(quick_run[0], run, ignore=shutil.ignore_patterns("report", "notebook.*"))
    r = osmeter("report", str(run), "--no-pdf")
    assert r.returncode == 0, r.stderr
    assert (run / "report" / "report.tex").stat().st_size > 1000 and not (run / "report" / "report.pdf").exists()
    assert "PDF" not in r.stdout


# what each figure draws: drawn when one of these ids has a figure (a median, or a curve)
FIGURE_IDS = {"memory_latency": ("mem.lat.curve",), "loop_and_calls": ("cpu.loop", "cpu.call.args"),
              "fork_parent_size": ("cpu.proc_create_wait",), "c2c_heatmap": ("cpu.c2c",),
              "bandwidths": ("mem.bw.",), "disk_sweep": ("disk.4k-random-read.qd_sweep",),
              "disk_size_qd": ("disk.4k-random-read.size_qd",), "disk_zones": ("disk.1m-seq-read.zones",),
              "network": ("net.rtt.", "net.bw."), "fs_read": ("fs.read.seq", "fs.read.rand"),
              "contention": ("fs.contention",), "ctx_matrix": ("cpu.ctx.matrix",),
              "mem_parallelism": ("mem.par", "mem.lat.loaded"), "app_latency": ("app.wall",),
              "app_calls": ("app.wall",)}


def _drawable(doc: dict, fn) -> bool:
    want = FIGURE_IDS[fn.__name__]
    return any(m["id"].startswith(want) and m.get("median") is not None for m in doc["measurements"])


def test_a_measurement_whose_samples_were_all_disturbed_still_reports(quick_run, tmp_path):
    """Every sample of an id can be dropped as disturbed (no median, no std): the
    figures leave it out and draw the rest, and the report still builds,
    naming it in its row with no figure and n = 0."""
    import json
    from osmeter.present import plots
    from osmeter.probes.areas import cpu, mem
    run = tmp_path / "run"
    shutil.copytree(quick_run[0], run, ignore=shutil.ignore_patterns("report"))
    doc = json.loads((run / "results.json").read_text())
    full = json.loads(json.dumps(doc))
    emptied = []
    for m in doc["measurements"]:
        if "series" not in m and m["id"].split(".")[0] in ("cpu", "mem", "net", "fs"):
            m.update(n=0, mean=None, median=None, std=None, min=None, max=None, ci95=[None, None])
            emptied.append(m["id"])
    assert "mem.bw.read" in emptied and "cpu.call.args0" in emptied
    fns = [fn for area in registry.AREAS for fn in area.figures]
    assert sorted(fn.__name__ for fn in fns) == sorted(FIGURE_IDS)
    # every figure with something left to draw (a curve, the disk) is drawn; the others are not
    assert sum(_drawable(doc, fn) for fn in fns) >= 5
    for fn in fns:
        fig = fn(doc)
        assert (fig is not None) == _drawable(doc, fn), fn.__name__
        plots.plt.close("all")
    # two ids emptied: their figures draw the others, and leave these two out
    for m in doc["measurements"]:
        if m["id"] not in ("mem.bw.read", "cpu.call.args3"):
            m.update(next(q for q in quick_run[1]["measurements"] if q["id"] == m["id"]))
    for fn in fns:
        assert (fn(doc) is not None) == _drawable(full, fn), fn.__name__
        plots.plt.close("all")
    bw_ids = [m["id"] for m in full["measurements"] if m["id"].startswith("mem.bw.") and m.get("median") is not None]
    bars = {t.get_text(): p.get_width() for t, p in zip(mem.bandwidths(doc).axes[0].get_yticklabels(),
                                                         mem.bandwidths(doc).axes[0].patches)}
    med = {m["id"]: m["median"] for m in full["measurements"]}
    assert bars == {i.removeprefix("mem.bw."): med[i] for i in bw_ids if i != "mem.bw.read"}
    calls = cpu.loop_and_calls(doc).axes[1].lines[0].get_xdata()
    assert list(calls) == [k for k in range(8) if med.get(f"cpu.call.args{k}") is not None and k != 3]
    plots.plt.close("all")
    (run / "results.json").write_text(json.dumps(doc))
    r = osmeter("report", str(run), "--no-pdf")
    assert r.returncode == 0, r.stderr
    tex = (run / "report" / "report.tex").read_text()
    for i in ("mem.bw.read", "cpu.call.args3"):
        # the area table's row: operation, unit, hw, sw, total, measured, median, p99, n, error
        rows = [ln.removesuffix(r" \\").split(" & ") for ln in tex.splitlines() if ln.startswith(esc(i) + " & ")]
        cells = next((c for c in rows if len(c) == 10), None)
        assert cells is not None, (i, rows)
        assert cells[5] == cells[6] == "-" and cells[8] == "0", cells
    others = [ln for ln in tex.splitlines() if ln.startswith(esc("mem.bw.read.cache") + " & ")]
    assert others and r"$\pm$" in others[0]  # the others keep their figures
    assert tex.count(r"\includegraphics") >= 5


# --- hostile text from a results directory (issue 25) ------------------------------------------

HOSTILE_ID = r"cpu}\catcode95=12\input{^^2fetc^^2fpasswd}x.y"


def test_a_hostile_id_and_file_name_stay_text_in_compare_tex(tmp_path):
    """An id from a results directory reaches \\includegraphics only as a
    safe file name, and its text is shown literally: /etc/passwd is never
    read into the document."""
    rng = np.random.default_rng(3)
    a = [fake_run(tmp_path / f"a{k}", {HOSTILE_ID: ("ns", 100 * rng.normal(1, 0.01, 20))}) for k in range(2)]
    b = [fake_run(tmp_path / f"b{k}", {HOSTILE_ID: ("ns", 100 * rng.normal(1, 0.01, 20))}) for k in range(2)]
    tex = tmp_path / "out dir" / "we{ird}$name.tex"
    tex.parent.mkdir()
    r = osmeter("compare", *map(str, a), "--", *map(str, b), "--tex", str(tex))
    assert r.returncode == 0, r.stderr
    body = tex.read_text()
    graphics = re.findall(r"\\includegraphics\[[^\]]*\]\{([^}]*)\}", body)
    assert graphics and all(re.fullmatch(r"[A-Za-z0-9_-]+/[A-Za-z0-9_-]+\.pdf", g) for g in graphics), graphics
    assert r"\input{" not in body and r"\catcode" not in body
    assert r"\textbackslash{}input\{" in body  # the id, as text
    pdf = tex.with_suffix(".pdf")
    if shutil.which("pdflatex") and shutil.which("pdftotext"):
        assert pdf.exists(), r.stdout + r.stderr
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
        assert "root:" not in text and "catcode95" in text.replace("\n", "")


def test_hostile_host_facts_are_text_in_the_notebook_html(tmp_path):
    """A host's cpu_model and kernel with HTML in them show as text in
    notebook.html, never as markup a browser would run."""
    from osmeter.report.notebook import execute

    d = tmp_path / "run"
    r = Results(d, {"kernel": "<script>alert(2)</script>", "cpu_model": "<img src=x onerror=alert(1)>"},
                {"pinned_cpu": 1})
    r.add_line({"id": "cpu.syscall.getppid", "unit": "ns", "samples": [100.0] * 10, "disturbed": []}, "fake",
               "a [link](javascript:alert(3)) *here*")
    r.save()
    ok, msg = execute(d, None, ROOT)
    assert ok, msg
    html = (d / "notebook.html").read_text()
    assert "<script>alert(2)" not in html and "<img src=x" not in html and 'href="javascript:' not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_symbols_control_characters_and_dollars_are_mapped_not_fatal(tmp_path):
    """Notes with ≈ and ≤, a host name with control characters, an id with
    '$\\frac{': report, compare --tex and compare --plot all finish, and the
    PDF shows the symbols (a note's ≈ as ≈, the escape as caret notation)."""
    d = tmp_path / "run"
    r = Results(d, {"kernel": "6.1", "cpu_model": "X", "hostname": "lab\x1b[31mhost\x07"}, {"pinned_cpu": 1})
    r.add_line({"id": "cpu.syscall.getppid", "unit": "ns", "samples": [100.0] * 10, "disturbed": []}, "fake", "x")
    r.save()
    est = tmp_path / "est.toml"
    est.write_text('["cpu.syscall.getppid"]\nhw = 50\nsw = 20\nnote = "trap ≈ 50 ns ≤ the call; 日本"\n',
                   encoding="utf-8")
    rep = osmeter("report", str(d), "--estimates", str(est))
    assert rep.returncode == 0 and "Traceback" not in rep.stderr, rep.stdout + rep.stderr
    tex = (d / "report" / "report.tex").read_text()
    assert r"$\approx$ 50 ns $\leq$" in tex and "[U+65E5]" in tex and "\x1b" not in tex and "\x07" not in tex
    assert r"lab\textasciicircum{}[[31mhost\textasciicircum{}G" in tex
    if shutil.which("pdflatex") and shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(d / "report" / "report.pdf"), "-"], capture_output=True,
                              text=True).stdout
        assert "≈ 50 ns ≤" in text and "^[[31mhost^G" in text, text[:3000]
    rng = np.random.default_rng(5)
    odd = r"cpu.x$\frac{1}{$"
    sides = [[fake_run(tmp_path / f"{s}{k}", {odd: ("ns", 100 * rng.normal(1, 0.01, 20))}) for k in range(2)]
             for s in "ab"]
    c = osmeter("compare", *map(str, sides[0]), "--", *map(str, sides[1]), "--tex", str(tmp_path / "c.tex"),
                "--plot", str(tmp_path / "c.png"))
    assert c.returncode == 0 and "Traceback" not in c.stderr, c.stderr
    assert (tmp_path / "c.png").stat().st_size > 0
    assert r"cpu.x\$\textbackslash{}frac\{1\}\{\$" in (tmp_path / "c.tex").read_text()


# --- a student's own estimates (issue 27) ----------------------------------------------------

def test_estimates_init_round_trips_with_no_estimate_at_all(quick_run, tmp_path):
    """The blank file names every id of the run with its unit, loads as no
    estimate at all (the report says 'no estimate' on every row, and the
    file's source on its first page), and refuses to overwrite a file."""
    run, doc = quick_run
    blank = tmp_path / "mine.toml"
    r = osmeter("estimates", "init", str(run), "--out", str(blank))
    assert r.returncode == 0, r.stderr
    text = blank.read_text()
    curves = {m.id for _, m in registry.all_measures() if m.curve}
    for m in doc["measurements"]:
        assert f'["{m["id"]}"]' in text
        if m["id"] not in curves:
            sect = text[text.index(f'["{m["id"]}"]'):].split("\n\n")[0]
            assert "# hw = " in sect and 'reasoning = ""' in sect and 'discussion = ""' in sect, sect
    est = load_estimates(blank)
    assert set(est) == {m["id"] for m in doc["measurements"]} and not any(e.given for e in est.values())
    again = osmeter("estimates", "init", str(run), "--out", str(blank))
    assert again.returncode == 2 and "exists" in again.stderr and blank.read_text() == text
    rep = osmeter("report", str(run), "--estimates", str(blank), "--no-pdf")
    assert rep.returncode == 0, rep.stderr
    tex = (run / "report" / "report.tex").read_text()
    rows = [ln for ln in tex.splitlines() if r"$\pm$" in ln and ln.count("&") == 9 and not ln.startswith("Operation")]
    assert rows and all("& no estimate &" in ln for ln in rows), [ln for ln in rows if "no estimate" not in ln][:3]
    assert esc(str(blank)) in tex[:tex.index(r"\section{CPU")]
    # filled in, with an id it does not know: a clear error naming it
    blank.write_text(text + '\n["cpu.syscal.getppid"]\nhw = 1\nsw = 2\n')
    bad = osmeter("report", str(run), "--estimates", str(blank), "--no-pdf")
    assert bad.returncode == 2 and "unknown measurement id 'cpu.syscal.getppid'" in bad.stderr
    assert "did you mean 'cpu.syscall.getppid'" in bad.stderr


def test_estimates_in_cycles_become_ns_with_the_run_clock(quick_run, tmp_path):
    from osmeter.report.estimates import core_clock, load

    run, doc = quick_run
    hz, why = core_clock(doc)
    assert hz and hz > 1e8, why
    f = tmp_path / "cyc.toml"
    f.write_text('["cpu.syscall.getppid"]\nunit = "cycles"\nhw = 200\nsw = 100\n')
    e = load(f, hz)["cpu.syscall.getppid"]
    assert e.predicted == pytest.approx(300 * 1e9 / hz) and e.hw == pytest.approx(200 * 1e9 / hz)
    with pytest.raises(EstimateError, match="no core clock"):
        load(f)
    f.write_text('["mem.bw.read"]\nunit = "cycles"\ntotal = 3\n')
    with pytest.raises(EstimateError, match="is measured in 'MB/s'"):
        load(f, hz)


def test_the_example_estimates_only_when_asked_and_said_on_page_one(quick_run, tmp_path):
    run, _ = quick_run
    none = osmeter("report", str(run), "--no-pdf")
    assert none.returncode == 0, none.stderr
    tex = (run / "report" / "report.tex").read_text()
    assert "none given" in tex and "example.toml" not in tex and "& no estimate &" in tex
    ex = osmeter("report", str(run), "--estimates", "example", "--pdf")
    assert ex.returncode == 0, ex.stderr
    tex = (run / "report" / "report.tex").read_text()
    assert "the example file example.toml" in tex
    if shutil.which("pdftotext"):
        page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(run / "report" / "report.pdf"), "-"],
                               capture_output=True, text=True).stdout
        assert "example file" in " ".join(page1.split()), page1[:2000]


def test_quote_median_puts_the_median_in_the_summary(quick_run):
    run, doc = quick_run
    r = osmeter("report", str(run), "--estimates", "example", "--quote", "median", "--no-pdf")
    assert r.returncode == 0, r.stderr
    tex = (run / "report" / "report.tex").read_text()
    assert r"Measured\\Time (median)" in tex and "the median across" in tex
    bad = osmeter("report", str(run), "--quote", "mode")
    assert bad.returncode == 2 and "--quote" in bad.stderr


# --- method text from the run (issue 27) ------------------------------------------------------

def _kv(args) -> dict:
    return {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--") and not args[i + 1].startswith("--")}


def test_method_text_states_the_run_s_own_numbers():
    """Each number a preset sets is a field of the method text, filled from
    the run: the quick and the full preset's texts say their own values and
    never the other's, and no method text hard-codes a value a preset sets."""
    from osmeter.probes.model import method_text

    for p in registry.PROBES:
        quick, full = _kv(p.presets.get("quick", ())), _kv(p.presets.get("full", ()))
        texts = {pr: p.method_text(pr) for pr in ("quick", "full")}
        assert "{arg:" not in texts["quick"] + texts["full"] and "{param:" not in texts["quick"], p.name
        for arg in set(quick) | set(full):
            a, b = quick.get(arg), full.get(arg)
            if arg == "--samples" or a == b:
                continue
            for v in (a, b):  # a value a preset sets, written into the method by hand, would be wrong in the other
                if v and re.fullmatch(r"[\d.,:x+]+[KMG]?", v) and (len(v) > 1 or not v.isdigit()):
                    raw = re.sub(r"\{(arg|param):[^}]*\}", "", p.methodology)  # the text outside the fields
                    assert not re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", raw), (p.name, arg, v)
            fld = re.search(r"\{arg:" + re.escape(arg) + r"[=|}][^}]*\}?", p.methodology)
            if fld:  # (a probe absent from a preset does not run in it)
                shown = {pr: method_text(fld.group(0), p.presets[pr]) for pr in ("quick", "full") if pr in p.presets}
                for pr in shown:
                    assert shown[pr] in texts[pr], (p.name, pr, shown[pr])
                if len(shown) == 2:
                    assert shown["quick"] != shown["full"], (p.name, arg, shown)  # each preset says its own
    # the cases
    probes = {p.name: p for p in registry.PROBES}
    assert "up to 4, each read their own 8M file" in probes["fs.contention"].method_text("quick")
    assert "up to 8, each read their own 32M file" in probes["fs.contention"].method_text("full")
    assert "in 5 processes of 0.5 s each" in probes["sched.timer"].method_text("quick", {"processes": 5})
    assert "in 5 processes of 12 s each" in probes["sched.timer"].method_text("full", {"processes": 5})
    assert "(128 MiB in this run)" in probes["mem.lat"].method_text("quick", {"max": 134217728})


def test_the_report_s_method_text_comes_from_the_run(quick_run):
    run, doc = quick_run
    r = osmeter("report", str(run), "--no-pdf")
    assert r.returncode == 0, r.stderr
    tex = (run / "report" / "report.tex").read_text()
    assert "{arg:" not in tex and "{param:" not in tex and r"\{arg:" not in tex
    curve = next(m for m in doc["measurements"] if m["id"] == "mem.lat.curve")
    from osmeter.present.values import fmt_value
    assert esc(f"({fmt_value(curve['params']['max'], 'bytes')} in this run)") in tex


def test_a_tail_plot_marks_only_the_quantiles_its_curves_reach():
    """The tail ECDF labels p50, p99 and p99.9 on its right edge: with 120
    events the rarest fraction drawn is 1/240, so p99.9 (1e-3) is below
    every curve and neither its line nor its label may be drawn (the label
    used to sit under the axes); with 20,000 events all three are. Mutant:
    every quantile marked whatever the curves reach."""
    from osmeter.present import plots

    rng = np.random.default_rng(3)
    for n, want in ((120, ["p50", "p99"]), (20_000, ["p50", "p99", "p99.9"])):
        doc = {"measurements": [{"id": "x.lat", "unit": "ns", "median": 1.0, "tail": {"p50": 1.0}}]}
        fig = plots.latency_ecdf(doc, ["x.lat"], lambda i: rng.lognormal(8, 0.5, n))
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.texts] == want, n
        lo, hi = ax.get_ylim()
        assert lo <= 0.5 / n and hi == 1.0
        plots.plt.close(fig)


# --- between runs: the smallest detectable change of a campaign's run (issue 44) -------------

# planted run-to-run spreads (the log deviation of each run's figure, times the id's CV): the
# steady one below compare's 1% floor, cpu.clocked's runs spread by their core clock alone
BETWEEN_DEV = np.array([-1.2, 0.9, -0.3, 1.4, -0.8])
BETWEEN_CV = {"cpu.steady": 0.003, "net.mid": 0.02, "mem.flat": 0.012, "cpu.loose": 0.04, "cpu.wild": 0.2}
BETWEEN_CLOCKS = [4000.0, 4450.0, 3650.0, 4300.0, 3900.0]


def _between_campaign(path: Path, runs: int = len(BETWEEN_DEV)) -> Path:
    """A campaign of `runs` synthetic runs, each id's samples all at its run's level (the run figure),
    cpu.clocked at 100 ns x 4,000 MHz / the run's clock (its processes' clock in interference.core_mhz)."""
    import json

    from osmeter.results.writer import write_json_atomic

    path.mkdir(parents=True)
    doc = {"schema": "osmeter-campaign/1", "runs": [], "seed": 1}
    for k in range(runs):
        d = path / f"run-{k + 1:02d}"
        res = Results(d, {"hostname": "h", "kernel": "6.1"}, {"preset": "quick", "thp": "madvise"})
        for mid, cv in BETWEEN_CV.items():
            unit = "MB/s" if mid.startswith("net.") else "ns"
            res.add_line({"id": mid, "unit": unit, "samples": [100 * math.exp(cv * BETWEEN_DEV[k])] * 9,
                          "params": {}}, "fake", mid)
        res.add_line({"id": "cpu.clocked", "unit": "ns", "samples": [100 * 4000 / BETWEEN_CLOCKS[k]] * 9,
                      "params": {}}, "cpu.call", "cpu.clocked")
        res.doc["interference"] = {"core_mhz": {"cpu.call": [[BETWEEN_CLOCKS[k], BETWEEN_CLOCKS[k] + 5]]}}
        res.doc["complete"] = True
        res.save()
        doc["runs"].append({"name": d.name, "status": "complete"})
    (path / "campaign.json").write_text(json.dumps(doc))
    return path


def _between_expected() -> list[tuple[str, float, float, int]]:
    """(id, run-to-run CV, the spread compare's test sees, degrees of freedom the clock costs), in
    the order of the smallest detectable change at 4 runs a side."""
    from osmeter.analysis.model import RUN_SD_FLOOR
    from osmeter.core.inference import smallest_change_at

    rows = [(mid, float(np.std(cv * BETWEEN_DEV, ddof=1)), max(float(np.std(cv * BETWEEN_DEV, ddof=1)), RUN_SD_FLOOR),
             0) for mid, cv in BETWEEN_CV.items()]
    raw = float(np.std(np.log(100 * 4000 / np.array(BETWEEN_CLOCKS)), ddof=1))
    rows.append(("cpu.clocked", raw, RUN_SD_FLOOR, 1))  # all of it the clock's: at equal clock, the floor
    return sorted(rows, key=lambda r: (smallest_change_at(r[2], 4, lost_df=r[3]), r[0]))


def _between_table(tex: str) -> list[list[str]]:
    part = tex.split(r"\subsection{Between runs}", 1)[1].split(r"\end{longtable}", 1)[0]
    body = part.split(r"\endhead", 1)[1]
    return [ln.removesuffix(r" \\").split(" & ") for ln in body.splitlines() if " & " in ln]


def test_a_campaign_runs_report_states_each_ids_smallest_detectable_change(tmp_path):
    """The report of one run of a campaign gains 'Between runs' in its
    stability section: the campaign's run count and the method from its
    parameters, a table of every id sorted by its smallest detectable change
    at 4 runs a side, each value smallest_change_at of its run-to-run CV (at
    least compare's floor; at equal clock where every run has its clock, a
    degree of freedom fewer), and the figure. The planted order differs from
    the ids' and from their run CVs' (cpu.clocked spreads by 10% as measured,
    not at all at equal clock). A run of no campaign, or of a campaign of one
    run, has none of it. Mutants caught: sorted by the run CV; shown for a
    campaign of one run, and for a run of none; the 8-run column from the
    4-run values; the ids counted as the runs."""
    from osmeter.analysis.model import ALPHA, POWER, RUN_SD_FLOOR
    from osmeter.core.inference import runs_to_decide, smallest_change_at

    camp = _between_campaign(tmp_path / "camp")
    r = osmeter("report", str(camp / "run-02"))
    assert r.returncode == 0, r.stderr
    out = camp / "run-02" / "report"
    tex = (out / "report.tex").read_text()
    assert tex.count(r"\subsection{Between runs}") == 1
    section = tex.split(r"\section{How stable the figures are}", 1)[1]
    assert r"\subsection{Between runs}" in section  # inside the stability section
    assert f"Over the {len(BETWEEN_DEV)} runs of the campaign" in section
    assert esc(f"decide {POWER:.0%} of the time at alpha {ALPHA:g}") in section
    want = _between_expected()
    rows = _between_table(tex)
    assert [c[0] for c in rows] == [esc(w[0]) for w in want], rows
    assert [w[0] for w in want] != sorted(w[0] for w in want)  # neither alphabetical ...
    assert [w[0] for w in want] != [w[0] for w in sorted(want, key=lambda w: w[1])]  # ... nor by run CV
    pct = lambda v: esc(f"{v:.1%}")  # noqa: E731
    for cells, (mid, cv, sd, lost) in zip(rows, want):
        assert len(cells) == 7, cells
        assert cells[1] == pct(cv), (mid, cells)
        assert cells[4:6] == [pct(smallest_change_at(sd, n, lost_df=lost)) for n in (4, 8)], (mid, cells)
        assert cells[6] == cell(str(runs_to_decide(0.05, sd, lost_df=lost) or ">200")), (mid, cells)
        assert (cells[2] == "-") == (mid != "cpu.clocked"), cells
        if lost == 0:  # the clock unknown: from the run CV, at least the floor
            assert cells[4] == pct(smallest_change_at(max(cv, RUN_SD_FLOOR), 4))
    assert esc("(clock 100%)") in dict((c[0], c[2]) for c in rows)[esc("cpu.clocked")]
    assert r"\includegraphics{figures/stability-0.pdf}" in section
    pdf = (out / "figures" / "stability-0.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    if shutil.which("pdflatex") and shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"], capture_output=True,
                              text=True, check=True).stdout
        assert "Between runs" in text and "Smallest detectable change" not in text.split("Between runs")[0]
    # a run of no campaign, and the one run of a campaign: nothing of it
    shutil.copytree(camp / "run-01", tmp_path / "lone", ignore=shutil.ignore_patterns("report"))
    one = _between_campaign(tmp_path / "one", runs=1)
    for run in (tmp_path / "lone", one / "run-01"):
        r = osmeter("report", str(run), "--no-pdf")
        assert r.returncode == 0, r.stderr
        tex = (run / "report" / "report.tex").read_text()
        assert "Between runs" not in tex and "detectable" not in tex, run
        assert not list((run / "report" / "figures").glob("stability-*")), run


def test_the_detectable_change_figure_draws_each_design_and_splits_many_ids():
    """plots.detectable_changes: per id its change at 4 and at 8 runs a side,
    in the rows' order, on a log axis, the 5% line; 130 ids are split into
    figures of at most DETECTABLE_PER_FIGURE, every id once, each figure at
    the text width and shorter than a page. Mutants caught: the 8-run
    markers drawn from the 4-run values; every id in one tall figure."""
    from osmeter.present import plots
    from osmeter.core.inference import smallest_change_at

    rng = np.random.default_rng(4)
    sds = np.sort(np.exp(rng.uniform(np.log(0.005), np.log(0.3), 130)))
    rows = [{"id": f"x.id{k:03d}", "detectable": {n: smallest_change_at(sd, n) for n in (4, 8)}}
            for k, sd in enumerate(sds)]
    rows[-1]["detectable"] = {4: float("nan"), 8: float("nan")}  # not known: named, not drawn
    figs = plots.detectable_changes(rows, (4, 8), 0.05)
    assert 3 <= len(figs) <= 4
    labels, fours, eights = [], [], []
    for fig in figs:
        ax = fig.axes[0]
        w, h = fig.get_size_inches()
        assert w == plots.TEXT_WIDTH_IN and h <= 9.0, (w, h)
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        assert len(ticks) <= plots.DETECTABLE_PER_FIGURE
        labels += ticks
        four, eight = ax.lines[0], ax.lines[1]
        assert four.get_label() == "4 runs a side" and eight.get_label() == "8 runs a side"
        order = {y: k for k, y in enumerate(sorted(ax.get_yticks(), reverse=True))}  # top row first
        fours += [x for _, x in sorted(zip(four.get_ydata(), four.get_xdata()), key=lambda p: order[p[0]])]
        eights += [x for _, x in sorted(zip(eight.get_ydata(), eight.get_xdata()), key=lambda p: order[p[0]])]
        assert ax.get_xscale() == "log"
        assert any(list(ln.get_xdata()) == [0.05, 0.05] for ln in ax.lines)  # the 5% line
        plots.plt.close(fig)
    assert labels == [r["id"] for r in rows]
    assert fours == pytest.approx([r["detectable"][4] for r in rows[:-1]])
    assert eights == pytest.approx([r["detectable"][8] for r in rows[:-1]])
    assert plots.detectable_changes([], (4, 8), 0.05) == []


def test_the_notebook_of_a_campaigns_run_shows_the_between_runs_table(tmp_path):
    """The notebook executed into a run of a campaign shows the report's
    between-runs table (ids in the order of their detectable change) and
    its figure; for a run of no campaign, neither. Mutant caught: the
    notebook's table in the ids' order."""
    import nbformat

    from osmeter.report import notebook

    camp = _between_campaign(tmp_path / "camp")
    ok, msg = notebook.execute(camp / "run-03", None, ROOT)
    assert ok, msg
    nb = nbformat.read(camp / "run-03" / "notebook.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "between_runs" in c.source)
    md = "".join(o.get("data", {}).get("text/markdown", "") for o in cell.outputs)
    assert f"Over the {len(BETWEEN_DEV)} runs of the campaign" in md
    rows = [ln.split(" | ")[0].removeprefix("| ") for ln in md.splitlines() if ln.startswith("| ")][1:]
    assert [r.replace("\\", "") for r in rows] == [w[0] for w in _between_expected()], md
    assert sum("image/png" in o.get("data", {}) for o in cell.outputs) == 1
    shutil.copytree(camp / "run-01", tmp_path / "lone", ignore=shutil.ignore_patterns("notebook.*"))
    assert notebook.between_runs(tmp_path / "lone") == ("", [])


def tiny_run(d: Path) -> Path:
    r = Results(d, {"kernel": "6.1", "cpu_model": "X"}, {"pinned_cpu": 1})
    r.add_line({"id": "cpu.syscall.getppid", "unit": "ns", "samples": [100.0, 101.0] * 5, "disturbed": []}, "fake",
               "x")
    r.save()
    return d


def left(marker: str) -> list[str]:
    """Processes whose command line holds marker, on this machine."""
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "pgrep" not in ln]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("tc") or not shutil.which("unshare"),
                    reason="a network namespace with a shaped loopback needs root, tc and unshare")
def test_a_shaped_loopback_does_not_reach_the_notebooks_kernel(tmp_path):
    """In a network namespace whose loopback is shaped as a before/after
    user shapes it (tbf 2 mbit, burst 1600: TCP's large segments on lo
    never pass), `notebook --execute` runs every cell: the kernel talks over
    Unix sockets. Mutant caught (slow: a minute): the kernel on TCP."""
    d = tiny_run(tmp_path / "run")
    shaped = ("ip link set lo up && tc qdisc replace dev lo root tbf rate 2mbit burst 1600 latency 100ms && "
              f'exec "{ROOT}/osmeter" notebook "{d}" --execute')
    r = subprocess.run(["unshare", "-n", "sh", "-c", shaped], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OSMETER_NOTEBOOK_TIMEOUT="60"))
    assert r.returncode == 0 and "notebook.ipynb" in r.stdout, r.stdout + r.stderr
    import nbformat
    nb = nbformat.read(d / "notebook.ipynb", as_version=4)
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")


def test_a_notebook_that_cannot_run_does_not_fail_the_run_or_leave_a_kernel(tmp_path):
    """A kernel that never answers (a python3 kernelspec first on
    JUPYTER_PATH whose kernel is a sleep; OSMETER_NOTEBOOK_TIMEOUT=1):
    `notebook --execute` exits 1 with one line and no traceback (nbclient's
    clean-up at exit failed on it), the kernel is not left running, and a
    run whose measurements are complete exits 0, saying how to make the
    notebook again. Mutants caught: the clean-up left registered; the run
    failed by its notebook."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    marker = "4321.5"
    spec.joinpath("kernel.json").write_text(json.dumps({"argv": ["sh", "-c", f"exec sleep {marker}", "--"], "display_name": "mute",
                                                        "language": "python"}))
    env = dict(os.environ, OSMETER_NOTEBOOK_TIMEOUT="1", JUPYTER_PATH=str(tmp_path / "jupyter"))
    d = tiny_run(tmp_path / "run")
    r = osmeter("notebook", str(d), "--execute", env=env)
    assert r.returncode == 1 and "the notebook failed" in r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    out = tmp_path / "measured"
    r = osmeter("run", "--probes", "cpu.syscall.getppid", "--out", str(out), "--no-history", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the notebook failed" in r.stderr and f"./osmeter notebook {out} --execute" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    assert (out / "report" / "report.tex").is_file() and (out / "notebook.ipynb").is_file()
    time.sleep(0.5)
    assert left(f"sleep {marker}") == []
    r = osmeter("notebook", str(d), "--execute", env=dict(os.environ, OSMETER_NOTEBOOK_TIMEOUT="0.5"))
    assert r.returncode == 2 and "OSMETER_NOTEBOOK_TIMEOUT" in r.stderr, r.stderr
