"""Kernel virtual timers: the kernel half of the Virtual Timers paper, built
on tracefs events in user space.

The paper's timers were kernel code: start and stop calls at a path's
boundaries, and the scheduler and the interrupt entry pausing the timers of
the task they interrupt, so a timer measures the path alone ("virtual")
or everything between start and stop ("physical"); /proc/ktimers listed
them. No kernel module can be built here, so the timers are read off a
trace instead: a timer is a named kernel path whose start and stop are
tracepoints of one thread, and its virtual time is its physical time with
the thread's interrupts, softirqs and time off the CPU taken out (the
timeline of trace.py says which ticks those were). A timer is one of:

  syscall:NAME   a system call by name (raw_syscalls sys_enter .. sys_exit)
  syscalls       every system call
  fault          a page fault, from its tracepoint to the thread's next
                 event outside it (the kernel traces no fault's end)
  EV1..EV2       a pair of tracepoints: from each EV1 of a thread to its
                 next EV2 (names as tracefs has them, group optional:
                 irq:softirq_entry..irq:softirq_exit)

`table` prints them as the paper's /proc/ktimers did: one line per timer,
its count, physical and virtual totals and means.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from osmeter.ktrace.trace import GROUPS, KERNEL_GROUPS, Timelines, group

# what a virtual timer leaves out: the interrupts, the softirqs, and the time off the CPU
NOT_THE_PATH = tuple(g for g in GROUPS if g not in ("user", "syscall", "page fault"))

EVENT_NAMES = ("sys_enter", "sys_exit", "page_fault_user", "page_fault_kernel", "irq_handler_entry",
               "irq_handler_exit", "softirq_entry", "softirq_exit", "sched_switch_out", "sched_switch_in",
               "sched_wakeup")


@dataclass(frozen=True)
class KTimer:
    spec: str
    kind: str           # "syscall", "syscalls", "fault", "pair"
    name: str = ""      # the system call's name
    start: str = ""     # a pair's tracepoints
    stop: str = ""

    def intervals(self, tl: Timelines, tid: int) -> np.ndarray:
        """(n, 2) start and stop ticks of this timer's runs on one thread."""
        th = tl.threads.get(tid)
        if th is None:
            return np.zeros((0, 2), dtype=np.int64)
        if self.kind in ("syscall", "syscalls"):
            got = [(a, b) for nr, a, b in th.syscalls
                   if self.kind == "syscalls" or tl.names.get(nr, f"#{nr}") == self.name]
        elif self.kind == "fault":
            got = [(a, b) for a, b, _ in th.faults]
        else:
            got, open_ = [], None
            for ts, ev in th.events:
                if ev == self.start and open_ is None:
                    open_ = ts
                elif ev == self.stop and open_ is not None:
                    got.append((open_, ts))
                    open_ = None
        return np.asarray(got, dtype=np.int64).reshape(-1, 2)


def parse_spec(spec: str) -> KTimer:
    """A timer from its text; ValueError names what is wrong."""
    s = spec.strip()
    if s == "syscalls":
        return KTimer(s, "syscalls")
    if s == "fault":
        return KTimer(s, "fault")
    if s.startswith("syscall:") and len(s) > 8:
        return KTimer(s, "syscall", name=s[8:])
    if ".." in s:
        a, _, b = s.partition("..")
        a, b = a.rsplit(":", 1)[-1], b.rsplit(":", 1)[-1]
        for e in (a, b):
            if e not in EVENT_NAMES:
                raise ValueError(f"kernel timer {spec!r}: {e!r} is not a traced tracepoint ({', '.join(EVENT_NAMES)})")
        if a == b:
            raise ValueError(f"kernel timer {spec!r}: its start and stop are one tracepoint (each would stop the "
                             "timer the one before started): give two")
        return KTimer(s, "pair", start=a, stop=b)
    raise ValueError(f"kernel timer {spec!r}: expected syscall:NAME, syscalls, fault, or EV1..EV2")


def _excluded_before(tl: Timelines, tid: int):
    """For one thread: a function giving, per tick array, the ticks of
    excluded time (interrupts, softirqs, off the CPU) since its first event."""
    th = tl.threads[tid]
    starts, labs = th.ts_arr, th.lab_arr
    excl = np.array([group(tl.labels[k]) in NOT_THE_PATH for k in labs], dtype=bool)
    dur = np.diff(starts, append=starts[-1] if starts.size else 0)
    cum = np.concatenate(([0], np.cumsum(np.where(excl, dur, 0))))

    def at(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(starts, t, side="right") - 1
        inside = i >= 0
        j = np.where(inside, i, 0)
        return np.where(inside, cum[j] + np.where(excl[j], t - starts[j], 0), 0)
    return at


def measure(tl: Timelines, timer: KTimer, tids, window: tuple[int, int] | None = None) -> tuple[int, int, int]:
    """(runs, physical ticks, virtual ticks) of a timer on the given
    threads, runs clipped to a window (t0, t1) when given."""
    count = phys = virt = 0
    for tid in tids:
        iv = timer.intervals(tl, tid)
        th = tl.threads.get(tid)
        if iv.size == 0 or th is None or th.ts_arr is None or th.ts_arr.size == 0:
            continue
        if window is not None:
            iv = np.clip(iv, window[0], window[1])
            iv = iv[iv[:, 1] > iv[:, 0]]
            if iv.size == 0:
                continue
        at = _excluded_before(tl, tid)
        p = iv[:, 1] - iv[:, 0]
        e = at(iv[:, 1]) - at(iv[:, 0])
        count += int(iv.shape[0])
        phys += int(p.sum())
        virt += int((p - e).sum())
    return count, phys, virt


def default_timers(tl: Timelines, tids) -> list[KTimer]:
    """Each system call the threads made, every system call, page faults."""
    names = sorted({tl.names.get(nr, f"#{nr}") for t in tids if t in tl.threads for nr, _, _ in tl.threads[t].syscalls})
    return [KTimer(f"syscall:{n}", "syscall", name=n) for n in names] + [KTimer("syscalls", "syscalls"),
                                                                        KTimer("fault", "fault")]


HEAD = ("timer", "count", "physical_ns", "virtual_ns", "physical_mean_ns", "virtual_mean_ns")


def unknown_syscalls(tl: Timelines, timers: list[KTimer]) -> list[str]:
    """The syscall:NAME timers whose NAME is no system call of the build's table."""
    known = set(tl.names.values())
    return [t.spec for t in timers if t.kind == "syscall" and known and t.name not in known]


def rows(tl: Timelines, timers: list[KTimer], tids, hz: float, keep_idle: bool = False) -> list[tuple]:
    """One row per timer that ran: (spec, count, physical ns, virtual ns, means); with keep_idle, also
    the timers that did not run (count 0, no means)."""
    out = []
    for t in timers:
        n, p, v = measure(tl, t, tids)
        if n:
            out.append((t.spec, n, p * 1e9 / hz, v * 1e9 / hz, p * 1e9 / hz / n, v * 1e9 / hz / n))
        elif keep_idle:
            out.append((t.spec, 0, 0.0, 0.0, None, None))
    return out


def table(sections: list[tuple[str, list[tuple]]]) -> str:
    """The /proc/ktimers-like text: a block per probe, a line per timer."""
    out = ["# osmeter kernel timers: virtual = physical with the thread's interrupts, softirqs and time off the CPU "
           "taken out (from a tracefs trace)",
           "# " + "  ".join(HEAD)]
    width = max((len(r[0]) for _, rs in sections for r in rs), default=8)
    for title, rs in sections:
        out.append(f"[{title}]")
        for spec, n, p, v, pm, vm in rs:  # totals and means to the same tenth of a ns
            means = f"{pm:>12.1f} {vm:>12.1f}" if n else f"{'-':>12} {'-':>12}"
            out.append(f"{spec:<{width}} {n:>9d} {p:>14.1f} {v:>14.1f} {means}")
    return "\n".join(out) + "\n"


def software_ns(tl: Timelines, spec: str, spans: list[tuple[int, int, int, float]], hz: float) -> dict | None:
    """A measured software overhead: the timer's virtual time inside each
    sample's window, per operation. spans: (tid, t0, t1, ops)."""
    timer = parse_spec(spec)
    virt, phys, runs, ops = [], [], 0, 0.0
    for tid, t0, t1, n in spans:
        c, p, v = measure(tl, timer, [tid], (t0, t1))
        runs += c
        ops += n
        virt.append(v * 1e9 / hz / n)
        phys.append(p * 1e9 / hz / n)
    if not spans:
        return None
    return {"timer": spec, "virtual_ns": float(np.mean(virt)), "physical_ns": float(np.mean(phys)),
            "runs_per_op": runs / ops if ops else None,
            "method": "the kernel timer's virtual time inside each sample's window, per operation, averaged"}


__all__ = ["KTimer", "parse_spec", "measure", "rows", "table", "software_ns", "default_timers", "KERNEL_GROUPS"]
