"""The kernel-path pass of `osmeter run --kernel-paths`: after the timed
processes, each probe once more, traced (ktrace/kpaths.py); its breakdown
per id into the measurements, the tracing overhead beside it, the kernel
timers of each probe into ktimers.txt."""
from __future__ import annotations

from pathlib import Path

from osmeter.host.launch import Launcher
from osmeter.ktrace import kpaths, ktimers
from osmeter.results import store
from osmeter.results.writer import ProbeOutputError, Results, line_values, parse_probe_output, write_text_atomic
from osmeter.running.plan import Plan, probe_args, share_samples


def kernel_path_pass(p: Plan, launch: Launcher, order, procs: dict[str, int], subst: dict, results: Results,
                  raw_dir: Path, stopped: set[str], say, label: str) -> None:
    """--kernel-paths: after the timed processes, each probe once more,
    traced (one process with one process's share of the samples); its
    breakdown per id into the measurements' kernel_paths, the tracing
    overhead beside it (the traced run's median over the timed one), the
    kernel timers of each into ktimers.txt. The timed figures stay those of
    the untraced processes."""
    doc = results.doc["conditions"].setdefault("kernel_paths", {})
    doc.setdefault("probes", {})
    device = kpaths.block_device(str(subst["{disk_target}"]))
    sections = []
    by_id = {m["id"]: m for m in results.measurements}
    for probe, wanted in order:
        if probe.external or probe.name in stopped or not kpaths.traced_ids(probe, wanted, by_id):
            continue  # only a time has a breakdown: a probe of rates alone is not run traced
        if not probe.pinned:  # the breakdown follows one CPU's threads; an application's are anywhere
            doc["probes"][probe.name] = {"skipped": "not pinned to one CPU (an application's workload): not traced"}
            continue
        extra = list(probe.traced({k: v.get("median") for k, v in by_id.items()}, p.opts.preset)) if probe.traced else []
        args = share_samples(probe_args(probe.presets[p.opts.preset], subst), procs[probe.name]) + extra
        if p.opts.timer != "tsc" and probe.parse is None:
            args = ["--timer", p.opts.timer, *args]
        say(f"{label}[traced] {probe.name:<20}", end=" ", flush=True)
        try:
            rc, stdout, stderr, tl, stats, missing, secs = kpaths.traced_pass(
                p.tracing, launch, launch.argv(probe.binary, args), probe.timeout, raw_dir, probe.name, p.root)
        except OSError as e:
            doc["probes"][probe.name] = {"error": f"tracing failed: {e.strerror or e}"}
            say(f"tracing failed: {e.strerror or e}")
            continue
        write_text_atomic(raw_dir / f"{probe.name}.traced.out", stdout)
        if stderr:
            write_text_atomic(raw_dir / f"{probe.name}.traced.err", stderr)
        info = {"seconds": round(secs, 3), "exit": rc, "threads": len(tl.threads),
                "dropped_events": {f"{kind} cpu{c}": s.get("dropped_events", 0) for kind, per in stats.items()
                                   for c, s in per.items() if s.get("dropped_events", 0)}}
        if extra:
            info["traced_args"] = extra
        if missing:
            info["events_missing"] = missing
        doc["probes"][probe.name] = info
        if rc != 0:
            info["error"] = f"the traced run exited with status {rc}" + (f": {stderr.strip()[-300:]}" if stderr else "")
            say(info["error"])
            continue
        try:
            lines = probe.parse(stdout) if probe.parse else parse_probe_output(stdout)
        except (ProbeOutputError, ValueError) as e:
            info["error"] = f"bad output from the traced run: {e}"
            say(info["error"])
            continue
        lines = [x for x in lines if "refused" not in x]
        got = kpaths.analyze(tl, lines, probe, stats, device)
        traced = {ln["id"]: ln for ln in lines}
        for mid, entry in got.items():
            m = by_id.get(mid)
            if m is None or mid not in wanted:
                continue
            arrays = entry.pop("_arrays")
            entry["samples_file"] = kpaths.save_arrays(results.dir, mid, arrays)
            entry["overhead"] = _tracing_overhead(traced.get(mid), m)
            m["kernel_paths"] = entry
        tids = sorted(tl.threads)
        sections.append((probe.name, ktimers.rows(tl, ktimers.default_timers(tl, tids), tids, _hz(lines))))
        say(f"{len(got)} ids {secs:6.1f} s", flush=True)
        results.save()
    if sections:
        write_text_atomic(results.dir / store.KTIMERS, ktimers.table(sections))


def _hz(lines: list[dict]) -> float:
    """The TSC rate a traced probe reported (ticks per second)."""
    return next((float(ln["tsc_hz"]) for ln in lines if ln.get("tsc_hz")), 1e9)


def _tracing_overhead(line: dict | None, m: dict) -> dict | None:
    """The traced run's median against the timed figure's median."""
    if not line:
        return None
    import numpy as np

    v, bad, _ = line_values(line)
    keep = ~bad & np.isfinite(v)
    if not keep.any() or not m.get("median"):
        return None
    traced = float(np.median(v[keep]))
    return {"traced_median": traced, "timed_median": m["median"], "ratio": traced / m["median"]}
