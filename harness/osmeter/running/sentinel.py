"""Sentinels: a few cheap, stable ids measured at the start and at the end of
every run of a campaign. When the two disagree beyond their own noise, the
machine changed while the run went on: the run is flagged as having drifted
inside itself, and compare says so.

A figure differs between two processes of the same probe by more than
between the trials of one (each process gets its own pages and cache
placement: getppid, a call and an empty loop each take one of a few
levels per process). So each pass runs each sentinel probe REPEATS times,
and the test compares the processes' medians, start against end."""
from __future__ import annotations

import math

import numpy as np

from osmeter.core.inference import welch

# (binary, arguments, the id it stands for): the kernel's entry path and
# the core's own speed, each well under a second
SENTINELS = (
    ("cpu_syscall", ("--samples", "30"), "cpu.syscall.getppid"),
    ("cpu_call", ("--samples", "20"), "cpu.call.args0"),
)
REPEATS = 3          # processes per sentinel probe and pass
DRIFT_P = 0.01       # the end differs from the start beyond the processes' spread ...
DRIFT_MIN = 0.05     # ... and by at least this fraction


def binaries() -> list[str]:
    return [b for b, _, _ in SENTINELS]


def drift(start: dict[str, list[float]], end: dict[str, list[float]],
          start_mhz: dict[str, list[float]] | None = None, end_mhz: dict[str, list[float]] | None = None) -> dict:
    """start, end: per sentinel id, the median of each process (ns);
    start_mhz, end_mhz: the core clock each of those processes ran at (the
    lower of its two chain-of-adds readings), where known. Returns per id the
    ratio end/start (of the medians over processes) and Welch's p on their
    logs, and whether the run drifted. Where every process of an id has its
    clock, both are taken in core cycles (ns times MHz): a host's boost
    clock that moved during the run moves every figure of core work, and
    compare takes each probe at its own processes' clock
    (per_id.clock_adjust), so only a change at equal clock is drift; the
    clock's own end/start is given beside (clock_ratio)."""
    per_id, drifted = {}, []
    for mid, a in start.items():
        b = end.get(mid, [])
        if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
            continue
        ca, cb = (start_mhz or {}).get(mid), (end_mhz or {}).get(mid)
        cycles = (isinstance(ca, list) and isinstance(cb, list) and len(ca) == len(a) and len(cb) == len(b)
                  and all(isinstance(c, (int, float)) and c > 0 for c in ca + cb))
        if cycles:
            a, b = [x * c for x, c in zip(a, ca)], [x * c for x, c in zip(b, cb)]
        ratio = float(np.median(b) / np.median(a))
        _, _, p = welch(np.log(a), np.log(b))
        moved = p < DRIFT_P and abs(math.log(ratio)) >= math.log1p(DRIFT_MIN)
        per_id[mid] = {"ratio": ratio, "p": p, "drifted": moved, "at_equal_clock": cycles}
        if cycles:
            per_id[mid]["clock_ratio"] = float(np.median(cb) / np.median(ca))
        if moved:
            drifted.append(mid)
    return {"ids": per_id, "drifted": bool(drifted),
            "why": (", ".join(f"{m} x{per_id[m]['ratio']:.3f}" + (" at equal clock" if per_id[m]["at_equal_clock"]
                                                                   else "") for m in drifted) or None),
            "rule": f"{REPEATS} processes per sentinel at each end; end/start beyond the processes' spread "
                    f"(Welch on logs, p < {DRIFT_P}) and by at least {DRIFT_MIN:.0%}, in core cycles (ns times "
                    "the process's clock) where every process read its clock"}
