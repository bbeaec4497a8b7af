"""Change points in a series of runs: E-divisive with means (Matteson and
James, "A nonparametric approach for multiple change point analysis of
multivariate data", JASA 2014; the method of Apache Otava, formerly hunter,
and of MongoDB's signal processing), numpy only.

The series is the logs of the runs' medians (a shift is a ratio). For a
segment, every split tau (each side at least MIN_SIZE runs) is scored by
the energy statistic with exponent 1,

    Q(tau, kappa) = m n / (m + n) * (2/(m n) sum|x_i - y_j| - 1/C(m,2) sum_{i<k}|x_i - x_k|
                                     - 1/C(n,2) sum_{j<l}|y_j - y_l|),

x the runs before tau, y those from tau to kappa (m and n of them; kappa
up to the segment's end),

the best split is tested by permutation (the segment's order shuffled
PERMUTATIONS times, or 10 / alpha where that is more: p = the share of
shuffles scoring at least as high),
and a split with p < alpha is a break: both halves are searched again
(binary segmentation). alpha is the false-alarm rate of each test: on a series with
no change, the first test finds one with probability alpha, and none is
searched further. The run-level noise enters twice: the permutation test
asks whether the split stands out of the series' own run-to-run spread, and
a break is a change point only where its shift (the median of the runs
up to the next break over that of the runs since the one before) is at
least min_change and its bootstrap interval (each side's runs resampled)
does not hold 1.
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field

import numpy as np

MIN_SIZE = 3
PERMUTATIONS = 199
BOOT = 2000
COMMIT = re.compile(r"[0-9a-f]{4,64}")  # an object name as a run records it (git rev-parse HEAD)


def _block_sums(d: np.ndarray) -> np.ndarray:
    """S[i, j] = sum of d[:i, :j] (a zero row and column first)."""
    s = np.zeros((d.shape[0] + 1, d.shape[1] + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    return s


def scores(x: np.ndarray, min_size: int = MIN_SIZE) -> np.ndarray:
    """Q(tau, kappa): x[:tau] against x[tau:kappa], for tau, kappa = 0..n
    (NaN where a side would be shorter than min_size). Letting the right
    end kappa stop short of n is E-divisive's own search: a change that
    goes away again (a bump) scores high at its start only when the
    comparison can end before the bump does."""
    n = len(x)
    q = np.full((n + 1, n + 1), np.nan)
    if n < 2 * min_size:
        return q
    d = np.abs(x[:, None] - x[None, :])
    s = _block_sums(d)
    for t in range(min_size, n - min_size + 1):
        m = t
        kap = np.arange(t + min_size, n + 1)
        k = kap - t
        between = s[t, kap] - s[t, t]                                  # d[:t, t:kappa]
        left = s[t, t] / 2                                             # pairs inside x[:t]
        right = (s[kap, kap] - s[t, kap] - s[kap, t] + s[t, t]) / 2    # pairs inside x[t:kappa]
        e = 2 * between / (m * k) - left / (m * (m - 1) / 2) - right / (k * (k - 1) / 2)
        q[t, kap] = m * k / (m + k) * e
    return q


def best_split(x: np.ndarray, rng: np.random.Generator, min_size: int = MIN_SIZE,
               permutations: int = PERMUTATIONS, alpha: float = 1.0) -> tuple[int | None, float]:
    """The best split of x and its permutation p value (None, 1 where x is too short). The shuffles stop
    once p cannot fall below alpha any more (the p returned is then a lower bound, and at least alpha)."""
    q = scores(x, min_size)
    if np.all(np.isnan(q)):
        return None, 1.0
    t = int(np.unravel_index(np.nanargmax(q), q.shape)[0])
    top = np.nanmax(q)
    beaten = 0
    for _ in range(permutations):
        beaten += np.nanmax(scores(rng.permutation(x), min_size)) >= top - 1e-12
        if (beaten + 1) / (permutations + 1) >= alpha:
            break
    return t, (beaten + 1) / (permutations + 1)


def shift_interval(before: np.ndarray, after: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """after's median over before's, and its 95% bootstrap interval (values, not logs)."""
    ratio = float(np.median(after) / np.median(before))
    b = rng.choice(before, (BOOT, len(before)))
    a = rng.choice(after, (BOOT, len(after)))
    r = np.median(a, axis=1) / np.median(b, axis=1)
    return ratio, float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975))


def find(values: list[float], alpha: float = 0.01, min_change: float = 0.02, seed: int = 1,
         min_size: int = MIN_SIZE) -> list[tuple[int, float, float, float, float]]:
    """Change points of a series: (index of the first run after, p, ratio,
    ratio low, ratio high), in order. Values must be positive."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2 * min_size or np.any(~np.isfinite(v)) or np.any(v <= 0):
        return []
    x = np.log(v)
    rng = np.random.default_rng(seed)
    found: list[tuple[int, float]] = []
    todo = [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        t, p = best_split(x[lo:hi], rng, min_size, permutations=max(PERMUTATIONS, int(np.ceil(10 / alpha)) - 1),
                          alpha=alpha)
        if t is None or p >= alpha:
            continue
        found.append((lo + t, p))  # a break in the series; whether it is a change is asked below
        todo += [(lo, lo + t), (lo + t, hi)]
    found.sort()
    out = []
    bounds = [0] + [t for t, _ in found] + [len(v)]
    for k, (t, p) in enumerate(found):  # each break against its neighbours' segments
        ratio, rlo, rhi = shift_interval(v[bounds[k]:t], v[t:bounds[k + 2]], rng)
        if abs(np.log(ratio)) >= np.log1p(min_change) and not rlo <= 1.0 <= rhi:
            out.append((t, p, ratio, rlo, rhi))
    return out


# ------------------------------------------------------------ what changed

@dataclass
class ChangePoint:
    mid: str
    unit: str
    before: dict           # the last run before the change (a store.series row)
    after: dict            # the first run after it
    p: float
    ratio: float           # after's median over before's, over the segments on each side
    low: float
    high: float
    differs: dict = field(default_factory=dict)  # condition -> (before, after)
    method: str = ""       # osmeter's own change of this probe between the two runs' commits, if any

    @property
    def cause(self) -> str:
        if self.method:
            return f"osmeter's method: {self.method}"
        if not self.differs:
            return "no recorded condition differs"
        keys = sorted(self.differs)
        shown = "; ".join(f"{k}: {self.differs[k][0]} -> {self.differs[k][1]}" for k in keys[:4])
        return shown + (f"; and {len(keys) - 4} more" if len(keys) > 4 else "")


def differs(before: dict, after: dict) -> dict[str, tuple[str, str]]:
    a, b = json.loads(before["facts"]), json.loads(after["facts"])
    return {k: (a.get(k, "-"), b.get(k, "-")) for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and not k.startswith("conditions.osmeter")}


def method_change(mid: str, c1: str | None, c2: str | None) -> str:
    """The files of mid's probe that osmeter's commits c1..c2 changed ("" when none, or the commits are
    the same); said so when the commits cannot be compared (not in this tree)."""
    if not c1 or not c2 or c1 == c2:
        return ""
    if not (COMMIT.fullmatch(c1) and COMMIT.fullmatch(c2)):  # a run's string, never an option of git's
        return "osmeter's commit changed, to or from one that is no commit id"
    from osmeter.core.tree import repo_root
    from osmeter.probes import registry
    found = registry.find_measure(mid)
    area = mid.split(".", 1)[0]
    paths = [f"harness/osmeter/probes/areas/{area}.py", "bench/common"]
    if found and getattr(found[0], "binary", None):
        b = found[0].binary
        paths.append(f"bench/{b.replace('_', '/', 1)}.c" if b.startswith(area + "_") else f"bench/{b}")
    r = subprocess.run(["git", "-C", str(repo_root()), "diff", "--name-only", "--end-of-options", c1, c2, "--", *paths],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"osmeter's commit changed ({c1[:10]} -> {c2[:10]}), and this tree cannot compare them"
    files = r.stdout.split()
    return f"{c1[:10]} -> {c2[:10]} changed {', '.join(files[:3])}" + ("..." if len(files) > 3 else "") if files else ""


def change_points(rows: list[dict], mid: str, alpha: float = 0.01, min_change: float = 0.02) -> list[ChangePoint]:
    """The change points of one id's series (store.series rows)."""
    if not rows:
        return []
    out = []
    for t, p, ratio, lo, hi in find([r["median"] for r in rows], alpha, min_change):
        before, after = rows[t - 1], rows[t]
        out.append(ChangePoint(mid, rows[0]["unit"], before, after, p, ratio, lo, hi, differs(before, after),
                               method_change(mid, before["commit"], after["commit"])))
    return out
