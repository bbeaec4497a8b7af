"""More processes for the probes whose figures are not yet known to
+-PRECISION, within a share of the run's time, and each measurement's
`precision`: its figure's 95% interval, the processes run, and what ended
the sampling."""
from __future__ import annotations

from osmeter.core.stats import figure_ci, run_figure
from osmeter.results import store
from osmeter.results.writer import Results

PRECISION = 0.01      # a figure is known when its 95% interval is within +-1% of it
MORE_PROCESSES = 2    # a probe may run up to this many times its planned processes to get there,
EXTRA_TIME = 0.25     # ... within this share of the run's time so far,
CHEAP_PROCESS_S = 0.5  # ... if one of its processes takes at most this long (a long one is its own budget)


def _figure_interval(results: Results, m: dict) -> tuple[float, float, float] | None:
    """(figure, lo, hi) of a measurement's run figure, from its samples."""
    procs = store.kept_by_process(results.dir, m)
    if not procs or not any(x.size for x in procs):
        return None
    fig = run_figure(procs)
    lo, hi = figure_ci(procs)
    return fig, lo, hi


def imprecise(results: Results, wanted: list[str]) -> bool:
    """Is any wanted id's figure known worse than +-PRECISION?"""
    by_id = {m["id"]: m for m in results.measurements}
    for mid in wanted:
        m = by_id.get(mid)
        got = _figure_interval(results, m) if m else None
        if got and got[0] > 0 and (got[2] - got[1]) / 2 / got[0] > PRECISION:
            return True
    return False


def record_precision(results: Results, order, procs: dict[str, int], ran: dict[str, int], ended: dict[str, str]) -> None:
    """Each measurement's `precision`: its figure's 95% interval relative to
    it, the processes run, and what ended the sampling: "precision" (known
    to +-PRECISION), "time budget", "process limit", or "one process" (a
    probe that runs whole in one process)."""
    names = {probe.name for probe, _ in order}
    for m in results.measurements:
        if m.get("probe") not in names:
            continue
        got = _figure_interval(results, m)
        rel = (got[2] - got[1]) / 2 / got[0] if got and got[0] > 0 else None
        why = ended.get(m["probe"]) or ("one process" if procs.get(m["probe"], 1) < 2 else "precision")
        m["precision"] = {"ci95_rel": rel, "target": PRECISION, "processes": ran.get(m["probe"], 1), "ended_by": why}
    results.save()
