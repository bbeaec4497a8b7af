"""`osmeter compare FLEETDIR`: a fleet's hosts side by side, one column per
host, each as its ratio to a baseline host (--baseline, by default the
first). Every column is the two-sided comparison of analysis/compare.py
between the baseline and that host (the same tests, the same
verdicts, within-run only when each host has one run), and the conditions
that differ across the hosts are listed. Its outputs (the terminal's, the
CSV, the figure and the Fleet section of `osmeter report FLEETDIR`) are the
formats' (analysis/formats/, kind "fleet")."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osmeter.analysis import compare, outliers
from osmeter.analysis.conditions import run_facts
from osmeter.analysis.model import MIN_CHANGE, Comparison, verdict_text
from osmeter.present.values import fmt_value
from osmeter.results import store
from osmeter.results.store import load_side


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


def host_cells(fc: FleetComparison, mid: str):
    """(baseline figure, [(figure, ratio, verdict) per other host or None])."""
    base_med = None
    cells = []
    for x in fc.hosts[1:]:
        r = next((r for r in fc.columns[x].rows if r.id == mid), None)
        if r is None:
            cells.append(None)
            continue
        base_med = r.figure_a
        cells.append((r.figure_b, r.ratio, verdict_text(r)))
    return base_med, cells


def table(fc: FleetComparison) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    head = ("id", "unit", fc.baseline, *(f"{x}/{fc.baseline}" for x in fc.hosts[1:]))
    rows = []
    for mid, unit in fc.ids:
        base_med, cells = host_cells(fc, mid)
        if base_med is None and fc.hosts[1:]:
            continue
        if not fc.hosts[1:]:
            continue
        rows.append((mid, unit, fmt_value(base_med, unit),
                     *("-" if c is None else f"{c[1]:.3f} {_mark(c[2])}".rstrip() for c in cells)))
    return head, rows


def _mark(verdict: str) -> str:
    return "" if verdict == "~" else f"({verdict})"
