"""pyperf's JSON (version 1.0), which `python -m pyperf compare_to`, `stats` and `show` read: one side's runs
(a run, a campaign, an ab's side) as a suite of one benchmark per id, one pyperf run per osmeter run, its
one value the run's figure (so that compare_to's t-test sets run against run, as osmeter's does).

- pyperf knows three units: second, byte and integer, and is a tool of times. A time goes in seconds. A rate
  goes as its time per unit (core/units.py: MB/s as s per byte, IOPS as s per I/O, files/s as s per file), so
  that pyperf's "faster" is osmeter's "higher"; the benchmark's description says so. Any other unit (bytes,
  cycles, %, a ratio, a clock rate, a count) is left out, its ids listed in the suite's metadata
  (`osmeter_left_out`): pyperf's stats adds every benchmark's values into one "Total duration".
- A pyperf run's `loops` is the id's operations per timed sample where the probe says (its
  iterations_per_sample), so that pyperf's raw value is the time one timer reading spanned; its other
  metadata carry what osmeter needs back (read): the run's name, the figure in osmeter's unit, n.
- A run without the id's figure (refused there, or kept nothing) gives that benchmark no run; an id with no
  run at all is left out too.

read() reads such a file back, and any pyperf file besides (`osmeter import`).
"""
from __future__ import annotations

import json
import math
import statistics

from osmeter.core.units import rate_time_pair

NAME = "pyperf"
ORDER = 91
OPTION = None
TIME_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
PER_S = {"ns/B": 1e-9, "us/IO": 1e-6, "us/file": 1e-6}


def value_of(unit: str, figure: float) -> tuple[float, str] | None:
    """The value in seconds and what it is; None for a unit pyperf has no place for."""
    if unit in TIME_S:
        return figure * TIME_S[unit], f"time ({unit} in osmeter)"
    pair = rate_time_pair(unit)
    if pair and pair[0] in PER_S and figure > 0:
        per, k = pair
        return k / figure * PER_S[per], f"time per unit: osmeter's {unit} as {per}, in seconds"
    return None


def _loops(m) -> int:
    it = (m.params or {}).get("iterations_per_sample")
    return it if isinstance(it, int) and not isinstance(it, bool) and it >= 1 else 1


def render_runs(runs) -> str:
    first = runs[0].doc
    machine = first.get("machine") or {}
    benches: dict[str, dict] = {}
    left = set()
    for run in runs:
        for m in run.measurements.values():
            got = value_of(m.unit, m.figure) if m.figure is not None and math.isfinite(m.figure) else None
            if got is None:
                left.add(m.id)
                continue
            v, what = got
            b = benches.setdefault(m.id, {"metadata": {"name": m.id, "unit": "second", "description": what,
                                                       "osmeter_unit": m.unit}, "runs": []})
            b["runs"].append({"metadata": {"osmeter_run": run.name, "osmeter_figure": m.figure,
                                           "osmeter_n": int(m.n or 1), "loops": _loops(m)}, "values": [v]})
    suite = {"version": "1.0",
             "metadata": {"hostname": machine.get("hostname", "unknown"),
                          "cpu_model_name": machine.get("cpu_model", "unknown"),
                          "platform": f"Linux-{machine.get('kernel', '?')}-{machine.get('arch', '?')}",
                          "osmeter_left_out": " ".join(sorted(left - set(benches))) or "none"},
             "benchmarks": [benches[k] for k in sorted(benches)]}
    return json.dumps(suite, indent=None, sort_keys=True) + "\n"


def _seconds_unit(values: list[float]) -> str:
    """The unit a foreign benchmark's seconds are shown in: the one its median reads best in."""
    med = statistics.median(values) if values else 1.0
    return "ns" if med < 1e-5 else "us" if med < 1e-2 else "ms" if med < 10 else "s"


def _values(run: dict) -> list[float]:
    """A pyperf run's values (its warm-ups and calibration are not values)."""
    return [float(v) for v in run.get("values") or []
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]


def read(text: str) -> tuple[dict[str, dict[str, dict]], dict]:
    """A pyperf file as osmeter runs, and the suite's metadata: run name -> id -> {unit, figure, samples,
    process, description}.

    A file osmeter wrote comes back as it went out: one run per osmeter_run, each id's figure exact, in
    its unit (its one sample). Any other pyperf file (pyperf's own benchmarks, pyperformance) is one run
    whose processes are pyperf's worker processes (its runs), their values the samples, in ns, us, ms or s
    (second), bytes (byte) or count (integer); the figure the median of the processes' medians
    (core/stats.run_figure's rule). Raises ValueError on a file that is not pyperf's JSON."""
    try:
        doc = json.loads(text)
        benches = doc["benchmarks"]
        version = doc.get("version")
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"not pyperf's JSON: {e}") from None
    if version != "1.0" or not isinstance(benches, list):
        raise ValueError(f"not pyperf's JSON of version 1.0 (version {str(version)[:20]!r})")
    suite = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    try:
        return _runs(benches, suite), suite
    except (TypeError, AttributeError) as e:  # a field of the wrong JSON type (a list where pyperf has an object)
        raise ValueError(f"not pyperf's JSON: {e}") from None


def _runs(benches: list, suite: dict) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for b in benches:
        meta = {**suite, **(b.get("metadata") or {})} if isinstance(b, dict) else {}
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("a benchmark without a name")
        runs = [r for r in b.get("runs") or [] if isinstance(r, dict) and _values(r)]
        own = meta.get("unit", "second")
        ours = meta.get("osmeter_unit")
        if ours is not None and (not isinstance(ours, str) or value_of(ours, 1.0) is None):
            raise ValueError(f"{name}: osmeter_unit {str(ours)[:20]!r} is none pyperf's export writes")
        unit = ours or {"second": _seconds_unit([v for r in runs for v in _values(r)]), "byte": "bytes",
                        "integer": "count"}.get(own)
        if unit is None:
            raise ValueError(f"{name}: unit {str(own)[:20]!r} is none of pyperf's (second, byte, integer)")
        k = 1.0 / TIME_S[unit] if own == "second" and not ours else 1.0
        for p, run in enumerate(runs):
            rmeta = run.get("metadata") or {}
            fig = rmeta.get("osmeter_figure")
            mine = ours is not None and isinstance(fig, (int, float)) and not isinstance(fig, bool)
            key = str(rmeta.get("osmeter_run")) if mine and rmeta.get("osmeter_run") else "run-01"
            e = out.setdefault(key, {}).setdefault(name, {"unit": unit, "samples": [], "process": [],
                                                          "description": str(meta.get("description") or name)})
            vals = [float(fig)] if mine else [v * k for v in _values(run)]
            e["process"] += [len(set(e["process"]))] * len(vals)
            e["samples"] += vals
    for run in out.values():
        for e in run.values():
            meds = [statistics.median([v for v, q in zip(e["samples"], e["process"]) if q == p])
                    for p in sorted(set(e["process"]))]
            e["figure"] = statistics.median(meds)
    return out


RENDER = {"export": render_runs}
