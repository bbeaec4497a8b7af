"""The LaTeX report: report/report.tex filled from a results directory and
an estimates file; each area's figures from its module (Area.figures, from
probes/areas/<area>.py), the shared ones from plots.py; PDF with latexmk or pdflatex.
The rows come from present/rows.py, as for every other output."""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from osmeter.present import plots
from osmeter.present.rows import (KERNEL_HEAD, KERNEL_NOTE, LMBENCH_HEAD, QUOTES, REPORT_HEAD, SPREAD_HEAD,
                                  estimate_rows, interference_rows, known, lmbench_rows, machine_rows, spread_rows,
                                  traced)
from osmeter.present.latexdoc import fill
from osmeter.present.values import cell, esc
from osmeter.probes import registry
from osmeter.report.estimates import Estimate, EstimateError, Source, for_run
from osmeter.results import store
from osmeter.results.store import kept_samples, load
from osmeter.results.writer import save_figure


def _machine(doc: dict) -> str:
    out = [r"\begin{longtable}{@{}p{0.2\linewidth}p{0.76\linewidth}@{}}", r"\toprule"]
    out += [f"{esc(k)} & {esc(v)} \\\\" for k, v in machine_rows(doc)]
    out += [r"\bottomrule", r"\end{longtable}"]
    if doc.get("interrupted"):
        out.append(r"\par\textbf{This run was interrupted: only the probes that finished are reported.}")
    return "\n".join(out)


ERROR_FOOTNOTE = (r"Error $=$ (measured $-$ predicted) / predicted, of the quoted figure (the {quote} across "
                  r"trials); for a rate, of the rate. A lower bound ($\geq$) is compared only where it already "
                  r"exceeds the prediction.")


def _table(ms: list[dict], est: dict[str, Estimate], curves: set[str], quote: str) -> str:
    rows = estimate_rows(ms, est, curves, quote)
    if not rows:
        return ""
    kernel = traced(rows)
    head = REPORT_HEAD + ((KERNEL_HEAD,) if kernel else ())
    out = [r"{\footnotesize\setlength{\tabcolsep}{3pt}\begin{longtable}{@{}p{0.22\linewidth}lrrrrrrrr"
           + ("r" if kernel else "") + "@{}}",
           r"\toprule", " & ".join(esc(h) for h in head) + r" \\", r"\midrule", r"\endhead"]
    out += [" & ".join(cell(c) for c in r.report_cells() + ((r.kernel_cell(),) if kernel else ())) + r" \\"
            for r in rows]
    out += [r"\bottomrule", r"\end{longtable}}"]
    if kernel:
        out += [r"{\small " + esc(KERNEL_NOTE) + "}"]
    notes = []
    seen = set()
    for r in rows:  # the reasoning behind each estimate, once per text, and why an error is missing
        e = est.get(r.id)
        for text in ((e.note if e else ""), (r.error_note if r.est else "")):
            if text and text not in seen:
                seen.add(text)
                notes.append((r.id, text))
    if notes:
        out += [r"{\small\begin{description}"] + [f"\\item[{esc(i)}] {esc(n)}" for i, n in notes]
        out += [r"\end{description}}"]
    return "\n".join(out)


def _figure(fig, figdir: Path, name: str, caption: str) -> list[str]:
    """A numbered figure at its drawn size (plots.TEXT_WIDTH_IN wide: one
    font size on every page), its caption under it."""
    save_figure(fig, figdir / name)
    plots.plt.close(fig)
    return [r"\begin{figure}[htbp]\centering", f"\\includegraphics{{{store.FIGURES}/{name}}}",
            f"\\caption{{{esc(caption)}}}", r"\end{figure}"]


def _summary(doc: dict, est: dict[str, Estimate], curves: set[str], quote: str) -> str:
    """CSE 221's five columns and a unit: times in one table, rates and
    sizes (whose figures are not times) in a second."""
    two = lambda a, b: f"\\begin{{tabular}}[b]{{@{{}}c@{{}}}}{a}\\\\{b}\\end{{tabular}}"  # noqa: E731
    rows = estimate_rows(doc["measurements"], est, curves, quote)
    times = [r for r in rows if r.unit == "ns"]
    others = [r for r in rows if r.unit != "ns"]
    out = [r"{\small"]
    for part, head in ((times, ("Base Hardware", "Performance", "Estimated Software", "Overhead", "Predicted",
                                "Time", "Measured", f"Time ({quote})")),
                       (others, ("Base Hardware", "Performance", "Estimated Software", "Overhead", "Predicted",
                                 "", "Measured", f"({quote})"))):
        if not part:
            continue
        out += [r"\begin{longtable}{@{}p{0.34\linewidth}lrrrr@{}}", r"\toprule",
                " & ".join(["Operation", "Unit", two(head[0], head[1]), two(head[2], head[3]), two(head[4], head[5]),
                            two(head[6], head[7])]) + r" \\", r"\midrule", r"\endhead"]
        for r in part:
            c = r.report_cells()
            measured = c[5].split(" ± ")[0] if quote == "mean" else c[6]
            out.append(" & ".join(cell(x) for x in (c[0], c[1], c[2], c[3], c[4], measured)) + r" \\")
        out += [r"\bottomrule", r"\end{longtable}"]
    out += [r"}", "Each row is in the unit of its unit column (a rate's hardware and software estimates are times "
            "per unit, which add up, and say their unit; the predicted rate is their sum turned back into a "
            f"rate). Measured is the {quote} across trials; $\\geq$ marks a lower bound (a search stopped by a "
            "limit)."]
    return "\n".join(out)


def _lmbench(doc: dict, quote: str) -> str:
    """lmbench's summary tables, in its order and groups, each row's figure
    the osmeter id that stands for it: the figures to copy into a paper."""
    out = [f"The rows of lmbench's summary (\\texttt{{make see}}), in its tables and order, each measured by "
           f"the osmeter id beside it (the {esc(quote)} across trials; \\texttt{{osmeter list --lmbench}} lists "
           "them). Where osmeter's method differs from lmbench's, the id's methodology says how.",
           r"{\small\begin{longtable}{@{}p{0.22\linewidth}rp{0.5\linewidth}@{}}", r"\toprule",
           " & ".join(esc(h) for h in LMBENCH_HEAD) + r" \\", r"\midrule", r"\endhead"]
    for title, unit, rows in lmbench_rows(doc, quote):
        out.append(f"\\multicolumn{{3}}{{@{{}}l}}{{\\textbf{{{esc(title)}}}{esc(f' ({unit})' if unit else '')}}} \\\\")
        out += [" & ".join(cell(c) for c in r) + r" \\" for r in rows]
    out += [r"\bottomrule", r"\end{longtable}}"]
    return "\n".join(out)


def _intro(doc: dict, source: Source, quote: str) -> str:
    c = doc.get("conditions", {})
    n = len(doc.get("measurements", []))
    return "\n".join([
        f"This report characterizes the machine below: {n} measurements of its CPU and operating system, memory, "
        "disk, network and file system, each set against an estimate made before measuring (the hardware's base "
        "cost, the software overhead on top of it, and their sum as the prediction).",
        "",
        r"\paragraph{Estimates.} " + esc(source.describe()) + ".",
        "",
        r"\paragraph{Method.} Small C programs measure; each is pinned to CPU "
        f"{esc(known(c.get('pinned_cpu'), 'none'))}"
        + (f" at {esc(c['scheduler']['policy'])}" if (c.get("scheduler") or {}).get("policy") else "")
        + ", warms up, and times batches of operations inside a fenced time-stamp-counter window whose own cost "
        "is measured and subtracted (single operations such as fork are timed one at a time). Every probe that "
        "takes samples runs in several processes, interleaved with the other probes, and a sample during which "
        "the thread moved to another CPU or was switched out is dropped and counted. Each section gives, per "
        "operation, its method, the estimate, and the measurement: the mean and standard deviation across "
        "trials, the median, the 99th percentile where enough samples support it, the number of trials, and the "
        r"error\footnote{" + ERROR_FOOTNOTE.format(quote=quote) + "}.",
        "",
        r"\subsection{Machine and conditions}",
        _machine(doc),
    ])


def _findings(doc: dict, est: dict[str, Estimate], curves: set[str], quote: str, most: int = 10) -> str:
    """The student's discussion per id, and the largest misses listed
    from the run (each with its discussion, or a prompt for one)."""
    rows = [r for r in estimate_rows(doc["measurements"], est, curves, quote)]
    missed = sorted((r for r in rows if r.error is not None), key=lambda r: -abs(r.error))[:most]
    out = []
    if missed:
        out += [f"The {len(missed)} largest misses between prediction and measurement, largest first:", "",
                r"{\small\begin{longtable}{@{}p{0.3\linewidth}rrrp{0.3\linewidth}@{}}", r"\toprule",
                r"Operation & Predicted & Measured & Error & Discussed \\", r"\midrule", r"\endhead"]
        for r in missed:
            c = r.report_cells()
            e = est.get(r.id)
            said = "below" if e and e.discussion else "not yet"
            measured = c[5].split(" ± ")[0] if quote == "mean" else c[6]
            out.append(" & ".join(cell(x) for x in (r.id, f"{c[4]} {c[1]}", f"{measured} {c[1]}", c[9], said))
                       + r" \\")
        out += [r"\bottomrule", r"\end{longtable}}"]
    discussed = [(i, e) for i, e in est.items() if e.discussion]
    if discussed:
        out += [r"\subsection*{Discussion}"]
        out += [f"\\paragraph{{{esc(i)}.}} {esc(e.discussion)}" for i, e in discussed]
    elif missed:
        out += ["", "No discussion was given yet: each id's \\texttt{discussion} field in the estimates file is "
                "the place to explain a miss (what the estimate left out, and the experiment that shows it)."]
    if not out:
        out = ["No estimates were given, so there is no miss to discuss; \\texttt{osmeter estimates init} writes "
               "a file to fill in."]
    return "\n".join(out)


REFERENCES = r"""\begin{thebibliography}{9}
\bibitem{lmbench} L.~McVoy and C.~Staelin. lmbench: Portable tools for performance analysis. USENIX Annual
Technical Conference, 1996.
\bibitem{kalibera} T.~Kalibera and R.~Jones. Rigorous benchmarking in reasonable time. ISMM, 2013.
\bibitem{cyclictest} The rt-tests suite's cyclictest: the method of the timer-latency measurement.
\bibitem{iometer} Iometer and its access specifications; PenguinoMeter, an Iometer-compatible benchmark for Linux.
\bibitem{spek} SPEK: a storage performance evaluation kernel module for block-level storage systems.
\bibitem{vtimers} D.~Xinidis, M.~D.~Flouris and A.~Bilas. Virtual timers: using hardware physical timers for
profiling kernel code-paths.
\end{thebibliography}"""


def _two_lines(head: str, align: str) -> str:
    """A column head set on two lines split at the space nearest its middle
    (a table of many columns within the text width); one word stays one line."""
    words = head.split(" ")
    if len(words) < 2:
        return esc(head)
    k = min(range(1, len(words)), key=lambda k: abs(len(" ".join(words[:k])) - len(" ".join(words[k:]))))
    return (f"\\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}{esc(' '.join(words[:k]))}\\\\"
            f"{esc(' '.join(words[k:]))}\\end{{tabular}}")


def _between_runs(run_dir: Path, figdir: Path) -> str:
    """The subsection of a run of a campaign of two runs or more: per id of
    the campaign's runs (stability.between_runs), the run-to-run spread and
    the smallest change a comparison of 4 or 8 runs a side would detect,
    the ids sorted by it, in a table and in figures. Empty for any other run."""
    from osmeter.analysis.model import DESIGNS
    from osmeter.analysis.stability import BETWEEN_HEAD, DETECT, between_cells, between_method, between_runs

    try:
        got = between_runs(run_dir)
    except ValueError as e:  # a damaged campaign: said, and the rest of the report kept
        return "\n".join([r"\subsection{Between runs}",
                          f"This run belongs to a campaign whose runs could not be read: {esc(e)}."])
    if got is None:
        return ""
    runs, rows = got
    out = [r"\subsection{Between runs}", esc(between_method(len(runs))), "",
           r"{\footnotesize\setlength{\tabcolsep}{3pt}\begin{longtable}{@{}p{0.26\linewidth}rrl"
           + "r" * (len(DESIGNS) + 1) + "@{}}", r"\toprule",
           " & ".join(_two_lines(h, "l" if k == 0 else "r") for k, h in enumerate(BETWEEN_HEAD)) + r" \\",
           r"\midrule", r"\endhead"]
    out += [" & ".join(cell(c) for c in r) + r" \\" for r in between_cells(rows)]
    out += [r"\bottomrule", r"\end{longtable}}"]
    figs = plots.detectable_changes(rows, DESIGNS, DETECT)
    for k, fig in enumerate(figs):
        part = f" Figure {k + 1} of {len(figs)}." if len(figs) > 1 else ""
        out += _figure(fig, figdir, f"stability-{k}.pdf",
                       f"Between runs. {plots.caption(plots.detectable_changes)} Here at "
                       f"{' and '.join(map(str, DESIGNS))} runs a side, the line at {DETECT:.0%}.{part}")
    out.append(r"\osmflushfloats")  # its figures before the references
    return "\n".join(out)


def _stability(doc: dict, curves: set[str], run_dir: Path, figdir: Path) -> str:
    """How stable each figure is inside this run: the spread of samples in
    a process against the spread of its processes, and what else used the
    measuring CPU; for a run of a campaign, the spread between its runs."""
    rows = spread_rows(doc, curves)  # a curve's spread is drawn in its figure, not set in a table
    inter = interference_rows(doc)
    between = _between_runs(run_dir, figdir)
    if not rows and not inter and not between:
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
    if between:
        out += ["", between]
    return "\n".join(out)


def _section(area: registry.Area, probes: list[registry.Probe], doc: dict, est: dict[str, Estimate],
             figdir: Path, run_dir: Path, quote: str) -> str:
    by_id = {m["id"]: m for m in doc["measurements"]}
    curves = {m.id for p in probes for m in p.measures if m.curve}
    body = [f"\\section{{{esc(area.title)}}}"]
    shared_done = set()
    for p in probes:
        ms = [by_id[i] for i in p.ids() if i in by_id]
        drawn = [m["id"] for m in ms if m["id"] in curves]
        body += [f"\\subsection{{{esc(p.name)}}}"]
        if p.shared_method and p.shared_method not in shared_done:
            shared_done.add(p.shared_method)
            users = [q.name for q in probes if q.shared_method == p.shared_method]
            body += [r"\paragraph{Method" + (f" of {esc(', '.join(users))}" if len(users) > 1 else "") + ".} "
                     + esc(p.shared_method), ""]
        params: dict = {}  # what this run's measurements of the probe recorded: the method's numbers
        for m in ms:
            for k, v in (m.get("params") or {}).items():
                params.setdefault(k, v)
        body += [esc(p.method_text(doc["conditions"].get("preset"), params)) if p.methodology else "", ""]
        if drawn:
            body += [f"{esc(', '.join(drawn))}: a curve, drawn in this section's figures rather than set "
                     "against one estimate.", ""]
        body.append(_table(ms, est, curves, quote))
    figures = [(fn, lambda fn=fn: fn(doc, est)) for fn in area.figures]
    ids = [i for p in probes for i in p.ids()]
    figures.append((plots.latency_ecdf,
                    lambda: plots.latency_ecdf(doc, ids, lambda i: kept_samples(run_dir, by_id[i]))))
    figures.append((plots.kernel_breakdown, lambda: plots.kernel_breakdown(doc, est, ids)))
    for k, (fn, make) in enumerate(figures):
        fig = make()
        if fig is not None:
            body += _figure(fig, figdir, f"{area.name}-{k}.pdf", f"{area.title}. {plots.caption(fn)}")
    body.append(r"\osmflushfloats")  # the area's figures before the next section (report/preamble.tex)
    return "\n".join(body)


def write_report(run_dir: Path, source: Source, root: Path, quote: str = "mean") -> Path:
    """report/report.tex of a results directory, with the estimates of
    `source` (none, a file, or the example) and `quote` (mean, as CSE 221
    asks, or median) as the measured figure."""
    if quote not in QUOTES:
        raise ValueError(f"--quote {quote}: expected one of {', '.join(QUOTES)}")
    doc = load(run_dir)
    try:
        est = for_run(source, doc)
    except EstimateError as e:
        raise ValueError(str(e)) from None
    out = run_dir / store.REPORT
    figdir = out / store.FIGURES
    figdir.mkdir(parents=True, exist_ok=True)
    for old in figdir.iterdir():  # an earlier report's figures (<area>-<k>.pdf) are not this one's
        if re.fullmatch(r"[a-z]+-\d+\.pdf", old.name) and old.is_file():
            old.unlink()
    by_id = {m["id"] for m in doc["measurements"]}
    sections = []
    for area in registry.AREAS:
        probes = [p for p in registry.PROBES if p.area == area.name and any(i in by_id for i in p.ids())]
        if probes:
            sections.append(_section(area, probes, doc, est, figdir, run_dir, quote))
    curves = {m.id for _, m in registry.all_measures() if m.curve}
    host = doc["machine"].get("hostname", "")
    return fill("report.tex", out / store.REPORT_TEX, root=root, fields={
        "TITLE": esc(f"osmeter: {host}"),
        "DATE": esc(doc["conditions"].get("started_utc") or dt.date.today().isoformat()),
        "INTRO": _intro(doc, source, quote), "SECTIONS": "\n\n".join(sections),
        "FINDINGS": _findings(doc, est, curves, quote), "SUMMARY": _summary(doc, est, curves, quote),
        "STABILITY": _stability(doc, curves, run_dir, figdir), "REFERENCES": REFERENCES,
        "LMBENCH": _lmbench(doc, quote)})
