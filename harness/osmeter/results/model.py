"""The results' types: what a record of a run means, read in one place, so
that no reader knows a record's keys but through them.

Timer  the stop-watch a probe process timed with, as the `timer` block of
       each of its lines states it (bench/common/emit.c; the harness keeps
       it in each measurement of results.json): the kind (the TSC or
       clock_gettime), the step it really advances by, the fallback's
       reason, and how deschedules inside a window were seen (the
       perf_event mmap page, or getrusage and why)."""
from __future__ import annotations

import math
from dataclasses import dataclass


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
