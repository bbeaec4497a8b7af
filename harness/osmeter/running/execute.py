"""One run into a results directory: each probe's processes pinned,
scheduled, with a timeout, pass after pass (reshuffled when the run is
seeded); results.json rewritten atomically after every process, so an
interrupted or killed run leaves a valid file. The sentinels and the noise
measurement at the start and the end; the passes after the timed ones are
precision.py's (more processes) and kpass.py's (kernel paths)."""
from __future__ import annotations

import datetime as dt
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from osmeter.core.errors import Interrupted, RunError
from osmeter.host.interference import NOISE_ARGS, noise_of
from osmeter.host.launch import Launcher
from osmeter.probes import registry
from osmeter.results import store
from osmeter.results.readings import add, delta, shares
from osmeter.results.writer import (ProbeOutputError, Results, ResultsDir, WriteError, line_values, parse_probe_output,
                                    write_text_atomic)
from osmeter.running import sentinel
from osmeter.running.collect import collect_process, derive_across
from osmeter.running.finish import deschedule_check, finish
from osmeter.running.kpass import kernel_path_pass
from osmeter.running.plan import APP_DIR, Plan, placeholders, probe_args, share_samples
from osmeter.running.precision import CHEAP_PROCESS_S, EXTRA_TIME, MORE_PROCESSES, imprecise, record_precision
from osmeter.running.progress import StatusLine


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
    return Execution(p, out, order_seed, sentinels, label, quiet).run()


class Execution:
    """One run's state while it lasts: the results, the probes' order, the
    processes run and planned per probe, what stopped, the interference
    readings, and every line seen (the inputs of derived figures)."""

    def __init__(self, p: Plan, out: Path, order_seed: int | None, sentinels: bool, label: str, quiet: bool):
        self.p, self.out, self.order_seed, self.sentinels, self.label = p, out, order_seed, sentinels, label
        self.opts, self.host = p.opts, p.host
        self.claim = ResultsDir(out)
        self.subst = placeholders(p, out)
        self.affinity = self.host.affinity()
        self.order = list(p.selection)
        if order_seed is not None:
            random.Random(order_seed).shuffle(self.order)
        self.conditions = self._conditions()
        # a --disk-target that does not exist yet is made by the disk probes: osmeter removes it after
        self.made_target = not p.ram_disk and (self.opts.disk_target is None
                                               or not self.host.exists(self.subst["{disk_target}"]))
        self.conditions["disk_target"]["made_by_osmeter"] = self.made_target  # (a RAM device: ramdev's)
        self.say = (lambda *a, **k: None) if quiet else print
        self.live = not quiet and sys.stdout.isatty()
        self.quiet = quiet
        self.status = 0
        self.lines_seen: dict[str, dict] = {}  # every line of every probe so far: the inputs of derived figures
        self.derived_from: dict[str, list[dict]] = {}  # the input lines each derived figure was last made from
        self.procs = {probe.name: probe.processes_in(self.opts.preset) for probe, _ in self.order}
        self.total_runs = sum(self.procs.values())
        self.per_process: dict[str, list[list[dict]]] = {}  # each probe's parsed lines, one list per process
        self.interference: dict[str, dict] = {}
        self.stopped: set[str] = set()                       # failed or skipped: no further process
        self.done = 0
        self.ran = dict.fromkeys(self.procs, 0)  # processes run so far, per probe

    def _conditions(self) -> dict:
        p, opts, subst = self.p, self.opts, self.subst
        conditions = self.host.conditions()
        conditions["timer_requested"] = opts.timer
        conditions.update({
            "pinned_cpu": p.cpu,
            "harness_cpus": sorted(self.affinity - {p.cpu}) or [p.cpu],
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
        if self.order_seed is not None:
            conditions["order_seed"] = self.order_seed
        conditions["order"] = [probe.name for probe, _ in self.order]
        return conditions

    def run(self) -> int:
        out, label, say = self.out, self.label, self.say
        write_failed: WriteError | None = None
        lost: RunError | None = None
        results = self.results = Results(out, self.host.machine(), self.conditions)
        results.save()
        self.start = time.monotonic()
        launch = None
        # from the first results.json on, an interrupt is recorded and everything is put back (_end)
        try:
            launch = self._prepare()
            self._passes()
            results.doc["complete"] = True
        except Interrupted:
            if launch is not None:
                launch.kill()
                launch.clean_scratch()
            results.doc["interrupted"] = True
            say(f"\nosmeter: {label}interrupted; kept the probes that finished")
            raise
        except WriteError as e:
            if launch is not None:
                launch.kill()
            write_failed = e
        finally:
            lost, write_failed = self._end(write_failed)
        if lost is not None:
            raise lost
        if write_failed:
            print(f"\nosmeter: error: {write_failed.strerror}; the run stopped, and {out}/{store.RESULTS} holds the "
                  "probes written before", file=sys.stderr)
            return 1
        if results.doc["failures"]:
            say(f"osmeter: {label}{len(results.doc['failures'])} probe(s) failed; see 'failures' in results.json",
                file=sys.stderr)
            self.status = 1
        return self.status

    def _prepare(self) -> Launcher:
        """The run's directories, the launcher on the measuring CPU, the
        harness moved off it, the run announced: the probes' launcher."""
        p, out, results = self.p, self.out, self.results
        raw_dir = out / store.RAW
        raw_dir.mkdir(exist_ok=True)
        self.raw_dir = raw_dir
        if self.opts.app_trace:  # the replay's files (its prepare makes them again before each replay)
            if self.opts.app_dir:  # a shared directory: a name of the replay's own, nobody can guess it
                self.subst["{app_dir}"] = tempfile.mkdtemp(prefix=f"osmeter-{APP_DIR}.",
                                                           dir=Path(self.opts.app_dir).resolve())
            else:
                Path(self.subst["{app_dir}"]).mkdir(exist_ok=True)
        scratch_dirs = list(dict.fromkeys([self.host.scratch(out), self.subst["{fs_dir}"], self.subst["{meta_dir}"]]))
        launch = self.launch = self.host.launcher(p.cpu, p.fifo, scratch_dirs)
        # The harness (on a thin host: its agent) stays off the measuring CPU while the run lasts.
        others = self.affinity - {p.cpu}
        if others:
            self.host.set_affinity(others)
        self._announce()
        results.doc["interference"] = {"cpu": p.cpu, "probes": self.interference}
        return launch

    def _announce(self) -> None:
        opts, label = self.opts, self.label
        expected = sum(probe.expect.get(opts.preset, 0.5) for probe, _ in self.order)
        self.say(f"osmeter: {label}{len(self.order)} probes, preset {opts.preset}, pinned to CPU {self.p.cpu}, "
                 f"{self.p.sched['policy']}; writing {self.out}")
        if expected >= 60:
            self.say(f"osmeter: {label}expected wall time about {expected / 60:.0f} min (the probes' budgets, "
                     "measured on a 2-vCPU guest; a slower disk or a larger file cache takes longer)")

    def _passes(self) -> None:
        """The sentinels and the noise at the start, every probe's planned
        processes pass by pass, more for precision, the kernel paths, and
        the noise and the sentinels at the end."""
        results, launch, order, procs = self.results, self.launch, self.order, self.procs
        if self.sentinels:
            medians, mhz = _sentinel(launch)
            results.doc["sentinels"] = {"start": medians, "start_mhz": mhz}
            results.save()
        results.doc["interference"]["noise_start"] = _noise(launch)
        for k in range(1, max(procs.values(), default=1) + 1):
            # each pass runs every probe that takes a k-th process, reshuffled when the run is seeded
            seed = self.order_seed
            pass_order = order if k == 1 or seed is None else random.Random(seed + k).sample(order, len(order))
            for probe, wanted in pass_order:
                if procs[probe.name] >= k and probe.name not in self.stopped:
                    self.process(probe, wanted, k, procs[probe.name])
        ended = self._more_processes()
        record_precision(results, order, procs, self.ran, ended)
        if self.p.tracing is not None:
            kernel_path_pass(self.p, launch, order, procs, self.subst, results, self.raw_dir, self.stopped, self.say,
                             self.label)
        results.doc["interference"]["noise_end"] = _noise(launch)
        if self.sentinels:
            s = results.doc["sentinels"]
            s["end"], s["end_mhz"] = _sentinel(launch)
            s.update(sentinel.drift(s["start"], s["end"], s["start_mhz"], s["end_mhz"]))
            if s["drifted"]:
                self.say(f"osmeter: {self.label}the sentinels moved while this run went on ({s['why']}): "
                         "the machine drifted inside the run")

    def _more_processes(self) -> dict[str, str]:
        """More processes for the probes whose figures are not yet known to
        +-PRECISION, while the extra time stays within EXTRA_TIME of the run
        so far and each probe within MORE_PROCESSES x; returns what ended
        each probe's sampling."""
        base_s = time.monotonic() - self.start
        more_until = time.monotonic() + EXTRA_TIME * base_s
        ended: dict[str, str] = {}
        ran, procs = self.ran, self.procs
        while True:
            want = []
            for probe, wanted in self.order:
                if probe.name in self.stopped or procs[probe.name] < 2 or probe.name in ended:
                    continue
                if not imprecise(self.results, wanted):
                    ended[probe.name] = "precision"
                elif ran[probe.name] >= MORE_PROCESSES * procs[probe.name]:
                    ended[probe.name] = "process limit"
                elif self.interference[probe.name].get("wall_s", 0) / max(ran[probe.name], 1) > CHEAP_PROCESS_S:
                    ended[probe.name] = "time budget"
                else:
                    want.append((probe, wanted))
            if not want:
                return ended
            if time.monotonic() >= more_until:
                ended.update((probe.name, "time budget") for probe, _ in want)
                return ended
            for probe, wanted in want:
                self.process(probe, wanted, ran[probe.name] + 1, ran[probe.name] + 1)

    def process(self, probe: registry.Probe, wanted: list[str], k: int, planned: int) -> None:
        """The k-th process of a probe: run, keep its raw output, merge, save."""
        opts, results, launch = self.opts, self.results, self.launch
        self.done += 1
        self.ran[probe.name] += 1
        of = f" {k}/{planned}" if planned > 1 else ""
        width = len(str(self.total_runs))
        head = f"{self.label}[{self.done:>{width}}/{max(self.total_runs, self.done)}] {(probe.name + of):<20}"
        self.say(head, end=" ", flush=True)
        args = probe_args(probe.presets[opts.preset], self.subst)
        args = share_samples(args, self.procs[probe.name])
        if opts.timer != "tsc" and probe.parse is None and not probe.external:
            args = ["--timer", opts.timer, *args]  # probes of the common contract (DESIGN.md 2)
        argv = launch.argv(probe.binary, args, probe.external, probe.pinned)
        if argv is None:
            why = f"{probe.binary} is not installed"
            results.doc.setdefault("skipped", []).append({"probe": probe.name, "why": why})
            results.save()
            self.stopped.add(probe.name)
            self.say(f"skipped: {why}")
            return
        t0 = time.monotonic()
        before = self.host.counters(self.p.cpu)
        if self.live:  # a terminal: a line that shows the probe's steps and the time left
            with StatusLine(head, probe.expect.get(opts.preset)) as line:
                rc, stdout, stderr = launch.run(argv, probe.timeout, progress=line.update, awake=probe.awake,
                                                pinned=probe.pinned)
        else:
            rc, stdout, stderr = launch.run(argv, probe.timeout, awake=probe.awake, pinned=probe.pinned)
        elapsed = time.monotonic() - t0
        self.interference[probe.name] = shares(add(self.interference.get(probe.name),
                                                   delta(before, self.host.counters(self.p.cpu))))
        self._keep_output(probe, k, stdout, stderr)
        ok = self._take(probe, wanted, rc, stdout, stderr, elapsed)
        results.save(compact=True)
        if not ok:
            self.status = 1
            self.stopped.add(probe.name)

    def _keep_output(self, probe: registry.Probe, k: int, stdout: str, stderr: str) -> None:
        """A process's raw output beside the results, its warnings in the conditions."""
        raw_name = probe.name if self.procs[probe.name] == 1 else f"{probe.name}.p{k}"
        write_text_atomic(self.raw_dir / f"{raw_name}.out", stdout)
        if stderr:
            write_text_atomic(self.raw_dir / f"{raw_name}.err", stderr)
        for w in (ln for ln in stderr.splitlines() if ln.strip()):  # "name: warning: ..." as printed
            w = w if w.startswith(f"{probe.binary}: ") else f"{probe.binary}: {w}"
            if w not in self.conditions["probe_warnings"]:
                self.conditions["probe_warnings"].append(w)

    def _take(self, probe: registry.Probe, wanted: list[str], rc: int | None, stdout: str, stderr: str,
              elapsed: float) -> bool:
        """What a process printed, into the results (collect.py), with its
        core's clock and width; False when it timed out or failed."""
        results = self.results
        if rc is None:
            results.add_failure(probe.name, f"timed out after {probe.timeout:.0f} s", stderr)
            self.say(f"TIMEOUT after {probe.timeout:.0f} s")
            return False
        per_process = self.per_process
        ok = collect_process(results, probe, wanted, rc, stdout, stderr, self.lines_seen,
                             per_process.setdefault(probe.name, []), self.interference[probe.name])
        for key in ("core_mhz", "core_width"):
            pair = _core_pair(per_process[probe.name][-1] if per_process[probe.name] else [], key)
            if ok and pair:
                results.doc["interference"].setdefault(key, {}).setdefault(probe.name, []).append(pair)
        derive_across(results, self.p.derived, self.lines_seen, self.derived_from)
        nref = sum(1 for r in results.doc.get("refused", []) if r["probe"] == probe.name)
        self.say(f"{len(wanted):2d} ids {elapsed:6.1f} s  {'ok' if ok else 'FAILED'}"
                 + (f" ({nref} refused here)" if nref else ""), flush=True)
        return ok

    def _end(self, write_failed: WriteError | None) -> tuple[RunError | None, WriteError | None]:
        """Whatever happened: the wall time and the deschedule check written,
        the harness's CPUs and the disk target put back, the summary
        written, the claim released."""
        results, host, lost = self.results, self.host, None
        results.doc["conditions"]["wall_s"] = round(time.monotonic() - self.start, 3)
        results.doc["conditions"]["deschedule_check"] = deschedule_check(results, host)
        try:
            host.set_affinity(self.affinity)
            if self.made_target:
                host.unlink(self.subst["{disk_target}"])  # the file osmeter made for the disk probes
            if self.opts.app_trace:
                shutil.rmtree(self.subst["{app_dir}"], ignore_errors=True)
        except RunError as e:  # a thin host lost: what was measured is still written below
            lost = e
        try:
            results.save()
            finish(results, self.out, self.quiet)
        except WriteError as e:
            write_failed = write_failed or e
        self.claim.release()
        return lost, write_failed


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
