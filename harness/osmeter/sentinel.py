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

from .stats import welch

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


def drift(start: dict[str, list[float]], end: dict[str, list[float]]) -> dict:
    """start, end: per sentinel id, the median of each process (ns).
    Returns per id the ratio end/start (of the medians over processes) and
    Welch's p on their logs, and whether the run drifted."""
    per_id, drifted = {}, []
    for mid, a in start.items():
        b = end.get(mid, [])
        if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
            continue
        ratio = float(np.median(b) / np.median(a))
        _, _, p = welch(np.log(a), np.log(b))
        moved = p < DRIFT_P and abs(math.log(ratio)) >= math.log1p(DRIFT_MIN)
        per_id[mid] = {"ratio": ratio, "p": p, "drifted": moved}
        if moved:
            drifted.append(mid)
    return {"ids": per_id, "drifted": bool(drifted),
            "why": (", ".join(f"{m} x{per_id[m]['ratio']:.3f}" for m in drifted) or None),
            "rule": f"{REPEATS} processes per sentinel at each end; end/start beyond the processes' spread "
                    f"(Welch on logs, p < {DRIFT_P}) and by at least {DRIFT_MIN:.0%}"}
