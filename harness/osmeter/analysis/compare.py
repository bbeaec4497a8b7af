"""`osmeter compare A B`: what changed between two sides (each one or more
runs or campaigns) beyond run-to-run drift, per id, with a verdict. The
method (the run as the unit, the tests, RUN_SD_FLOOR, the verdicts) is in
docs/DESIGN.md, "Before and after (compare)"; this module carries it out.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from osmeter.core.inference import (ancova_parts, benjamini_hochberg, hierarchical_ratio_ci, mann_whitney,
                                    nested_components, ratio_ci, runs_needed, runs_to_decide, smallest_change,
                                    smallest_change_at, t_test, tost_of, welch, welch_parts, within_slope)
from osmeter.core.stats import t_quantile
from osmeter.core.units import better
from osmeter.present.values import esc, fmt_value, markdown_table, md, tex_file_name, text_table
from osmeter.results.readings import CLOCK_ID, SLOWED, core_clocks, measurement_clock
from osmeter.results.store import Run, load_side
from osmeter.results.writer import run_figure

ALPHA = 0.05
MIN_CHANGE = 0.02
# The least run-to-run spread (standard deviation of log run medians) the run-level test assumes. A
# shared machine's runs fall into discrete modes (address layout, the host core a vCPU lands on) a few
# percent apart; three runs a side can all land in one mode by chance, the observed spread is then
# near zero, and a mere split between the sides would look like a change.
RUN_SD_FLOOR = 0.01
# A process whose median lies further than this many robust standard deviations (1.4826 MAD of its side's
# process medians, at least RUN_SD_FLOOR) from its side's median is in a far mode: a host disturbance over
# the whole process, a rare placement. Such modes come at a rate that drifts with time, so processes are
# not draws of one distribution and the run is the unit.
FAR_PROCESS = 4.0
POWER = 0.8
DESIGNS = (4, 8)  # the runs a side each row also states its smallest detectable change for
# the processes of an id are compared at equal core width (width_adjust) where the slope of their figures'
# logs on their width's logs, within runs, is this significant, on this many degrees of freedom or more
WIDTH_P = 0.01
WIDTH_MIN_DF = 6
# a run whose host-mode param (Probe.host_mode) lies this many times above the least of the
# compared runs' was measured in another state of the host (the vCPUs on two dies, not one)
HOST_MODE_FACTOR = 2.0
VERDICTS = ("faster", "slower", "higher", "lower", "=", "~", "too few runs")
DIRECTIONS = ("faster", "slower", "higher", "lower")
DECIDED = ("faster", "slower", "higher", "lower", "=", "~")

# machine facts and conditions that say nothing about the figures (they
# change from run to run by nature), left out of the conditions diff
VOLATILE = {
    "conditions.loadavg_before", "conditions.started_utc", "conditions.wall_s", "conditions.probe_warnings",
    "conditions.harness_cpus", "conditions.order", "conditions.order_seed", "conditions.disk_target.path",
    "conditions.selection",
    # what --isolate did varies with the tasks alive (conditions.boost, smt_active show its lasting effect)
    *(f"conditions.isolation.{k}" for k in ("pid", "started_utc", "done", "not_done", "restored", "stale",
                                           "irqbalance")),
    "machine.cpu_mhz_reported", "machine.disks", "machine.nics",
    # the tracing of --kernel-paths runs after the timed processes: it says how, not what was measured
    "conditions.kernel_paths",
    # --no-halt's check: the halts counted before and with the request held vary with the moment
    "conditions.no_halt.halts_before", "conditions.no_halt.halts_held",
}


@dataclass
class Row:
    id: str
    unit: str
    area: str
    runs_a: list[float]     # each run's figure (the median of its processes' medians)
    runs_b: list[float]
    median_a: float         # median of the run figures
    median_b: float
    ratio: float            # B/A
    ci: tuple[float, float]
    p: float                # the test whose unit is `test_unit` (NaN with one run a side)
    basis: str              # "runs" or "within-run"
    run_sd: float | None    # spread of the logs of the unit's values (about its CV)
    q: float = float("nan")
    need: int | None = None  # runs per side a decision would need, for "too few runs"
    verdict: str = "~"
    test_unit: str = "run"  # "run", or "process" where the runs show no run-level variance of their own
    #                         and no process is in a far mode (far_processes)
    units_a: int = 0        # how many values of that unit each side had
    units_b: int = 0
    p_within: float = float("nan")  # one run a side: Mann-Whitney on the two runs' trials (within-run only)
    p_equiv: float = float("nan")   # two one-sided tests that the change is inside +-min_change
    components: dict | None = None  # process and run spread of the logs (nested_components)
    # the test's difference of the sides' mean logs, its squared standard error and degrees of freedom
    test_parts: tuple[float, float, float] | None = field(default=None, repr=False)
    # the slope of the run figures' logs on their core clock's logs, where the test compared the runs at
    # equal clock (clock_adjust); None where it did not
    clock_slope: float | None = None
    parts: list = field(default_factory=list)  # its kernel-path components (Rows), where both sides were traced
    # fewer than two runs a side in one host mode (host_mode_split): shown on all its runs, never decided
    host_modes_apart: bool = False
    # the within-run slope of the processes' log figures on their core width's logs (width_adjust): slope,
    # se, df, p, explained (the share of the within-run variance of the process figures), applied
    width: dict | None = None
    # the smallest change this comparison, and 4 and 8 runs a side of the same spread, decide at
    # compare's alpha and POWER (detectable); NaN where the spread is not known
    mdc: float = float("nan")
    mdc_at: dict = field(default_factory=dict)  # runs a side -> smallest change

    @property
    def n_a(self) -> int:
        return len(self.runs_a)

    @property
    def n_b(self) -> int:
        return len(self.runs_b)


@dataclass
class Comparison:
    a: list[Run]
    b: list[Run]
    rows: list[Row]
    conditions: list[tuple[str, str, str]]   # key, A's value(s), B's value(s)
    notes: list[str] = field(default_factory=list)
    min_change: float = MIN_CHANGE
    labels: tuple[str, str] = ("A", "B")
    alpha: float = ALPHA
    within_run_verdicts: bool = False  # a fleet's hosts of one run each: within-run verdicts, labelled so

    @property
    def basis(self) -> str:
        return "runs" if len(self.a) > 1 or len(self.b) > 1 else "within-run"


def direction(unit: str, up: bool) -> str:
    if better(unit) == "lower":
        return "slower" if up else "faster"
    if better(unit) == "higher":
        return "faster" if up else "slower"
    return "higher" if up else "lower"


def area_of(mid: str) -> str:
    from osmeter.probes import registry

    found = registry.find_measure(mid)
    return found[0].area if found and found[0].area else mid.split(".", 1)[0]


def _sd_pooled(la: np.ndarray, lb: np.ndarray) -> float | None:
    parts = [(x.size - 1, float(np.var(x, ddof=1))) for x in (la, lb) if x.size > 1]
    dof = sum(d for d, _ in parts)
    return math.sqrt(sum(d * v for d, v in parts) / dof) if dof else None


def _se(x: np.ndarray, y: np.ndarray) -> float:
    """The standard error of mean(y) - mean(x), each side's spread taken as at least RUN_SD_FLOOR."""
    return math.sqrt(sum(max(float(np.var(v, ddof=1)), RUN_SD_FLOOR ** 2) / v.size for v in (x, y)))


def _processes(run) -> list[np.ndarray]:
    """A run as a list of its processes' kept trials (a bare array is one process)."""
    if isinstance(run, np.ndarray):
        return [run] if run.size else []
    return [np.asarray(x, float) for x in run if np.asarray(x).size]


def far_processes(logs: np.ndarray) -> int:
    """How many of one side's process medians (their logs) lie in a far mode:
    further than FAR_PROCESS robust standard deviations from the side's median."""
    r = np.abs(logs - np.median(logs))
    sd = max(1.4826 * float(np.median(r)), RUN_SD_FLOOR)
    return int(np.sum(r > FAR_PROCESS * sd))


def compare_id(mid: str, unit: str, a: list, b: list, area: str | None = None,
               interval: bool = True, clocks: tuple[list, list] | None = None) -> Row | None:
    """One id: a and b hold each side's runs, a run being its kept trials
    (an array) or one array of trials per process. interval=False leaves out
    the bootstrap interval (simulations). clocks: per side, the core clock
    (MHz) each run's processes of this id ran at, or None where a run has
    none (clock_adjust)."""
    ca, cb = clocks if clocks is not None else ([None] * len(a), [None] * len(b))
    a, ca = _kept_runs(a, ca)
    b, cb = _kept_runs(b, cb)
    if not a or not b:
        return None
    ma = np.array([run_figure(x) for x in a])
    mb = np.array([run_figure(x) for x in b])
    med_a, med_b = float(np.median(ma)), float(np.median(mb))
    ratio = med_b / med_a if med_a else float("nan")
    area = area or area_of(mid)
    pooled_a = [np.concatenate(x) for x in a]
    pooled_b = [np.concatenate(x) for x in b]
    if len(a) == 1 and len(b) == 1:
        _, p = mann_whitney(pooled_a[0], pooled_b[0])
        ci = ratio_ci(pooled_a[0], pooled_b[0]) if interval else (float("nan"), float("nan"))
        return Row(mid, unit, area, ma.tolist(), mb.tolist(), med_a, med_b, ratio, ci, float("nan"), "within-run",
                   None, test_unit="run", units_a=1, units_b=1, p_within=p)
    positive = np.all(ma > 0) and np.all(mb > 0)
    ci = hierarchical_ratio_ci(pooled_a, pooled_b) if interval else (float("nan"), float("nan"))
    row = Row(mid, unit, area, ma.tolist(), mb.tolist(), med_a, med_b, ratio, ci, float("nan"), "runs", None)
    if not positive:  # a figure that can be zero or negative: test the run figures themselves
        _, _, row.p = welch(ma, mb)
        row.units_a, row.units_b = len(ma), len(mb)
        return row
    # the unit: the process where the runs show no variance of their own beyond their processes'
    # (the run-level component is estimated at zero on both sides) and no process is in a far mode,
    # else the run
    pa = [np.log([np.median(p) for p in run]) for run in a]
    pb = [np.log([np.median(p) for p in run]) for run in b]
    comp = nested_components([x - np.mean(np.concatenate(pa)) for x in pa]
                             + [x - np.mean(np.concatenate(pb)) for x in pb], sides=2)
    row.components = comp
    la, lb = np.log(ma), np.log(mb)
    if (comp and comp["run_var"] == 0 and min(len(x) for x in pa + pb) >= 2
            and not far_processes(np.concatenate(pa)) and not far_processes(np.concatenate(pb))):
        # processes as the unit only where that also knows the sides' means better: a run's figure,
        # the median of its processes', shrugs off one process in another mode, their mean does not
        xa, xb = np.concatenate(pa), np.concatenate(pb)
        if _se(xa, xb) < _se(la, lb):
            la, lb = xa, xb
            row.test_unit = "process"
    row.units_a, row.units_b = la.size, lb.size
    row.test_parts = welch_parts(la, lb, RUN_SD_FLOOR)
    sd = _sd_pooled(la, lb)
    row.run_sd = max(sd, RUN_SD_FLOOR) if sd is not None else None
    if row.test_unit == "run":
        clock_adjust(row, la, ca, lb, cb, interval)
    _, _, row.p = t_test(row.test_parts)
    return row


def width_adjust(sides: list[list[list[np.ndarray]]], widths: list[list[list[float | None]]]
                 ) -> tuple[list[list[list[np.ndarray]]], dict | None]:
    """The processes of every run of every side brought to one core width:
    where another hardware thread shares the host's core with a varying
    load, a process's width (adds per cycle of independent chains, read at
    its start and end) moves with it and so does its figure. The slope of
    the processes' log figures on their log widths is fitted within runs
    (stats.within_slope: run means taken out, so the sides' difference
    never enters it, and both sides are moved alike), and where it is
    significant at WIDTH_P each process's trials are scaled to the median
    width of all the processes. The choice looks at the width's relation
    to the figure inside runs, never at the figure's difference between the
    sides. Returns the sides (adjusted, or as they were) and the fit, None
    where a process has no width."""
    ys, xs = [], []
    for runs, ws in zip(sides, widths):
        if len(ws) != len(runs):
            return sides, None
        for procs, w in zip(runs, ws):
            procs = _processes(procs)
            if len(w) != len(procs) or any(x is None for x in w):
                return sides, None
            med = np.array([np.median(p) for p in procs], float)
            if not np.all(med > 0):
                return sides, None
            ys.append(np.log(med))
            xs.append(np.log(np.asarray(w, float)))
    fit = within_slope(ys, xs)
    if fit is None:
        return sides, None
    fit["applied"] = bool(fit["df"] >= WIDTH_MIN_DF and fit["p"] < WIDTH_P)
    if not fit["applied"]:
        return sides, fit
    ref = float(np.median(np.concatenate(xs)))
    fit["ref_width"] = math.exp(ref)
    out = [[[p * math.exp(-fit["slope"] * (math.log(w) - ref)) for p, w in zip(_processes(procs), ws_run)]
             for procs, ws_run in zip(runs, ws)] for runs, ws in zip(sides, widths)]
    return out, fit


def _kept_runs(runs: list, clocks: list) -> tuple[list[list[np.ndarray]], list]:
    """The runs that kept a trial (as lists of processes), with their clocks."""
    out = [(p, c) for p, c in zip((_processes(x) for x in runs), clocks) if p]
    return [p for p, _ in out], [c for _, c in out]


def clock_adjust(row: Row, la: np.ndarray, ca: list, lb: np.ndarray, cb: list, interval: bool = True) -> None:
    """Compares the runs at equal core clock where every run has one: an
    analysis of covariance of the run figures' logs on the logs of the clock
    their processes ran at (stats.ancova_parts), which takes out of the
    run-to-run spread what a host's boost clock, moving between runs, puts
    into work done by the core. The row's ratio and interval become B/A at
    equal clock; a change of the clock itself shows in the clock's own id
    (cpu.clock). Applied whatever the fitted slope (the choice does not look
    at the data, so the test keeps its size); it costs one degree of
    freedom."""
    if not all(isinstance(c, (int, float)) and c > 0 for c in list(ca) + list(cb)):
        return
    got = ancova_parts(la, np.log(np.asarray(ca, float)), lb, np.log(np.asarray(cb, float)), RUN_SD_FLOOR)
    if got is None:
        return
    diff, se2, df, slope, resid_sd = got
    row.test_parts = (diff, se2, df)
    row.clock_slope = slope
    row.run_sd = resid_sd
    row.ratio = math.exp(diff)
    if interval:
        half = t_quantile(0.975, df) * math.sqrt(se2)
        row.ci = (math.exp(diff - half), math.exp(diff + half))


def decide(rows: list[Row], min_change: float = MIN_CHANGE, alpha: float = ALPHA,
           within_run_verdicts: bool = False) -> None:
    """Adjusts the p values for the many ids (Benjamini-Hochberg) and gives
    each row its verdict: changed (q < alpha and a change of at least
    min_change), "=" (shown to lie within +-min_change by two one-sided
    tests at alpha), "too few runs" (the design could not have seen a change
    of min_change, or one run a side), else "~". alpha is lower than ALPHA
    at the looks of a sequential design (spend_alpha)."""
    ps = [r.p_within if r.basis == "within-run" and within_run_verdicts else r.p for r in rows]
    for r, q in zip(rows, benjamini_hochberg(ps)):
        r.q = q
        if r.basis == "within-run" and within_run_verdicts:  # hosts of a fleet: labelled within-run only
            big = math.isfinite(r.ratio) and abs(r.ratio - 1) >= min_change
            r.verdict = direction(r.unit, r.ratio > 1) if big and q < alpha else "~"
            continue
        if r.host_modes_apart:  # under two runs a side in one state of the host: nothing to decide on
            r.verdict = "too few runs"
            continue
        if r.basis == "within-run":  # one run against one run: drift and change look alike
            r.verdict = "too few runs"
            r.need = max(3, runs_needed(math.log1p(min_change), RUN_SD_FLOOR, alpha, POWER) or 3)
            continue
        detectable(r, alpha)
        big = math.isfinite(r.ratio) and abs(r.ratio - 1) >= min_change
        if big and q < alpha:
            r.verdict = direction(r.unit, r.ratio > 1)
            continue
        r.verdict = "~"
        if r.run_sd is None or r.test_parts is None or not (math.isfinite(r.ratio) and r.ratio > 0):
            continue
        r.p_equiv = tost_of(r.test_parts, math.log1p(min_change))
        # '=' only where the design resolves the margin: an equivalence shown at a change smaller than the
        # design's smallest detectable one is the luck of a spread that happened to come out small
        if r.p_equiv < alpha and r.mdc <= min_change:
            r.verdict = "="
            continue
        # a change of min_change, or the change seen if larger, beyond what this design resolves: the
        # runs a side whose smallest detectable change would reach it
        effect = max(min_change, abs(r.ratio - 1))
        if r.mdc > effect:
            r.verdict = "too few runs"
            r.need = runs_to_decide(effect, max(r.run_sd, RUN_SD_FLOOR), _per_run(r),
                                    1 if r.clock_slope is not None else 0, alpha, POWER)


def detectable(r: Row, alpha: float = ALPHA) -> None:
    """The row's smallest detectable change (stats.smallest_change): for
    this comparison, from its test's standard error and degrees of freedom,
    and for DESIGNS runs a side of the same spread of the test's unit (a
    covariate, the clock, costs its degree of freedom there too)."""
    if r.test_parts is None or r.run_sd is None:
        return
    _, se2, df = r.test_parts[:3]
    r.mdc = smallest_change(math.sqrt(max(se2, 0.0)), df, alpha, POWER)
    lost = 1 if r.clock_slope is not None else 0
    sd = max(r.run_sd, RUN_SD_FLOOR)  # as the test takes each side's spread
    r.mdc_at = {n: smallest_change_at(sd, n, _per_run(r), lost, alpha, POWER) for n in DESIGNS}


def _per_run(r: Row) -> float:
    """Values of the test's unit in one run: 1, or its processes."""
    return (r.units_a + r.units_b) / max(r.n_a + r.n_b, 1) if r.test_unit == "process" else 1.0


def compare_sides(a: list[Run], b: list[Run], min_change: float = MIN_CHANGE,
                  labels: tuple[str, str] = ("A", "B"), alpha: float = ALPHA,
                  sensitivity: bool = True, within_run_verdicts: bool = False) -> Comparison:
    if not a or not b:
        raise ValueError(f"side {labels[0] if not a else labels[1]} is empty: give at least one run or campaign")
    if not math.isfinite(min_change) or not 0 <= min_change < 10:
        raise ValueError(f"--min-change {min_change}: expected a fraction such as 0.02")
    notes = []
    for label, side in zip(labels, (a, b)):
        presets = sorted({str(r.doc["conditions"].get("preset")) for r in side})
        if len(presets) > 1:
            raise ValueError(f"side {label} mixes presets ({', '.join(presets)}): compare runs of one preset")
        for r in side:
            notes += [f"{label} {r.name}: {n}" for n in r.notes]
    ids_a = _ids(a)
    ids_b = _ids(b)
    common = [i for i in ids_a if i in ids_b]
    if not common:
        raise ValueError("the two sides have no measurement id in common")
    only_a = [i for i in ids_a if i not in ids_b]
    only_b = [i for i in ids_b if i not in ids_a]
    if only_a:
        notes.append(f"only in {labels[0]} (not compared): {', '.join(only_a)}")
    if only_b:
        notes.append(f"only in {labels[1]} (not compared): {', '.join(only_b)}")
    rows = []
    for mid in common:
        unit = ids_a[mid]
        if ids_b[mid] != unit:
            notes.append(f"{mid}: unit {unit} in {labels[0]}, {ids_b[mid]} in {labels[1]} (not compared)")
            continue
        ha, hb, mode_note = host_mode_split(a, b, mid)
        apart = False
        if mode_note:
            notes.append(mode_note)
            apart = min(sum(mid in r.measurements for r in side) for side in (ha, hb)) < 2
            if apart:  # shown on all its runs, and left undecided
                ha, hb = a, b
        ta, tb = _trials(ha, mid), _trials(hb, mid)
        (ta, tb), width = width_adjust([ta, tb], [_widths(ha, mid), _widths(hb, mid)])
        row = compare_id(mid, unit, ta, tb, clocks=(_clocks(ha, mid), _clocks(hb, mid)))
        if row is not None:
            row.host_modes_apart = apart
            row.width = width
            rows.append(row)
        else:  # every sample of one side was disturbed (or not finite): said, never dropped in silence
            empty = [lab for lab, t in zip(labels, (ta, tb)) if not any(x.size for run in t for x in run)]
            notes.append(f"{mid}: no kept sample in {' or '.join(empty)} (every sample disturbed or not finite): "
                         "not compared")
    for label, side in zip(labels, (a, b)):
        short = [f"{mid} ({sum(mid in r.measurements for r in side)} of {len(side)})" for mid in common
                 if sum(mid in r.measurements for r in side) < len(side)]
        if short and len(side) > 1:
            notes.append(f"ids missing from some runs of {label}: {', '.join(short)}")
    decide(rows, min_change, alpha, within_run_verdicts)
    notes += _clock_note(a, b, rows, labels)
    notes += _shared_note(a, b, [r.id for r in rows], labels)
    _compare_parts(a, b, rows, min_change, alpha, within_run_verdicts, labels, notes)
    if sensitivity:
        notes += _without_flagged(a, b, rows, min_change, labels, alpha)
    return Comparison(a, b, rows, conditions_diff(a, b), notes, min_change, labels, alpha, within_run_verdicts)


def _clock_note(a: list[Run], b: list[Run], rows: list[Row], labels: tuple[str, str]) -> list[str]:
    """What the ids compared at equal clock (clock_adjust) mean, with each
    side's clock and the verdict on the clock itself."""
    adjusted = [r for r in rows if r.clock_slope is not None]
    if not adjusted:
        return []
    ca, cb = ([c for r in side for c in core_clocks(r.doc)] for side in (a, b))
    own = next((r for r in rows if r.id == CLOCK_ID), None)
    return [f"{len(adjusted)} ids compared at equal core clock (unit 'run, equal clock'): their {labels[1]}/"
            f"{labels[0]} is the change a clock the same on both sides would show. The probe processes' clock "
            f"(a chain of adds): {labels[0]} median {np.median(ca):,.0f} MHz, {labels[1]} {np.median(cb):,.0f} MHz"
            + (f"; {CLOCK_ID}: {_verdict_text(own)}" if own else "")]


def _shared_note(a: list[Run], b: list[Run], ids: list[str], labels: tuple[str, str]) -> list[str]:
    """How many of each side's process measurements of the compared ids were
    set aside as run on a shared core (store.Run.shared_processes)."""
    counts = []
    for side in (a, b):
        out = total = 0
        for r in side:
            ms = r.measurements
            for mid in ids:
                m = ms.get(mid)
                if m is not None:
                    out += len(r.shared_processes(m))
                    total += (m.get("processes") or {}).get("n") or 1
        counts.append((out, total))
    if not any(n for n, _ in counts):
        return []
    return [f"process measurements set aside as run on a shared core (the core's width, adds per cycle of eight "
            f"independent chains, below {SLOWED:.0%} of its run's median at the process's start or end: another "
            f"hardware thread on the host's core): {labels[0]} {counts[0][0]} of {counts[0][1]}, {labels[1]} "
            f"{counts[1][0]} of {counts[1][1]}"]


def _without_flagged(a: list[Run], b: list[Run], rows: list[Row], min_change: float, labels: tuple[str, str],
                     alpha: float) -> list[str]:
    """Runs whose sentinels moved inside them, or that a noisier machine
    disturbed (interference.noisy_runs), named; and whether leaving them out
    changes any verdict."""
    from osmeter.results.readings import noisy_runs

    flagged = noisy_runs(a + b)
    for r in a + b:
        if (r.doc.get("sentinels") or {}).get("drifted"):
            flagged.setdefault(r.name, f"drifted inside the run ({r.doc['sentinels'].get('why')})")
    if not flagged:
        return []
    out = [f"flagged run {name}: {why}" for name, why in flagged.items()]
    ka = [r for r in a if r.name not in flagged]
    kb = [r for r in b if r.name not in flagged]
    if not ka or not kb:
        return out + ["leaving out the flagged runs would leave a side empty: their effect is not known"]
    again = compare_sides(ka, kb, min_change, labels, alpha, sensitivity=False)
    before = {r.id: _verdict_text(r) for r in rows}
    moved = [f"{r.id} ({before[r.id]} -> {_verdict_text(r)})" for r in again.rows
             if r.id in before and before[r.id].split(" (")[0] != _verdict_text(r).split(" (")[0]]
    if moved:
        return out + [f"without the flagged runs these verdicts change: {', '.join(moved)}"]
    return out + ["leaving out the flagged runs changes no verdict"]


PART_FLOOR = 0.01  # a component under this share of the traced total on both sides is not compared


def _kernel_paths(side: list[Run], mid: str) -> list[dict]:
    return [r.measurements[mid]["kernel_paths"] for r in side
            if mid in r.measurements and isinstance(r.measurements[mid].get("kernel_paths"), dict)]


def _compare_parts(a: list[Run], b: list[Run], rows: list[Row], min_change: float, alpha: float,
                   within_run_verdicts: bool, labels: tuple[str, str], notes: list[str]) -> None:
    """Where both sides were traced (--kernel-paths), each component of an
    id's kernel-path breakdown compared like the ids themselves: a run's
    value is its traced run's mean time per operation in that component
    (means, so the components add up to the traced total), B/A and the
    test as compare_id does with the run as unit, Benjamini-Hochberg over
    all the components compared. Row.parts holds them."""
    parts: list[Row] = []
    traced = 0
    for row in rows:
        ka, kb = _kernel_paths(a, row.id), _kernel_paths(b, row.id)
        if not ka or not kb:
            continue
        traced += 1
        names = list(dict.fromkeys(c for kp in ka + kb for c in kp.get("components", {})))
        for c in names:
            va = [float(kp["components"].get(c, 0.0)) for kp in ka]
            vb = [float(kp["components"].get(c, 0.0)) for kp in kb]
            if max(np.median(va) / max(np.median([kp["total_ns"] for kp in ka]), 1e-12),
                   np.median(vb) / max(np.median([kp["total_ns"] for kp in kb]), 1e-12)) < PART_FLOOR:
                continue
            part = compare_id(f"{row.id} [{c}]", "ns", [np.array([v]) for v in va], [np.array([v]) for v in vb],
                              row.area, interval=len(va) > 1 and len(vb) > 1)
            if part is not None:
                part.id = c
                row.parts.append(part)
                parts.append(part)
    if parts:
        decide(parts, min_change, alpha, within_run_verdicts)
        notes.append(f"kernel paths: {traced} id(s) traced on both sides, {len(parts)} components compared (their "
                     "traced runs' mean time per operation; Benjamini-Hochberg over the components)")


def moved_text(r: Row) -> str:
    """The verdict with what moved: "slower +3.1 us, of which softirq NET_RX
    +2.8 us" (the total from the timed runs, the components from the traced
    ones); components only where both sides were traced and one changed."""
    head = _verdict_text(r)
    if r.verdict not in ("faster", "slower", "higher", "lower"):
        return head
    head += f" {_signed(r.median_b - r.median_a, r.unit)}"
    moved = sorted((p for p in r.parts if p.verdict in ("faster", "slower", "higher", "lower")),
                   key=lambda p: -abs(p.median_b - p.median_a))
    if moved:
        head += ", of which " + ", ".join(f"{p.id} {_signed(p.median_b - p.median_a, 'ns')}" for p in moved)
    elif r.parts:
        head += ", no component of its kernel path changed beyond run-to-run variation"
    return head


def _signed(v: float, unit: str) -> str:
    return ("+" if v >= 0 else "-") + fmt_value(abs(v), unit)


def compare_paths(a: list[Path], b: list[Path], min_change: float = MIN_CHANGE) -> Comparison:
    if not a or not b:
        raise ValueError(f"side {'A' if not a else 'B'} is empty: give at least one run or campaign")
    return compare_sides(load_side(a), load_side(b), min_change)


def _ids(side: list[Run]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in side:
        for m in r.doc["measurements"]:
            out.setdefault(m["id"], m["unit"])
    return out


def host_mode_split(a: list[Run], b: list[Run], mid: str) -> tuple[list[Run], list[Run], str | None]:
    """For an id whose probe names a host-mode param (Probe.host_mode): each
    run's mode is "far" where that param (before or after its samples) lies
    over HOST_MODE_FACTOR times the least value among the compared runs,
    else "near". Where the sides' runs are not all in one mode, only the runs
    of the mode both sides have most of are compared, and a note says which
    were left out: a host that moved its vCPUs between A's runs and B's is
    no change of the machine. Returns the runs kept and the note."""
    from osmeter.probes import registry

    found = registry.find_measure(mid)
    key = getattr(found[0], "host_mode", "") if found else ""  # a derived id has none
    if not key:
        return a, b, None

    def values(r: Run) -> list[float]:
        p = (r.measurements.get(mid) or {}).get("params") or {}
        return [float(v) for v in (p.get(key), p.get(f"{key}_after"))
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]

    # keyed by the Run object itself: two campaigns on one side may both have a run-01
    vals = {id(r): values(r) for r in a + b}
    lows = [min(v) for v in vals.values() if v]
    if not lows:
        return a, b, None
    ref = min(lows)

    def mode(r: Run) -> str:
        v = vals[id(r)]
        return "unknown" if not v else "far" if max(v) > HOST_MODE_FACTOR * ref else "near"

    ma = {id(r): mode(r) for r in a if mid in r.measurements}
    mb = {id(r): mode(r) for r in b if mid in r.measurements}
    if len(set(ma.values()) | set(mb.values())) <= 1:
        return a, b, None
    pick = max(("near", "far", "unknown"),
               key=lambda m: (min(list(ma.values()).count(m), list(mb.values()).count(m)), m == "near"))
    ka = [r for r in a if ma.get(id(r)) == pick]
    kb = [r for r in b if mb.get(id(r)) == pick]
    left = [f"{lab} {sum(v != pick for v in m.values())} of {len(m)}" for lab, m in (("A", ma), ("B", mb))]
    where = (f"{key} within {HOST_MODE_FACTOR:g}x of the least, {ref:.3g}" if pick == "near"
             else f"{key} over {HOST_MODE_FACTOR:g}x the least, {ref:.3g}" if pick == "far" else f"no {key}")
    note = (f"{mid}: compared on the runs in one host mode ({where}); left out: {', '.join(left)} "
            "(the host's state moved the figure, not the machine)")
    return ka, kb, note


def _trials(side: list[Run], mid: str) -> list[list[np.ndarray]]:
    """Per run, the kept trials of each of its processes."""
    return [r.by_process(r.measurements[mid]) for r in side if mid in r.measurements]


def _widths(side: list[Run], mid: str) -> list[list[float | None]]:
    """Per run that has the id (as _trials), the core width of each of its kept processes."""
    return [r.process_widths(r.measurements[mid]) for r in side if mid in r.measurements]


def _clocks(side: list[Run], mid: str) -> list[float | None]:
    """Per run that has the id (as _trials), the core clock its probe's
    processes ran at (interference.measurement_clock), None where unknown."""
    return [measurement_clock(r.doc, r.measurements[mid]) for r in side if mid in r.measurements]


# --------------------------------------------------------- conditions

def flatten(prefix: str, v) -> dict[str, str]:
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out.update(flatten(f"{prefix}.{k}", x))
        return out
    return {prefix: v if isinstance(v, str) else json.dumps(v, sort_keys=True)}


def _facts(run: Run) -> dict[str, str]:
    facts = flatten("machine", run.doc.get("machine", {}))
    facts.update(flatten("conditions", run.doc.get("conditions", {})))
    return {k: v for k, v in facts.items() if not any(k == x or k.startswith(x + ".") for x in VOLATILE)}


def conditions_diff(a: list[Run], b: list[Run]) -> list[tuple[str, str, str]]:
    """Every recorded fact that differs between the sides: (key, A, B).
    A side whose runs disagree among themselves shows all its values."""
    fa, fb = [_facts(r) for r in a], [_facts(r) for r in b]
    keys = sorted(set().union(*fa, *fb))
    out = []
    for k in keys:
        va = list(dict.fromkeys(f.get(k, "(none)") for f in fa))
        vb = list(dict.fromkeys(f.get(k, "(none)") for f in fb))
        if set(va) != set(vb):
            out.append((k, " | ".join(va), " | ".join(vb)))
    return out


# ------------------------------------------------------------ summaries

def counts(rows: list[Row]) -> dict[str, int]:
    return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in rows))}


def area_changes(rows: list[Row]) -> list[tuple[str, float, int]]:
    """Per area, the geometric mean of B's cost over A's, for the ids with a
    direction: time-like ratios as they are, rates inverted (B/A above 1
    means B is slower). (area, ratio, ids)."""
    per: dict[str, list[float]] = {}
    for r in rows:
        if not (math.isfinite(r.ratio) and r.ratio > 0):
            continue
        if better(r.unit) == "lower":
            per.setdefault(r.area, []).append(math.log(r.ratio))
        elif better(r.unit) == "higher":
            per.setdefault(r.area, []).append(-math.log(r.ratio))
    return [(area, math.exp(float(np.mean(v))), len(v)) for area, v in per.items()]


def _verdict_text(r: Row) -> str:
    if r.verdict == "too few runs" and r.host_modes_apart:
        return "too few runs (in one host mode)"
    if r.verdict == "too few runs":
        return f"too few runs (need {r.need})" if r.need else "too few runs (need >200)"
    return r.verdict


def _pct_or_dash(v: float | None) -> str:
    if isinstance(v, float) and v > 10:  # beyond any change worth stating (an early look's tiny level)
        return ">1000%"
    return f"{v:.1%}" if isinstance(v, float) and math.isfinite(v) else "-"


def detectable_text(r: Row) -> str:
    """The row's smallest detectable change: this comparison's, then at DESIGNS runs a side."""
    if not (math.isfinite(r.mdc) or r.mdc == math.inf):
        return "-"
    return " / ".join([_pct_or_dash(r.mdc)] + [_pct_or_dash(r.mdc_at.get(n)) for n in DESIGNS])


def _describe_side(label: str, side: list[Run]) -> str:
    camps = list(dict.fromkeys(str(r.campaign) for r in side if r.campaign))
    dirs = [str(r.path) for r in side if not r.campaign]
    return f"{label}: {len(side)} run{'s' if len(side) != 1 else ''} ({', '.join(camps + dirs)})"


def method_line(c: Comparison) -> str:
    level = f"q < {c.alpha:.2g}" if c.alpha == ALPHA else f"q < {c.alpha:.4f} (this look's share of 5%)"
    if c.basis == "within-run" and c.within_run_verdicts:
        return ("one run per side: verdicts compare the trials of one run with those of the other (Mann-Whitney U, "
                "Benjamini-Hochberg q < 0.05, change >= {:.0%}). That is WITHIN-RUN ONLY: a machine drifts "
                "between runs by more than the spread inside one, so a verdict here may be drift. Repeat each side "
                "(--runs N) to test against run-to-run variance.").format(c.min_change)
    if c.basis == "within-run":
        return ("one run per side: one run against one run cannot tell the machine's drift between runs from a "
                "change, so no id is called changed; 'p within-run' compares the trials of one run with those of "
                "the other (Mann-Whitney U) and is shown for reading only. Repeat each side (osmeter run --runs N, "
                "or osmeter ab) to test against run-to-run variance")
    return (f"a run's figure is the median of its processes' medians; the unit of the test is the run, or the "
            f"process where the runs show no variance beyond their processes' and no process lies over "
            f"{FAR_PROCESS:g} robust sd from its side's median ('unit'); Welch's t test on the logs, "
            f"each side's spread taken as at least {RUN_SD_FLOOR:.0%}, or, with the run as the unit and the core "
            f"clock known for every run ('run, equal clock'), an analysis of covariance on the logs of the runs' "
            f"clocks, whose B/A and interval are then the change at equal clock; where the processes' figures follow "
            f"the core's width (adds per cycle, read at each process's start and end: another thread on the host's "
            f"core) within runs, at p < {WIDTH_P:g}, each process is first brought to the median width by that "
            f"within-run slope ('equal width'); Benjamini-Hochberg {level} over all ids, "
            f"change >= {c.min_change:.0%}; '=': shown within +-{c.min_change:.0%} by two one-sided tests; interval: "
            f"hierarchical bootstrap (runs, then trials), or at equal clock the covariance test's Student's t "
            f"interval; detectable: the smallest change these runs, and {' and '.join(map(str, DESIGNS))} runs a "
            f"side of the same spread, decide {POWER:.0%} of the time at {c.alpha:.2g} (seen as changed by the t "
            f"test, or shown '=' by the one-sided tests if unchanged), and '=' is given only where it is at most "
            f"{c.min_change:.0%}; 'too few runs': a {c.min_change:.0%} change (or the change seen, if larger) is "
            f"below these runs' detectable change, and 'need' runs a side would bring it there")


def cells(c: Comparison) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The table every output of compare shows: header and one row per id."""
    la, lb = c.labels
    if c.basis == "within-run":
        head = ("id", f"{la} median", f"{lb} median", f"{lb}/{la}", "95% CI", "p within-run", "runs", "verdict")
        body = [(r.id, fmt_value(r.median_a, r.unit), fmt_value(r.median_b, r.unit), f"{r.ratio:.3f}",
                 f"{r.ci[0]:.3f}..{r.ci[1]:.3f}", f"{r.p_within:.2g}", f"{r.n_a}/{r.n_b}", _verdict_text(r))
                for r in c.rows]
        return head, body
    head = ("id", f"{la} median", f"{lb} median", f"{lb}/{la}", "95% CI", "q", "runs", "unit",
            "detectable (" + "/".join(["these"] + [str(n) for n in DESIGNS]) + ")", "verdict")
    body = [(r.id, fmt_value(r.median_a, r.unit), fmt_value(r.median_b, r.unit), f"{r.ratio:.3f}",
             f"{r.ci[0]:.3f}..{r.ci[1]:.3f}", f"{r.q:.2g}", f"{r.n_a}/{r.n_b}", _unit_text(r), detectable_text(r),
             _verdict_text(r))
            for r in c.rows]
    return head, body


def _unit_text(r: Row) -> str:
    width = ", equal width" if r.width and r.width.get("applied") else ""
    if r.test_unit == "process":
        return f"process {r.units_a}/{r.units_b}{width}"
    return ("run, equal clock" if r.clock_slope is not None else "run") + width


def markdown(c: Comparison) -> str:
    """For the notebook: the sides, the conditions that differ, the table."""
    la, lb = c.labels
    out = [f"**{md(_describe_side(la, c.a))}**  ", f"**{md(_describe_side(lb, c.b))}**", ""]
    if c.conditions:
        out += [markdown_table(("condition", la, lb), c.conditions), ""]
    else:
        out += ["Every recorded condition is the same on both sides.", ""]
    out += [f"- {md(n)}" for n in c.notes] + [""] if c.notes else []
    out += [markdown_table(*cells(c)), ""]
    moved = [f"- {md(r.id)}: {md(moved_text(r))}" for r in c.rows if r.parts and r.verdict in DIRECTIONS]
    if moved:
        out += ["**Which part moved** (kernel paths of the traced runs, per operation):", "", *moved, ""]
    out += [md(f"{', '.join(f'{n} {v}' for v, n in counts(c.rows).items())}. ") + f"*Method:* {md(method_line(c))}."]
    return "\n".join(out)


def text(c: Comparison) -> str:
    la, lb = c.labels
    out = [_describe_side(la, c.a), _describe_side(lb, c.b), ""]
    if c.conditions:
        out.append(f"Conditions that differ between {la} and {lb}:")
        out += [f"  {k}: {va}  ->  {vb}" for k, va, vb in c.conditions]
    else:
        out.append("Conditions: the same on both sides (every recorded one).")
    if c.notes:
        out += ["", "Notes:"] + [f"  {n}" for n in c.notes]
    out.append("")
    out.append(text_table(*cells(c), left=(0, 7, 9)))
    out.append("")
    per = area_changes(c.rows)
    if per:
        out.append("Per area, geometric mean of the cost ratio (time per operation; rates inverted): "
                   + "; ".join(f"{a} {g:.3f} ({_pct_change(g)}, {n} ids)" for a, g, n in per))
    moved = [f"  {r.id}: {moved_text(r)}" for r in c.rows if r.parts and r.verdict in DIRECTIONS]
    if moved:
        out += ["Which part moved (kernel paths of the traced runs, per operation):", *moved, ""]
    out.append(", ".join(f"{n} {v}" for v, n in counts(c.rows).items()) + (" (one run a side)" if c.basis ==
                                                                           "within-run" else ""))
    out.append(f"Method: {method_line(c)}.")
    return "\n".join(out)


def _pct_change(g: float) -> str:
    if abs(g - 1) < 5e-4:
        return "no change"
    if g >= 1.5 or g <= 1 / 1.5:  # a large change reads better as a factor
        return f"{max(g, 1 / g):.3g}x {'slower' if g > 1 else 'faster'}"
    return f"{abs(g - 1):.1%} {'slower' if g > 1 else 'faster'}"


CSV_COLUMNS = ("id", "unit", "area", "runs_a", "runs_b", "median_a", "median_b", "ratio", "ci_lo", "ci_hi", "p", "q",
               "basis", "test_unit", "units_a", "units_b", "p_within_run", "p_equivalence", "run_cv", "runs_needed",
               "verdict", "moved", "clock_slope", "detectable", *(f"detectable_{n}" for n in DESIGNS), "width_slope",
               "width_explained", "width_applied")


def to_csv(c: Comparison) -> str:
    """One row per id; the verdict column holds one of VERDICTS. Lines
    starting with # before the header give the conditions that differ and
    the notes (read with comment='#')."""
    f = io.StringIO()
    for k, va, vb in c.conditions:
        f.write(f"# condition differs: {k}: {va} -> {vb}\n")
    for n in c.notes:
        f.write(f"# note: {n}\n")
    w = csv.writer(f)
    w.writerow(CSV_COLUMNS)
    for r in c.rows:
        w.writerow([r.id, r.unit, r.area, r.n_a, r.n_b, r.median_a, r.median_b, r.ratio, r.ci[0], r.ci[1], r.p, r.q,
                    r.basis, r.test_unit, r.units_a, r.units_b, r.p_within, r.p_equiv,
                    r.run_sd if r.run_sd is not None else "", r.need or "", r.verdict,
                    moved_text(r) if r.parts and r.verdict in DIRECTIONS else "",
                    r.clock_slope if r.clock_slope is not None else "",
                    r.mdc if math.isfinite(r.mdc) else "",
                    *(r.mdc_at[n] if math.isfinite(r.mdc_at.get(n, math.nan)) else "" for n in DESIGNS),
                    *((r.width["slope"], r.width["explained"], int(r.width["applied"])) if r.width else ("", "", ""))])
    return f.getvalue()


def to_latex(c: Comparison, figdir: Path, prefix: str = "compare") -> str:
    """A LaTeX section: the sides, the method, the conditions that differ,
    the change per area, a forest plot per area and the table. Figures are
    written to figdir and included by their names relative to the document."""
    from osmeter.present.plots import forest, plt

    la, lb = c.labels
    out = [r"\section{Before and after}",
           esc(_describe_side(la, c.a)) + r"\\", esc(_describe_side(lb, c.b)), "",
           r"\paragraph{Method.} " + esc(method_line(c)[0].upper() + method_line(c)[1:]) + ".", ""]
    if c.conditions:
        out += [r"\paragraph{Conditions that differ.} Every recorded fact of the machine and the run that is not "
                r"the same on both sides; a side whose runs disagree among themselves lists each value.",
                r"{\small\begin{longtable}{@{}p{0.3\linewidth}p{0.32\linewidth}p{0.32\linewidth}@{}}", r"\toprule",
                f"Condition & {esc(la)} & {esc(lb)} \\\\", r"\midrule", r"\endhead"]
        out += [f"\\path{{{_path_safe(k)}}} & {esc(va)} & {esc(vb)} \\\\" for k, va, vb in c.conditions]
        out += [r"\bottomrule", r"\end{longtable}}"]
    else:
        out.append(r"\paragraph{Conditions.} Every recorded condition is the same on both sides.")
    if c.notes:
        out += [r"\paragraph{Notes.}", r"\begin{itemize}"] + [f"\\item {esc(n)}" for n in c.notes] + [r"\end{itemize}"]
    per = area_changes(c.rows)
    tally = ", ".join(f"{n} {esc(v)}" for v, n in counts(c.rows).items())
    out += [r"\paragraph{Summary.} " + f"Over {len(c.rows)} ids: {tally}."
            + (" The geometric mean of the cost ratio per area (time per operation; rates inverted, so above 1 "
               f"means {esc(lb)} is slower): " + "; ".join(f"{esc(a)} {g:.3f} ({n} ids)" for a, g, n in per) + "."
               if per else ""), ""]
    figdir.mkdir(parents=True, exist_ok=True)
    areas = list(dict.fromkeys(r.area for r in c.rows))
    for area in areas:
        rows = [r for r in c.rows if r.area == area]
        fig = forest(rows, f"{area}: {lb} against {la}", c.min_change, c.labels)
        name = f"{tex_file_name(prefix)}-{tex_file_name(area)}.pdf"
        fig.savefig(figdir / name, bbox_inches="tight")
        plt.close(fig)
        out += [r"\begin{figure}[H]\centering",
                f"\\includegraphics[width=0.85\\linewidth]{{{tex_file_name(figdir.name)}/{name}}}",
                r"\end{figure}"]
    changed = [r for r in c.rows if r.parts and r.verdict in DIRECTIONS]
    if changed:
        from osmeter.present.plots import kernel_path_change

        out += [r"\paragraph{Which part moved.} Where both sides were traced (\texttt{--kernel-paths}), each "
                r"component of a changed id's kernel path (its traced runs' mean time per operation) is compared "
                r"like the ids themselves; the bars stack the components of each side, the changed ones hatched.",
                r"\begin{itemize}"] + [f"\\item {esc(r.id)}: {esc(moved_text(r))}" for r in changed] + [r"\end{itemize}"]
        for k, r in enumerate(changed):
            fig = kernel_path_change(r, c.labels)
            name = f"{tex_file_name(prefix)}-kpath-{k}.pdf"
            fig.savefig(figdir / name)
            plt.close(fig)
            out += [r"\begin{figure}[H]\centering", f"\\includegraphics{{{tex_file_name(figdir.name)}/{name}}}",
                    r"\end{figure}"]
    out += [r"{\small\begin{longtable}{@{}lrrrrrrl@{}}", r"\toprule",
            f"Measurement & {esc(la)} & {esc(lb)} & {esc(lb)}/{esc(la)} & 95\\% interval & $q$ & Detectable & "
            f"Verdict \\\\", r"\midrule", r"\endhead"]
    for r in c.rows:
        out.append(f"{esc(r.id)} & {esc(fmt_value(r.median_a, r.unit))} & {esc(fmt_value(r.median_b, r.unit))} & "
                   f"{r.ratio:.3f} & {r.ci[0]:.3f}--{r.ci[1]:.3f} & {r.q:.2g} & {esc(_pct_or_dash(r.mdc))} & "
                   f"{esc(_verdict_text(r))} \\\\")
    out += [r"\bottomrule", r"\end{longtable}}", ""]
    return "\n".join(out)


def _path_safe(s: str) -> str:
    """Text for \\path{...}: braces would end it early."""
    return s.replace("{", "(").replace("}", ")")
