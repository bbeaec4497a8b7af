"""Statistics between runs (compare, stability, ab), numpy only: the run is
the unit. Rank and t tests (Welch's on the logs of run medians, TOST for
equivalence), the covariate (width, clock) fits, the variance of a figure
split into its sources, the Benjamini-Hochberg adjustment and the alpha
spent by early looks, the interval of a ratio (a hierarchical bootstrap,
runs then trials within runs; Student's t over fewer than FEW_GROUPS
runs), and the runs a design needs to see a given change.
Within one run and the distributions these rest on: stats.py."""
from __future__ import annotations

import math

import numpy as np

from osmeter.core.stats import (BOOTSTRAP_RESAMPLES, log_interval, median_var, normal_cdf, normal_quantile, robust_sd,
                                 t_cdf, t_quantile, t_two_sided_p)


def ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average rank."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="mergesort")
    sx = x[order]
    # start of each run of equal values, and its length
    starts = np.flatnonzero(np.concatenate([[True], sx[1:] != sx[:-1]]))
    lengths = np.diff(np.concatenate([starts, [x.size]]))
    avg = starts + (lengths - 1) / 2 + 1
    r = np.empty(x.size, dtype=float)
    r[order] = np.repeat(avg, lengths)
    return r


def mann_whitney(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U: (U of a, p value), normal approximation with
    tie and continuity corrections."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    both = np.concatenate([a, b])
    r = ranks(both)
    u1 = r[:n1].sum() - n1 * (n1 + 1) / 2
    n = n1 + n2
    _, counts = np.unique(both, return_counts=True)
    tie = float((counts**3 - counts).sum())
    var = n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return float(u1), 1.0
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return float(u1), float(math.erfc(max(z, 0.0) / math.sqrt(2)))


def ratio_ci(a: np.ndarray, b: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95% interval of median(b) / median(a), trials resampled."""
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, (resamples, b.size))], axis=1)
    return _interval(mb, ma)


def _interval(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = num / den
    r = r[np.isfinite(r)]
    if r.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(r, [2.5, 97.5])
    return float(lo), float(hi)


# --------------------------------------------- tests whose unit is the run

def welch(x: np.ndarray, y: np.ndarray, sd_floor: float = 0.0) -> tuple[float, float, float]:
    """Welch's two-sample t test of mean(y) - mean(x): (t, df, two-sided p).
    Where one side has a single value, its variance is taken to be the other
    side's (a pooled test on the other side's degrees of freedom). Each
    side's standard deviation is taken as at least sd_floor."""
    return t_test(welch_parts(x, y, sd_floor))


def t_test(parts: tuple[float, float, float] | None) -> tuple[float, float, float]:
    """(t, df, two-sided p) of a difference given as (difference, its squared
    standard error, degrees of freedom): welch_parts or ancova_parts."""
    if parts is None:
        return float("nan"), float("nan"), float("nan")
    diff, se2, df = parts[:3]
    if se2 <= 0:  # no spread at all on either side (a quantized figure)
        return (0.0, float(df), 1.0) if diff == 0 else (math.copysign(math.inf, diff), float(df), 0.0)
    t = diff / math.sqrt(se2)
    return t, float(df), t_two_sided_p(t, df)


def tost(x: np.ndarray, y: np.ndarray, margin: float, sd_floor: float = 0.0) -> float:
    """Two one-sided tests (Schuirmann) that mean(y) - mean(x) lies inside
    (-margin, +margin), with Welch's standard error and degrees of freedom:
    the larger of the two one-sided p values. Small means shown equivalent."""
    return tost_of(welch_parts(x, y, sd_floor), margin)


def tost_of(parts: tuple[float, float, float] | None, margin: float) -> float:
    """tost() of a difference given as (difference, squared standard error, df)."""
    if parts is None or margin <= 0:
        return float("nan")
    diff, se2, df = parts[:3]
    if se2 <= 0:
        return 0.0 if abs(diff) < margin else 1.0
    se = math.sqrt(se2)
    p_low = 1 - t_cdf((diff + margin) / se, df)   # H0: diff <= -margin
    p_high = t_cdf((diff - margin) / se, df)      # H0: diff >= +margin
    return max(p_low, p_high)


def welch_parts(x, y, sd_floor: float) -> tuple[float, float, float] | None:
    """(mean(y) - mean(x), its squared standard error, degrees of freedom)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = x.size, y.size
    if nx < 1 or ny < 1 or nx + ny < 3:
        return None
    diff = float(y.mean() - x.mean())
    v_floor = sd_floor * sd_floor
    if nx >= 2 and ny >= 2:
        vx, vy = max(float(x.var(ddof=1)), v_floor) / nx, max(float(y.var(ddof=1)), v_floor) / ny
        se2 = vx + vy
        df = se2 * se2 / ((vx * vx / (nx - 1) if vx else 0.0) + (vy * vy / (ny - 1) if vy else 0.0)) if se2 else nx + ny - 2
    else:
        many = x if nx >= 2 else y
        s2 = max(float(many.var(ddof=1)), v_floor)
        se2 = s2 * (1 / nx + 1 / ny)
        df = many.size - 1
    return diff, se2, float(df)


def bounded_slope(sxx: float, sxy: float, syy: float, max_slope: float) -> tuple[float, float]:
    """Least squares of a slope from centred sums (sxx > 0), the slope taken
    at +-max_slope where the fit lies beyond: (slope, the residual sum of
    squares at that slope)."""
    slope = min(max(sxy / sxx, -max_slope), max_slope)
    return slope, max(syy - 2 * slope * sxy + slope * slope * sxx, 0.0)


def ancova_parts(ya, xa, yb, xb, sd_floor: float = 0.0, max_slope: float = math.inf
                 ) -> tuple[float, float, float, float, float] | None:
    """Analysis of covariance of two sides with one covariate measured beside
    each value (y: the logs of the run figures, x: the logs of the core
    clock each run ran at): the model y = side mean + slope * x + error, the
    slope common to both sides and fitted within them. Returns (B's mean
    of y minus A's at equal covariate, its squared standard error, degrees
    of freedom n - 3, slope, residual standard deviation), the residual standard deviation taken
    as at least sd_floor; None where the covariate does not vary inside the
    sides or there are too few values to fit a slope and leave a degree of
    freedom. A fitted slope beyond +-max_slope is taken at that bound (least
    squares under the bound: the residuals and the difference are those of
    the bounded slope; the degrees of freedom and the slope's share of the
    standard error stay those of a fitted one)."""
    ya, xa, yb, xb = (np.asarray(v, float) for v in (ya, xa, yb, xb))
    na, nb = ya.size, yb.size
    if na < 1 or nb < 1 or xa.size != na or xb.size != nb or na + nb < 4:
        return None
    dxa, dxb = xa - xa.mean(), xb - xb.mean()
    dya, dyb = ya - ya.mean(), yb - yb.mean()
    sxx = float(dxa @ dxa + dxb @ dxb)
    if not sxx > 0:
        return None
    sxy = float(dxa @ dya + dxb @ dyb)
    syy = float(dya @ dya + dyb @ dyb)
    slope, sse = bounded_slope(sxx, sxy, syy, max_slope)
    df = na + nb - 3
    s2 = max(sse / df, sd_floor * sd_floor)
    gap = float(xb.mean() - xa.mean())
    diff = float(yb.mean() - ya.mean()) - slope * gap
    return diff, s2 * (1 / na + 1 / nb + gap * gap / sxx), float(df), slope, math.sqrt(s2)


def covariate_fit(y, x, max_slope: float = math.inf) -> tuple[float, float, float] | None:
    """Least squares of y on one covariate x (the logs of run figures on the
    logs of their core clocks): (slope, the residual standard deviation on
    n - 2 degrees of freedom, the share of y's variance x explains); None
    with fewer than four values or an x that does not vary. A slope beyond
    +-max_slope is taken at the bound, as ancova_parts takes it."""
    y, x = np.asarray(y, float), np.asarray(x, float)
    if y.size < 4 or x.size != y.size:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if not sxx > 0:
        return None
    slope, sse = bounded_slope(sxx, float(dx @ dy), syy, max_slope)
    return slope, math.sqrt(sse / (y.size - 2)), (1 - sse / syy) if syy > 0 else 0.0


def nested_components(groups: list[np.ndarray], sides: int = 1) -> dict | None:
    """Variance components of values nested in groups (one-way random
    effects ANOVA, method of moments): the values are the logs of process
    medians, a group is a run. proc_var is the spread of processes inside a
    run, run_var what the runs add beyond it (0 when their means agree no
    more than their processes allow). `sides` groups of runs were centred
    apart (one degree of freedom each)."""
    groups = [np.asarray(g, float) for g in groups if np.asarray(g).size]
    k = len(groups)
    n = np.array([g.size for g in groups], float)
    total = n.sum()
    if k - sides < 1 or total - k < 1:
        return None
    grand = float(np.concatenate(groups).mean())
    ms_within = float(sum(((g - g.mean()) ** 2).sum() for g in groups)) / (total - k)
    ms_between = float(sum(ni * (g.mean() - grand) ** 2 for ni, g in zip(n, groups))) / (k - sides)
    n0 = (total - float((n * n).sum()) / total) / (k - 1)
    return {"proc_var": ms_within, "run_var": max(0.0, (ms_between - ms_within) / n0), "runs": k,
            "processes_per_run": float(total / k)}


def variance_split(runs: list[list[np.ndarray]]) -> dict | None:
    """Where an id's variance comes from, after Kalibera and Jones: runs,
    each a list of its processes' samples (positive values). On the log
    scale (so each part reads as a CV):

    within   the spread of samples inside a process (median absolute
             deviation scaled to a standard deviation, pooled);
    process  the spread of processes inside a run beyond what their
             samples' spread puts into a median (pi/2 sigma^2 / n);
    run      the spread of runs beyond what their processes put into them.

    Each part's share of the variance of one run's figure (the median of P
    process medians of n samples) is given, and the largest is `dominant`."""
    logs = [[np.log(p[p > 0]) for p in run if np.asarray(p).size and np.all(np.asarray(p) > 0)] for run in runs]
    logs = [[p for p in run if p.size] for run in logs]
    logs = [run for run in logs if run]
    if not logs:
        return None
    mads, sizes = [], []
    for run in logs:
        for p in run:
            sizes.append(p.size)
            if p.size > 1:
                mads.append(robust_sd(p))
    within = float(np.sqrt(np.mean(np.square(mads)))) if mads else 0.0
    n = float(np.mean(sizes))
    median_noise = math.pi / 2 * within * within / n  # variance a process median gets from its samples
    groups = [np.array([np.median(p) for p in run]) for run in logs]
    procs = float(np.mean([g.size for g in groups]))
    comp = nested_components(groups) if len(groups) > 1 else None
    process_var = run_var = float("nan")
    if comp is not None:
        process_var, run_var = max(0.0, comp["proc_var"] - median_noise), comp["run_var"]
    elif len(groups) == 1 and groups[0].size > 1:  # one run of several processes: no run part
        process_var = max(0.0, float(np.var(groups[0], ddof=1)) - median_noise)
    elif len(groups) > 1:  # runs of one process each: processes and runs cannot be told apart
        run_var = max(0.0, float(np.var([g[0] for g in groups], ddof=1)) - median_noise)
    parts = {"within": median_noise / procs, "process": process_var / procs, "run": run_var}
    known = {k: v for k, v in parts.items() if math.isfinite(v)}
    total = sum(known.values())
    return {"within_cv": within, "process_cv": math.sqrt(process_var) if math.isfinite(process_var) else None,
            "run_cv": math.sqrt(run_var) if math.isfinite(run_var) else None, "samples_per_process": n,
            "processes_per_run": procs, "runs": len(groups),
            "share": {k: (v / total if total > 0 else None) for k, v in known.items()},
            "dominant": max(known, key=known.get) if total > 0 else None}


def spend_alpha(look: int, looks: int, alpha: float = 0.05) -> float:
    """The level of look `look` (1..looks) of a sequential design: the
    increment of the Lan-DeMets O'Brien-Fleming-type spending function
    alpha(t) = 2 - 2 Phi(z_(1 - alpha/2) / sqrt(t)) at t = look/looks. Each
    look tests at its increment, so by the union bound the chance of ever
    rejecting a true null over all looks is at most alpha; early looks
    spend little, the last nearly alpha's share left."""
    if not 1 <= look <= looks:
        raise ValueError(f"look {look} of {looks}")
    z = normal_quantile(1 - alpha / 2)

    def spent(t: float) -> float:
        return 0.0 if t <= 0 else 2 - 2 * normal_cdf(z / math.sqrt(t))
    return spent(look / looks) - spent((look - 1) / looks)


def benjamini_hochberg(p: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p values (q values); NaN stays NaN and is
    not counted among the tests."""
    p = np.asarray(p, dtype=float)
    q = np.full(p.size, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return q.tolist()
    order = ok[np.argsort(p[ok], kind="mergesort")]
    m = order.size
    scaled = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return q.tolist()


def hierarchical_ratio_ci(a_runs: list[np.ndarray], b_runs: list[np.ndarray], resamples: int = BOOTSTRAP_RESAMPLES,
                          seed: int = 0) -> tuple[float, float]:
    """95% interval of (median of B's run medians) / (median of A's), by a
    hierarchical bootstrap: runs are resampled, then each chosen run's
    trials are resampled and its median taken."""
    rng = np.random.default_rng(seed)

    def side(runs):
        # R bootstrap medians of every run, then R draws of runs, each run
        # drawn taking one of its own bootstrap medians at random
        boots = np.stack([np.median(r[rng.integers(0, r.size, (resamples, r.size))], axis=1) for r in runs])
        pick = rng.integers(0, len(runs), (resamples, len(runs)))
        col = rng.integers(0, resamples, (resamples, len(runs)))
        return np.median(boots[pick, col], axis=1)

    return _interval(side(b_runs), side(a_runs))


def few_runs_ratio_ci(la, lb, ratio: float, sd_floor: float = 0.0) -> tuple[float, float]:
    """95% interval of a ratio of the medians of a few runs' figures a side
    (fewer than FEW_GROUPS on one side at least, where no bootstrap of the
    runs can cover 95%), from la and lb, the logs of the run figures, taken
    as normal: ratio times exp(+-t se), se the standard error of the
    difference of the sides' medians (median_var of each side's count times
    its variance, each side's standard deviation at least sd_floor, a side
    of one run taking the other's) and t Student's at Welch's degrees of
    freedom, or the pooled test's where the sides have as many runs each
    (Welch's are too few there: 2 runs a side covered 97.7%). In
    simulation of normal run logs over 2 to 10 runs a side, spreads equal
    or 3x apart: 94 to 96.6% (tests/test_core_inference.py)."""
    la, lb = np.asarray(la, float), np.asarray(lb, float)
    if la.size + lb.size < 3 or not (ratio > 0):
        return float("nan"), float("nan")
    var = [max(float(x.var(ddof=1)), sd_floor * sd_floor) if x.size > 1 else None for x in (la, lb)]
    var = [v if v is not None else next(w for w in var if w is not None) for v in var]
    parts = [median_var(x.size) * v for x, v in zip((la, lb), var)]
    se2 = sum(parts)
    if min(la.size, lb.size) < 2:
        df = max(la.size, lb.size) - 1
    elif la.size == lb.size or se2 <= 0:
        df = la.size + lb.size - 2  # equal counts: the pooled t's, which unequal spreads then barely move
    else:
        df = se2 * se2 / sum(p * p / (x.size - 1) for p, x in zip(parts, (la, lb)))
    half = t_quantile(0.975, df) * math.sqrt(se2)
    return log_interval(math.log(ratio), half)


def power_two_sided(effect: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """Approximate power of a two-sample t test with n runs per side to see a
    difference `effect` in means of values whose spread is `sd`."""
    if n < 2:
        return 0.0
    if sd <= 0:
        return 1.0 if effect else alpha
    df = 2 * n - 2
    crit = t_quantile(1 - alpha / 2, df)
    delta = abs(effect) / (sd * math.sqrt(2 / n))
    return (1 - t_cdf(crit - delta, df)) + t_cdf(-crit - delta, df)


def runs_needed(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8, most: int = 200) -> int | None:
    """Runs per side for a two-sample t test to reach `power` for a change
    `effect` (in the units of sd); None beyond `most`. (Power grows with n:
    a binary search.)"""
    if power_two_sided(effect, sd, most, alpha) < power:
        return None
    lo, hi = 2, most  # power(hi) is enough
    while lo < hi:
        mid = (lo + hi) // 2
        if power_two_sided(effect, sd, mid, alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


def smallest_change(se: float, df: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest change (a fraction) that a design whose difference of
    mean logs has standard error `se` on `df` degrees of freedom decides at
    level alpha with the given power, both ways it can decide: the larger
    of the change a two-sided t test sees `power` of the time,
    (t_(1-alpha/2) + t_power) se, and the margin inside which two one-sided
    tests show an unchanged figure equal `power` of the time,
    (t_(1-alpha) + t_(1-(1-power)/2)) se (central t quantiles: the usual
    approximation of the noncentral t). NaN where it cannot be known."""
    if not (math.isfinite(se) and se >= 0 and math.isfinite(df) and df >= 1):
        return float("nan")
    detect = t_quantile(1 - alpha / 2, df) + t_quantile(power, df)
    equal = t_quantile(1 - alpha, df) + t_quantile(1 - (1 - power) / 2, df)
    log_change = max(detect, equal) * se
    return math.expm1(log_change) if log_change < 50 else math.inf  # beyond any change worth stating


def smallest_change_at(sd: float, n: int, per_run: float = 1.0, lost_df: int = 0, alpha: float = 0.05,
                       power: float = 0.8) -> float:
    """smallest_change() of n runs a side whose test unit (a run, or a
    process of which a run holds per_run) has log spread sd: two equal
    sides, a pooled t test that lost lost_df degrees of freedom (one for a
    covariate)."""
    units = n * per_run
    if not (math.isfinite(sd) and units >= 2):
        return float("nan")
    return smallest_change(sd * math.sqrt(2 / units), 2 * units - 2 - lost_df, alpha, power)


def runs_to_decide(change: float, sd: float, per_run: float = 1.0, lost_df: int = 0, alpha: float = 0.05,
                   power: float = 0.8, most: int = 200) -> int | None:
    """The fewest runs a side whose smallest_change_at() is at most
    `change` (a fraction); None beyond `most`. (It falls as runs are
    added: a binary search.)"""
    def ok(n: int) -> bool:
        got = smallest_change_at(sd, n, per_run, lost_df, alpha, power)
        return math.isfinite(got) and got <= change
    if not ok(most):
        return None
    lo, hi = 2, most
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def within_slope(ys: list, xs: list) -> dict | None:
    """The slope of y on x within groups (a group is a run; y and x the logs
    of its processes' figures and of a covariate each one read): each group
    centred on its own means, one slope pooled over them (the covariance
    analysis of the groups as blocks). Its standard error, degrees of
    freedom (values - groups - 1), two-sided p, and the share of the
    within-group variance of y that x explains. None with under one degree
    of freedom or no spread of x."""
    dy, dx = [], []
    for y, x in zip(ys, xs):
        y, x = np.asarray(y, float), np.asarray(x, float)
        if y.size >= 2 and y.size == x.size:
            dy.append(y - y.mean())
            dx.append(x - x.mean())
    if not dy:
        return None
    dy, dx = np.concatenate(dy), np.concatenate(dx)
    groups = sum(1 for y in ys if np.asarray(y).size >= 2)
    df = dy.size - groups - 1
    sxx, syy, sxy = float(dx @ dx), float(dy @ dy), float(dx @ dy)
    if df < 1 or not sxx > 0:
        return None
    slope = sxy / sxx
    sse = max(syy - slope * sxy, 0.0)
    se = math.sqrt(sse / df / sxx)
    p = t_two_sided_p(slope / se, df) if se > 0 else 0.0
    return {"slope": slope, "se": se, "df": df, "p": p, "explained": (1 - sse / syy) if syy > 0 else 0.0}
