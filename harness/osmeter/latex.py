"""The LaTeX report: report/report.tex filled from a results directory and
an estimates file; figures from plots.py; PDF with latexmk or pdflatex.
The rows come from present.py, as for every other output."""
from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path

from . import plots, registry
from .estimates import Estimate
from .present import (ESTIMATE_HEAD, SPREAD_HEAD, cell, esc, estimate_rows, interference_rows,  # noqa: F401
                      machine_rows, spread_rows, tex_file_name)
from .results import kept_samples, load

def _machine(doc: dict) -> str:
    out = [r"\begin{tabular}{@{}lp{0.72\linewidth}@{}}", r"\toprule"]
    out += [f"{esc(k)} & {esc(v)} \\\\" for k, v in machine_rows(doc)]
    out += [r"\bottomrule", r"\end{tabular}"]
    if doc.get("interrupted"):
        out.append(r"\par\textbf{This run was interrupted: only the probes that finished are reported.}")
    return "\n".join(out)


def _table(ms: list[dict], est: dict[str, Estimate], curves: set[str]) -> str:
    rows = estimate_rows(ms, est, curves)
    if not rows:
        return ""
    out = [r"{\small\setlength{\tabcolsep}{4pt}\begin{longtable}{@{}lrrrrrrr@{}}", r"\toprule",
           " & ".join(esc(h) for h in ESTIMATE_HEAD) + r" \\", r"\midrule", r"\endhead"]
    out += [" & ".join(cell(c) for c in r.cells()) + r" \\" for r in rows]
    out += [r"\bottomrule", r"\end{longtable}}"]
    notes = [(r.id, r.est.note) for r in rows if r.est and r.est.note]
    notes += [(r.id, r.error_note) for r in rows if r.est and r.error_note]
    if notes:  # the reasoning behind each estimate, and why an error is missing
        out += [r"{\small\begin{description}"] + [f"\\item[{esc(i)}] {esc(n)}" for i, n in notes]
        out += [r"\end{description}}"]
    return "\n".join(out)


def _summary(doc: dict, est: dict[str, Estimate], curves: set[str]) -> str:
    two = lambda a, b: f"\\begin{{tabular}}[b]{{@{{}}c@{{}}}}{a}\\\\{b}\\end{{tabular}}"  # noqa: E731
    out = [r"{\small", r"\begin{longtable}{@{}lrrrr@{}}", r"\toprule",
           " & ".join(["Operation", two("Base Hardware", "Performance"), two("Estimated Software", "Overhead"),
                       two("Predicted", "Time"), two("Measured", "Time")]) + r" \\",
           r"\midrule", r"\endhead"]
    for r in estimate_rows(doc["measurements"], est, curves):
        c = r.cells()
        out.append(" & ".join(cell(x) for x in (c[0], c[1], c[2], c[3], c[4])) + r" \\")
    out += [r"\bottomrule", r"\end{longtable}}",
            "Times in ns, us, ms or s; bandwidth in MB/s ($10^6$ bytes/s); I/O rates in IOPS; metadata rates in "
            "files/s; sizes in bytes. A rate's hardware and software estimates are times per unit (ns per byte, "
            "us per I/O, us per file), which add up; the predicted rate is their sum turned back into a rate. "
            "Measured is the median across trials; $\\geq$ marks a lower bound (a search stopped by a limit)."]
    return "\n".join(out)


def _stability(doc: dict, curves: set[str]) -> str:
    """How stable each figure is inside this run: the spread of samples in
    a process against the spread of its processes, and what else used the
    measuring CPU."""
    rows = spread_rows(doc, curves)  # a curve's spread is drawn in its figure, not set in a table
    inter = interference_rows(doc)
    if not rows and not inter:
        return ""
    out = [r"\section{How stable the figures are}",
           "Each probe that takes samples ran in several processes, interleaved with the other probes; a "
           "fresh process can land on another of the machine's levels (address layout, physical pages). "
           "Below, per id, the spread of the samples inside one process and the spread of the processes' "
           "medians, each the standard deviation of the logarithms (about a coefficient of variation), and "
           "which of the two weighs more on the run's figure, the median of the processes' medians. A "
           "figure moves between runs by at least its between-processes spread; \\texttt{osmeter run -{}-runs N} "
           "measures the spread between runs as well (stability.txt)."]
    if inter:
        out += [r"\paragraph{Interference.} What else used the pinned CPU during this run.", "",
                r"\begin{tabular}{@{}ll@{}}", r"\toprule"]
        out += [f"{esc(k)} & {esc(v)} \\\\" for k, v in inter]
        out += [r"\bottomrule", r"\end{tabular}", ""]
    if rows:
        out += [r"{\small\begin{longtable}{@{}lrrrrl@{}}", r"\toprule",
                " & ".join(esc(h) for h in SPREAD_HEAD) + r" \\", r"\midrule", r"\endhead"]
        out += [" & ".join(esc(c) for c in r) + r" \\" for r in rows]
        out += [r"\bottomrule", r"\end{longtable}}"]
    return "\n".join(out)


def _section(area: registry.Area, probes: list[registry.Probe], doc: dict, est: dict[str, Estimate],
             figdir: Path, run_dir: Path) -> str:
    by_id = {m["id"]: m for m in doc["measurements"]}
    curves = {m.id for p in probes for m in p.measures if m.curve}
    body = [f"\\section{{{esc(area.title)}}}"]
    shared_done = set()
    for p in probes:
        if p.shared_method and p.shared_method not in shared_done:
            shared_done.add(p.shared_method)
            users = [q.name for q in probes if q.shared_method == p.shared_method]
            body += [r"\paragraph{Method" + (f" of {esc(', '.join(users))}" if len(users) > 1 else "") + ".} "
                     + esc(p.shared_method), ""]
        ms = [by_id[i] for i in p.ids() if i in by_id]
        drawn = [m["id"] for m in ms if m["id"] in curves]
        body += [f"\\subsection{{{esc(p.name)}}}", esc(p.methodology) if p.methodology else "", ""]
        if drawn:
            body += [f"{esc(', '.join(drawn))}: a curve, drawn in this section's figures rather than set "
                     "against one estimate.", ""]
        body.append(_table(ms, est, curves))
    figures = [lambda fn=fn: fn(doc, est) for fn in plots.FIGURES.get(area.name, ())]
    ids = [i for p in probes for i in p.ids()]
    figures.append(lambda: plots.latency_ecdf(doc, ids, lambda i: kept_samples(run_dir, by_id[i])))
    for k, make in enumerate(figures):
        fig = make()
        if fig is None:
            continue
        name = f"{area.name}-{k}.pdf"
        fig.savefig(figdir / name, bbox_inches="tight")
        plots.plt.close(fig)
        # a square figure (the c2c matrix) is held to under half a page
        size = r"width=0.9\linewidth,height=0.42\textheight,keepaspectratio"
        body += [r"\begin{figure}[H]\centering", f"\\includegraphics[{size}]{{figures/{name}}}",
                 r"\end{figure}"]
    return "\n".join(body)


def write_report(run_dir: Path, est: dict[str, Estimate], root: Path) -> Path:
    doc = load(run_dir)
    out = run_dir / "report"
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    by_id = {m["id"] for m in doc["measurements"]}
    sections = []
    for area in registry.AREAS:
        probes = [p for p in registry.PROBES if p.area == area.name and any(i in by_id for i in p.ids())]
        if probes:
            sections.append(_section(area, probes, doc, est, figdir, run_dir))
    curves = {m.id for _, m in registry.all_measures() if m.curve}
    host = doc["machine"].get("hostname", "")
    return fill(root, "report.tex", out / "report.tex", {
        "TITLE": esc(f"osmeter: {host}"),
        "DATE": esc(doc["conditions"].get("started_utc") or dt.date.today().isoformat()),
        "MACHINE": _machine(doc), "SECTIONS": "\n\n".join(sections + [_stability(doc, curves)]),
        "SUMMARY": _summary(doc, est, curves)})


def fill(root: Path, template: str, path: Path, fields: dict[str, str]) -> Path:
    """report/<template> with its <<FIELD>> markers (and the shared preamble) filled, written to path."""
    fields = {"PREAMBLE": (root / "report" / "preamble.tex").read_text(), **fields}
    tex = (root / "report" / template).read_text()
    path.write_text(re.sub(r"<<([A-Z]+)>>", lambda mo: fields[mo.group(1)], tex))
    return path


def write_compare(c, tex: Path, root: Path) -> Path:
    """A document of its own for `osmeter compare --tex FILE`: the
    before/after section, its figures in FILE's directory."""
    from .compare import to_latex

    figdir = tex.parent / f"{tex_file_name(tex.stem)}-figures"
    body = to_latex(c, figdir, prefix=tex_file_name(tex.stem))
    return fill(root, "compare.tex", tex, {"TITLE": "osmeter: before and after",
                                           "DATE": esc(dt.date.today().isoformat()), "BODY": body})


def write_fleet(fleet_dir: Path, root: Path, baseline: str | None = None) -> Path:
    """`osmeter report FLEETDIR`: FLEETDIR/fleet.tex, the Fleet section (hosts,
    steps, a figure of every host against the baseline, the table, the
    conditions that differ)."""
    from .fleetcompare import compare_fleet, to_latex

    fc = compare_fleet(fleet_dir, baseline)
    tex = fleet_dir / "fleet.tex"
    body = to_latex(fc, fleet_dir / "fleet-figures")
    return fill(root, "compare.tex", tex, {"TITLE": "osmeter: fleet", "DATE": esc(dt.date.today().isoformat()),
                                           "BODY": body})


LATEX_HINT = ("LaTeX is not installed; the .tex is ready. To get the PDF: sudo apt-get install texlive-latex-base "
              "texlive-latex-recommended texlive-fonts-recommended, then ./osmeter report DIR")


def latex_installed() -> bool:
    return bool(shutil.which("latexmk") or shutil.which("pdflatex"))


def build_pdf(tex: Path) -> tuple[Path | None, str]:
    """(pdf, message). Uses latexmk, else pdflatex twice (longtable widths)."""
    cwd = tex.parent
    if shutil.which("latexmk"):
        cmds = [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", tex.name]]
    elif shutil.which("pdflatex"):
        cmds = [["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name]] * 2
    else:
        return None, f"no PDF: {LATEX_HINT}"
    for cmd in cmds:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            log = (cwd / tex.with_suffix(".log").name)
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else r.stdout[-1500:]
            return None, f"LaTeX failed on {tex}:\n{tail}"
    return tex.with_suffix(".pdf"), f"PDF: {tex.with_suffix('.pdf')}"
