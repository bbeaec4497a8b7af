"""Go's benchmark text format, which benchstat reads (golang.org/x/perf/benchfmt): one side's runs (a run, a
campaign, an ab side) as configuration lines and one result line per run and id, so that `benchstat
before.txt after.txt` sets two sides against each other with its own statistics.

- A result line is `Benchmark<name> <n> <value> <unit>`: the run's figure of the id, n its kept samples. A
  side of five runs gives benchstat five values per id.
- Names: the id itself. benchstat reads `/` as a sub-benchmark's separator and a trailing `-<digits>` as
  GOMAXPROCS: an id ending in `-<digits>` gets a `_` after it, and one with a `/` or a space (none of
  osmeter's; an imported pyperf name may) is refused.
- Units: a time is ns/op (Go's own, which benchstat shows as sec/op); cycles are cycles/op; MB/s stays (B/s in
  benchstat); every other unit as osmeter names it. A rate is declared better higher (`Unit U
  better=higher`), so benchstat's direction is osmeter's (core/units.py).
- Configuration: only what is the same for every run of one machine (goos, goarch, cpu, pkg, host):
  benchstat makes a table per distinct configuration, and a key that differs between two sides (the kernel
  after an upgrade) would keep them apart. The kernel and the preset are given as comment lines, which
  benchstat passes over.
"""
from __future__ import annotations

import re

from osmeter.core.units import better

NAME = "benchstat"
ORDER = 90
OPTION = None
TIME_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def bench_name(mid: str) -> str:
    """The id as benchstat's name; ValueError for one that cannot be (a space ends a name, `/` starts a
    sub-benchmark)."""
    if not mid or re.search(r"[\s/]", mid):
        raise ValueError(f"{mid!r}: a benchmark name holds no space and no '/'")
    return mid + "_" if re.search(r"-\d+$", mid) else mid


def unit_of(unit: str) -> tuple[str, float]:
    """The unit benchstat is given and the factor a value is multiplied by."""
    if unit in TIME_NS:
        return "ns/op", TIME_NS[unit]
    if unit == "cycles":
        return "cycles/op", 1.0
    return unit.replace(" ", "_"), 1.0


def _config_value(v) -> str:
    return re.sub(r"\s+", " ", str(v)).strip()


def render_runs(runs) -> str:
    """The side's runs as benchstat's input text."""
    first = runs[0].doc
    machine, cond = first.get("machine") or {}, first.get("conditions") or {}
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine.get("arch"), machine.get("arch") or "unknown")
    out = ["goos: linux", f"goarch: {_config_value(arch)}",
           f"cpu: {_config_value(machine.get('cpu_model', 'unknown'))}", "pkg: osmeter",
           f"host: {_config_value(machine.get('hostname', 'unknown'))}",
           f"# kernel {_config_value(machine.get('kernel', cond.get('kernel', '?')))}"]
    units: dict[str, str] = {}
    lines = []
    for run in runs:
        for m in run.measurements.values():
            if m.figure is None:
                continue
            u, k = unit_of(m.unit)
            if better(m.unit) == "higher":
                units[u] = "higher"
            n = max(int(m.n or 1), 1)
            lines.append(f"Benchmark{bench_name(m.id)} {n} {m.figure * k:.6g} {u}")
    out += [f"Unit {u} better={b}" for u, b in sorted(units.items())]
    return "\n".join(out + lines) + "\n"


RENDER = {"export": render_runs}
