"""Change points in a series of runs: E-divisive with means (Matteson and
James, "A nonparametric approach for multiple change point analysis of
multivariate data", JASA 2014; the method of Apache Otava, formerly hunter,
and of MongoDB's signal processing), numpy only.

The series is the logs of the runs' figures (results.model.Measurement; a shift is a ratio). For a
segment, every split tau (each side at least min_size runs, MIN_SIZE unless
`history --min-runs` says otherwise, so a shorter spike is no change point) is scored by
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
least min_change and its 95% interval does not hold 1: a bootstrap (each
side's runs resampled), or over fewer than FEW_GROUPS runs a side, where
no bootstrap of the runs covers 95%, Student's t on the runs' logs
(inference.few_runs_ratio_ci, compare's interval).

A series longer than WINDOW runs is searched in overlapping windows of
WINDOW runs, half a window apart, each as above (windows): a break is
kept from the window in whose middle half it lies, and each side of its
interval is at most a window's runs. A search costs O(w^2) a score, so a
series costs O(n w) and not O(n^2), and a window's breaks depend on its
runs alone: the history keeps them (store.WindowCache, keyed by a digest
of the window's values and the parameters), and a run appended searches
again only the last window. A series of at most WINDOW runs is one window,
searched whole with the generator and shuffles of the method by the book.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from osmeter.core.inference import few_runs_ratio_ci
from osmeter.core.stats import FEW_GROUPS, MIN_CHANGE

MIN_SIZE = 3
PERMUTATIONS = 199
BOOT = 2000
COMMIT = re.compile(r"[0-9a-f]{4,64}")  # an object name as a run records it (git rev-parse HEAD)
ALPHA_MIN, ALPHA_MAX = 1e-4, 0.5  # 10 / alpha shuffles at most 100,000; a rate above 1/2 is no test
BLOCK = 64          # rows of Q computed together (memory: BLOCK x n doubles)
WINDOW = 256        # the runs a window holds: a longer series is searched a window at a time (windows)
METHOD = "e-divisive-means/2"  # in each cached window's key: change it with any change of what a search finds
ROWS_SCANNED = 0    # rows of Q computed so far (a count the tests read)


def _pair_sums(x: np.ndarray) -> np.ndarray:
    """D[k] = sum of |x_i - x_j| over the ordered pairs of x[:k], k = 0..n (a
    block of rows at a time, never an n x n array)."""
    n = len(x)
    inner = np.zeros(n)  # inner[k] = sum over i < k of |x_k - x_i|
    for k0 in range(0, n, BLOCK):
        k1 = min(n, k0 + BLOCK)
        a = np.abs(x[k0:k1, None] - x[None, :k1])
        inner[k0:k1] = np.tril(a, k0 - 1).sum(1)
    d = np.zeros(n + 1)
    d[1:] = np.cumsum(2 * inner)
    return d


def _rows(x: np.ndarray, min_size: int) -> Iterator[tuple[int, np.ndarray]]:
    """Q(tau, kappa) a block of rows tau at a time: (the block's first tau t0, its
    rows over kappa = t0..n, -inf where a side would be shorter than min_size).
    With m = tau, k = kappa - tau, D(k) the sum of |x_a - x_b| over the ordered
    pairs of x[:k] (_pair_sums) and S(tau, kappa) that over a < tau, b < kappa,
    the pairs inside x[:kappa] are those inside x[:tau], inside x[tau:kappa] and
    between, so

        kappa Q = D(kappa) - D(tau) (kappa-1)/(tau-1) - (D(kappa) + D(tau) - 2 S(tau, kappa)) (kappa-1)/(k-1),

    the same Q as the formula above. S's rows are made one after another:
    C(tau)[b] = sum over a < tau of |x_a - x_b| grows by |x_tau - x| from one tau
    to the next, and row tau of S is C(tau)'s running sum; only the columns from
    the block's first tau on are kept. O(n) memory a row, O(n^2) time in all."""
    global ROWS_SCANNED
    n = len(x)
    diag = _pair_sums(x)
    inner = np.diff(diag) / 2                                      # sum over a < i of |x_i - x_a|
    cr = np.abs(x[:min_size, None] - x[None, min_size:]).sum(0)   # C(min_size), columns min_size..n-1
    kap = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        pk = np.where(kap > 0, diag / kap, 0.0)                    # D(kappa) / kappa
        gk = np.where(kap > 0, (kap - 1) / kap, 0.0)               # (kappa - 1) / kappa
    last = n - min_size + 1
    for t0 in range(min_size, last, BLOCK):
        t1 = min(last, t0 + BLOCK)
        nb, ncol = t1 - t0, n + 1 - t0
        st = np.abs(x[t0:t1, None] - x[None, t0:])                 # |x_a - x_b|, a in the block, b >= t0
        cs = np.empty((nb, n - t0))                                 # C(tau)[t0:]
        cs[0] = cr
        for b in range(1, nb):                                      # (faster than a cumsum down the rows)
            np.add(cs[b - 1], st[b - 1], out=cs[b])
        cr = (cs[-1] + st[-1])[nb:]
        low = inner[t0:t1] - np.tril(st[:, :nb], -1).sum(1)         # sum over b < t0 of |x_a - x_b|
        s = np.empty((nb, ncol))
        s[0, 0] = diag[t0]                                          # S(t0, t0) = D(t0)
        s[1:, 0] = diag[t0] + np.cumsum(low[:-1])                   # S(tau, t0)
        np.cumsum(cs, axis=1, out=s[:, 1:])
        s[:, 1:] += s[:, :1]                                        # s[b, j] = S(t0 + b, t0 + j)
        tau = np.arange(t0, t1)
        dt = diag[t0:t1]
        d = np.arange(-(nb - 1), ncol, dtype=float)                 # kappa - tau over the block
        rr = np.where(d >= min_size, 1 / np.where(d >= min_size, d - 1, 1), 0.0)
        rk = np.lib.stride_tricks.sliding_window_view(rr, ncol)[nb - 1::-1]  # rk[b, j] = 1 / (k - 1)
        z = diag[None, t0:] + dt[:, None]
        z -= 2 * s                                                  # twice the pairs inside x[tau:kappa]
        z *= rk
        z *= gk[None, t0:]
        q = pk[None, t0:] - np.multiply.outer(dt / (tau - 1), gk[t0:])
        q -= z
        w = min(ncol, nb + min_size)
        q[:, :w][np.arange(w)[None, :] - np.arange(nb)[:, None] < min_size] = -np.inf
        ROWS_SCANNED += nb
        yield t0, q


def best_score(x: np.ndarray, min_size: int = MIN_SIZE) -> tuple[int | None, float]:
    """The split tau of the highest Q(tau, kappa) (the first, in tau then kappa order) and that Q;
    (None, -inf) where x is too short. Letting the right end kappa stop short of n is E-divisive's
    own search: a change that goes away again (a bump) scores high at its start only when the
    comparison can end before the bump does."""
    if len(x) < 2 * min_size:
        return None, -np.inf
    best, top = None, -np.inf
    for t0, q in _rows(x, min_size):
        i = int(np.argmax(q))
        if q.flat[i] > top:
            best, top = t0 + i // q.shape[1], float(q.flat[i])  # row-major: the first tau, then kappa
    return best, top


def reaches(x: np.ndarray, level: float, min_size: int = MIN_SIZE) -> bool:
    """Whether any Q(tau, kappa) of x is at least level: the scan stops at the first block that has one."""
    return any(np.max(q) >= level for _, q in _rows(x, min_size))


def best_split(x: np.ndarray, rng: np.random.Generator, min_size: int = MIN_SIZE,
               permutations: int = PERMUTATIONS, alpha: float = 1.0) -> tuple[int | None, float]:
    """The best split of x and its permutation p value (None, 1 where x is too short). The shuffles stop
    once p cannot fall below alpha any more (the p returned is then a lower bound, and at least alpha);
    a shuffle's scan stops as soon as it reaches the top (all that its count needs)."""
    t, top = best_score(x, min_size)
    if t is None:
        return None, 1.0
    beaten = 0
    for _ in range(permutations):
        beaten += reaches(rng.permutation(x), top - 1e-12, min_size)
        if (beaten + 1) / (permutations + 1) >= alpha:
            break
    return t, (beaten + 1) / (permutations + 1)


def shift_interval(before: np.ndarray, after: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """after's median over before's, and its 95% interval: a bootstrap (values, not logs), or
    few_runs_ratio_ci where a side has fewer than FEW_GROUPS runs (values all positive)."""
    ratio = float(np.median(after) / np.median(before))
    if min(len(before), len(after)) < FEW_GROUPS and np.all(before > 0) and np.all(after > 0):
        return (ratio, *few_runs_ratio_ci(np.log(before), np.log(after), ratio))
    b = rng.choice(before, (BOOT, len(before)))
    a = rng.choice(after, (BOOT, len(after)))
    r = np.median(a, axis=1) / np.median(b, axis=1)
    return ratio, float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975))


def search(x: np.ndarray, rng: np.random.Generator, alpha: float, min_size: int) -> list[tuple[int, float]]:
    """The breaks of x by binary segmentation: (index of the first run after, p), in order."""
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
    return sorted(found)


def windows(n: int, min_size: int = MIN_SIZE) -> list[tuple[int, int, int, int]]:
    """The windows a series of n runs is searched in: (start, end, first run owned, end of those owned).
    A series of at most WINDOW runs (8 x min_size where that is more) is one window, searched whole;
    a longer one is searched in windows of that many runs, each half a window after the one before.
    Each run is owned by one window, the one in whose middle half it lies (the first and the last
    windows own the series' ends too): a break is taken from its run's owner, where it has at least
    a quarter of a window on each side."""
    w = max(WINDOW, 8 * min_size)
    if n <= w:
        return [(0, n, 0, n)]
    h = w // 2
    last = -(-(n - w) // h)
    return [(k * h, min(n, k * h + w), 0 if k == 0 else k * h + h // 2, n if k == last else k * h + h + h // 2)
            for k in range(last + 1)]


def _logs(values, min_size: int) -> np.ndarray | None:
    """The logs of a series to search; None where it is shorter than two segments or holds a value that
    is not a positive finite number."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2 * min_size or np.any(~np.isfinite(v)) or np.any(v <= 0):
        return None
    return np.log(v)


def _digest(x: np.ndarray, k: int, whole: bool, alpha: float, min_size: int, seed: int) -> str:
    return hashlib.sha256(f"{METHOD} {alpha!r} {min_size} {seed} {k} {whole}".encode() + x.tobytes()).hexdigest()


def _search_window(x: np.ndarray, k: int, whole: bool, alpha: float, min_size: int, seed: int) -> dict:
    """Window k's breaks (its own indices) and the generator's state after its search (a whole series'
    intervals are drawn from it, as the method by the book does): what the cache keeps."""
    rng = np.random.default_rng(seed if whole else [seed, k])
    found = search(x, rng, alpha, min_size)
    return {"breaks": found, "rng": rng.bit_generator.state}


def _window_breaks(x: np.ndarray, k: int, whole: bool, alpha: float, min_size: int, seed: int,
                   cache) -> tuple[list[tuple[int, float]], np.random.Generator]:
    """_search_window's breaks and generator, from the cache where it holds them, else searched (and
    given to the cache)."""
    digest = _digest(x, k, whole, alpha, min_size, seed)
    got = cache.get(k, digest) if cache is not None else None
    if got is None:
        got = _search_window(x, k, whole, alpha, min_size, seed)
        if cache is not None:
            cache.put(k, digest, got)
    rng = np.random.default_rng()
    rng.bit_generator.state = got["rng"]
    return [(int(t), float(p)) for t, p in got["breaks"]], rng


def search_ahead(series: list[tuple[object, list[float]]], alpha: float, min_size: int = MIN_SIZE,
                 seed: int = 1, workers: int | None = None) -> int:
    """Every window of these series (cache, values) that its cache does not hold, searched by a pool of
    a process per CPU this process may run on, each into its cache as it ends (so an interruption keeps
    those done); find then reads them all from the caches. Returns the windows searched."""
    todo = []
    for cache, values in series:
        x = _logs(values, min_size)
        if x is None:
            continue
        wins = windows(len(x), min_size)
        for k, (a, b, _, _) in enumerate(wins):
            digest = _digest(x[a:b], k, len(wins) == 1, alpha, min_size, seed)
            if cache.get(k, digest) is None:
                todo.append((cache, k, digest, (x[a:b], k, len(wins) == 1, alpha, min_size, seed)))
    workers = workers or len(os.sched_getaffinity(0))
    if workers < 2 or len(todo) < 2:
        for cache, k, digest, args in todo:
            cache.put(k, digest, _search_window(*args))
        return len(todo)
    import concurrent.futures as cf
    import multiprocessing
    with cf.ProcessPoolExecutor(min(workers, len(todo)), mp_context=multiprocessing.get_context("fork")) as pool:
        jobs = {pool.submit(_search_window, *args): (cache, k, digest) for cache, k, digest, args in todo}
        try:
            for job in cf.as_completed(jobs):
                cache, k, digest = jobs[job]
                cache.put(k, digest, job.result())
        except BaseException:
            for job in jobs:
                job.cancel()
            raise
    return len(todo)


def _long_interval(v: np.ndarray, t: int, lo: int, hi: int, side: int, seed: int, cache) -> tuple[float, float, float]:
    """shift_interval of the break at t of a long series, each side at most side runs, drawn from a
    generator of the break's own, and kept in the cache (under -1 - t) with a digest of both sides."""
    before, after = v[max(lo, t - side):t], v[t:min(hi, t + side)]
    digest = hashlib.sha256(f"{METHOD} interval {seed} {t} {len(before)}".encode() + before.tobytes()
                            + after.tobytes()).hexdigest()
    hit = cache.get(-1 - t, digest) if cache is not None else None
    if hit is not None:
        return tuple(hit["interval"])
    got = shift_interval(before, after, np.random.default_rng([seed, t]))
    if cache is not None:
        cache.put(-1 - t, digest, {"interval": got})
    return got


def find(values: list[float], alpha: float = 0.01, min_change: float = MIN_CHANGE, seed: int = 1,
         min_size: int = MIN_SIZE, cache=None) -> list[tuple[int, float, float, float, float]]:
    """Change points of a series: (index of the first run after, p, ratio,
    ratio low, ratio high), in order. Values must be positive. cache: where
    each window's breaks are kept between calls (store.WindowCache), or None."""
    if not ALPHA_MIN <= alpha <= ALPHA_MAX:
        raise ValueError(f"alpha {alpha}: a false-alarm rate from {ALPHA_MIN} to {ALPHA_MAX}")
    x = _logs(values, min_size)
    if x is None:
        return []
    v = np.asarray(values, dtype=float)
    wins = windows(len(x), min_size)
    found: list[tuple[int, float]] = []
    for k, (a, b, own_a, own_b) in enumerate(wins):
        got, rng = _window_breaks(x[a:b], k, len(wins) == 1, alpha, min_size, seed, cache)
        found += [(a + t, p) for t, p in got if own_a <= a + t < own_b]
    for i in range(len(found) - 1, 0, -1):  # one break seen from two windows, a run apart: the surer one
        if found[i][0] - found[i - 1][0] < min_size:
            del found[i if found[i][1] >= found[i - 1][1] else i - 1]
    out = []
    bounds = [0] + [t for t, _ in found] + [len(v)]
    for k, (t, p) in enumerate(found):  # each break against its neighbours' segments
        if len(wins) == 1:
            ratio, rlo, rhi = shift_interval(v[bounds[k]:t], v[t:bounds[k + 2]], rng)
        else:
            ratio, rlo, rhi = _long_interval(v, t, bounds[k], bounds[k + 2], wins[0][1], seed, cache)
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


def change_points(rows: list[dict], mid: str, alpha: float = 0.01, min_change: float = MIN_CHANGE,
                  min_runs: int = MIN_SIZE, cache=None, medians: list[float] | None = None) -> list[ChangePoint]:
    """The change points of one id's series (store.series rows); each segment at least min_runs runs;
    cache: as find's. medians: the series' medians, where rows holds only the runs around its change
    points (cached's reading of a long series); rows then are those runs' rows, by run."""
    if not rows:
        return []
    out = []
    values = [r["figure"] for r in rows] if medians is None else medians
    for t, p, ratio, lo, hi in find(values, alpha, min_change, min_size=min_runs, cache=cache):
        before, after = rows[t - 1], rows[t]
        out.append(ChangePoint(mid, before["unit"], before, after, p, ratio, lo, hi, differs(before, after),
                               method_change(mid, before["commit"], after["commit"])))
    return out


class _Around:
    """A series' rows read only at the change points (rows[i]: run i's row, read when first asked)."""

    def __init__(self, con, host: str, mid: str, runs: list[int]):
        self.con, self.host, self.mid, self.runs = con, host, mid, runs

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, i: int) -> dict:
        from osmeter.history.store import series
        return series(self.con, self.host, self.mid, runs=[int(self.runs[i])])[0]


def cached(con, host: str, mids: list[str], rows: dict[str, list[dict]] | None = None, alpha: float = 0.01,
           min_change: float = MIN_CHANGE, min_runs: int = MIN_SIZE, read: dict | None = None) -> dict[str, list[ChangePoint]]:
    """change_points of host's ids (rows: their series by id; read: their store.figures; each read here where
    not given), their windows' breaks kept in the history con (store.WindowCache) and those it lacks searched
    ahead by a pool (search_ahead): kept even when interrupted, so a search of a long history goes on where
    it stopped."""
    from osmeter.history.store import WindowCache, figures
    caches = {mid: WindowCache(con, host, mid, f"{alpha!r} {min_runs}") for mid in mids}
    try:
        series = {}
        rows = rows or {}
        read = {**figures(con, host, [m for m in mids if m not in rows and m not in (read or {})]), **(read or {})}
        for mid in mids:
            if mid in rows:
                series[mid] = (rows[mid], [r["figure"] for r in rows[mid]])
            else:  # kept as arrays: 16 bytes a run, not a dict
                series[mid] = (_Around(con, host, mid, read[mid][0]), read[mid][2])
        search_ahead([(caches[mid], series[mid][1]) for mid in mids], alpha, min_runs)
        return {mid: change_points(series[mid][0], mid, alpha, min_change, min_runs, caches[mid], series[mid][1])
                for mid in mids}
    finally:
        for cache in caches.values():
            cache.flush()
