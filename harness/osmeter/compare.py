"""`osmeter compare A B`: what changed between two runs beyond noise.

For every id in both runs: the medians, the ratio B/A with a bootstrap 95%
interval, a two-sided Mann-Whitney U test on the raw samples (normal
approximation with tie correction, numpy only; Google Benchmark's
tools/compare.py uses the same test), and a verdict. A difference counts
only when the test rejects at alpha and the ratio's interval excludes 1.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .results import fmt_value, load

ALPHA = 0.05
MIN_CHANGE = 0.02
LOWER_IS_BETTER = {"ns", "cycles"}
HIGHER_IS_BETTER = {"MB/s", "IOPS", "files/s"}

# conditions and machine facts that make two runs incomparable when they differ
WATCHED = (
    ("machine", "kernel"), ("machine", "cpu_model"), ("machine", "online_cpus"), ("machine", "hypervisor"),
    ("conditions", "governor"), ("conditions", "boost"), ("conditions", "smt_active"), ("conditions", "thp"),
    ("conditions", "mitigations"), ("conditions", "pinned_cpu"), ("conditions", "scheduler"),
    ("conditions", "clocksource"), ("conditions", "kernel_cmdline"), ("conditions", "preset"),
)


def ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average rank."""
    order = np.argsort(x, kind="mergesort")
    r = np.empty(x.size, dtype=float)
    sx = x[order]
    i = 0
    while i < x.size:
        j = i
        while j + 1 < x.size and sx[j + 1] == sx[i]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r


def mann_whitney(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U: (U of a, p value), normal approximation with
    tie and continuity corrections."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    r = ranks(np.concatenate([a, b]))
    u1 = r[:n1].sum() - n1 * (n1 + 1) / 2
    n = n1 + n2
    _, counts = np.unique(np.concatenate([a, b]), return_counts=True)
    tie = float((counts**3 - counts).sum())
    var = n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return float(u1), 1.0
    mu = n1 * n2 / 2
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    return float(u1), float(math.erfc(max(z, 0.0) / math.sqrt(2)))


def ratio_ci(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95% interval of median(b) / median(a)."""
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, (resamples, b.size))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = mb / ma
    r = r[np.isfinite(r)]
    if r.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(r, [2.5, 97.5])
    return float(lo), float(hi)


@dataclass
class Row:
    id: str
    unit: str
    median_a: float
    median_b: float
    ratio: float
    ci: tuple[float, float]
    p: float
    n_a: int
    n_b: int
    verdict: str


def kept_samples(run_dir: Path, m: dict) -> np.ndarray:
    z = np.load(run_dir / m["samples_file"])
    v = z["values"]
    keep = ~z["disturbed"] & np.isfinite(v)
    return v[keep]


def verdict(unit: str, ratio: float, ci: tuple[float, float], p: float, min_change: float = MIN_CHANGE) -> str:
    if not (p < ALPHA and (ci[0] > 1 or ci[1] < 1) and abs(ratio - 1) >= min_change):
        return "no change"
    up = ratio > 1
    if unit in LOWER_IS_BETTER:
        return "slower" if up else "faster"
    if unit in HIGHER_IS_BETTER:
        return "faster" if up else "slower"
    return "higher" if up else "lower"


def compare_dirs(a: Path, b: Path, min_change: float = MIN_CHANGE) -> tuple[list[Row], list[str]]:
    da, db = load(a), load(b)
    ma = {m["id"]: m for m in da["measurements"]}
    mb = {m["id"]: m for m in db["measurements"]}
    rows = []
    for mid in [i for i in ma if i in mb]:
        x, y = kept_samples(a, ma[mid]), kept_samples(b, mb[mid])
        if x.size == 0 or y.size == 0:
            continue
        med_a, med_b = float(np.median(x)), float(np.median(y))
        ratio = med_b / med_a if med_a else float("nan")
        ci = ratio_ci(x, y)
        _, p = mann_whitney(x, y)
        rows.append(Row(mid, ma[mid]["unit"], med_a, med_b, ratio, ci, p, x.size, y.size,
                        verdict(ma[mid]["unit"], ratio, ci, p, min_change)))
    return rows, condition_warnings(da, db)


def condition_warnings(da: dict, db: dict) -> list[str]:
    out = []
    for part, key in WATCHED:
        va, vb = da.get(part, {}).get(key), db.get(part, {}).get(key)
        if va != vb:
            if isinstance(va, dict) and isinstance(vb, dict):
                diff = sorted(k for k in set(va) | set(vb) if va.get(k) != vb.get(k))
                out.append(f"{part}.{key} differs ({', '.join(diff)})")
            else:
                out.append(f"{part}.{key} differs: {va!r} -> {vb!r}")
    return out


def table(rows: list[Row]) -> str:
    head = ("id", "A median", "B median", "B/A", "95% CI", "p", "n A/B", "verdict")
    body = [(r.id, fmt_value(r.median_a, r.unit), fmt_value(r.median_b, r.unit), f"{r.ratio:.3f}",
             f"{r.ci[0]:.3f}..{r.ci[1]:.3f}", f"{r.p:.2g}", f"{r.n_a}/{r.n_b}", r.verdict) for r in rows]
    w = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(h.ljust(w[i]) if i in (0, 7) else h.rjust(w[i]) for i, h in enumerate(head)),
             "  ".join("-" * x for x in w)]
    for row in body:
        lines.append("  ".join(c.ljust(w[i]) if i in (0, 7) else c.rjust(w[i]) for i, c in enumerate(row)))
    return "\n".join(lines)


def to_csv(rows: list[Row]) -> str:
    f = io.StringIO()
    w = csv.writer(f)
    w.writerow(["id", "unit", "median_a", "median_b", "ratio", "ci_lo", "ci_hi", "p", "n_a", "n_b", "verdict"])
    for r in rows:
        w.writerow([r.id, r.unit, r.median_a, r.median_b, r.ratio, r.ci[0], r.ci[1], r.p, r.n_a, r.n_b, r.verdict])
    return f.getvalue()


def to_latex(rows: list[Row], warnings: list[str], a: str, b: str) -> str:
    from .latex import esc

    out = [r"\section{Before and after}",
           f"A is \\path{{{esc(a)}}}, B is \\path{{{esc(b)}}}. A change is reported when a two-sided "
           r"Mann--Whitney U test rejects at $\alpha = 0.05$ and the bootstrap 95\% interval of the ratio of "
           "medians excludes 1.", ""]
    if warnings:
        out.append(r"\paragraph{The runs differ in their conditions:} " + "; ".join(esc(w) for w in warnings) + ".")
    out += [r"\begin{longtable}{lrrrrl}", r"\toprule",
            r"Measurement & A median & B median & B/A & 95\% CI & Verdict \\", r"\midrule", r"\endhead"]
    for r in rows:
        out.append(f"{esc(r.id)} & {esc(fmt_value(r.median_a, r.unit))} & {esc(fmt_value(r.median_b, r.unit))} & "
                   f"{r.ratio:.3f} & {r.ci[0]:.3f}--{r.ci[1]:.3f} & {esc(r.verdict)} \\\\")
    out += [r"\bottomrule", r"\end{longtable}", ""]
    return "\n".join(out)


def plot(rows: list[Row], path: Path) -> None:
    from .plots import compare_figure

    fig = compare_figure(rows)
    fig.savefig(path, bbox_inches="tight")
