"""What a run's recorded interference says: the counters taken around each
probe process (host/interference.py) added up into shares of the pinned
CPU's time; the core's clock at the start and the end of every probe
process (a chain of adds, the "core_mhz" of each probe line), which falls
while the host lowers the vCPU's clock without taking it away (no steal,
no interruption), and its width beside it (adds per cycle of eight
independent chains, "core_width"), which falls while another hardware
thread shares the core, whose clock then stays. compare names the runs
that a noisier machine disturbed (noisy_runs)."""
from __future__ import annotations

import statistics

from osmeter.results.model import Measurement

# a run stands out when its steal share or its noise is this many times its comparison's median,
# and above the floor (a share of the CPU's time)
NOISY_FACTOR = 3.0
NOISY_FLOOR = 0.01
# a probe process ran on a slowed core when its clock at its start or its end was below this share of
# the reference (the median over the compared runs' processes), on a shared core when its width was; a
# run stands out when the share of its processes that did is above SLOWED_FLOOR and NOISY_FACTOR times
# the compared runs' median share
SLOWED = 0.85
SLOWED_FLOOR = 0.1


def delta(a: dict, b: dict) -> dict:
    """What happened on the CPU between two readings."""
    out = {"wall_s": round(b["t"] - a["t"], 6)}
    for k in ("steal_s", "irq_s", "softirq_s", "interrupts"):
        if a.get(k) is not None and b.get(k) is not None:
            out[k] = round(b[k] - a[k], 6) if k != "interrupts" else b[k] - a[k]
    return out


def add(total: dict | None, d: dict) -> dict:
    """Deltas of several processes of one probe, summed."""
    if not total:
        return dict(d)
    return {k: round(total.get(k, 0) + v, 6) for k, v in d.items()}


def shares(d: dict) -> dict:
    """Steal and interrupt figures per second of wall time."""
    wall = d.get("wall_s") or 0
    out = dict(d)
    if wall > 0:
        if d.get("steal_s") is not None:
            out["steal_share"] = round(d["steal_s"] / wall, 6)
        if d.get("interrupts") is not None:
            out["interrupts_per_s"] = round(d["interrupts"] / wall, 1)
    return out


def lower_reading(pair) -> float | None:
    """The lower of a process's start and end readings of its core clock or
    width, given as [start, end] (interference) or {"start", "end"} (a probe
    line); None where neither is a positive number."""
    if isinstance(pair, dict):
        pair = [pair.get("start"), pair.get("end")]
    v = [x for x in (pair[:2] if isinstance(pair, list) else [])
         if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < float("inf")]
    return float(min(v)) if v else None


def _pair_lows(doc: dict, key: str, probe: str | None) -> list[float]:
    """The lower of each probe process's start and end readings of
    interference[key] ({probe: [[start, end] per process]})."""
    out = []
    f = doc.get("interference")
    per_probe = f.get(key) if isinstance(f, dict) else None
    if not isinstance(per_probe, dict):
        return out
    for name, pairs in per_probe.items():
        if probe is not None and name != probe:
            continue
        for pair in pairs if isinstance(pairs, list) else []:
            low = lower_reading(pair)
            if low is not None:
                out.append(low)
    return out


def core_clocks(doc: dict, probe: str | None = None) -> list[float]:
    """The core's clock (MHz) of each probe process of a run (of one probe's
    processes where `probe` is given): the lower of its start and end
    readings (interference["core_mhz"], which the runner fills from the probes'
    lines)."""
    return _pair_lows(doc, "core_mhz", probe)


def core_widths(doc: dict, probe: str | None = None) -> list[float]:
    """The core's issue width left to the vCPU (adds per cycle of eight
    independent chains) of each probe process of a run, the lower of its
    start and end readings (interference["core_width"]): it falls while
    another hardware thread shares the core, which the clock does not
    show."""
    return _pair_lows(doc, "core_width", probe)


# the id that measures the core's clock itself: compared as measured, beside the ids compared at equal
# clock (per_id.clock_adjust)
CLOCK_ID = "cpu.clock"


def measurement_clock(doc: dict, m: Measurement) -> float | None:
    """The core clock (MHz) the processes of a measurement's probe ran at in
    a run: the median of theirs; None where none recorded one, for a derived
    figure (no process of its own) and for the clock's own id."""
    probe = m.probe if m.id != CLOCK_ID else None
    clocks = core_clocks(doc, probe) if isinstance(probe, str) else []
    return float(statistics.median(clocks)) if clocks else None


def slowed_share(clocks: list[float], ref: float) -> float | None:
    """The share of processes whose clock (or width) was below SLOWED of ref."""
    if not clocks or not ref > 0:
        return None
    return sum(c < SLOWED * ref for c in clocks) / len(clocks)


def run_level(doc: dict, ref_mhz: float | None = None, ref_width: float | None = None) -> dict:
    """A run's interference in a few numbers: its steal share over all the
    probes' processes, its noise at the start and the end, the median core
    clock of its probe processes and the share of them that ran slowed
    (against ref_mhz, by default the run's own median), and the same of the
    core's width (the share that ran on a shared core: below SLOWED of
    ref_width)."""
    f = doc.get("interference") or {}
    total = None
    for d in (f.get("probes") or {}).values():
        total = add(total, {k: v for k, v in d.items() if isinstance(v, (int, float))
                            and k in ("wall_s", "steal_s", "irq_s", "softirq_s", "interrupts")})
    out = shares(total) if total else {}
    lost = [x["lost_share"] for x in (f.get("noise_start"), f.get("noise_end")) if isinstance(x, dict)
            and isinstance(x.get("lost_share"), (int, float))]
    if lost:
        out["noise_lost_share"] = max(lost)
    clocks = core_clocks(doc)
    if clocks:
        out["core_mhz"] = round(statistics.median(clocks), 1)
        out["core_processes"] = len(clocks)
        out["core_slowed_share"] = slowed_share(clocks, ref_mhz or out["core_mhz"])
    widths = core_widths(doc)
    if widths:
        out["core_width"] = round(statistics.median(widths), 3)
        out["core_width_processes"] = len(widths)
        out["core_shared_share"] = slowed_share(widths, ref_width or out["core_width"])
    return out


def noisy_runs(runs) -> dict[str, str]:
    """The runs (of a comparison, both sides) whose steal share or noise
    stands out: above NOISY_FLOOR and NOISY_FACTOR times the median of all
    the runs; or whose share of probe processes on a slowed core (clock) or
    a shared one (width) does: above SLOWED_FLOOR and NOISY_FACTOR times
    the runs' median share. {run name: why}."""
    import numpy as np

    every = [c for r in runs for c in core_clocks(r.doc)]
    ref = float(np.median(every)) if every else None
    every_w = [w for r in runs for w in core_widths(r.doc)]
    ref_w = float(np.median(every_w)) if every_w else None
    levels = [(r.name, run_level(r.doc, ref, ref_w)) for r in runs]
    out: dict[str, str] = {}
    for key, what in (("steal_share", "steal time"), ("noise_lost_share", "time lost to interruptions")):
        vals = [lv[key] for _, lv in levels if isinstance(lv.get(key), (int, float))]
        if len(vals) < 3:
            continue
        med = float(np.median(vals))
        for name, lv in levels:
            v = lv.get(key)
            if isinstance(v, (int, float)) and v > NOISY_FLOOR and v > NOISY_FACTOR * med:
                out.setdefault(name, f"{what} {v:.1%} of the pinned CPU against a median of {med:.1%} over "
                                     "the compared runs")
    for key, what in (("core_slowed_share", f"below {SLOWED:.0%} of its usual clock ({ref or 0:,.0f} MHz, a "
                                            "chain of adds)"),
                      ("core_shared_share", f"below {SLOWED:.0%} of its usual width ({ref_w or 0:.2f} adds per "
                                            "cycle, independent chains: another thread on the core)")):
        shares_ = [lv[key] for _, lv in levels if isinstance(lv.get(key), float)]
        if len(shares_) < 3:
            continue
        med = float(np.median(shares_))
        for name, lv in levels:
            v = lv.get(key)
            if isinstance(v, float) and v > SLOWED_FLOOR and v > NOISY_FACTOR * med:
                out.setdefault(name, f"the core ran {what} in {v:.0%} of its probe processes against a median "
                                     f"of {med:.0%} over the compared runs")
    return out
