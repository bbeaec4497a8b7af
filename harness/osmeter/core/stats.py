"""Statistics within one run, numpy only (and the math module's lgamma):
across trials, never across the iterations inside one trial (summaries,
the bootstrap interval of a median, the tail, a run's figure and its
hierarchical interval over processes); and the distributions (Student's t,
the normal, the regularized incomplete beta) that the tests between runs
(inference.py) rest on."""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
MIN_CHANGE = 0.02  # the smallest relative change compare, ab, decide, the fleet view and the history report
MAD_SD = 1.4826    # a normal distribution's standard deviation over its median absolute deviation


# --------------------------------------------------------------- one run

def bootstrap_medians(x: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> np.ndarray:
    """The medians of `resamples` bootstrap resamples of x (n draws with
    replacement), drawn without drawing the resamples: a resample's median
    is its middle order statistic(s), and the k-th smallest of n uniform
    draws is Beta(k, n + 1 - k) (the next one up, u + (1 - u) Beta(1, n - k));
    floor(n U) makes a uniform draw an index into the sorted samples and
    keeps the order. The same distribution as resampling, in O(resamples)
    after a sort, not O(resamples * n): the harness takes it for every id
    after every probe process."""
    xs = np.sort(np.asarray(x, dtype=float))
    n = xs.size
    rng = np.random.default_rng(seed)
    k = (n + 1) // 2  # the middle order statistic (odd n), the lower of the two (even n)
    u = rng.beta(k, n + 1 - k, resamples)
    lower = xs[np.minimum((n * u).astype(np.int64), n - 1)]
    if n % 2:
        return lower
    v = u + (1 - u) * rng.beta(1, n - k, resamples)
    return (lower + xs[np.minimum((n * v).astype(np.int64), n - 1)]) / 2


def robust_sd(x) -> float:
    """MAD_SD times the median absolute deviation of x from its median: a normal sample's standard
    deviation, which a few far values do not move."""
    x = np.asarray(x, dtype=float)
    return MAD_SD * float(np.median(np.abs(x - np.median(x))))


def run_figure(per_process: list[np.ndarray]) -> float:
    """One run's figure for an id: the median of its processes' medians
    (a process, not a sample, lands in one of the machine's modes), or the
    median of the samples where one process measured it. figure_ci is its
    interval."""
    meds = [float(np.median(x)) for x in per_process if x.size]
    if not meds:
        return float("nan")
    return float(np.median(meds))


def bootstrap_ci95_median(x: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the median (fixed seed: reruns agree)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    lo, hi = np.percentile(bootstrap_medians(x, resamples, seed), [2.5, 97.5])
    return (float(lo), float(hi))


def summarize(x: np.ndarray, ci: bool = True) -> dict:
    """mean, median, std (n-1), min, max, ci95 of the median (its bootstrap,
    the costly part: left out with ci=False), n."""
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    if n == 0:
        nan = float("nan")
        return {"n": 0, "mean": nan, "median": nan, "std": nan, "min": nan, "max": nan, "ci95": [nan, nan]}
    return {
        "n": n,
        "mean": float(np.mean(x)),
        "median": float(np.median(x)),
        "std": float(np.std(x, ddof=1)) if n > 1 else 0.0,
        "min": float(np.min(x)),
        "max": float(np.max(x)),
        **({"ci95": list(bootstrap_ci95_median(x))} if ci else {}),
    }


TAIL_POINTS = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9))
TAIL_BEYOND = 10  # samples a percentile needs beyond it to be reported


def tail(x: np.ndarray) -> dict:
    """p50, p90, p99, p99.9 and max of the samples (numpy's default linear
    interpolation). A percentile q is given only where at least TAIL_BEYOND
    samples lie beyond it, n * (1 - q) >= 10: p99 needs 1,000 samples and
    p99.9 10,000; below that its value is None and "short" names it with the
    samples it would need."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return tail_of(int(x.size), lambda q: float(np.percentile(x, q)), float(np.max(x)) if x.size else None)


def tail_of(n: int, at, most: float | None) -> dict:
    """The tail of n observations whose percentile q (0-100) is at(q): the
    same points and the same rule as tail(), for observations kept as a
    histogram rather than as samples."""
    out: dict = {"n": n, "max": most}
    short = []
    for name, q in TAIL_POINTS:
        need = int(np.ceil(round(TAIL_BEYOND / (1 - q / 100), 6)))
        if n >= need:
            out[name] = at(q)
        else:
            out[name] = None
            short.append(f"n too small for {name} (needs {need:,})")
    if short:
        out["short"] = "; ".join(short)
    return out


def series_summary(samples: np.ndarray) -> dict:
    """Per-x median and quartiles of a series (rows = x values, columns =
    trials); NaN marks a trial left out (disturbed). An x whose trials were
    all left out has NaN (null in results.json), without numpy's warning."""
    s = np.asarray(samples, dtype=float)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        return {
            "median": np.nanmedian(s, axis=1).tolist(),
            "p25": np.nanpercentile(s, 25, axis=1).tolist(),
            "p75": np.nanpercentile(s, 75, axis=1).tolist(),
        }


# ------------------------------------------------ Student's t distribution

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function, evaluated with
    the modified Lentz method."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if not math.isfinite(t):
        return 0.0 if not math.isnan(t) else float("nan")
    return betainc(df / 2, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    p = t_two_sided_p(t, df) / 2
    return 1 - p if t > 0 else p


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """The t such that P(T <= t) = q (bisection; q in (0, 1))."""
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -t_quantile(1 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def normal_quantile(q: float) -> float:
    """The z with normal_cdf(z) = q (bisection)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if normal_cdf(mid) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# The variance of the median of k draws from a standard normal (for even k the mean of the middle two),
# as tabulated for normal order statistics (David and Nagaraja, Order Statistics); beyond the table its
# large-k value pi/(2k), which is above the true one for every k past 12.
MEDIAN_VAR = {1: 1.0, 2: 0.5, 3: 0.4487, 4: 0.2982, 5: 0.2868, 6: 0.2147, 7: 0.2104, 8: 0.1684, 9: 0.1661,
              10: 0.1383, 11: 0.1370, 12: 0.1175}
# The 95% point of |median| / s over k standard normal draws, s their standard deviation: the exact
# multiplier of a 95% interval of the median of k normal figures (k = 2: t(1) / sqrt(2); the others
# from 2 million simulated samples each, tests/test_core_inference.py draws them again); beyond the
# table t(k-1) sqrt(median_var(k)), which it approaches.
MEDIAN_PIVOT95 = {2: 8.985, 3: 2.546, 4: 1.641, 5: 1.351, 6: 1.127, 7: 1.046}
# Below this many runs a side no bootstrap of the runs can cover 95%: resampling 3 runs never reaches past
# their extremes, which hold the median of 3 only 75% of the time (1 - 2/2^3), 6 runs 97% (1 - 2/2^6).
# compare's interval over fewer is Student's t on the logs of the run figures.
FEW_GROUPS = 6


def median_var(k: int) -> float:
    """The variance of the median of k standard normal draws (MEDIAN_VAR)."""
    return MEDIAN_VAR.get(k, math.pi / (2 * k))


def log_interval(center_log: float, half: float) -> tuple[float, float]:
    """exp(center_log -+ half): an interval on the log scale brought back,
    its upper end inf where it passes what a float holds (a t quantile at
    one degree of freedom times a wide spread; nothing can be said there)
    and its lower end 0 likewise."""
    def exp(x: float) -> float:
        return math.exp(x) if x < 709.0 else math.inf
    return exp(center_log - half), exp(center_log + half)


def groups_median_ci(figures, center: float) -> tuple[float, float]:
    """95% interval of the median of k >= 2 positive group figures (the
    processes of a run), taking their logs as normal: center (the median)
    times exp(+-MEDIAN_PIVOT95[k] s), s the logs' standard deviation. A
    bootstrap of the groups covers less the fewer they are (78% at 3, 89%
    at 8 in simulation); this covers 95% at any count."""
    logs = np.log(np.asarray(figures, float))
    k = logs.size
    pivot = MEDIAN_PIVOT95.get(k) or t_quantile(0.975, k - 1) * math.sqrt(median_var(k))
    half = pivot * float(np.std(logs, ddof=1))
    return log_interval(math.log(center), half)


def figure_ci(per_process: list[np.ndarray], resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% interval of a run's figure, the median of its processes' medians:
    groups_median_ci of their medians; where one process measured it (the
    median of its samples), or a median is not positive, a bootstrap
    (hierarchical: processes resampled, then each chosen process's
    samples)."""
    procs = [np.asarray(p, float) for p in per_process if np.asarray(p).size]
    if not procs:
        return float("nan"), float("nan")
    if len(procs) == 1:
        return bootstrap_ci95_median(procs[0], resamples, seed)
    meds = np.array([np.median(p) for p in procs])
    if np.all(meds > 0):
        return groups_median_ci(meds, float(np.median(meds)))
    rng = np.random.default_rng(seed)
    boots = np.stack([np.median(p[rng.integers(0, p.size, (resamples, p.size))], axis=1) for p in procs])
    pick = rng.integers(0, len(procs), (resamples, len(procs)))
    col = rng.integers(0, resamples, (resamples, len(procs)))
    lo, hi = np.percentile(np.median(boots[pick, col], axis=1), [2.5, 97.5])
    return float(lo), float(hi)
