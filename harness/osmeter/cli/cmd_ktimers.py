"""`osmeter ktimers`: the kernel timers of a run made with --kernel-paths
(/proc/ktimers-like)."""
from __future__ import annotations

import sys
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.results import store


def main(args) -> int:
    from osmeter.core.tree import repo_root
    from osmeter.ktrace import kpaths, ktimers

    traced = store.traced_probes(args.dir)
    if not traced:
        raise RunError(f"{args.dir}: no kernel-path traces ({store.RAW}/*{store.trace_file('', 'task')}): a run "
                       "made with --kernel-paths keeps them")
    if args.probe:
        if args.probe not in traced:
            raise RunError(f"--probe {args.probe}: not traced in this run (traced: {', '.join(traced)})")
        traced = [args.probe]
    if not args.timer and not args.probe and (args.dir / store.KTIMERS).exists():
        sys.stdout.write((args.dir / store.KTIMERS).read_text())
        return 0
    try:
        timers = [ktimers.parse_spec(t) for t in args.timer or []]
    except ValueError as e:
        raise RunError(str(e)) from None
    hz = _tsc_hz(args.dir)
    sections = []
    for name in traced:
        try:
            tl = kpaths.load_timelines(args.dir / store.RAW, name, repo_root())
        except (ValueError, OSError) as e:
            raise RunError(f"{args.dir}: the trace of {name} cannot be read: {e}") from None
        unknown = ktimers.unknown_syscalls(tl, timers)
        if unknown:
            raise RunError(f"--timer {', '.join(unknown)}: no system call of that name on this machine "
                           "(names as in the kernel's table, e.g. syscall:getppid)")
        tids = sorted(tl.threads)
        sections.append((name, ktimers.rows(tl, timers or ktimers.default_timers(tl, tids), tids, hz,
                                            keep_idle=bool(timers))))
    sys.stdout.write(ktimers.table(sections))
    return 0


def _tsc_hz(run_dir: Path) -> float:
    """The run's TSC rate (ticks per second of the trace clock), from its measurements."""
    from osmeter.results.store import load

    try:
        doc = load(run_dir)
    except ValueError as e:
        raise RunError(str(e)) from None
    hz = next((m["tsc_hz"] for m in doc["measurements"] if m.get("tsc_hz")), None)
    if not hz:
        raise RunError(f"{run_dir}: no measurement gives the TSC rate the trace's ticks need")
    return float(hz)


NAME = "ktimers"


def add_parser(sub) -> None:
    kt = sub.add_parser("ktimers", help="the kernel timers of a run made with --kernel-paths (/proc/ktimers-like)",
                        description="Kernel virtual timers: a named kernel path of each traced probe's threads, its "
                                    "physical time and its virtual time (interrupts, softirqs and time off the CPU "
                                    "taken out), read from the traces the run kept. Without --timer, the run's "
                                    "ktimers.txt (each system call, every system call, page faults).")
    kt.add_argument("dir", type=Path, help="a results directory of a run with --kernel-paths")
    kt.add_argument("--timer", action="append", metavar="SPEC",
                    help="syscall:NAME, syscalls, fault, or EV1..EV2 (tracepoints of a thread, e.g. "
                         "irq:softirq_entry..irq:softirq_exit); repeatable")
    kt.add_argument("--probe", metavar="NAME", help="only this traced probe (e.g. cpu.syscall)")
