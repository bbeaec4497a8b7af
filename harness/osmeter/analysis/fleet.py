"""`osmeter compare FLEETDIR`: a fleet's hosts side by side, one column per
host, each as its ratio to a baseline host (--baseline, by default the
first). Every column is the two-sided comparison of analysis/compare.py
between the baseline and that host (the same tests, the same
verdicts, within-run only when each host has one run), and the conditions
that differ across the hosts are listed. `osmeter report FLEETDIR` puts it
in a document: a Fleet section with a figure."""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from osmeter.analysis import compare, outliers
from osmeter.analysis.conditions import run_facts
from osmeter.analysis.formats.latex import path_safe
from osmeter.analysis.formats.text import method_line
from osmeter.analysis.model import MIN_CHANGE, Comparison, verdict_text
from osmeter.present.values import esc, fmt_value, text_table
from osmeter.results import store
from osmeter.results.store import load_side
from osmeter.results.writer import save_figure


@dataclass
class FleetComparison:
    dir: Path
    index: dict
    baseline: str
    hosts: list[str]                       # labels with results, baseline first
    columns: dict[str, Comparison]  # host label -> baseline against it
    ids: list[tuple[str, str]]             # (id, unit) in the baseline's order
    conditions: list[tuple[str, list[str]]]  # key, each host's value
    skipped: list[str]                     # hosts without results, with why
    outliers: outliers.Outliers | None = None  # the slow-node view (analysis/outliers.py)


def compare_fleet(fleet_dir: Path, baseline: str | None = None,
                  min_change: float = MIN_CHANGE) -> FleetComparison:
    index = store.read_fleet(fleet_dir)
    entries = index["hosts"]
    have, skipped = [], []
    for h in entries:
        d = fleet_dir / h.get("results", "") if h.get("results") else None
        if d and store.has_run(d):
            have.append(h)
        else:
            skipped.append(f"{h.get('target')}: {h.get('status')}{': ' + h['reason'] if h.get('reason') else ''}")
    if not have:
        raise ValueError(f"{fleet_dir}: no host has results to compare")
    labels = [h["label"] for h in have]
    by_target = {h["target"]: h["label"] for h in have}
    if baseline is None:
        base = labels[0]
    elif baseline in labels:
        base = baseline
    elif baseline in by_target:
        base = by_target[baseline]
    else:
        raise ValueError(f"--baseline {baseline}: not a host with results here ({', '.join(labels)})")
    order = [base] + [x for x in labels if x != base]
    runs = {x: load_side([fleet_dir / x]) for x in order}
    columns = {x: compare.compare_sides(runs[base], runs[x], min_change, labels=(base, x), within_run_verdicts=True)
               for x in order[1:]}
    ids = list(compare._ids(runs[base]).items())
    facts = {x: {} for x in order}
    for x in order:
        for r in runs[x]:
            for k, v in run_facts(r).items():
                facts[x].setdefault(k, v)
    keys = sorted(set().union(*facts.values()))
    conditions = [(k, [facts[x].get(k, "(none)") for x in order]) for k in keys
                  if len({facts[x].get(k, "(none)") for x in order}) > 1]
    slow = outliers.from_figures({x: outliers.host_figures(runs[x]) for x in order}, min_change)
    return FleetComparison(fleet_dir, index, base, order, columns, ids, conditions, skipped, slow)


def _row(fc: FleetComparison, mid: str):
    """(baseline median, [(median, ratio, verdict) per other host or None])."""
    base_med = None
    cells = []
    for x in fc.hosts[1:]:
        r = next((r for r in fc.columns[x].rows if r.id == mid), None)
        if r is None:
            cells.append(None)
            continue
        base_med = r.median_a
        cells.append((r.median_b, r.ratio, verdict_text(r)))
    return base_med, cells


def table(fc: FleetComparison) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    head = ("id", "unit", fc.baseline, *(f"{x}/{fc.baseline}" for x in fc.hosts[1:]))
    rows = []
    for mid, unit in fc.ids:
        base_med, cells = _row(fc, mid)
        if base_med is None and fc.hosts[1:]:
            continue
        if not fc.hosts[1:]:
            continue
        rows.append((mid, unit, fmt_value(base_med, unit),
                     *("-" if c is None else f"{c[1]:.3f} {_mark(c[2])}".rstrip() for c in cells)))
    return head, rows


def _mark(verdict: str) -> str:
    return "" if verdict == "~" else f"({verdict})"


def fleet_text(fc: FleetComparison) -> str:
    out = [f"fleet {fc.dir}: {len(fc.hosts)} hosts with results; each column is the host's median over "
           f"{fc.baseline}'s (the baseline); a verdict where the change is beyond the runs' spread"]
    basis = {c.basis for c in fc.columns.values()}
    if "within-run" in basis:
        out.append("one run per host: verdicts are WITHIN-RUN ONLY (run each host with --runs 3 or more to "
                   "test hosts against run-to-run drift)")
    if len(fc.hosts) < 2:
        out.append("only one host has results: nothing to compare")
    else:
        head, rows = table(fc)
        out.append(text_table(head, rows))
        out.append(outliers.text(fc.outliers))
    if fc.conditions:
        out.append("conditions that differ across hosts:")
        out.append(text_table(("condition", *fc.hosts), [(k, *vs) for k, vs in fc.conditions]))
    for s in fc.skipped:
        out.append(f"no results: {s}")
    return "\n".join(out)


def fleet_csv(fc: FleetComparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    buf.write(f"# fleet {fc.dir}; baseline {fc.baseline}\n")
    w.writerow(["id", "unit", "host", "median", "baseline_median", "ratio", "verdict"])
    for mid, unit in fc.ids:
        base_med, cells = _row(fc, mid)
        w.writerow([mid, unit, fc.baseline, base_med, base_med, 1.0, "baseline"])
        for x, c in zip(fc.hosts[1:], cells):
            if c is not None:
                w.writerow([mid, unit, x, c[0], base_med, f"{c[1]:.6g}", c[2]])
    return buf.getvalue()


def figure(fc: FleetComparison):
    """Each host's ratio to the baseline, one row per id (log scale), a
    marker per host; filled where the verdict says it changed."""
    import matplotlib
    import numpy as np

    from osmeter.present.plots import lit, plt

    head, rows = table(fc)
    ids = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.19 * max(len(ids), 1)))
    y = np.arange(len(ids))[::-1]
    ax.axvline(1, color="black", lw=0.8)
    markers = "osD^v<>p*h"
    for k, x in enumerate(fc.hosts[1:]):
        rs = {r.id: r for r in fc.columns[x].rows}
        pts = [(yy, rs[i]) for yy, i in zip(y, ids) if i in rs and math.isfinite(rs[i].ratio) and rs[i].ratio > 0]
        for yy, r in pts:
            changed = r.verdict not in ("~", "too few runs")
            ax.plot(r.ratio, yy + (k - (len(fc.hosts) - 2) / 2) * 0.18, markers[k % len(markers)],
                    color=f"C{k}", ms=4, mfc=f"C{k}" if changed else "none")
        ax.plot([], [], markers[k % len(markers)], color=f"C{k}", label=lit(x))
    ax.set_yticks(y, [lit(i) for i in ids], fontsize=6.5)
    ax.set_ylim(-0.7, len(ids) - 0.3)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: ""))
    ax.set_xlabel(f"host / {lit(fc.baseline)} (median; filled: a change beyond the spread; log scale)")
    ax.set_title(f"Fleet: every host against {lit(fc.baseline)}")
    ax.legend(fontsize=6.5, loc="lower right", framealpha=0.9)
    fig.tight_layout()
    return fig


def to_latex(fc: FleetComparison, figdir: Path, prefix: str = "fleet") -> str:
    from osmeter.present.plots import plt

    idx = fc.index
    out = [r"\section{Fleet}",
           esc(f"{len(fc.hosts)} hosts with results ({', '.join(fc.hosts)}), baseline {fc.baseline}; source: "
               f"{idx.get('source', '?')}; hosts run {'all at once' if idx.get('parallel') else 'one after another'}; "
               f"osmeter run {' '.join(idx.get('osmeter_run_args', []))}."), ""]
    basis = {c.basis for c in fc.columns.values()}
    if "within-run" in basis:
        out.append(r"\paragraph{Method.} One run per host: each verdict compares the trials of one run with "
                   r"those of the other, \emph{within-run only}; run each host with \texttt{--runs 3} or more for "
                   r"verdicts against run-to-run drift.")
    else:
        out.append(r"\paragraph{Method.} " + esc(method_line(next(iter(fc.columns.values())))) + ".")
    steps = ("check", "ship", "build", "setup", "run", "fetch")
    out += [r"\paragraph{Hosts and the time of each step (s).}", r"{\small\begin{longtable}{@{}ll" + "r" * len(steps)
            + r"@{}}", r"\toprule", "Host & Status & " + " & ".join(steps) + r" \\", r"\midrule", r"\endhead"]
    for h in idx.get("hosts", []):
        st = h.get("steps", {})
        out.append(f"{esc(h['target'])} & {esc(h['status'])} & "
                   + " & ".join(f"{st[s]:.1f}" if s in st else "--" for s in steps) + r" \\")
    out += [r"\bottomrule", r"\end{longtable}}"]
    for s in fc.skipped:
        out.append(esc(f"No results: {s}.") + r"\\")
    if len(fc.hosts) > 1:
        figdir.mkdir(parents=True, exist_ok=True)
        fig = figure(fc)
        name = f"{prefix}-ratios.pdf"
        save_figure(fig, figdir / name, bbox_inches="tight")
        plt.close(fig)
        out += [r"\begin{figure}[H]\centering",
                f"\\includegraphics[width=0.85\\linewidth,height=0.8\\textheight,keepaspectratio]"
                f"{{{figdir.name}/{name}}}", r"\end{figure}"]
        head, rows = table(fc)
        out += [r"{\small\begin{longtable}{@{}ll" + "r" * (len(head) - 2) + r"@{}}", r"\toprule",
                " & ".join(esc(h) for h in head) + r" \\", r"\midrule", r"\endhead"]
        out += [" & ".join(esc(c) for c in row) + r" \\" for row in rows]
        out += [r"\bottomrule", r"\end{longtable}}"]
        out += _slow_nodes_latex(fc.outliers, figdir, prefix)
    if fc.conditions:
        out += [r"\paragraph{Conditions that differ across hosts.}",
                r"{\scriptsize\begin{longtable}{@{}p{0.28\linewidth}" + "p{%.2f\\linewidth}" % (0.68 / len(fc.hosts))
                * len(fc.hosts) + r"@{}}", r"\toprule", "Condition & " + " & ".join(esc(x) for x in fc.hosts) + r" \\",
                r"\midrule", r"\endhead"]
        out += [f"\\path{{{path_safe(k)}}} & " + " & ".join(esc(v) for v in vs) + r" \\"
                for k, vs in fc.conditions]
        out += [r"\bottomrule", r"\end{longtable}}"]
    return "\n".join(out) + "\n"


def _slow_nodes_latex(o: outliers.Outliers, figdir: Path, prefix: str) -> list[str]:
    """The slow-node view: its rule, the hosts named by area, the heat map."""
    from osmeter.present.plots import plt

    out = [r"\paragraph{The slow node.}"]
    if o.note:
        return out + [esc(f"Not judged: {o.note}.")]
    out.append(esc(outliers.method(o)))
    if not o.groups:
        out.append(esc("No host lies outside its siblings' spread."))
    else:
        out += [r"\begin{itemize}"]
        for g in o.groups:
            out.append(r"\item " + esc(f"{g.host}, {g.area} ({len(g.flags)} ids): ")
                       + esc("; ".join(outliers.ratio_text(f) for f in g.flags[:8])
                             + (f"; and {len(g.flags) - 8} more" if len(g.flags) > 8 else "")))
        out += [r"\end{itemize}"]
    if o.areas:
        fig = outliers.heat_figure(o)
        name = f"{prefix}-heat.pdf"
        save_figure(fig, figdir / name, bbox_inches="tight")
        plt.close(fig)
        out += [r"\begin{figure}[H]\centering",
                f"\\includegraphics[width=0.8\\linewidth,height=0.5\\textheight,keepaspectratio]"
                f"{{{figdir.name}/{name}}}", r"\caption{" + esc("Each host against its siblings' median, by area: "
                                                            "the median of log2(host / siblings) over the area's ids, "
                                                            "worse positive; * where the host is named.") + "}",
                r"\end{figure}"]
    return out
