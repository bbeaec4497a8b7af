"""What a probe declaration is. Each area's declarations live in
harness/osmeter/probes/areas/<area>.py; registry.py collects them.

A new probe is its C file (bench/<area>/<name>.c, built to
build/bin/<area>_<name> by the Makefile's pattern rule), one Probe in its
area's module (and its figure there, in FIGURES, if it has one), and its
test. Estimates are optional per id: the report says "no estimate".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

PRESETS = ("quick", "full")
# Processes per probe in one run, per preset: a process, not a sample, lands in one of the
# machine's modes (address layout, which physical pages, the host core a vCPU sits on), so each
# probe that takes --samples runs in this many processes, its samples shared among them, in
# separate passes over the selection (interleaved with the other probes, not back to back).
PROCESSES = {"quick": 3, "full": 5}


@dataclass(frozen=True)
class Measure:
    id: str
    unit: str  # the unit results.json reports (cycle counts become ns)
    description: str
    # a series (a curve over sizes, depths, ...) rather than one figure: it
    # is plotted, and has no single estimate
    curve: bool = False
    # the kernel path whose virtual time is this figure's measured software
    # overhead in a traced run (ktimers.py: syscall:NAME, syscalls, fault, EV1..EV2)
    ktimer: str = ""


@dataclass(frozen=True)
class Probe:
    name: str  # short name, e.g. "cpu.call"
    binary: str  # file name in build/bin
    measures: tuple[Measure, ...]
    methodology: str  # how this probe measures (method only: never one machine's figures)
    # its area's name (cpu, mem, ...): left out in probes/areas/<area>.py, where collect() stamps the
    # module's AREA on each declaration (a declaration that names another area is an error)
    area: str = ""
    # preset -> extra arguments; a probe absent from a preset does not run in it
    presets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    timeout: float = 120.0  # seconds, per run of the binary
    # more lines computed from the probe's own lines and the machine
    # description: derive(lines, machine) -> lines
    derive: Callable[[list[dict], dict], list[dict]] | None = None
    # turns the binary's stdout into probe lines when it does not print them itself
    parse: Callable[[str], list[dict]] | None = None
    needs: str | None = None  # runs only when given: "peer" (--peer/--remote), "fs_remote" (--fs-remote)
    external: bool = False    # a system command found on PATH (ping), not a build/bin probe;
                              # skipped, with the reason recorded, where it is missing
    shared_method: str = ""   # a method paragraph several probes share (printed once per report section)
    smoke: tuple[str, ...] = ()  # extra arguments for a quick function test (small sizes)
    # the wall time of one run of the probe per preset, seconds, on a small machine (the
    # 2-vCPU guest of docs/DESIGN.md's facts): the budget the progress line counts down, and
    # the run's announced total; probes that take under a second leave it out
    expect: dict[str, float] = field(default_factory=dict)
    # processes per run: None takes PROCESSES[preset] where the preset's arguments give
    # --samples (shared among them), else 1; 1 for a probe whose setup dwarfs its samples
    processes: int | None = None
    # what the probe's thread waits for when it sleeps, named so in a kernel-path
    # breakdown in place of "waiting" (disk: "device"); "" keeps "waiting"
    kernel_wait: str = ""
    # extra arguments for the --kernel-paths traced pass (after the preset's), from the timed
    # figures (id -> median) and the preset: a probe whose events would overflow the trace
    # buffers over a whole run is traced over a shorter one
    traced: Callable[[dict[str, float], str], tuple[str, ...]] | None = None
    # params of the probe's lines that measure the host's part in its figures, as (key, what a value
    # says): stability shows them per id beside the run-to-run spread they help explain
    host_params: tuple[tuple[str, str], ...] = ()
    # a host param (one of host_params) that jumps between the host's states, at least
    # compare.HOST_MODE_FACTOR apart (the vCPUs on one die or two): compare compares the
    # probe's ids only on the runs of one state (compare.host_mode_split)
    host_mode: str = ""
    # True: the probe's CPU is kept from idling while it runs (a SCHED_IDLE busy loop beside it,
    # launch.Launcher._spinner), for a figure without an idle CPU's resume in it
    awake: bool = False
    # False: an application's workload, not a probe of one CPU (app.replay): the launcher neither pins it
    # nor raises its policy, and passes it no --cpu
    pinned: bool = True
    # how the params of a run's processes combine into the run's (each process's params, in
    # order -> the run's); None keeps the first process's, host_params averaged
    merge_params: Callable[[list[dict]], dict] | None = None

    def processes_in(self, preset: str) -> int:
        """How many processes of this probe one run of `preset` takes."""
        if self.processes is not None:
            return self.processes
        return PROCESSES.get(preset, 1) if "--samples" in self.presets.get(preset, ()) else 1

    def ids(self) -> list[str]:
        return [m.id for m in self.measures]

    def full_methodology(self) -> str:
        return " ".join(t for t in (self.shared_method, self.methodology) if t)

    def method_text(self, preset: str | None = None, params: dict | None = None) -> str:
        """The methodology with its run-dependent numbers filled in (method_text)."""
        return method_text(self.methodology, self.presets.get(preset or "quick", ()), params)


_FIELD = re.compile(r"\{(arg|param):([^}|=]+)(?:=([^}|]*))?(?:\|(bytes|mib|list))?\}")


def method_text(text: str, args: tuple[str, ...], params: dict | None = None) -> str:
    """A methodology's numbers that a run sets, taken from that run, never
    from a default: {arg:--size=32M} is the value the run's arguments gave
    --size (else the probe's own default after =), {param:max|bytes} a
    figure its first measurement recorded in params (|bytes in KiB/MiB/GiB,
    |mib a MiB list, |list a comma list spaced). A field the run cannot fill
    keeps its default, or says 'not recorded'."""
    from osmeter.present.values import fmt_value

    given = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")}

    def fill(mo: re.Match) -> str:
        kind, key, default, fmt = mo.groups()
        v = given.get(key, default) if kind == "arg" else (params or {}).get(key, default)
        if v is None or v == "":
            return "(not recorded)"
        if fmt == "bytes":
            try:
                return fmt_value(float(v), "bytes")
            except ValueError:
                return str(v)
        if fmt in ("mib", "list"):
            items = ", ".join(str(v).split(",")) if isinstance(v, str) else ", ".join(map(str, v))
            return f"{items} MiB" if fmt == "mib" else items
        return str(v)

    return _FIELD.sub(fill, text)


@dataclass(frozen=True)
class Derived:
    """A figure computed from measurements of several probes."""

    measure: Measure
    inputs: tuple[str, ...]
    fn: Callable[[dict[str, dict]], dict]  # probe lines by id -> one line
    methodology: str
    area: str = ""


@dataclass(frozen=True)
class Area:
    name: str   # cpu, mem, ...
    title: str  # the report's section title
    order: int  # position in lists and the report
    # the area's figures, fn(doc, est) -> a matplotlib Figure or None (its docstring's first
    # paragraph the caption): the module's FIGURES, set by collect()
    figures: tuple[Callable[..., object], ...] = ()


def measure(id: str, unit: str, description: str, curve: bool = False, ktimer: str = "") -> Measure:
    return Measure(id, unit, description, curve, ktimer)
