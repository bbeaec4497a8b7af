"""Cache levels found in a latency curve (working-set size -> ns per load).

The curve is a staircase: flat plateaus (a level holds the working set) and
knees between them. It is cut into k pieces of constant log-latency by
dynamic programming (least squares, each piece at least two sizes long),
for k = 1 .. max_levels. Each piece's *core* is the sizes within
a factor `core_tol` (1.4) of its median latency: the plateau without the
knees that lead into and out of it. The largest k wins whose neighbouring pieces
differ by at least `min_step` (25%) and whose cache pieces each have a core
spanning at least one doubling of size: a knee is not a level. A level's latency is the median over its core. It *ends* where the curve
crosses the geometric mean of its latency and the next level's (interpolated
in log size and log latency): one noisy point at the edge of a plateau moves
that crossing little, where it would move the plateau's last point a lot. The last piece is memory (DRAM); its
figure is taken at the largest size measured, where caches hold least.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEVEL_NAMES = ("l1", "l2", "l3", "l4")


@dataclass
class Level:
    name: str  # l1, l2, l3, dram
    latency: float  # median over the plateau core, in the curve's unit
    start: float  # first size of the core, bytes
    end: float  # where the curve crosses halfway (geometrically) to the next level, bytes
    plateau_end: float  # last size of the core, bytes
    at: float  # the size whose samples represent the level
    index: int  # index of `at` in the curve


def _segment(y: np.ndarray, k: int, min_len: int) -> list[tuple[int, int]] | None:
    """Best split of y into k runs of constant value (least squares)."""
    n = y.size
    if k * min_len > n:
        return None
    c1 = np.concatenate([[0.0], np.cumsum(y)])
    c2 = np.concatenate([[0.0], np.cumsum(y * y)])

    def sse(i, j):  # y[i:j]
        s, s2, m = c1[j] - c1[i], c2[j] - c2[i], j - i
        return s2 - s * s / m

    inf = float("inf")
    cost = np.full((k + 1, n + 1), inf)
    back = np.zeros((k + 1, n + 1), dtype=int)
    cost[0, 0] = 0.0
    for seg in range(1, k + 1):
        for j in range(seg * min_len, n + 1):
            best, arg = inf, -1
            for i in range((seg - 1) * min_len, j - min_len + 1):
                if cost[seg - 1, i] == inf:
                    continue
                c = cost[seg - 1, i] + sse(i, j)
                if c < best:
                    best, arg = c, i
            cost[seg, j], back[seg, j] = best, arg
    if cost[k, n] == inf:
        return None
    bounds, j = [], n
    for seg in range(k, 0, -1):
        i = back[seg, j]
        bounds.append((i, j))
        j = i
    return bounds[::-1]


def _core(y: np.ndarray, i: int, j: int, tol: float) -> np.ndarray:
    """Indices of y[i:j] within a factor tol of its median; never empty (at
    least the point nearest the median)."""
    seg = y[i:j]
    dist = np.abs(np.log(seg / np.median(seg)))
    core = np.nonzero(dist <= np.log(tol))[0]
    return (core if core.size else np.array([int(np.argmin(dist))])) + i


def _check(x, y):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size != y.size or x.size < 2:
        raise ValueError("a latency curve needs at least two sizes, with one latency each")
    if np.any(np.diff(x) <= 0):
        raise ValueError("sizes must increase")
    if np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("latencies must be finite and positive")
    return x, y


def _clear(x, y, seg, min_step, core_tol) -> bool:
    """Neighbouring pieces differ by min_step, and each cache piece's core
    spans at least a doubling of size."""
    meds = [np.median(y[i:j]) for i, j in seg]
    steps_ok = all(b >= a * min_step for a, b in zip(meds, meds[1:]))
    cores = [_core(y, i, j, core_tol) for i, j in seg[:-1]]
    return steps_ok and all(x[c[-1]] >= 2 * x[c[0]] for c in cores)


def detect_levels(sizes, latency, max_levels: int = 5, min_step: float = 1.25, core_tol: float = 1.4) -> list[Level]:
    """Levels of a latency curve, fastest first; the last one is named dram:
    the most pieces (up to max_levels) that pass the tests of a plateau.

    sizes: bytes, increasing. latency: median per size (any time unit).
    """
    x, y = _check(sizes, latency)
    ly = np.log(y)
    chosen = [(0, x.size)]
    for k in range(2, max_levels + 1):
        seg = _segment(ly, k, 2)
        if seg is None:
            break
        if _clear(x, y, seg, min_step, core_tol):
            chosen = seg
    return _levels(x, y, chosen, core_tol)


def fit_levels(sizes, latency, pieces: int, min_step: float = 1.25,
               core_tol: float = 1.4) -> tuple[list[Level], bool]:
    """The best cut of the curve into exactly `pieces` levels (the number of
    caches the machine says the curve passes, plus the piece beyond), and
    whether every piece passes the tests of a plateau. Fewer pieces when
    the curve is too short to hold that many."""
    x, y = _check(sizes, latency)
    ly = np.log(y)
    for k in range(pieces, 0, -1):
        seg = _segment(ly, k, 2) if k > 1 else [(0, x.size)]
        if seg is not None:
            return _levels(x, y, seg, core_tol), k == pieces and _clear(x, y, seg, min_step, core_tol)
    return _levels(x, y, [(0, x.size)], core_tol), False


def _levels(x: np.ndarray, y: np.ndarray, chosen: list[tuple[int, int]], core_tol: float) -> list[Level]:
    cores = [_core(y, i, j, core_tol) for i, j in chosen]
    lats = [float(np.median(y[c])) for c in cores]
    levels = []
    for n, core in enumerate(cores):
        last = n == len(chosen) - 1
        if last:
            at = x.size - 1
            lat, end = float(y[at]), float(x[-1])
        else:
            lat = lats[n]
            at = int(core[np.argmin(np.abs(y[core] - lat))])
            end = _crossing(x, y, int(core[-1]), np.sqrt(lat * lats[n + 1]))
        name = "dram" if last and len(chosen) > 1 else LEVEL_NAMES[min(n, len(LEVEL_NAMES) - 1)]
        levels.append(Level(name, lat, float(x[core[0]]), end, float(x[core[-1]]), float(x[at]), at))
    return levels


def _crossing(x: np.ndarray, y: np.ndarray, start: int, threshold: float) -> float:
    """First size at or after x[start] where y reaches threshold (log-log interpolation)."""
    for k in range(start + 1, x.size):
        if y[k] >= threshold:
            a, b = np.log(y[k - 1]), np.log(y[k])
            f = 0.0 if b == a else float(np.clip((np.log(threshold) - a) / (b - a), 0.0, 1.0))
            return float(np.exp(np.log(x[k - 1]) + f * (np.log(x[k]) - np.log(x[k - 1]))))
    return float(x[-1])
