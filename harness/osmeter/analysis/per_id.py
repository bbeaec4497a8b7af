"""One id compared between two sides: the run as the unit where each side
has several runs (Welch's test on the logs of run medians, its spread
floored at RUN_SD_FLOOR, a far process set aside), within-run otherwise;
at equal core width or clock where the processes' figures follow it."""
from __future__ import annotations

import math

import numpy as np

from osmeter.analysis.model import CLOCK_MAX_SLOPE, FAR_PROCESS, RUN_SD_FLOOR, WIDTH_MIN_DF, WIDTH_P, Row, area_of
from osmeter.core.inference import (ancova_parts, few_runs_ratio_ci, hierarchical_ratio_ci, mann_whitney,
                                    nested_components, ratio_ci, t_test, welch, welch_parts, within_slope)
from osmeter.core.stats import FEW_GROUPS, log_interval, robust_sd, run_figure, t_quantile


def _sd_pooled(la: np.ndarray, lb: np.ndarray) -> float | None:
    parts = [(x.size - 1, float(np.var(x, ddof=1))) for x in (la, lb) if x.size > 1]
    dof = sum(d for d, _ in parts)
    return math.sqrt(sum(d * v for d, v in parts) / dof) if dof else None


def _se(x: np.ndarray, y: np.ndarray) -> float:
    """The standard error of mean(y) - mean(x), each side's spread taken as at least RUN_SD_FLOOR (a side
    of one value, whose spread is unknown: RUN_SD_FLOOR)."""
    return math.sqrt(sum(max(float(np.var(v, ddof=1)) if v.size > 1 else 0.0, RUN_SD_FLOOR ** 2) / v.size
                         for v in (x, y)))


def _processes(run) -> list[np.ndarray]:
    """A run as a list of its processes' kept trials (a bare array is one process)."""
    if isinstance(run, np.ndarray):
        return [run] if run.size else []
    return [np.asarray(x, float) for x in run if np.asarray(x).size]


def far_processes(logs: np.ndarray) -> int:
    """How many of one side's process medians (their logs) lie in a far mode:
    further than FAR_PROCESS robust standard deviations from the side's median."""
    r = np.abs(logs - np.median(logs))
    sd = max(robust_sd(logs), RUN_SD_FLOOR)
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
    if not interval:
        ci = (float("nan"), float("nan"))
    elif positive and min(len(a), len(b)) < FEW_GROUPS:
        ci = few_runs_ratio_ci(np.log(ma), np.log(mb), ratio, RUN_SD_FLOOR)
    else:
        ci = hierarchical_ratio_ci(pooled_a, pooled_b)
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
    row.unit_cv = max(sd, RUN_SD_FLOOR) if sd is not None else None
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
    (inference.within_slope: run means taken out, so the sides' difference
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
    their processes ran at (inference.ancova_parts), which takes out of the
    run-to-run spread what a host's boost clock, moving between runs, puts
    into work done by the core. The row's ratio and interval become B/A at
    equal clock; a change of the clock itself shows in the clock's own id
    (cpu.clock). Applied whatever the fitted slope (the choice does not look
    at the data, so the test keeps its size), within +-CLOCK_MAX_SLOPE; it
    costs one degree of freedom."""
    if not all(isinstance(c, (int, float)) and c > 0 for c in list(ca) + list(cb)):
        return
    got = ancova_parts(la, np.log(np.asarray(ca, float)), lb, np.log(np.asarray(cb, float)), RUN_SD_FLOOR,
                       CLOCK_MAX_SLOPE)
    if got is None:
        return
    diff, se2, df, slope, resid_sd = got
    row.test_parts = (diff, se2, df)
    row.clock_slope = slope
    row.unit_cv = resid_sd
    row.ratio = math.exp(diff)
    if interval:
        # the clocks of the two sides apart (an A/A on a host whose clock moved between them): the change at
        # equal clock is an extrapolation, its interval as wide as that makes it, up to (0, inf)
        row.ci = log_interval(diff, t_quantile(0.975, df) * math.sqrt(se2))
