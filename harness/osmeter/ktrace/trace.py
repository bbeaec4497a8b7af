"""A kernel trace read back: tracefs's text into events, and each traced
thread's time into a timeline of what it was doing.

Input: the `trace` text of the two instances a traced probe ran under
(tracefs.py): the task instance (the probe's processes: system calls, page
faults, the interrupts and softirqs that ran on them, and every switch of
one of them off or onto a CPU, every wake-up of one) and the cpu instance
(every CPU's interrupts and softirqs, the disk's requests). Time stamps are
the trace clock's ticks (x86-tsc: the TSC the probes read).

A thread's timeline is a list of (start tick, label); a label holds until
the next one starts. On a CPU the label is the innermost thing running:
  user                    no kernel event open (user code; also the kernel's
                          entry and exit paths outside the tracepoints: a
                          system call's instruction and mitigations)
  syscall NAME            raw_syscalls sys_enter .. sys_exit
  page fault              exceptions page_fault_user until the thread's next
                          event that is not nested in it (the kernel traces
                          no fault's end: the user instructions between a
                          fault's return and that event count with it)
  page fault (kernel)     page_fault_kernel, nested in a system call, likewise
  hardirq IRQ NAME        irq_handler_entry .. exit (a device's handler)
  hardirq timer|IPI ...   irq_vectors: the local timer, reschedule and
                          call-function IPIs, irq_work
  softirq VEC             softirq_entry .. exit (NET_RX, TIMER, BLOCK, ...)
Off a CPU:
  preempted               switched out while runnable, or woken and then kept
                          waiting while another task (not its waker) ran
  waiting: woken by X     asleep until the wake-up; X is the waker: a task
                          (its name), or the interrupt or softirq the wake-up
                          ran in (from the cpu instance)
  wake-up                 woken, until it ran (an idle CPU waking, or the
                          waker still running on the CPU)
  unknown                 before the thread's first event
"""
from __future__ import annotations

import gzip
import heapq
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

LINE = re.compile(r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+(\d+): (\w+): (.*)$")
SWITCH = re.compile(r"prev_comm=(.*) prev_pid=(-?\d+) prev_prio=-?\d+ prev_state=(\S+) ==> "
                    r"next_comm=(.*) next_pid=(-?\d+) next_prio=-?\d+")
WAKEUP = re.compile(r"comm=(.*) pid=(\d+) prio=-?\d+ target_cpu=(\d+)")
NR = re.compile(r"NR (-?\d+)")
IRQ = re.compile(r"irq=(\d+)(?: name=(.*))?")
VEC = re.compile(r"vec=(\d+) \[action=(\w+)\]")
RQ = re.compile(r"(\d+),(\d+) (\S+) .*?\(.*?\) (\d+) \+ (\d+)")

VECTOR_NAMES = {"local_timer": "timer", "reschedule": "IPI reschedule", "call_function": "IPI call",
                "call_function_single": "IPI call", "irq_work": "irq_work"}

# label groups: what each kind of time is, in the order a breakdown shows them
GROUPS = ("user", "syscall", "page fault", "hardirq", "softirq", "preempted", "wake-up", "waiting", "device",
          "unknown")
KERNEL_GROUPS = ("syscall", "page fault", "hardirq", "softirq")   # on a CPU, in the kernel
OFF_CPU_GROUPS = ("preempted", "wake-up", "waiting", "device")


def group(label: str) -> str:
    """The group of a timeline label ("syscall read" -> "syscall")."""
    if label.startswith("page fault"):
        return "page fault"
    head = label.split(":", 1)[0].split(" ", 1)[0]
    return head if head in GROUPS else "unknown"


def task_name(comm: str, pid: int) -> str:
    """A waker's name that stays the same from run to run: kernel threads
    without their CPU and worker numbers (kworker/1:1H -> kworker)."""
    if pid == 0:
        return "idle"
    if comm in ("<...>", "<idle>", ""):
        return "a task"
    return re.sub(r"/[0-9u][0-9:.H-]*$", "", comm)


def syscall_names(path: Path) -> dict[int, str]:
    """build/syscalls.tsv (number, tab, name): the C library's numbering."""
    out = {}
    try:
        for line in path.read_text().splitlines():
            nr, _, name = line.partition("\t")
            if nr.isdigit() and name:
                out[int(nr)] = name
    except OSError:
        pass
    return out


@dataclass
class Event:
    ts: int
    cpu: int
    pid: int
    comm: str
    flags: str
    name: str
    rest: str


def parse(text: str) -> list[Event]:
    """The events of a tracefs `trace` text, in its order (time order)."""
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line or line[0] == "#":
            continue
        mo = LINE.match(line)
        if mo:
            comm, pid, cpu, flags, ts, name, rest = mo.groups()
            if len(ts) > 19 or int(ts) >= 2**63 or len(pid) > 10 or len(cpu) > 10:  # a tick, a pid, a CPU
                raise ValueError(f"trace line {k}: a timestamp, pid or CPU beyond 64 bits ({line[:100]!r})")
            out.append(Event(int(ts), int(cpu), int(pid), comm, flags, name, rest))
    return out


def read_text(path: Path) -> str:
    """A trace's text; ValueError for one cut short or not what its name says."""
    try:
        with gzip.open(path, "rt", errors="replace") if path.suffix == ".gz" else open(path, errors="replace") as f:
            return f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ValueError(f"{path.name}: cut short or not a gzip file ({type(e).__name__})") from None


@dataclass
class Thread:
    tid: int
    comm: str = ""
    starts: list = field(default_factory=list)   # tick at which each label begins
    labels: list = field(default_factory=list)   # label ids
    stack: list = field(default_factory=list)    # open kernel frames on the CPU (labels), innermost last
    on: bool | None = None                       # on a CPU; None: not seen yet
    pending: str = ""                            # "wait" or "run": an off-CPU label resolved later
    waker: tuple = ()                            # (name, pid) of the last wake-up
    events: list = field(default_factory=list)   # (tick, event name) of its own events, for tracepoint pairs
    syscalls: list = field(default_factory=list)  # (nr, enter tick, exit tick)
    faults: list = field(default_factory=list)    # (start tick, end tick, "user"|"kernel")
    _fault: tuple | None = None
    _sys: tuple | None = None
    ts_arr: np.ndarray | None = None
    lab_arr: np.ndarray | None = None


class Timelines:
    """Every traced thread's timeline, and each CPU's interrupt context."""

    def __init__(self, task_events: list[Event], cpu_events: list[Event] = (), names: dict[int, str] | None = None):
        self.names = names or {}
        self.label_ids: dict[str, int] = {}
        self.labels: list[str] = []
        self.threads: dict[int, Thread] = {}
        self.first_ts = task_events[0].ts if task_events else 0
        self.last_ts = task_events[-1].ts if task_events else 0
        self.markers: list[tuple[int, int, str]] = []   # (tick, pid, text)
        # the last tick each CPU's buffer holds, per instance ("task", "cpu")
        self.cpu_last: dict[str, dict[int, int]] = {"task": {}, "cpu": {}}
        self._context(cpu_events)
        self.requests: list[tuple[int, int, int]] = []   # (dev, issue tick, complete tick)
        self._requests(cpu_events)
        per_cpu: dict[int, list[int]] = {}
        for ev in cpu_events:
            self.cpu_last["cpu"][ev.cpu] = ev.ts
            per_cpu.setdefault(ev.cpu, []).append(ev.ts)
        self._cpu_ts = {c: np.asarray(v, dtype=np.int64) for c, v in per_cpu.items()}
        # switches come from the cpu instance, which takes every task's: the task instance's
        # pid filter drops a switch from the idle task to a probe thread
        switches = [ev for ev in cpu_events if ev.name == "sched_switch"]
        own = [ev for ev in task_events if ev.name != "sched_switch"]
        for ev in task_events:
            self.cpu_last["task"][ev.cpu] = ev.ts
        for ev in heapq.merge(own, switches, key=lambda e: e.ts):
            self._event(ev)
        for th in self.threads.values():
            th.ts_arr = np.asarray(th.starts, dtype=np.int64)
            th.lab_arr = np.asarray(th.labels, dtype=np.int64)
        self.unknown = self._id("unknown")

    # ------------------------------------------------------------ labels
    def _id(self, label: str) -> int:
        k = self.label_ids.get(label)
        if k is None:
            k = self.label_ids[label] = len(self.labels)
            self.labels.append(label)
        return k

    def _set(self, th: Thread, ts: int, label: str) -> None:
        k = self._id(label)
        if th.labels and th.labels[-1] == k:
            return
        if th.starts and th.starts[-1] == ts:  # two changes at one tick: the later one holds
            th.labels[-1] = k
            if len(th.labels) > 1 and th.labels[-2] == k:
                th.starts.pop()
                th.labels.pop()
            return
        th.starts.append(ts)
        th.labels.append(k)

    def _relabel_last(self, th: Thread, label: str) -> None:
        if th.labels:
            th.labels[-1] = self._id(label)

    def _thread(self, tid: int, comm: str = "") -> Thread:
        th = self.threads.get(tid)
        if th is None:
            th = self.threads[tid] = Thread(tid, comm)
        if comm and comm != "<...>":
            th.comm = comm
        return th

    def _here(self, th: Thread) -> str:
        return th.stack[-1] if th.stack else "user"

    # ------------------------------------------------- the task instance
    def _event(self, ev: Event) -> None:
        name = ev.name
        if name == "tracing_mark_write":
            self.markers.append((ev.ts, ev.pid, ev.rest))
            return
        if name == "sched_switch":
            mo = SWITCH.match(ev.rest)
            if mo:
                self._switch(ev, mo)
            return
        if name in ("sched_wakeup", "sched_wakeup_new"):
            mo = WAKEUP.match(ev.rest)
            if mo:
                self._wakeup(ev, int(mo.group(2)), name == "sched_wakeup_new")
            return
        th = self._thread(ev.pid, ev.comm)
        if th.on is False:
            self._switched_in_unseen(th, ev)
        th.events.append((ev.ts, name))
        th.on = True
        ts = ev.ts
        if name == "sys_enter":
            self._end_fault(th, ts, everything=True)
            mo = NR.match(ev.rest)
            nr = int(mo.group(1)) if mo else -1
            th._sys = (nr, ts)
            th.stack = [f"syscall {self.names.get(nr, f'#{nr}')}"]
        elif name == "sys_exit":
            self._end_fault(th, ts, everything=True)
            if th._sys is not None:
                th.syscalls.append((th._sys[0], th._sys[1], ts))
            th._sys = None
            th.stack = []
        elif name == "page_fault_user":
            self._end_fault(th, ts, everything=True)
            th.stack = ["page fault"]
            th._fault = (ts, "user")
        elif name == "page_fault_kernel":
            self._end_fault(th, ts)
            th.stack.append("page fault (kernel)")
            th._fault = (ts, "kernel")
        elif name == "irq_handler_entry":
            mo = IRQ.match(ev.rest)
            th.stack.append(f"hardirq {mo.group(1)} {mo.group(2) or ''}".rstrip() if mo else "hardirq")
        elif name.endswith("_entry") and name[:-6] in VECTOR_NAMES:
            th.stack.append(f"hardirq {VECTOR_NAMES[name[:-6]]}")
        elif name == "softirq_entry":
            mo = VEC.match(ev.rest)
            th.stack.append(f"softirq {mo.group(2) if mo else '?'}")
        elif name in ("irq_handler_exit", "softirq_exit") or (name.endswith("_exit") and name[:-5] in VECTOR_NAMES):
            kind = "softirq" if name == "softirq_exit" else "hardirq"
            for k in range(len(th.stack) - 1, -1, -1):
                if th.stack[k].startswith(kind):
                    del th.stack[k:]
                    break
        else:
            return
        self._set(th, ts, self._here(th))

    def _end_fault(self, th: Thread, ts: int, everything: bool = False) -> None:
        """A fault ends at the thread's next event that is not nested in it."""
        if th._fault is not None and (everything or th._fault[1] == "kernel"):
            th.faults.append((th._fault[0], ts, th._fault[1]))
            th._fault = None
            if th.stack and th.stack[-1].startswith("page fault"):
                th.stack.pop()

    def _switch(self, ev: Event, mo: re.Match) -> None:
        """A switch the task instance kept: its previous or its next task is
        a probe thread (set_event_pid), seen before by an event of its own or
        its creation (sched_wakeup_new)."""
        prev_comm, prev_pid, state, next_comm, next_pid = mo.groups()
        prev_pid, next_pid = int(prev_pid), int(next_pid)
        if prev_pid in self.threads and prev_pid != 0:
            th = self._thread(prev_pid, prev_comm)
            th.events.append((ev.ts, "sched_switch_out"))
            th.on = False
            th.pending = "" if state.startswith("R") else "wait"
            self._set(th, ev.ts, "preempted" if state.startswith("R") else "waiting")  # a sleep named at its wake-up
        if next_pid in self.threads and next_pid != 0:
            th = self._thread(next_pid, next_comm)
            th.events.append((ev.ts, "sched_switch_in"))
            if th.pending == "wait":  # no wake-up seen (a lost event)
                self._relabel_last(th, "waiting: woken by ?")
            elif th.pending == "run":  # who ran between the wake-up and now
                by_waker = bool(th.waker) and prev_pid == th.waker[1]
                self._relabel_last(th, "wake-up" if prev_pid == 0 or by_waker else "preempted")
            th.pending = ""
            th.on = True
            self._set(th, ev.ts, self._here(th))

    def _switched_in_unseen(self, th: Thread, ev: Event) -> None:
        """An event of a thread the timeline has off its CPU: it was switched
        in without a traced switch (some kernels trace no switch from the
        idle task on some CPUs). The CPU was idle then, so the switch came
        right after the last interrupt or softirq it ran there: from that
        event's tick (not before the wake-up) the thread runs where it was."""
        since = th.starts[-1] if th.starts else ev.ts
        at = max(since, self._last_cpu_event(ev.cpu, ev.ts))
        if th.pending == "wait":
            self._relabel_last(th, "waiting: woken by ?")
        elif th.pending == "run":
            self._relabel_last(th, "wake-up")
        th.pending = ""
        th.events.append((at, "sched_switch_in"))
        self._set(th, at, self._here(th))

    def _last_cpu_event(self, cpu: int, before: int) -> int:
        ts = self._cpu_ts.get(cpu)
        if ts is None or ts.size == 0:
            return 0
        i = int(np.searchsorted(ts, before, side="left")) - 1
        return int(ts[i]) if i >= 0 else 0

    def _wakeup(self, ev: Event, pid: int, new: bool) -> None:
        th = self.threads.get(pid)
        if th is None and not new:
            return
        th = th or self._thread(pid)
        if not new:
            if th.on is not False or th.pending != "wait":
                return  # running, runnable (preempted), or woken already: nothing changes
            self._relabel_last(th, f"waiting: woken by {self.waker_name(ev)}")
        th.waker = (self.waker_name(ev), ev.pid)
        th.pending = "run"
        th.on = False
        th.events.append((ev.ts, "sched_wakeup"))
        self._set(th, ev.ts, "wake-up")

    def waker_name(self, ev: Event) -> str:
        """What a wake-up ran in: the interrupt or softirq on its CPU (from
        the flags' context and the cpu instance), else the task."""
        ctx = ev.flags[2] if len(ev.flags) > 2 else "."
        if ctx in "hHsZz" and ctx != ".":
            kind = "softirq" if ctx == "s" else "hardirq"
            return self.context_at(ev.cpu, ev.ts, kind) or kind
        return task_name(ev.comm, ev.pid)

    # ---------------------------------------------------- the cpu instance
    def _context(self, events) -> None:
        """Per CPU, the interrupt and softirq intervals (start, end, name)."""
        self._ctx: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, list[str]]] = {}
        spans: dict[tuple[int, str], list] = {}
        open_: dict[int, list] = {}
        for ev in events:
            n = ev.name
            st = open_.setdefault(ev.cpu, [])
            if n == "irq_handler_entry":
                mo = IRQ.match(ev.rest)
                st.append(("hardirq", ev.ts, f"irq {mo.group(1)} {mo.group(2) or ''}".rstrip() if mo else "hardirq"))
            elif n.endswith("_entry") and n[:-6] in VECTOR_NAMES:
                st.append(("hardirq", ev.ts, VECTOR_NAMES[n[:-6]]))
            elif n == "softirq_entry":
                mo = VEC.match(ev.rest)
                st.append(("softirq", ev.ts, f"softirq {mo.group(2) if mo else '?'}"))
            elif n in ("irq_handler_exit", "softirq_exit") or (n.endswith("_exit") and n[:-5] in VECTOR_NAMES):
                kind = "softirq" if n == "softirq_exit" else "hardirq"
                for k in range(len(st) - 1, -1, -1):
                    if st[k][0] == kind:
                        spans.setdefault((ev.cpu, kind), []).append((st[k][1], ev.ts, st[k][2]))
                        del st[k:]
                        break
        for key, v in spans.items():
            v.sort()
            self._ctx[key] = (np.array([a for a, _, _ in v], dtype=np.int64),
                              np.array([b for _, b, _ in v], dtype=np.int64), [c for _, _, c in v])

    def context_at(self, cpu: int, ts: int, kind: str) -> str | None:
        """The innermost interrupt (kind "hardirq") or softirq running on
        `cpu` at tick `ts`, by name; None when the cpu instance has none."""
        got = self._ctx.get((cpu, kind))
        if got is None:
            return None
        starts, ends, names = got
        i = int(np.searchsorted(starts, ts, side="right")) - 1
        while i >= 0 and starts[i] <= ts:
            if ends[i] >= ts:
                return names[i]
            i -= 1
            if i >= 0 and ts - starts[i] > 10**9:
                break
        return None

    def _requests(self, events) -> None:
        pending: dict[tuple, int] = {}
        for ev in events:
            if ev.name not in ("block_rq_issue", "block_rq_complete"):
                continue
            mo = RQ.match(ev.rest)
            if not mo:
                continue
            key = (int(mo.group(1)), int(mo.group(2)), int(mo.group(4)), int(mo.group(5)))
            if ev.name == "block_rq_issue":
                pending[key] = ev.ts
            elif key in pending:
                self.requests.append(((key[0] << 20) | key[1], pending.pop(key), ev.ts))

    # ---------------------------------------------------------- partition
    def partition(self, tid: int, t0: int, t1: int) -> dict[int, int]:
        """Ticks per label id of thread tid's time from t0 to t1."""
        th = self.threads.get(tid)
        if th is None or th.ts_arr is None or th.ts_arr.size == 0 or t1 <= t0:
            return {self._id("unknown"): max(t1 - t0, 0)}
        starts, labs = th.ts_arr, th.lab_arr
        i0 = int(np.searchsorted(starts, t0, side="right")) - 1
        i1 = int(np.searchsorted(starts, t1, side="left"))
        out: dict[int, int] = {}
        if i0 < 0:  # before the thread's first event
            out[self.unknown] = int(min(starts[0], t1) - t0)
            i0 = 0
        if i1 <= i0:
            return out
        seg_start = np.maximum(starts[i0:i1], t0)
        seg_end = np.minimum(np.append(starts[i0 + 1:i1], t1), t1)
        dur = seg_end - seg_start
        for k, d in zip(labs[i0:i1].tolist(), dur.tolist()):
            if d > 0:
                out[k] = out.get(k, 0) + d
        return out

    def named(self, part: dict[int, int]) -> dict[str, int]:
        return {self.labels[k]: v for k, v in part.items()}
