"""github-action-benchmark's custom JSON (a list of {name, unit, value, range, extra}), in two files, because
the action takes one direction per file: `--format gab-smaller` holds the ids whose smaller figure is better
(times, cycles; its step's tool is customSmallerIsBetter), `--format gab-bigger` those whose bigger figure is
better (rates; customBiggerIsBetter). An id of a unit with no better way (a size, a ratio, a clock rate) is in
neither: the action would alert on it one way or the other.

- name: the id; unit: osmeter's unit; value: the side's figure (one run's, or the median of its runs' figures,
  as compare takes a side's); range: "± h", h the larger distance from the figure to the ends of its 95%
  interval (one run) or to the runs' lowest and highest figures (several); extra: the runs, the host, and the
  interval or the runs' figures in words.
- An id without a finite figure in any run is left out (the action needs a number).
"""
from __future__ import annotations

import json
import math
import statistics

from osmeter.core.units import better

NAME = "gab"
ORDER = 93
OPTION = None


def _g(v: float) -> str:
    return f"{v:.6g}"


def entries(runs, way: str) -> list[dict]:
    host = (runs[0].doc.get("machine") or {}).get("hostname", "unknown")
    ids: dict[str, list] = {}
    for run in runs:
        for m in run.measurements.values():
            if better(m.unit) == way and m.figure is not None and math.isfinite(m.figure):
                ids.setdefault(m.id, []).append(m)
    out = []
    for mid in sorted(ids):
        ms = ids[mid]
        figs = [m.figure for m in ms]
        v = statistics.median(figs)
        if len(ms) == 1 and ms[0].figure_ci95:
            lo, hi = ms[0].figure_ci95
            spread = f"95% interval {_g(lo)}..{_g(hi)}"
        else:
            lo, hi = min(figs), max(figs)
            spread = f"runs {', '.join(_g(f) for f in figs)}"
        h = max(v - lo, hi - v, 0.0)
        out.append({"name": mid, "unit": ms[0].unit, "value": v, "range": f"± {_g(h)}",
                    "extra": f"{len(ms)} run{'s' if len(ms) > 1 else ''} on {host}\n{spread}"})
    return out


def smaller(runs) -> str:
    return json.dumps(entries(runs, "lower"), indent=1, allow_nan=False) + "\n"


def bigger(runs) -> str:
    return json.dumps(entries(runs, "higher"), indent=1, allow_nan=False) + "\n"


RENDER = {"export": {"gab-smaller": smaller, "gab-bigger": bigger}}
