"""The results' types: what a record of a run means, read in one place, so
that no reader knows a record's keys but through them.

Measurement  one id of a run as results.json keeps it, under one name per
       figure: `figure` is the run's figure (the median of its processes'
       medians; of its samples where one process measured it), the value
       compare, the fleet view and the history take, with its interval;
       `pooled_median` is results.json's `median`, every kept sample of
       every process pooled, the summary's column. A record of the old
       layout (no `figure`, before 2026-12) is read by the same names.
       It also carries what compare, stability and the fleet view read of
       a record beside its figures: its probe, params, each process's core
       width, its kernel-path breakdown and its samples file's name.
Timer  the stop-watch a probe process timed with, as the `timer` block of
       each of its lines states it (bench/common/emit.c; the harness keeps
       it in each measurement of results.json): the kind (the TSC or
       clock_gettime), the step it really advances by, the fallback's
       reason, and how deschedules inside a window were seen (the
       perf_event mmap page, or getrusage and why)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _text(v) -> str | None:
    return v if isinstance(v, str) and v else None


@dataclass(frozen=True)
class Timer:
    kind: str
    invariant_tsc: bool = False
    fallback: str | None = None            # why the TSC was not used
    resolution_ns: float | None = None     # the step, measured at calibration
    step_ticks: float | None = None        # ... in ticks (a guest's scaled TSC moves tens at a time)
    deschedule_check: str | None = None    # "perf-mmap-lock" or "getrusage"
    deschedule_check_why: str | None = None

    @classmethod
    def of(cls, block) -> Timer | None:
        """The timer a line's or a measurement's `timer` block states; None
        where there is none or it names no kind (an old or damaged record)."""
        if not isinstance(block, dict) or not _text(block.get("kind")):
            return None
        return cls(kind=block["kind"], invariant_tsc=block.get("invariant_tsc") is True,
                   fallback=_text(block.get("fallback")), resolution_ns=_number(block.get("resolution_ns")),
                   step_ticks=_number(block.get("step_ticks")),
                   deschedule_check=_text(block.get("deschedule_check")),
                   deschedule_check_why=_text(block.get("deschedule_check_why")))


def timers(doc: dict) -> list[tuple[str, Timer]]:
    """(id, timer) of each measurement of a run's results that states one."""
    out = []
    for m in doc.get("measurements", []):
        t = Timer.of(m.get("timer")) if isinstance(m, dict) else None
        if t is not None:
            out.append((m.get("id"), t))
    return out


def _pair(v) -> tuple[float, float] | None:
    if isinstance(v, list) and len(v) == 2 and all(_number(x) is not None for x in v):
        return float(v[0]), float(v[1])
    return None


@dataclass(frozen=True)
class Measurement:
    id: str
    unit: str
    figure: float | None                    # the run's figure (see above); None where nothing was kept
    figure_ci95: tuple[float, float] | None  # its 95% interval; None where the record kept none
    pooled_median: float | None             # results.json's `median`
    mean: float | None
    std: float | None
    n: int | None                           # kept samples, all processes
    processes: int                          # the processes that measured it (1 where one did)
    timer: Timer | None
    probe: str | None = None                # the probe that measured it; None for a derived figure's old record
    params: dict = field(default_factory=dict)       # the probe's params (sizes, counts, host facts)
    core_width: tuple | None = None         # processes.core_width: each process's, by its number
    kernel_paths: dict | None = None        # the traced breakdown (--kernel-paths)
    samples_file: str | None = None         # relative to the run (store.samples_path checks it)

    @classmethod
    def of(cls, m: dict) -> Measurement:
        """One entry of a loaded results.json's measurements (store.load has
        checked its shape). A record of the old layout has no `figure`: it
        is processes.median_of_medians where several processes measured the
        id, else the median; its interval then the median's where one
        process did, and none where several did (the old layout kept none)."""
        ps = m.get("processes") if isinstance(m.get("processes"), dict) else {}
        several = _number(ps.get("n")) is not None and ps["n"] > 1
        if "figure" in m:
            figure, ci = _number(m["figure"]), _pair(m.get("figure_ci95"))
        elif several:
            figure, ci = _number(ps.get("median_of_medians")), None
        else:
            figure, ci = _number(m.get("median")), _pair(m.get("ci95"))
        n = _number(m.get("n"))
        return cls(id=m["id"], unit=m.get("unit") or "", figure=figure, figure_ci95=ci,
                   pooled_median=_number(m.get("median")), mean=_number(m.get("mean")), std=_number(m.get("std")),
                   n=int(n) if n is not None else None, processes=int(ps["n"]) if several else 1,
                   timer=Timer.of(m.get("timer")), probe=_text(m.get("probe")),
                   params=m["params"] if isinstance(m.get("params"), dict) else {},
                   core_width=tuple(ps["core_width"]) if isinstance(ps.get("core_width"), list) else None,
                   kernel_paths=m["kernel_paths"] if isinstance(m.get("kernel_paths"), dict) else None,
                   samples_file=m.get("samples_file") if isinstance(m.get("samples_file"), str) else None)


def measurements(doc: dict) -> list[Measurement]:
    """Every measurement of a loaded run (store.load), in its order."""
    return [Measurement.of(m) for m in doc["measurements"]]
