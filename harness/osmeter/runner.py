"""`osmeter run`, in three steps.

plan     checks the whole request before anything runs: the selection, the
         binaries, the CPU, SCHED_FIFO, the directories; start_run adds the
         results directory and removes what killed runs left beside it (a
         run, a campaign and ab each begin with it).
execute  makes one results directory: each probe pinned, scheduled, with a
         timeout; results.json rewritten atomically after every probe, so an
         interrupted or killed run leaves a valid file.
finish   writes the summary and the CSV and prints them.

A campaign (campaign.py) is one plan and several executions. The options
a run takes are runopts.py's table.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import isolate, kpaths, ktimers, machine, nohalt, ramdev, registry, sentinel, store, tracefs
from .errors import Interrupted, RunError
from .present import summary_table, to_csv
from .launch import RT_PRIORITY, Launcher, fifo_permission  # noqa: F401 (fifo_permission: its old home)
from .progress import StatusLine
from .interference import NOISE_ARGS, add, delta, noise_of, shares
from .runopts import RunOptions
from .results import (ProbeOutputError, Results, ResultsDir, WriteError, line_values, merge_processes,
                      parse_probe_output, run_figure, write_json_atomic, write_text_atomic)
from .stats import figure_ci


__all__ = ["RunError", "RunOptions", "Done", "Plan", "plan", "start_run", "execute", "run", "repo_root"]


class Done(NamedTuple):
    """What run(), run_campaign() and run_ab() return."""

    status: int  # 0, or 1 when a probe failed
    out: Path    # the results (campaign, ab) directory


@dataclass
class Plan:
    """A checked request: everything a run needs that does not change
    between the runs of a campaign."""

    opts: RunOptions
    root: Path
    bin_dir: Path
    selection: list[tuple[registry.Probe, list[str]]]
    derived: list[registry.Derived]
    cpu: int
    sched: dict
    peer: str | None = None           # HOST:PORT, once the peer session has started
    extra_conditions: dict = field(default_factory=dict)
    tracing: object | None = None     # the tracefs session of --kernel-paths (tracefs.Session), once open
    host: object = None               # the machine measured: onhost.Here, or onhost.OnHost (--on)
    isolation_stale: dict | None = None  # what a killed isolated run left, undone before planning
    ram_disk: str | None = None       # --disk-ram: the loop device the disk probes take, once made
    scratch_fs: str | None = None     # --fs-scratch: where fs.meta makes its files, once mounted

    @property
    def fifo(self) -> bool:
        return self.sched["policy"] == "SCHED_FIFO"


def repo_root() -> Path:
    env = os.environ.get("OSMETER_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def ensure_built(host, binaries: list[str]) -> None:
    """The probes the run needs, built (make) on the machine measured when missing."""
    missing = host.missing(binaries)
    if not missing:
        return
    print(f"osmeter: building probes ({', '.join(missing)} missing) ...", file=sys.stderr)
    rc, err = host.make()
    if rc != 0:
        raise RunError(f"'make' failed, so the probes cannot run:\n{err.strip()[-3000:]}")
    still = host.missing(binaries)
    if still:
        raise RunError(f"after 'make', still missing in {host.bin_dir}: {', '.join(still)}")


def choose_cpu(requested: int | None, affinity: set[int] | None = None) -> int:
    allowed = sorted(os.sched_getaffinity(0) if affinity is None else affinity)
    if requested is None:
        return allowed[-1]  # the last online CPU: usually the least busy with interrupts
    if requested not in allowed:
        raise RunError(
            f"--cpu {requested}: not an online CPU this process may use (allowed: {', '.join(map(str, allowed))})"
        )
    return requested


def default_out(root: Path, suffix: str = "") -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return root / "results" / f"{socket.gethostname()}-{stamp}{suffix}"


# ------------------------------------------------------------------ plan

def plan(opts: RunOptions, sentinels: bool = False) -> Plan:
    """Checks the request; raises RunError (nothing has run) when it cannot be served."""
    from .onhost import Here, OnHost

    root = repo_root()
    if opts.on:
        if opts.remote or opts.isolate:
            raise RunError("--on takes no --remote or --isolate (give --peer HOST:PORT of a running netpeer)")
        if not opts.on_tree:
            raise RunError("--on USER@HOST needs --on-tree DIR: the osmeter tree built there")
        host = OnHost(opts.on, opts.on_tree)
    else:
        host = Here(root, opts.bin_dir)
    try:
        return _plan(opts, sentinels, root, host)
    except BaseException:
        host.close()
        raise


def _plan(opts: RunOptions, sentinels: bool, root: Path, host) -> Plan:
    bin_dir = host.bin_dir
    probes = opts.probes if opts.probes is not None else registry.PROBES
    derived_all = opts.derived if opts.derived is not None else registry.DERIVED
    if opts.peer and opts.remote:
        raise RunError("give --peer or --remote, not both")
    if opts.remote_cpu is not None and not opts.remote:
        raise RunError("--remote-cpu pins the netpeer that --remote starts: give --remote USER@HOST too")
    # a killed isolated run's changes undone first: the CPU is chosen from this process's own mask
    stale = isolate.undo_killed_run() if opts.isolate else None
    try:
        have = frozenset(k for k, v in (("peer", opts.peer or opts.remote), ("fs_remote", opts.fs_remote)) if v)
        selection = registry.select(opts.patterns, opts.preset, have=have, probes=probes, derived=derived_all)
    except registry.SelectionError as e:
        raise RunError(str(e)) from None
    if not selection:
        raise RunError(f"preset '{opts.preset}' selects no probe")
    if opts.disk_ram and opts.disk_target:
        raise RunError("give --disk-target or --disk-ram, not both")
    for flag, on in (("--disk-ram", opts.disk_ram), ("--fs-scratch", opts.fs_scratch)):
        why = (f"--on {opts.on}: the device would be this machine's, not the host's" if opts.on
               else ramdev.refusal()) if on else None
        if why:
            raise RunError(f"{flag}: {why}")
    for flag, d in (("--fs-dir", opts.fs_dir), ("--fs-remote", opts.fs_remote)):
        if d and not host.is_dir(str(d)):
            raise RunError(f"{flag} {d}: not a directory" + (f" on {opts.on}" if opts.on else ""))
    needed = [p.binary for p, _ in selection if not p.external]
    needed += sentinel.binaries() if sentinels else []
    needed += ["netpeer"] if opts.remote else []
    ensure_built(host, needed)
    cpu = choose_cpu(opts.cpu, host.affinity())
    if opts.rt:
        fifo, why_not = host.fifo_permission()
    else:
        fifo, why_not = False, "disabled with --no-rt"
    sched = {"policy": "SCHED_FIFO", "priority": RT_PRIORITY} if fifo else {"policy": "SCHED_OTHER",
                                                                          "why_not_fifo": why_not}
    return Plan(opts, root, bin_dir, selection, registry.select_derived(opts.patterns, derived_all), cpu, sched,
                host=host, isolation_stale=stale)


# --------------------------------------------------------------- execute

def _args(preset: tuple[str, ...], subst: dict) -> list[str]:
    out: list[str] = []
    for a in preset:
        v = subst.get(a, a)
        out += v if isinstance(v, list) else [v]
    return out


def _subst(p: Plan, out: Path) -> dict[str, str | list[str]]:
    """What the placeholders in the probes' arguments stand for in this run;
    a list stands for several arguments (or none)."""
    o = p.opts
    scratch = p.host.scratch(out)  # the results directory, or on a thin host the agent's own directory there
    return {"{disk_target}": p.ram_disk or str(o.disk_target or Path(scratch) / "disk-target.dat"),
            # osmeter's own RAM-backed device holds no one's data
            "{disk_flags}": ["--allow-destroy-data"] if o.allow_destroy_data or p.ram_disk else [],
            "{disk_size}": o.disk_size or ("1G" if o.preset == "full" else "256M"),
            "{peer}": p.peer or "",
            "{peer_host}": (p.peer.rsplit(":", 1)[0].strip("[]") if p.peer else "127.0.0.1"),
            "{ping_interval}": "0.01" if p.host.uid() == 0 else "0.2",
            "{fs_dir}": str(o.fs_dir or scratch),
            "{meta_dir}": p.scratch_fs or str(o.fs_dir or scratch),
            "{fs_remote}": str(o.fs_remote or "")}


def _sentinel(launch: Launcher) -> tuple[dict[str, list[float]], dict[str, list[float | None]]]:
    """One pass of the sentinel probes: per id, the median (ns) of each of
    sentinel.REPEATS processes, and the core clock (MHz) each ran at (the
    lower of its start and end readings; None where it printed none)."""
    import numpy as np

    out: dict[str, list[float]] = {}
    mhz: dict[str, list[float | None]] = {}
    for _ in range(sentinel.REPEATS):
        for binary, args, mid in sentinel.SENTINELS:
            rc, stdout, _ = launch.run(launch.argv(binary, args), timeout=60)
            if rc != 0:
                continue
            lines = parse_probe_output(stdout)
            clock = _core_pair(lines)
            for line in lines:
                if line["id"] != mid:
                    continue
                v, bad, _ = line_values(line)
                keep = ~bad & np.isfinite(v)
                if keep.any():
                    out.setdefault(mid, []).append(float(np.median(v[keep])))
                    mhz.setdefault(mid, []).append(min(clock) if clock else None)
    return out, mhz


def execute(p: Plan, out: Path, order_seed: int | None = None, sentinels: bool = False, label: str = "",
            quiet: bool = False) -> int:
    """One run into `out`. Returns 0, or 1 when a probe failed. An
    interruption (Interrupted) keeps what finished and goes on up."""
    opts = p.opts
    claim = ResultsDir(out)
    subst = _subst(p, out)
    host = p.host
    conditions = host.conditions()
    conditions["timer_requested"] = opts.timer
    affinity = host.affinity()
    conditions.update({
        "pinned_cpu": p.cpu,
        "harness_cpus": sorted(affinity - {p.cpu}) or [p.cpu],
        "scheduler": p.sched,
        "preset": opts.preset,
        "selection": opts.patterns,
        "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "probe_warnings": [],
        "disk_target": {"path": subst["{disk_target}"], "size": subst["{disk_size}"]},
        **({"peer": {"address": p.peer, "started_by": "--remote" if opts.remote else "--peer",
                     "cpu": opts.remote_cpu}} if p.peer else {}),
        **p.extra_conditions,
    })
    if isinstance(conditions.get("kernel_paths"), dict):  # this run's own copy: its traced probes go there
        conditions["kernel_paths"] = {k: v for k, v in conditions["kernel_paths"].items() if k != "probes"}
    # a --disk-target that does not exist yet is made by the disk probes: osmeter removes it after
    made_target = not p.ram_disk and (opts.disk_target is None or not host.exists(subst["{disk_target}"]))
    conditions["disk_target"]["made_by_osmeter"] = made_target  # (a RAM device: removed by ramdev, not here)
    write_failed: WriteError | None = None
    lost: RunError | None = None
    order = list(p.selection)
    if order_seed is not None:
        random.Random(order_seed).shuffle(order)
        conditions["order_seed"] = order_seed
    conditions["order"] = [probe.name for probe, _ in order]
    results = Results(out, host.machine(), conditions)
    results.save()
    raw_dir = out / store.RAW
    raw_dir.mkdir(exist_ok=True)
    scratch_dirs = list(dict.fromkeys([host.scratch(out), subst["{fs_dir}"], subst["{meta_dir}"]]))
    launch = host.launcher(p.cpu, p.fifo, scratch_dirs)

    # The harness (on a thin host: its agent) stays off the measuring CPU while the run lasts.
    others = affinity - {p.cpu}
    if others:
        host.set_affinity(others)
    start = time.monotonic()
    status = 0
    lines_seen: dict[str, dict] = {}  # every line of every probe so far: the inputs of derived figures
    derived_from: dict[str, list[dict]] = {}  # the input lines each derived figure was last made from
    say = (lambda *a, **k: None) if quiet else print
    expected = sum(probe.expect.get(opts.preset, 0.5) for probe, _ in order)
    say(f"osmeter: {label}{len(order)} probes, preset {opts.preset}, pinned to CPU {p.cpu}, "
        f"{p.sched['policy']}; writing {out}")
    if expected >= 60:
        say(f"osmeter: {label}expected wall time about {expected / 60:.0f} min (the probes' budgets, measured on "
            "a 2-vCPU guest; a slower disk or a larger file cache takes longer)")
    live = not quiet and sys.stdout.isatty()
    procs = {probe.name: probe.processes_in(opts.preset) for probe, _ in order}
    total_runs = sum(procs.values())
    per_process: dict[str, list[list[dict]]] = {}   # each probe's parsed lines, one list per process
    interference: dict[str, dict] = {}
    stopped: set[str] = set()                         # failed or skipped: no further process
    results.doc["interference"] = {"cpu": p.cpu, "probes": interference}
    try:
        if sentinels:
            medians, mhz = _sentinel(launch)
            results.doc["sentinels"] = {"start": medians, "start_mhz": mhz}
            results.save()
        results.doc["interference"]["noise_start"] = _noise(launch)
        width = len(str(total_runs))
        done = 0
        ran = dict.fromkeys(procs, 0)  # processes run so far, per probe

        def one_process(probe: registry.Probe, wanted: list[str], k: int, planned: int) -> None:
            """The k-th process of a probe: run, keep its raw output, merge, save."""
            nonlocal done, status
            done += 1
            ran[probe.name] += 1
            of = f" {k}/{planned}" if planned > 1 else ""
            head = f"{label}[{done:>{width}}/{max(total_runs, done)}] {(probe.name + of):<20}"
            say(head, end=" ", flush=True)
            args = _args(probe.presets[opts.preset], subst)
            args = _share_samples(args, procs[probe.name])
            if opts.timer != "tsc" and probe.parse is None and not probe.external:
                args = ["--timer", opts.timer, *args]  # probes of the common contract (DESIGN.md 2)
            argv = launch.argv(probe.binary, args, probe.external)
            if argv is None:
                why = f"{probe.binary} is not installed"
                results.doc.setdefault("skipped", []).append({"probe": probe.name, "why": why})
                results.save()
                stopped.add(probe.name)
                say(f"skipped: {why}")
                return
            t0 = time.monotonic()
            before = host.counters(p.cpu)
            if live:  # a terminal: a line that shows the probe's steps and the time left
                with StatusLine(head, probe.expect.get(opts.preset)) as line:
                    rc, stdout, stderr = launch.run(argv, probe.timeout, progress=line.update, awake=probe.awake)
            else:
                rc, stdout, stderr = launch.run(argv, probe.timeout, awake=probe.awake)
            elapsed = time.monotonic() - t0
            interference[probe.name] = shares(add(interference.get(probe.name), delta(before, host.counters(p.cpu))))
            raw_name = probe.name if procs[probe.name] == 1 else f"{probe.name}.p{k}"
            write_text_atomic(raw_dir / f"{raw_name}.out", stdout)
            if stderr:
                write_text_atomic(raw_dir / f"{raw_name}.err", stderr)
            for w in (ln for ln in stderr.splitlines() if ln.strip()):  # "name: warning: ..." as printed
                w = w if w.startswith(f"{probe.binary}: ") else f"{probe.binary}: {w}"
                if w not in conditions["probe_warnings"]:
                    conditions["probe_warnings"].append(w)
            if rc is None:
                results.add_failure(probe.name, f"timed out after {probe.timeout:.0f} s", stderr)
                ok = False
                say(f"TIMEOUT after {probe.timeout:.0f} s")
            else:
                ok = _collect(results, probe, wanted, rc, stdout, stderr, lines_seen,
                              per_process.setdefault(probe.name, []), interference[probe.name])
                for key in ("core_mhz", "core_width"):
                    pair = _core_pair(per_process[probe.name][-1] if per_process[probe.name] else [], key)
                    if ok and pair:
                        results.doc["interference"].setdefault(key, {}).setdefault(probe.name, []).append(pair)
                _derive_across(results, p.derived, lines_seen, derived_from)
                nref = sum(1 for r in results.doc.get("refused", []) if r["probe"] == probe.name)
                say(f"{len(wanted):2d} ids {elapsed:6.1f} s  {'ok' if ok else 'FAILED'}"
                    + (f" ({nref} refused here)" if nref else ""), flush=True)
            results.save(compact=True)
            if not ok:
                status = 1
                stopped.add(probe.name)

        for k in range(1, max(procs.values(), default=1) + 1):
            # each pass runs every probe that takes a k-th process, reshuffled when the run is seeded
            pass_order = order if k == 1 or order_seed is None else random.Random(order_seed + k).sample(order,
                                                                                                      len(order))
            for probe, wanted in pass_order:
                if procs[probe.name] >= k and probe.name not in stopped:
                    one_process(probe, wanted, k, procs[probe.name])
        # more processes for the probes whose figures are not yet known to +-PRECISION, while the
        # extra time stays within EXTRA_TIME of the run so far and each probe within MORE_PROCESSES x
        base_s = time.monotonic() - start
        more_until = time.monotonic() + EXTRA_TIME * base_s
        ended: dict[str, str] = {}
        while True:
            want = []
            for probe, wanted in order:
                if probe.name in stopped or procs[probe.name] < 2 or probe.name in ended:
                    continue
                if not _imprecise(results, wanted):
                    ended[probe.name] = "precision"
                elif ran[probe.name] >= MORE_PROCESSES * procs[probe.name]:
                    ended[probe.name] = "process limit"
                elif interference[probe.name].get("wall_s", 0) / max(ran[probe.name], 1) > CHEAP_PROCESS_S:
                    ended[probe.name] = "time budget"
                else:
                    want.append((probe, wanted))
            if not want:
                break
            if time.monotonic() >= more_until:
                ended.update((probe.name, "time budget") for probe, _ in want)
                break
            for probe, wanted in want:
                one_process(probe, wanted, ran[probe.name] + 1, ran[probe.name] + 1)
        _precision(results, order, procs, ran, ended)
        if p.tracing is not None:
            _kernel_paths(p, launch, order, procs, subst, results, raw_dir, stopped, say, label)
        results.doc["interference"]["noise_end"] = _noise(launch)
        if sentinels:
            s = results.doc["sentinels"]
            s["end"], s["end_mhz"] = _sentinel(launch)
            s.update(sentinel.drift(s["start"], s["end"], s["start_mhz"], s["end_mhz"]))
            if s["drifted"]:
                say(f"osmeter: {label}the sentinels moved while this run went on ({s['why']}): "
                    "the machine drifted inside the run")
        results.doc["complete"] = True
    except Interrupted:
        launch.kill()
        launch.clean_scratch()
        results.doc["interrupted"] = True
        say(f"\nosmeter: {label}interrupted; kept the probes that finished")
        raise
    except WriteError as e:
        launch.kill()
        write_failed = e
    finally:
        results.doc["conditions"]["wall_s"] = round(time.monotonic() - start, 3)
        results.doc["conditions"]["deschedule_check"] = _deschedule_check(results, host)
        try:
            host.set_affinity(affinity)
            if made_target:
                host.unlink(subst["{disk_target}"])  # the file osmeter made for the disk probes
        except RunError as e:  # a thin host lost: what was measured is still written below
            lost = e
        try:
            results.save()
            finish(results, out, quiet)
        except WriteError as e:
            write_failed = write_failed or e
        claim.release()
    if lost is not None:
        raise lost
    if write_failed:
        print(f"\nosmeter: error: {write_failed.strerror}; the run stopped, and {out}/{store.RESULTS} holds the "
              "probes written before", file=sys.stderr)
        return 1
    if results.doc["failures"]:
        say(f"osmeter: {label}{len(results.doc['failures'])} probe(s) failed; see 'failures' in results.json",
            file=sys.stderr)
        status = 1
    return status


def _kernel_paths(p: Plan, launch: Launcher, order, procs: dict[str, int], subst: dict, results: Results,
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
        extra = list(probe.traced({k: v.get("median") for k, v in by_id.items()}, p.opts.preset)) if probe.traced else []
        args = _share_samples(_args(probe.presets[p.opts.preset], subst), procs[probe.name]) + extra
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


PRECISION = 0.01      # a figure is known when its 95% interval is within +-1% of it
MORE_PROCESSES = 2    # a probe may run up to this many times its planned processes to get there,
EXTRA_TIME = 0.25     # ... within this share of the run's time so far,
CHEAP_PROCESS_S = 0.5  # ... if one of its processes takes at most this long (a long one is its own budget)


def _figure_interval(results: Results, m: dict) -> tuple[float, float, float] | None:
    """(figure, lo, hi) of a measurement's run figure, from its samples."""
    procs = store.kept_by_process(results.dir, m)
    if not procs or not any(x.size for x in procs):
        return None
    fig = run_figure(procs)
    lo, hi = figure_ci(procs)
    return fig, lo, hi


def _imprecise(results: Results, wanted: list[str]) -> bool:
    """Is any wanted id's figure known worse than +-PRECISION?"""
    by_id = {m["id"]: m for m in results.measurements}
    for mid in wanted:
        m = by_id.get(mid)
        got = _figure_interval(results, m) if m else None
        if got and got[0] > 0 and (got[2] - got[1]) / 2 / got[0] > PRECISION:
            return True
    return False


def _precision(results: Results, order, procs: dict[str, int], ran: dict[str, int], ended: dict[str, str]) -> None:
    """Each measurement's `precision`: its figure's 95% interval relative to
    it, the processes run, and what ended the sampling: "precision" (known
    to +-PRECISION), "time budget", "process limit", or "one process" (a
    probe that runs whole in one process)."""
    names = {probe.name for probe, _ in order}
    for m in results.measurements:
        if m.get("probe") not in names:
            continue
        got = _figure_interval(results, m)
        rel = (got[2] - got[1]) / 2 / got[0] if got and got[0] > 0 else None
        why = ended.get(m["probe"]) or ("one process" if procs.get(m["probe"], 1) < 2 else "precision")
        m["precision"] = {"ci95_rel": rel, "target": PRECISION, "processes": ran.get(m["probe"], 1), "ended_by": why}
    results.save()


def _share_samples(args: list[str], processes: int) -> list[str]:
    """A probe's --samples N shared among its processes: ceil(N / processes) each."""
    if processes <= 1 or "--samples" not in args:
        return args
    i = args.index("--samples")
    try:
        n = int(args[i + 1])
    except (IndexError, ValueError):
        return args
    return [*args[:i + 1], str(max(1, -(-n // processes))), *args[i + 2:]]


def _noise(launch: Launcher) -> dict | None:
    """A short noise measurement on the pinned CPU (interference.py)."""
    if not launch.has("sched_noise"):
        return None
    argv = launch.argv("sched_noise", list(NOISE_ARGS))
    rc, stdout, _ = launch.run(argv, timeout=30)
    if rc != 0:
        return None
    try:
        return noise_of(parse_probe_output(stdout))
    except ProbeOutputError:
        return None


def clean_stale(out: Path, opts: RunOptions) -> None:
    """What killed runs left beside `out` and in the file-system probes'
    directory (cleanup.py), removed and named."""
    from . import cleanup

    removed = cleanup.clean(out.parent, [d for d in (opts.fs_dir,) if d and not opts.on])  # (--on: the agent's)
    if os.geteuid() == 0:
        removed += ramdev.clean_stale()
    if removed:
        print(f"osmeter: removed what killed runs left: {', '.join(removed)}", file=sys.stderr)


def _deschedule_check(results: Results, host) -> dict:
    """How the probes saw deschedules inside their windows: through the
    perf_event mmap page (no system call) or, where perf_event_open was
    refused, getrusage around each window."""
    timers = [(m["id"], m["timer"]) for m in results.measurements if isinstance(m.get("timer"), dict)]
    seen = sorted({t.get("deschedule_check") for _, t in timers if t.get("deschedule_check")})
    out = {"methods": seen}
    reasons: dict[str, list[str]] = {}  # each probe's own reason, with the ids that had it
    for mid, t in timers:
        if t.get("deschedule_check") == "getrusage":
            reasons.setdefault(str(t.get("deschedule_check_why") or "no reason given"), []).append(mid)
    if reasons:
        paranoid = host.read_text("/proc/sys/kernel/perf_event_paranoid")
        out["getrusage"] = reasons
        out["why"] = "; ".join(
            f"{_ids_text(ids)}: {why}" + (f" (kernel.perf_event_paranoid = {paranoid}, uid {host.uid()})"
                                          if why.startswith("perf_event_open") else "")
            for why, ids in reasons.items()) + " (getrusage's switch counters, read outside each window)"
    return out


def _ids_text(ids: list[str]) -> str:
    return ", ".join(ids) if len(ids) <= 3 else f"{ids[0]} and {len(ids) - 1} more ids"


@contextlib.contextmanager
def start_run(opts: RunOptions, suffix: str = "", sentinels: bool = False):
    """The start a run, a campaign and ab share: the plan (checked before
    anything runs), the results directory (--out, else
    results/<host>-<UTC time><suffix>), what killed runs left beside it
    removed, and a word when SCHED_FIFO is not to be had. Yields (plan,
    directory); the measured machine's session (a thin host's agent) is
    closed when the block ends."""
    p = plan(opts, sentinels)
    try:
        out = opts.out or default_out(p.root, suffix)
        clean_stale(out, opts)
        if not p.fifo:
            print(f"osmeter: running without SCHED_FIFO: {p.sched['why_not_fifo']}", file=sys.stderr)
        yield p, out
    finally:
        p.host.close()


def run(opts: RunOptions) -> Done:
    """A single run: its start, the peer, execute."""
    from .osmnet import peer_session

    with start_run(opts) as (p, out):
        try:
            with peer_session(opts, p.bin_dir / "netpeer") as peer, tracing(p), no_halt(p), ram_devices(p):
                p.peer = peer
                if not opts.isolate:
                    return Done(execute(p, out), out)
                with isolate.isolated(p.cpu, after=lambda doc: _record_isolation(out, doc),
                                      stale=p.isolation_stale) as doc:
                    p.extra_conditions["isolation"] = doc
                    return Done(execute(p, out), out)
        finally:
            if "kernel_paths" in p.extra_conditions:
                _record_kernel_paths(out, p.extra_conditions["kernel_paths"])


@contextlib.contextmanager
def ram_devices(p: Plan):
    """--disk-ram and --fs-scratch for the block: the RAM-backed devices
    made (ramdev), named in the run's conditions, and removed after it."""
    with contextlib.ExitStack() as stack:
        if p.opts.disk_ram:
            size = machine.parse_size(p.opts.disk_size or ("1G" if p.opts.preset == "full" else "256M"))
            dev, backing = stack.enter_context(ramdev.ram_device(size, "disk"))
            p.ram_disk = dev
            p.extra_conditions["disk_ram"] = {"device": dev, "backing": str(backing), "bytes": size,
                                              "what": "a loop device over a file in /dev/shm, made and removed "
                                                      "by osmeter: the kernel's block path, not a disk"}
        if p.opts.fs_scratch:
            doc = stack.enter_context(ramdev.scratch_fs())
            p.scratch_fs = doc["mount"]
            p.extra_conditions["fs_scratch"] = {**doc, "what": "fs.meta's files on a fresh ext4 on a RAM-backed "
                                                               "loop device, made and removed by osmeter"}
        try:
            yield
        finally:
            p.ram_disk = p.scratch_fs = None


@contextlib.contextmanager
def no_halt(p: Plan):
    """--no-halt for the block: the CPUs kept out of halt (nohalt.kept_awake),
    its document in the run's conditions; refused, with the reason there
    and on stderr, where the probes run on another host."""
    if not p.opts.no_halt:
        yield None
        return
    if p.opts.on:
        why = f"--on {p.opts.on}: the CPUs to keep awake are that host's, and its agent does not hold them"
        print(f"osmeter: --no-halt refused: {why}", file=sys.stderr)
        p.extra_conditions["no_halt"] = {"requested": True, "refused": why}
        yield None
        return
    with nohalt.kept_awake(p.host.affinity()) as doc:
        p.extra_conditions["no_halt"] = doc
        if doc["method"] != "pm_qos":
            print(f"osmeter: --no-halt: {doc.get('pm_qos_refused') or doc.get('pm_qos_not_honoured')}; a busy loop "
                  "at SCHED_IDLE keeps each CPU awake instead", file=sys.stderr)
        yield doc


@contextlib.contextmanager
def tracing(p: Plan):
    """--kernel-paths for the block: a tracefs session in p.tracing, or,
    where this user or machine cannot trace, the reason in the run's
    conditions and a line on stderr, and the run goes on without it. Before
    and after, a snapshot of tracefs's settings: the run records whether it
    left them exactly as they were."""
    if not p.opts.kernel_paths:
        yield None
        return
    why = (f"--on {p.opts.on}: the traces are of this machine's kernel, not the host's" if p.opts.on
           else tracefs.refusal())
    if why:
        print(f"osmeter: --kernel-paths refused: {why}; running everything else", file=sys.stderr)
        p.extra_conditions["kernel_paths"] = {"requested": True, "refused": why}
        yield None
        return
    before = tracefs.snapshot()
    doc = p.extra_conditions["kernel_paths"] = {"requested": True, "tracefs_before": before}
    try:
        with tracefs.session() as s:
            doc.update(s.doc)
            p.tracing = s
            yield s
    finally:
        p.tracing = None
        doc["tracefs_unchanged"] = tracefs.snapshot() == before


def _record_kernel_paths(out: Path, doc: dict) -> None:
    """The tracing session's end (what it removed, whether tracefs is as it
    was) into the run's results.json."""
    path = out / store.RESULTS
    try:
        res = json.loads(path.read_text())
        res["conditions"].setdefault("kernel_paths", {}).update(doc)
        write_json_atomic(path, res)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"osmeter: error: cannot add the tracing session's end to {path}: {e}", file=sys.stderr)
    if doc.get("tracefs_unchanged") is False:
        print("osmeter: warning: tracefs's settings differ from before the run (see conditions.kernel_paths)",
              file=sys.stderr)


def _record_isolation(out: Path, doc: dict) -> None:
    """The isolation, now with what its restore did, into the run's
    results.json: only into this run's own (a refused --out is another's)."""
    path = out / store.RESULTS
    try:
        res = json.loads(path.read_text())
        mine = res["conditions"]["isolation"]
        if (mine["pid"], mine["started_utc"]) != (doc["pid"], doc["started_utc"]):
            return
        res["conditions"]["isolation"] = doc
        write_json_atomic(path, res)
    except (OSError, ValueError, KeyError, TypeError) as e:
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError):
            print(f"osmeter: error: cannot add the isolation's restore to {path}: {e.strerror or e}",
                  file=sys.stderr)


def _core_pair(lines: list[dict], key: str = "core_mhz") -> list[float] | None:
    """A probe process's core clock at its start and its end (MHz), or with
    key "core_width" its width (adds per cycle), from the first of its lines
    that carries one (bench/common/emit.c)."""
    for line in lines:
        c = line.get(key)
        if isinstance(c, dict) and all(isinstance(c.get(k), (int, float)) and c[k] > 0 for k in ("start", "end")):
            digits = 1 if key == "core_mhz" else 3
            return [round(float(c["start"]), digits), round(float(c["end"]), digits)]
    return None


def _collect(results: Results, probe: registry.Probe, wanted: list[str], rc: int, stdout: str, stderr: str,
             lines_seen: dict[str, dict], processes: list[list[dict]] | None = None,
             interference: dict | None = None) -> bool:
    """Adds what a process of a probe printed, merged with what its earlier
    processes of this run printed (`processes`, which it extends); records a
    failure and returns False when it exited non-zero, printed garbage, or
    left out an id it should print."""
    if rc != 0:
        why = f"exited with status {rc}" if rc > 0 else f"killed by signal {-rc}"
        results.add_failure(probe.name, why, stderr)
        return False
    processes = [] if processes is None else processes
    try:
        lines = probe.parse(stdout) if probe.parse else parse_probe_output(stdout)
        processes.append(lines)
        lines = merge_processes(processes, tuple(key for key, _ in probe.host_params), probe.merge_params)
        refused = [x for x in lines if "refused" in x]
        lines = [x for x in lines if "refused" not in x]
        if probe.derive is not None:
            lines += probe.derive(lines, results.doc["machine"])
        descriptions = {m.id: m.description for m in probe.measures}
        got = set()
        for r in refused:
            if r["id"] in wanted:
                results.add_refusal(r["id"], probe.name, r["refused"])
                got.add(r["id"])
        for line in lines:
            lines_seen[line["id"]] = line
            if line["id"] in wanted:
                if interference:
                    line = dict(line, interference=interference)
                results.add_line(line, probe.name, descriptions[line["id"]])
                got.add(line["id"])
    except (ProbeOutputError, ValueError, KeyError, TypeError) as e:
        results.add_failure(probe.name, f"bad output: {e}", stderr)
        return False
    missing = [i for i in wanted if i not in got]
    if missing:
        results.add_failure(probe.name, f"did not print {', '.join(missing)}", stderr)
        return False
    return True


def _derive_across(results: Results, derived: list[registry.Derived], lines_seen: dict[str, dict],
                   used: dict[str, list[dict]]) -> None:
    """Adds each derived figure once all its inputs have been measured, and
    derives it again whenever one of them has since gained a process (each
    process merges into a new line): a figure derived from an input's first
    process alone would be that one process's, in whatever mode it landed.
    `used` holds the input lines each figure was last derived from."""
    for d in derived:
        if not all(i in lines_seen for i in d.inputs):
            continue
        inputs = [lines_seen[i] for i in d.inputs]
        if d.measure.id in used and all(x is y for x, y in zip(inputs, used[d.measure.id])):
            continue
        used[d.measure.id] = inputs
        try:
            line = d.fn(lines_seen)
        except (ProbeOutputError, KeyError, ValueError, ZeroDivisionError) as e:
            why = f"cannot derive: {e}"
            if not any(f["probe"] == d.measure.id and f["error"] == why for f in results.doc["failures"]):
                results.add_failure(d.measure.id, why)
            continue
        results.add_line(line, "derived", d.measure.description)
        # the figure stands now: a failure to derive it from an earlier process of an input is past
        results.doc["failures"] = [f for f in results.doc["failures"]
                                   if not (f["probe"] == d.measure.id and f["error"].startswith("cannot derive: "))]


# ---------------------------------------------------------------- finish

def finish(results: Results, out: Path, quiet: bool = False) -> None:
    table = summary_table(results.doc)
    write_text_atomic(out / store.SUMMARY, table + "\n")
    write_text_atomic(out / store.CSV, to_csv(results.doc))
    if quiet:
        return
    print()
    print(table)
    dropped = [(m["id"], m["dropped_disturbed"], m["samples_total"]) for m in results.measurements
               if m.get("dropped_disturbed")]
    if dropped:
        print("disturbed samples dropped (a migration or deschedule inside the window): "
              + ", ".join(f"{i} {d}/{n}" for i, d, n in dropped))
    why = (results.doc["conditions"].get("deschedule_check") or {}).get("why")
    if why:
        print(f"note: deschedules seen through getrusage, not the perf page: {why}")
    for r in results.doc.get("refused", []):
        print(f"refused: {r['id']}: {r['why']}")
    # the same warning from several probes (a non-invariant TSC, say) once
    warnings = dict.fromkeys(w.split("warning: ", 1)[-1] for w in results.doc["conditions"]["probe_warnings"])
    for w in warnings:
        print(f"warning: {w}")
    wall = results.doc["conditions"].get("wall_s")
    print(f"\nosmeter: {len(results.measurements)} measurements in {wall} s; results in {out}/{store.RESULTS}")
