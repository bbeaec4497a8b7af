"""The LaTeX report: report/report.tex filled from a results directory and
an estimates file; figures from plots.py; PDF with latexmk or pdflatex."""
from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from . import plots, registry
from .estimates import Estimate, error_pct
from .present import fmt_value
from .results import load

AREAS = (("cpu", "CPU and operating-system services"), ("mem", "Memory"), ("disk", "Disk"),
         ("net", "Network"), ("fs", "File system"))

_ESC = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def esc(s) -> str:
    """Text safe for LaTeX (names, paths, notes: anything not ours)."""
    return "".join(_ESC.get(c, c) for c in str(s))


def _fmt(v, unit):
    return esc(fmt_value(v, unit)) if v is not None else "--"


def _machine(doc: dict) -> str:
    m, c = doc["machine"], doc["conditions"]
    caches = ", ".join(f"L{x['level']} {x['type'].lower()} {x['size'] // 1024} KiB" for x in m.get("caches", [])
                       if x.get("size"))
    sched = c.get("scheduler", {})
    rows = [
        ("CPU", f"{m.get('cpu_model')} ({m.get('online_cpus')} CPUs online)"), ("Caches", caches),
        ("Memory", f"{(m.get('memory_bytes') or 0) / 2**30:.1f} GiB"), ("Kernel", m.get("kernel")),
        ("OS", m.get("os")), ("Hypervisor", m.get("hypervisor") or "none"),
        ("Disks", ", ".join(f"{d['name']} ({d['size'] / 1e9:.0f} GB)" for d in m.get("disks", []))),
        ("NICs", ", ".join(f"{n['name']} ({n['driver']})" for n in m.get("nics", []))),
        ("Pinned CPU", c.get("pinned_cpu")),
        ("Scheduler", f"{sched.get('policy')} {sched.get('priority', '')}".strip()
         + (f" ({sched['why_not_fifo']})" if sched.get("why_not_fifo") else "")),
        ("Governor / boost / SMT", f"{c.get('governor')} / {c.get('boost')} / {c.get('smt_active')}"),
        ("THP", c.get("thp")), ("Clocksource", c.get("clocksource")),
        ("Compiler", (c.get("compiler") or {}).get("cc_version")),
        ("osmeter commit", (c.get("osmeter") or {}).get("commit")),
        ("Preset, wall time", f"{c.get('preset')}, {c.get('wall_s')} s"),
    ]
    out = [r"\begin{tabular}{@{}ll@{}}", r"\toprule"]
    out += [f"{esc(k)} & {esc(v)} \\\\" for k, v in rows]
    out += [r"\bottomrule", r"\end{tabular}"]
    if doc.get("interrupted"):
        out.append(r"\par\textbf{This run was interrupted: only the probes that finished are reported.}")
    return "\n".join(out)


def _table(ms: list[dict], est: dict[str, Estimate]) -> str:
    out = [r"\begin{longtable}{@{}lrrrrrrr@{}}", r"\toprule",
           r"Measurement & HW est. & SW est. & Total est. & Measured mean & Std. dev. & $n$ & Error \\",
           r"\midrule", r"\endhead"]
    for m in ms:
        e, u = est.get(m["id"]), m["unit"]
        err = error_pct(m.get("mean"), e)
        out.append(" & ".join([
            esc(m["id"]), _fmt(e.hw if e else None, u), _fmt(e.sw if e else None, u),
            _fmt(e.total, u) if e else "no estimate", _fmt(m.get("mean"), u), _fmt(m.get("std"), u),
            str(m.get("n")), f"{err:+.0f}\\%" if err is not None else "--"]) + r" \\")
    out += [r"\bottomrule", r"\end{longtable}"]
    notes = [(m["id"], est[m["id"]].note) for m in ms if m["id"] in est and est[m["id"]].note]
    if notes:  # the reasoning behind each estimate
        out += [r"{\small\begin{description}"] + [f"\\item[{esc(i)}] {esc(n)}" for i, n in notes]
        out += [r"\end{description}}"]
    return "\n".join(out)


def _summary(doc: dict, est: dict[str, Estimate]) -> str:
    two = lambda a, b: f"\\begin{{tabular}}[b]{{@{{}}c@{{}}}}{a}\\\\{b}\\end{{tabular}}"  # noqa: E731
    out = [r"{\small", r"\begin{longtable}{@{}lrrrr@{}}", r"\toprule",
           " & ".join(["Operation", two("Base Hardware", "Performance"), two("Estimated Software", "Overhead"),
                       two("Predicted", "Time"), two("Measured", "Time")]) + r" \\",
           r"\midrule", r"\endhead"]
    for m in doc["measurements"]:
        e, u = est.get(m["id"]), m["unit"]
        out.append(" & ".join([esc(m["id"]), _fmt(e.hw if e else None, u), _fmt(e.sw if e else None, u),
                               _fmt(e.total, u) if e else "no estimate", _fmt(m.get("median"), u)]) + r" \\")
    out += [r"\bottomrule", r"\end{longtable}}",
            "Units as printed: times in ns, us, ms or s; bandwidth in MB/s ($10^6$ bytes/s); I/O rates in IOPS; "
            "metadata rates in files/s; sizes in bytes. Measured Time is the median across trials."]
    return "\n".join(out)


def write_report(run_dir: Path, est: dict[str, Estimate], root: Path) -> Path:
    doc = load(run_dir)
    out = run_dir / "report"
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    by_id = {m["id"]: m for m in doc["measurements"]}
    sections = []
    for area, title in AREAS:
        probes = [p for p in registry.PROBES if p.area == area and any(i in by_id for i in p.ids())]
        if not probes:
            continue
        body = [f"\\section{{{esc(title)}}}"]
        for p in probes:
            ms = [by_id[i] for i in p.ids() if i in by_id]
            body += [f"\\subsection{{{esc(p.name)}}}", esc(p.methodology), "", _table(ms, est)]
        for k, fn in enumerate(plots.FIGURES.get(area, ())):
            fig = fn(doc, est)
            if fig is None:
                continue
            name = f"{area}-{k}.pdf"
            fig.savefig(figdir / name, bbox_inches="tight")
            plots.plt.close(fig)
            body += [r"\begin{figure}[H]\centering", f"\\includegraphics[width=0.9\\linewidth]{{figures/{name}}}",
                     r"\end{figure}"]
        sections.append("\n".join(body))
    host = doc["machine"].get("hostname", "")
    return fill(root, "report.tex", out / "report.tex", {
        "TITLE": esc(f"osmeter: {host}"),
        "DATE": esc(doc["conditions"].get("started_utc") or dt.date.today().isoformat()),
        "MACHINE": _machine(doc), "SECTIONS": "\n\n".join(sections), "SUMMARY": _summary(doc, est)})


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

    figdir = tex.parent / f"{tex.stem}-figures"
    body = to_latex(c, figdir, prefix=tex.stem)
    return fill(root, "compare.tex", tex, {"TITLE": "osmeter: before and after",
                                           "DATE": esc(dt.date.today().isoformat()), "BODY": body})


def build_pdf(tex: Path) -> tuple[Path | None, str]:
    """(pdf, message). Uses latexmk, else pdflatex twice (longtable widths)."""
    cwd = tex.parent
    if shutil.which("latexmk"):
        cmds = [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", tex.name]]
    elif shutil.which("pdflatex"):
        cmds = [["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name]] * 2
    else:
        return None, ("no PDF: neither latexmk nor pdflatex is installed (Debian: texlive-latex-base "
                      "texlive-latex-recommended texlive-fonts-recommended); the .tex is ready")
    for cmd in cmds:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            log = (cwd / tex.with_suffix(".log").name)
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else r.stdout[-1500:]
            return None, f"LaTeX failed on {tex}:\n{tail}"
    return tex.with_suffix(".pdf"), f"PDF: {tex.with_suffix('.pdf')}"
