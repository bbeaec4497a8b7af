"""Stability: how much each id's figure moves between runs, over the runs
of a campaign (or any runs taken together): the run-to-run spread, where
its variance comes from, the smallest change a comparison of a few runs a
side would detect, and the runs a side a 5% change needs; per area; the
core's state and the host's part per run. campaign.py writes it as
stability.txt, `osmeter stability` prints it, and the report and the
notebook of a campaign's run show it (between_runs). Analysis only: it
reads runs through store.py and never reaches the runner.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from osmeter.analysis.model import ALPHA, CLOCK_MAX_SLOPE, DESIGNS, POWER, RUN_SD_FLOOR
from osmeter.analysis.per_id import width_adjust
from osmeter.core.inference import covariate_fit, runs_to_decide, smallest_change_at, variance_split
from osmeter.core.stats import run_figure
from osmeter.probes import registry
from osmeter.results import store
from osmeter.results.readings import measurement_clock
from osmeter.results.store import Run, load_side

DETECT = 0.05  # the change the stability table sizes designs for
STABILITY_HEAD = (
    "Each CV is a standard deviation of logs. A run's figure is the median of its processes' medians.\n"
    "within process: the spread of samples inside one process; between processes: what processes of one run\n"
    "add beyond their samples; between runs: what runs add beyond their processes. dominant: the part with\n"
    "the largest share of the variance of one run's figure. at equal clock: the run-to-run CV left once the\n"
    "runs' core clock (their probe processes' chain of adds) is regressed out, and the share of the variance\n"
    "the clock explains; compare tests the runs so. at equal width: the run-to-run CV once each process is\n"
    "brought to the median core width by the within-run slope of its figure on its width, where that slope is\n"
    "significant at 1% (another thread on the host's core), and the share of the within-run variance of the\n"
    "process figures the width explains; the columns after it are from these figures. runs/side: the fewest runs a side whose smallest detectable\n"
    "change is at most that change; detectable: the smallest change N runs a side decide 80% of the time at\n"
    "alpha 0.05 (seen by compare's t test on run figures, at equal clock where known, or shown '=' if the\n"
    "figure did not move), from this spread.\n\n")


# ------------------------------------------------------------ stability

def stability_rows(runs: list[Run]) -> list[dict]:
    """Per id over the runs of one campaign: the median of the run figures,
    the run-to-run CV (standard deviation of the logs of the run figures),
    where the variance comes from (inference.variance_split: within a process,
    between processes, between runs, and the dominant part), and the runs
    per side that a t test on the run figures needs to see a 5% change 80%
    of the time; where every run has its probe processes' clock, also the
    CV at equal clock (the residual of the log figures regressed on the log
    clocks) and the share the clock explains, and the runs per side from
    that CV, the spread compare's covariance test sees."""
    per: dict[str, list[list[np.ndarray]]] = {}
    clocks: dict[str, list[float | None]] = {}
    widths: dict[str, list[list[float | None]]] = {}
    units = {}
    for r in runs:
        for mid, m in r.measurements.items():
            try:
                procs = r.by_process(m)
            except ValueError:
                continue
            if procs and any(x.size for x in procs):
                per.setdefault(mid, []).append(procs)
                clocks.setdefault(mid, []).append(measurement_clock(r.doc, m))
                widths.setdefault(mid, []).append(r.process_widths(m))
                units[mid] = m.unit
    out = []
    for mid, rs in per.items():
        measured = np.array([run_figure(x) for x in rs])
        # at equal width where the processes' figures follow the core's width within runs, as compare
        # takes them (compare.width_adjust)
        adjusted, width = width_adjust([rs], [widths[mid]])
        if width and width["applied"]:
            rs = adjusted[0]
        figs = np.array([run_figure(x) for x in rs])
        kept = np.isfinite(figs)
        figs, measured, clk = figs[kept], measured[kept], [c for c, k in zip(clocks[mid], kept) if k]
        if not figs.size:
            continue
        positive = bool(np.all(figs > 0) and np.all(measured > 0))
        sd = float(np.std(np.log(measured), ddof=1)) if positive and figs.size > 1 else float("nan")
        width_cv = (float(np.std(np.log(figs), ddof=1)) if positive and figs.size > 1 and width
                    and width["applied"] else None)
        split = variance_split(rs) if positive else None
        fit = (covariate_fit(np.log(figs), np.log(np.asarray(clk, float)), CLOCK_MAX_SLOPE)
               if positive and all(isinstance(c, float) and c > 0 for c in clk) else None)
        # the spread compare's test sees: at equal clock where every run has one (per_id.clock_adjust), and
        # at least its floor
        test_sd = max(fit[1], RUN_SD_FLOOR) if fit else max(sd, RUN_SD_FLOOR) if math.isfinite(sd) else sd
        lost = 1 if fit else 0
        out.append({"id": mid, "unit": units[mid], "runs": int(figs.size), "median": float(np.median(measured)),
                    "run_cv": sd, "split": split, "width_cv": width_cv,
                    "width_explained": width["explained"] if width and width["applied"] else None,
                    "clock_cv": fit[1] if fit else None, "clock_share": fit[2] if fit else None,
                    "runs_for_5pct": (runs_to_decide(DETECT, test_sd, lost_df=lost, alpha=ALPHA, power=POWER)
                                      if math.isfinite(test_sd) else None),
                    "detectable": {n: smallest_change_at(test_sd, n, lost_df=lost, alpha=ALPHA, power=POWER)
                                   for n in DESIGNS}})
    return out


def _width_cell(r: dict) -> str:
    """The run-to-run CV at equal core width and the share of the within-run variance of the process
    figures the width explained, where compare takes the id so; else '-'."""
    if not isinstance(r.get("width_cv"), float):
        return "-"
    return f"{_pct(r['width_cv'])} (width {r['width_explained']:.0%})"


def stability_table(rows: list[dict]) -> str:
    from osmeter.present.values import fmt_value, text_table

    head = ("id", "median", "runs", "run-to-run CV", "within process", "between processes", "between runs",
            "dominant", "at equal width", "at equal clock", f"runs/side for {DETECT:.0%}",
            "detectable at " + "/".join(map(str, DESIGNS)) + " runs")
    body = []
    for r in rows:
        sp = r.get("split") or {}
        body.append((r["id"], fmt_value(r["median"], r["unit"]), str(r["runs"]), _pct(r["run_cv"]),
                     _pct(sp.get("within_cv")), _pct(sp.get("process_cv")), _pct(sp.get("run_cv")),
                     _dominant(sp), _width_cell(r), _clock_cell(r), _runs_cell(r),
                     " / ".join(_pct(r["detectable"].get(n)) for n in DESIGNS)))
    return text_table(head, body, left=(0, 7))


# -------------------------------------------- between runs, for a run's report and notebook

def between_runs(run_dir: Path) -> tuple[list[Run], list[dict]] | None:
    """The campaign a run belongs to (its parent directory holds
    campaign.json and lists it), when it has two runs or more: its runs and
    their stability_rows, sorted by the smallest detectable change at
    DESIGNS[0] runs a side (ids where it is unknown last, ties by id).
    None for a run of no campaign, or of one run. ValueError where the
    campaign cannot be read."""
    run_dir = store.run_dir(Path(run_dir)).resolve()
    camp = run_dir.parent
    if not store.is_campaign(camp):
        return None
    runs = load_side([camp])
    if len(runs) < 2 or run_dir not in {r.path.resolve() for r in runs}:
        return None
    return runs, by_detectable(stability_rows(runs))


def by_detectable(rows: list[dict]) -> list[dict]:
    """Rows in the order of their smallest detectable change at DESIGNS[0]
    runs a side, the smallest first; unknown ones last."""
    def key(r: dict):
        v = r["detectable"].get(DESIGNS[0])
        known = isinstance(v, float) and not math.isnan(v)
        return (not known, v if known else 0.0, r["id"])
    return sorted(rows, key=key)


BETWEEN_HEAD = ("id", "run-to-run CV", "at equal clock", "dominant",
                *(f"detectable at {n} runs" for n in DESIGNS), f"runs/side for {DETECT:.0%}")


def between_cells(rows: list[dict]) -> list[tuple[str, ...]]:
    """The cells of BETWEEN_HEAD per row, in the rows' order (the report's
    and the notebook's table of a campaign's run)."""
    return [(r["id"], _pct(r["run_cv"]), _clock_cell(r), _dominant(r.get("split") or {}),
             *(_pct(r["detectable"].get(n)) for n in DESIGNS), _runs_cell(r)) for r in rows]


def between_method(runs: int) -> str:
    """How the table of a campaign of `runs` runs was made, from the
    campaign's and compare's parameters."""
    designs = " and ".join(map(str, DESIGNS))
    return (f"Over the {runs} runs of the campaign this run belongs to, each id's run figures (the median of "
            f"their processes' medians) give its run-to-run CV, the standard deviation of their logs; at equal "
            f"clock: what is left once the runs' core clock is regressed out, where every run has one (the share "
            f"of the variance the clock explains beside it); dominant: the part of the variance of one run's "
            f"figure (within a process, between processes, between runs) with the largest share. Detectable at "
            f"{designs} runs: the smallest change that many runs a side of this spread (at equal clock where "
            f"known, and at least {RUN_SD_FLOOR:.0%}) decide {POWER:.0%} of the time at alpha {ALPHA:g}, seen by "
            f"compare's t test on the logs of run figures or shown '=' by its two one-sided tests if unchanged; "
            f"runs/side for {DETECT:.0%}: the fewest runs a side whose detectable change is at most {DETECT:.0%}. "
            f"Ids are sorted by their detectable change at {DESIGNS[0]} runs, the smallest first.")


def _clock_cell(r: dict) -> str:
    share = r.get("clock_share")
    return f"{_pct(r.get('clock_cv'))} (clock {share:.0%})" if isinstance(share, float) else "-"


def _runs_cell(r: dict) -> str:
    if not math.isfinite(r["run_cv"]):
        return "-"
    return str(r["runs_for_5pct"]) if r["runs_for_5pct"] else ">200"


def area_stability_table(rows: list[dict], good: float = 0.02, worst: int = 3) -> str:
    """Per area (the registry's, else an id's first part): ids, the median run-to-run CV, how
    many ids are at or below `good`, and the `worst` ids with theirs; then
    the same over all ids."""
    from osmeter.present.values import text_table

    by: dict[str, list[dict]] = {}
    for r in rows:
        if math.isfinite(r["run_cv"]):
            found = registry.find_measure(r["id"])
            area = found[0].area if found and found[0].area else r["id"].split(".", 1)[0]
            by.setdefault(area, []).append(r)
    every = [r for rs in by.values() for r in rs]
    body = []
    for area, rs in sorted(by.items()) + ([("all", every)] if every else []):
        cvs = np.array([r["run_cv"] for r in rs])
        # at equal clock where the runs had one, as compare tests them (per_id.clock_adjust)
        eq = np.array([r["clock_cv"] if isinstance(r.get("clock_cv"), float) else r["run_cv"] for r in rs])
        bad = sorted(rs, key=lambda r: -r["run_cv"])[:worst]
        body.append((area, str(len(rs)), _pct(float(np.median(cvs))), str(int(np.sum(cvs <= good))),
                     _pct(float(np.median(eq))), str(int(np.sum(eq <= good))),
                     ", ".join(f"{r['id']} {_pct(r['run_cv'])}" for r in bad)))
    return text_table(("area", "ids", "median run CV", f"ids <= {good:.0%}", "at equal clock",
                       f"ids <= {good:.0%}", "worst"), body, left=(0, 6))


def core_state_table(runs: list[Run]) -> str:
    """Per run: the median core clock of its probe processes (a chain of
    adds at each process's start and end) and how many of them ran below
    readings.SLOWED of the median over all these runs' processes: the
    host's slowing of the vCPU, which neither steal time nor the noise
    probe sees; and the same of the core's width (eight independent chains
    of adds), which falls while another hardware thread shares the core.
    Empty when no run recorded clocks."""
    from osmeter.present.values import text_table
    from osmeter.results.readings import SLOWED, core_clocks, core_widths, slowed_share

    every = [c for r in runs for c in core_clocks(r.doc)]
    if not every:
        return ""
    ref = float(np.median(every))
    every_w = [w for r in runs for w in core_widths(r.doc)]
    ref_w = float(np.median(every_w)) if every_w else None
    body = []
    for r in runs:
        c, w = core_clocks(r.doc), core_widths(r.doc)
        share, shared = slowed_share(c, ref), slowed_share(w, ref_w) if ref_w else None
        body.append((r.name, f"{np.median(c):,.0f} MHz" if c else "-", str(len(c)),
                     f"{share:.0%}" if share is not None else "-",
                     f"{np.median(w):.2f}" if w else "-", f"{shared:.0%}" if shared is not None else "-"))
    width = (f"; width: adds per cycle of eight independent chains, shared: below {SLOWED:.0%} of the median, "
             f"{ref_w:.2f}, whose figures compare and stability set aside where others of their id remain"
             if ref_w else "")
    return (f"Core clock (a chain of adds at each probe process's start and end; slowed: below {SLOWED:.0%} "
            f"of the median over these runs, {ref:,.0f} MHz{width}):\n"
            + text_table(("run", "median clock", "processes", "slowed", "median width", "shared"), body, left=(0,)))


def host_params_table(runs: list[Run]) -> str:
    """Per id whose probe declares params that measure the host's part in
    its figure (Probe.host_params): each one's median over the runs, its
    range, and what it says. Empty when no run has one."""
    from osmeter.present.values import text_table

    body = []
    ids = list(dict.fromkeys(mid for r in runs for mid in r.measurements))
    for mid in ids:
        found = registry.find_measure(mid)
        for key, says in getattr(found[0], "host_params", ()) if found else ():  # a derived id has none
            v = [float(x) for r in runs
                 if mid in r.measurements and isinstance(x := r.measurements[mid].params.get(key), (int, float))
                 and not isinstance(x, bool)]
            if v:
                body.append((mid, key, f"{np.median(v):.3g}", f"{min(v):.3g} .. {max(v):.3g}", says))
    if not body:
        return ""
    return ("The host's part, as the probes measured it (params; median and range over these runs):\n"
            + text_table(("id", "param", "median", "range", "what it says"), body, left=(0, 1, 4)))


def _dominant(sp: dict) -> str:
    d = sp.get("dominant")
    share = (sp.get("share") or {}).get(d) if d else None
    return f"{d} {share:.0%}" if d and isinstance(share, float) else "-"


def _pct(v: float | None) -> str:
    return f"{v:.1%}" if isinstance(v, float) and math.isfinite(v) else "-"
