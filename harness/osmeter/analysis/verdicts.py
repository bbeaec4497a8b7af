"""compare's verdicts: each id's change decided from its test and interval
(faster, slower, higher, lower; = where the two sides are equivalent
within the smallest change worth stating; ~ where the runs cannot tell;
too few runs), the smallest change a design of a few runs a side would
detect, and the counts of each verdict, per area too."""
from __future__ import annotations

import math

import numpy as np

from osmeter.analysis.model import ALPHA, DESIGNS, MIN_CHANGE, POWER, RUN_SD_FLOOR, VERDICTS, Row, per_run
from osmeter.core.inference import (benjamini_hochberg, runs_needed, runs_to_decide, smallest_change,
                                    smallest_change_at, tost_of)
from osmeter.core.units import better


def direction(unit: str, up: bool) -> str:
    if better(unit) == "lower":
        return "slower" if up else "faster"
    if better(unit) == "higher":
        return "faster" if up else "slower"
    return "higher" if up else "lower"


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
            r.runs_needed = max(3, runs_needed(math.log1p(min_change), RUN_SD_FLOOR, alpha, POWER) or 3)
            continue
        detectable(r, alpha)
        big = math.isfinite(r.ratio) and abs(r.ratio - 1) >= min_change
        if big and q < alpha:
            r.verdict = direction(r.unit, r.ratio > 1)
            continue
        r.verdict = "~"
        if r.unit_cv is None or r.test_parts is None or not (math.isfinite(r.ratio) and r.ratio > 0):
            continue
        r.p_equiv = tost_of(r.test_parts, math.log1p(min_change))
        # '=' only where the design resolves the margin: an equivalence shown at a change smaller than the
        # design's smallest detectable one is the luck of a spread that happened to come out small
        if r.p_equiv < alpha and r.detectable <= min_change:
            r.verdict = "="
            continue
        # a change of min_change, or the change seen if larger, beyond what this design resolves: the
        # runs a side whose smallest detectable change would reach it
        effect = max(min_change, abs(r.ratio - 1))
        if r.detectable > effect:
            r.verdict = "too few runs"
            need = runs_to_decide(effect, max(r.unit_cv, RUN_SD_FLOOR), per_run(r),
                                  1 if r.clock_slope is not None else 0, alpha, POWER)
            # the design assumes two sides of one spread; sides apart in spread (fewer Welch degrees of
            # freedom) can leave it undecided at the runs it asks for: then at least one run more a side
            r.runs_needed = None if need is None else max(need, max(r.n_a, r.n_b) + 1)


def detectable(r: Row, alpha: float = ALPHA) -> None:
    """The row's smallest detectable change (inference.smallest_change): for
    this comparison, from its test's standard error and degrees of freedom,
    and for DESIGNS runs a side of the same spread of the test's unit (a
    covariate, the clock, costs its degree of freedom there too)."""
    if r.test_parts is None or r.unit_cv is None:
        return
    _, se2, df = r.test_parts[:3]
    r.detectable = smallest_change(math.sqrt(max(se2, 0.0)), df, alpha, POWER)
    lost = 1 if r.clock_slope is not None else 0
    sd = max(r.unit_cv, RUN_SD_FLOOR)  # as the test takes each side's spread
    r.detectable_at = {n: smallest_change_at(sd, n, per_run(r), lost, alpha, POWER) for n in DESIGNS}


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
