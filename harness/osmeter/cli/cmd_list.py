"""`osmeter list`: every measurement id with its unit and description, the
methodology after this machine's timer and its step, or lmbench's summary
tables."""
from __future__ import annotations

from osmeter.probes import registry


def main(args) -> int:
    def timer_now() -> str:
        """This machine's timer and its step, measured now: the timer probe's
        calibration (one sample, a fraction of a second) states both in its
        first line's `timer` block, the step as the spacing of the
        differences of 20,000 back-to-back reads (bench/common/timing.c)."""
        import subprocess

        from osmeter.core.tree import repo_root
        from osmeter.results.model import Timer
        from osmeter.results.writer import ProbeOutputError, parse_probe_output

        binary = repo_root() / "build" / "bin" / "cpu_timer"
        if not binary.exists():
            return f"timer: not measured: the probes are not built ({binary} is missing; `make` builds them)"
        try:
            r = subprocess.run([str(binary), "--samples", "1", "--iterations", "1", "--warmup", "0"],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            return f"timer: not measured: {binary} did not run ({e})"
        try:
            line = parse_probe_output(r.stdout)[0]
            t, hz = Timer.of(line.get("timer")), float(line["tsc_hz"])
        except (ProbeOutputError, IndexError, KeyError, TypeError, ValueError):
            t = hz = None
        if t is None or t.resolution_ns is None or t.step_ticks is None or not hz:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}, no timer line"])[-1]
            return f"timer: not measured: {binary} failed ({why})"
        return (f"timer: {t.kind}, step {t.resolution_ns:.3g} ns = {t.step_ticks:g} ticks of {hz / 1e9:.4g} GHz "
                f"(measured now by {binary.name}; every batched window spans 100 steps or more)")

    if args.lmbench:
        from osmeter.present.lmbench import TABLES

        units = {m.id: m.unit for _, m in registry.all_measures()}
        for title, unit, rows in TABLES:
            print(f"{title}{f' ({unit})' if unit else ''}")
            for row in rows:
                point = f" at {row[2][0]} processes, {row[2][1]} KiB" if len(row) > 2 else ""
                print(f"  {row[0]:<16} {row[1] + point:<46} {units.get(row[1], '?')}")
        return 0
    if args.methodology:
        print(timer_now() + "\n")
    for p in registry.PROBES:
        if args.preset and args.preset not in p.presets:
            continue
        for m in p.measures:
            print(f"{m.id:<28} {m.unit:<6} {m.description}")
        if args.methodology:
            text = " ".join(t for t in (p.shared_method, p.method_text(args.preset)) if t)
            print(f"  [{p.name}: {p.binary}] {text} ({args.preset or 'quick'} preset's arguments)\n")
    for d in registry.DERIVED:
        print(f"{d.measure.id:<28} {d.measure.unit:<6} {d.measure.description} (derived)")
        if args.methodology:
            print(f"  [from {', '.join(d.inputs)}] {d.methodology}\n")
    return 0


NAME = "list"


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="every measurement id with its unit and description")
    ls.add_argument("--preset", choices=registry.PRESETS, help="only ids that run in this preset")
    ls.add_argument("--methodology", action="store_true",
                    help="also print how each probe measures, after this machine's timer and its step (measured "
                         "now by the built timer probe)")
    ls.add_argument("--lmbench", action="store_true",
                    help="lmbench's summary tables, in its order and groups, each row with its osmeter id")
