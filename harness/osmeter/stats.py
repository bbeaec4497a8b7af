"""Statistics across trials (never across the iterations inside one trial)."""
from __future__ import annotations

import numpy as np

BOOTSTRAP_RESAMPLES = 2000


def bootstrap_ci95_median(x: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the median (fixed seed: reruns agree)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    medians = np.median(x[idx], axis=1)
    lo, hi = np.percentile(medians, [2.5, 97.5])
    return (float(lo), float(hi))


def summarize(x: np.ndarray) -> dict:
    """mean, median, std (n-1), min, max, ci95 of the median, n."""
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
        "ci95": list(bootstrap_ci95_median(x)),
    }


def series_summary(samples: np.ndarray) -> dict:
    """Per-x median and quartiles of a series (rows = x values, columns =
    trials); NaN marks a trial left out (disturbed)."""
    s = np.asarray(samples, dtype=float)
    return {
        "median": np.nanmedian(s, axis=1).tolist(),
        "p25": np.nanpercentile(s, 25, axis=1).tolist(),
        "p75": np.nanpercentile(s, 75, axis=1).tolist(),
    }
