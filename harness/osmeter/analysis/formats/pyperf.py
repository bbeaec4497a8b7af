"""pyperf's JSON (version 1.0), which `python -m pyperf compare_to`, `stats` and `show` read: one side's runs
(a run, a campaign, an ab's side) as a suite of one benchmark per id, one pyperf run per osmeter run, its
value the run's figure.

- pyperf knows three units: second, byte and integer. A time goes in seconds. A rate goes as its time per
  unit (core/units.py: MB/s as s per byte, IOPS as s per I/O, files/s as s per file), so that pyperf's
  "faster" is osmeter's "higher"; the benchmark's description says so. A size in bytes goes as byte. Any
  other unit (cycles, %, a ratio, a clock rate, a count) has no pyperf unit and is left out, listed in the
  suite's metadata (`osmeter_left_out`).
- A run without the id's figure (refused there, or kept nothing) gives that benchmark no run; an id with no
  run at all is left out too.
"""
from __future__ import annotations

import json

from osmeter.core.units import rate_time_pair

NAME = "pyperf"
ORDER = 91
OPTION = None
TIME_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
PER_S = {"ns/B": 1e-9, "us/IO": 1e-6, "us/file": 1e-6}


def value_of(unit: str, figure: float) -> tuple[str, float, str] | None:
    """pyperf's unit, the value in it, and what it is; None for a unit pyperf has no place for."""
    if unit in TIME_S:
        return "second", figure * TIME_S[unit], f"time ({unit} in osmeter)"
    pair = rate_time_pair(unit)
    if pair and pair[0] in PER_S and figure > 0:
        per, k = pair
        return "second", k / figure * PER_S[per], f"time per unit, {per} in osmeter's terms (osmeter: {unit})"
    if unit == "bytes":
        return "byte", figure, "bytes"
    return None


def render_runs(runs) -> str:
    first = runs[0].doc
    machine = first.get("machine") or {}
    benches: dict[str, dict] = {}
    left = set()
    for run in runs:
        for m in run.measurements.values():
            got = value_of(m.unit, m.figure) if m.figure is not None else None
            if got is None:
                left.add(m.id) if m.figure is not None else None
                continue
            unit, v, what = got
            b = benches.setdefault(m.id, {"metadata": {"name": m.id, "unit": unit, "description": what},
                                          "runs": []})
            b["runs"].append({"metadata": {"osmeter_run": run.name}, "values": [v]})
    suite = {"version": "1.0",
             "metadata": {"hostname": machine.get("hostname", "unknown"),
                          "cpu_model_name": machine.get("cpu_model", "unknown"),
                          "platform": f"Linux-{machine.get('kernel', '?')}-{machine.get('arch', '?')}",
                          "osmeter_left_out": " ".join(sorted(left - set(benches))) or "none"},
             "benchmarks": [benches[k] for k in sorted(benches)]}
    return json.dumps(suite, indent=None, sort_keys=True) + "\n"


RENDER = {"export": render_runs}
