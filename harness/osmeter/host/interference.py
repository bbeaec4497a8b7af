"""What else used the measuring CPU while a probe ran, as read on the
machine measured: the hypervisor's steal time, interrupts and softirqs
from /proc for the pinned CPU, read before and after every probe process
(counters(), which a thin host's agent runs: the standard library only),
and a short noise measurement (bench/sched/noise.c: the share of a spinning
thread's time lost to interruptions) at the start and the end of every
run. What these readings, and the core's clock and width each probe line
carries, say once recorded is results/readings.py's."""
from __future__ import annotations

import os
import time
from pathlib import Path

NOISE_ARGS = ("--samples", "20", "--quantum-us", "10000")


def _clk_tck() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError):
        return 100.0


def counters(cpu: int, proc: Path = Path("/proc")) -> dict:
    """The CPU's cumulative steal, irq and softirq time (s) from /proc/stat
    and its interrupt count from /proc/interrupts, with the time read."""
    out: dict = {"t": time.monotonic()}
    hz = _clk_tck()
    try:
        for line in (proc / "stat").read_text().splitlines():
            f = line.split()
            if f and f[0] == f"cpu{cpu}":
                # user nice system idle iowait irq softirq steal ...
                vals = [int(x) for x in f[1:]]
                out["irq_s"] = vals[5] / hz if len(vals) > 5 else None
                out["softirq_s"] = vals[6] / hz if len(vals) > 6 else None
                out["steal_s"] = vals[7] / hz if len(vals) > 7 else None
                break
    except (OSError, ValueError):
        pass
    try:
        lines = (proc / "interrupts").read_text().splitlines()
        cpus = lines[0].split()
        col = cpus.index(f"CPU{cpu}")
        total = 0
        for line in lines[1:]:
            f = line.split()
            if len(f) > col + 1 and f[col + 1].isdigit():
                total += int(f[col + 1])
        out["interrupts"] = total
    except (OSError, ValueError, IndexError):
        pass
    return out


def noise_of(lines: list[dict]) -> dict | None:
    """The noise probe's lines -> the mean share of time lost and the
    interruptions per second."""
    for line in lines:
        if line.get("id") == "sched.noise.lost" and line.get("samples"):
            import numpy as np  # (counters(), which a thin host's agent runs, needs the standard library only)

            v = np.asarray([x for x in line["samples"] if x is not None], float)
            return {"lost_share": round(float(v.mean()) / 100, 6),
                    "interruptions_per_s": (line.get("params") or {}).get("interruptions_per_s")}
    return None
