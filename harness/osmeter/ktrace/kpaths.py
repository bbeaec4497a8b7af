"""`osmeter run --kernel-paths`: where a sample's time goes in the kernel.

After a probe's timed processes, the runner runs it once more, traced
(traced_pass): on its pinned CPU, under its scheduling, with the trace
instances of tracefs.py taking the probe processes' events on any CPU, and
the probe writing a marker after each sample (bench/common/trace.c: which
thread, which ticks, how many operations). The timed figures never come
from that run. Each sample's time is then split along its thread's
timeline (trace.py) into
  user, each system call by name, page faults, hard interrupts by irq,
  softirqs by vector, and time off the CPU: preempted, waiting (asleep,
  by what woke it), the wake-up itself;
per operation, averaged over the traced run's kept samples (means, so the
components add up to the total). A disk probe (iogen) marks its measured
window and report intervals instead; its breakdown is the I/O thread's time
per I/O in each interval, its waiting is the device's (asleep until an I/O
completed: the device's service and any queueing or throttling below the
system call), and the block layer's own service time (block_rq_issue to
block_rq_complete) is given beside it. A measure that names a kernel timer
(Measure.ktimer, ktimers.py) also gets that path's virtual time per
operation: a measured software overhead.

results.json gets `kernel_paths` per id (kernel_paths_entry's keys), the
per-sample components in kpaths/<id>.npz, the traces in raw/ and the
kernel timers of every traced probe in ktimers.txt.
"""
from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import numpy as np

from osmeter.ktrace import ktimers, tracefs
from osmeter.ktrace.trace import GROUPS, KERNEL_GROUPS, OFF_CPU_GROUPS, Timelines, group, parse, syscall_names
from osmeter.results import store
from osmeter.results.writer import line_values, safe_name, write_atomic

UNACCOUNTED_LIMIT = 0.05  # a sample whose time the trace cannot place beyond this share is dropped


def _marker_fields(text: str) -> list[str]:
    return text.strip().split()


def markers(tl: Timelines) -> tuple[dict[str, dict[int, tuple]], list[tuple]]:
    """The probe's markers: per id, per sample index, (tid, t0, t1, value,
    ops, disturbed); and iogen's (tid, t0, t1, interval ticks, ticks/s)."""
    samples: dict[str, dict[int, tuple]] = {}
    io = []
    for _, _, text in tl.markers:
        f = _marker_fields(text)
        try:
            if f[:1] == ["osm_sample"] and len(f) == 9:
                samples.setdefault(f[1], {})[int(f[2])] = (int(f[3]), int(f[4]), int(f[5]), float(f[6]), int(f[7]),
                                                           f[8] == "1")
            elif f[:1] == ["osm_io"] and len(f) == 6:
                io.append((int(f[1]), int(f[2]), int(f[3]), int(f[4]), float(f[5])))
        except ValueError:
            continue
    return samples, io


def _coverage_end(tl: Timelines, stats: dict[str, dict[int, dict[str, int]]]) -> int | None:
    """With a full buffer the kernel drops the newest events (overwrite is
    off): a CPU buffer that dropped any is complete only up to its last
    event. stats: per instance ("task", "cpu"), per CPU."""
    ends = [tl.cpu_last.get(kind, {}).get(cpu, 0) for kind, per in stats.items() for cpu, s in per.items()
            if s.get("dropped_events", 0) or s.get("overrun", 0)]
    return min(ends) if ends else None


def _relabel(label: str, wait: str) -> str:
    if wait and label.startswith("waiting: "):
        return f"{wait}: {label[len('waiting: '):]}"
    return label


def breakdown(tl: Timelines, spans: list[tuple], hz: float, wait: str = "") -> dict | None:
    """Per-operation components of samples. spans: (index, [(tid, t0, t1)],
    ops, figure in ns or None). Returns the summary and the per-sample
    matrix, or None without a sample."""
    rows, windows, figures, idx = [], [], [], []
    for index, parts, ops, fig in spans:
        got: dict[str, float] = {}
        win = 0
        for tid, t0, t1 in parts:
            win += t1 - t0
            for label, ticks in tl.named(tl.partition(tid, t0, t1)).items():
                lab = _relabel(label, wait)
                got[lab] = got.get(lab, 0.0) + ticks
        scale = 1e9 / hz / max(ops, 1e-12)
        rows.append({k: v * scale for k, v in got.items()})
        windows.append(win * scale)
        figures.append(np.nan if fig is None else fig)
        idx.append(index)
    if not rows:
        return None
    labels = sorted({k for r in rows for k in r}, key=lambda s: (GROUPS.index(group(s)), s))
    mat = np.array([[r.get(k, 0.0) for k in labels] for r in rows], dtype=float)
    means = mat.mean(axis=0)
    order = sorted(range(len(labels)), key=lambda i: (GROUPS.index(group(labels[i])), -means[i]))
    labels = [labels[i] for i in order]
    mat, means = mat[:, order], means[order]
    total = float(np.mean(windows))
    comp = {k: float(v) for k, v in zip(labels, means)}
    groups = {g: float(sum(v for k, v in comp.items() if group(k) == g)) for g in GROUPS}
    groups = {g: v for g, v in groups.items() if v > 0}
    known = total - groups.get("unknown", 0.0)
    figs = np.asarray(figures, float)
    return {
        "summary": {
            "samples": len(rows),
            "total_ns": total,
            "components": comp,
            "groups": groups,
            "shares": {g: v / total for g, v in groups.items()} if total > 0 else {},
            "kernel_share": sum(groups.get(g, 0.0) for g in KERNEL_GROUPS) / total if total > 0 else None,
            "off_cpu_share": sum(groups.get(g, 0.0) for g in OFF_CPU_GROUPS) / total if total > 0 else None,
            "components_sum_ns": known,
            "figure_ns": float(np.nanmean(figs)) if np.isfinite(figs).any() else None,
        },
        "labels": labels, "matrix": mat, "window_ns": np.asarray(windows), "figure_ns": figs,
        "index": np.asarray(idx),
    }


def _keep_span(t1: int, cover: int | None) -> bool:
    return cover is None or t1 <= cover


def traced_ids(probe, wanted, measured) -> list[str]:
    """The ids of a probe a traced run can break down: its single times
    (unit ns) that were asked for and measured. A rate, a size or a curve
    has no per-operation span, so a probe with none of these is not run
    traced at all."""
    return [m.id for m in probe.measures if m.unit == "ns" and not m.curve and m.id in wanted and m.id in measured]


def analyze(tl: Timelines, lines: list[dict], probe, stats: dict, device: int | None = None) -> dict[str, dict]:
    """kernel_paths entries (with their per-sample matrices under "_arrays")
    for each time id of a traced probe's lines."""
    samples, io = markers(tl)
    cover = _coverage_end(tl, stats)
    wait = getattr(probe, "kernel_wait", "")
    ktimer_of = {m.id: m.ktimer for m in probe.measures if getattr(m, "ktimer", "")}
    by_id = {ln["id"]: ln for ln in lines if "refused" not in ln}
    out: dict[str, dict] = {}
    for mid, line in by_id.items():
        if mid not in samples or line.get("unit") not in ("cycles", "ns"):
            continue
        values, bad, unit = line_values(line)
        hz = float(line.get("tsc_hz") or 0)
        if line["unit"] == "ns" or hz <= 0:
            continue  # a clock_gettime probe: its stamps are not the trace clock's ticks
        # the time the probe's stamps span per operation: its figure and what it subtracted
        ovh = line.get("overhead_subtracted") if isinstance(line.get("overhead_subtracted"), (int, float)) else 0.0
        ovh_ns = float(ovh) * 1e9 / hz if line["unit"] == "cycles" else float(ovh)
        spans, dropped = [], {"disturbed": 0, "no_marker": 0, "trace_incomplete": 0, "unaccounted": 0}
        for i in range(values.size):
            mk = samples[mid].get(i)
            if mk is None:
                dropped["no_marker"] += 1
                continue
            tid, t0, t1, _, ops, dist = mk
            if bad[i] or dist or not np.isfinite(values[i]):
                dropped["disturbed"] += 1
                continue
            if not _keep_span(t1, cover) or t0 < tl.first_ts:
                dropped["trace_incomplete"] += 1
                continue
            spans.append((i, [(tid, t0, t1)], ops or 1, float(values[i]) + ovh_ns if unit == "ns" else None))
        got = breakdown(tl, spans, hz, wait)
        if got is None:
            continue
        got = _drop_unaccounted(tl, got, spans, hz, wait, dropped)
        if got is None:
            continue
        entry = dict(got["summary"], per="operation", dropped=dropped,
                     ops_per_sample=float(np.median([s[2] for s in spans])))
        if mid in ktimer_of:
            kept = set(got["index"].tolist())
            entry["software"] = ktimers.software_ns(
                tl, ktimer_of[mid], [(s[1][0][0], s[1][0][1], s[1][0][2], s[2]) for s in spans if s[0] in kept], hz)
        entry["_arrays"] = got
        out[mid] = entry
    if io:
        out.update(_io_paths(tl, io, by_id, probe, cover, device, ktimer_of))
    return out


def _drop_unaccounted(tl, got, spans, hz, wait, dropped):
    """Samples whose time the trace could not place (beyond
    UNACCOUNTED_LIMIT of it unknown) are left out, and counted."""
    labels, mat, win = got["labels"], got["matrix"], got["window_ns"]
    unknown = mat[:, [k for k, lab in enumerate(labels) if group(lab) == "unknown"]].sum(axis=1)
    ok = unknown <= UNACCOUNTED_LIMIT * np.maximum(win, 1e-12)
    if ok.all():
        return got
    dropped["unaccounted"] += int((~ok).sum())
    keep = [s for s, k in zip(spans, ok) if k]
    return breakdown(tl, keep, hz, wait) if keep else None


def _io_paths(tl: Timelines, io: list[tuple], by_id: dict, probe, cover, device, ktimer_of) -> dict[str, dict]:
    """iogen's I/O thread time per I/O in each report interval, for its
    latency id; the block requests of the target's device beside."""
    lat = next((i for i in by_id if i.endswith(".lat_mean")), None)
    iops = next((i for i in by_id if i.endswith(".iops")), None)
    if lat is None or iops is None:
        return {}
    rates, _, _ = line_values(by_id[iops])
    lats, _, _ = line_values(by_id[lat])
    tids = sorted({m[0] for m in io})
    t0, t1 = min(m[1] for m in io), max(m[2] for m in io)
    ival, hz = io[0][3], io[0][4]
    if ival <= 0 or hz <= 0:
        return {}
    spans, dropped = [], {"disturbed": 0, "no_marker": 0, "trace_incomplete": 0, "unaccounted": 0}
    for k in range(rates.size):
        a, b = t0 + k * ival, min(t0 + (k + 1) * ival, t1)
        if b <= a or not np.isfinite(rates[k]) or rates[k] <= 0:
            continue
        if not _keep_span(b, cover):
            dropped["trace_incomplete"] += 1
            continue
        ios = rates[k] * (b - a) / hz
        spans.append((k, [(tid, a, b) for tid in tids], ios, float(lats[k]) if k < lats.size else None))
    got = breakdown(tl, spans, hz, getattr(probe, "kernel_wait", "") or "device")
    if got is None:
        return {}
    entry = dict(got["summary"], per="I/O", dropped=dropped, ops_per_sample=float(np.median([s[2] for s in spans])),
                 scale=("the I/O threads' time per I/O (1/IOPS per thread): at queue depth Q the mean latency is "
                        "about Q times it (Little's law), in the same shares"))
    reqs = [(a, b) for dev, a, b in tl.requests if (device is None or dev == device) and t0 <= a < t1]
    if reqs:
        d = np.array([b - a for a, b in reqs], dtype=float) * 1e9 / hz
        entry["device"] = {"requests": len(reqs), "service_ns_mean": float(d.mean()),
                           "service_ns_median": float(np.median(d)),
                           "what": "block_rq_issue to block_rq_complete of the target's device, per request"}
    spec = ktimer_of.get(lat)
    if spec:
        entry["software"] = ktimers.software_ns(tl, spec, [(tid, s[1][0][1], s[1][0][2], s[2] / len(tids))
                                                            for s in spans for tid in tids], hz)
    entry["_arrays"] = got
    return {lat: entry}


# --------------------------------------------------------------- the traced run

def block_device(path: str) -> int | None:
    """The kernel dev_t (major << 20 | minor, as block tracepoints print it)
    of the whole disk that holds path (a block device, or a file's)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    import stat as st_

    dev = st.st_rdev if st_.S_ISBLK(st.st_mode) else st.st_dev
    major, minor = os.major(dev), os.minor(dev)
    sysdir = Path(f"/sys/dev/block/{major}:{minor}")
    if (sysdir / "partition").exists():
        try:
            major, minor = map(int, (sysdir.resolve().parent / "dev").read_text().split(":"))
        except (OSError, ValueError):
            pass
    return (major << 20) | minor


def traced_pass(session: tracefs.Session, launch, argv: list[str], timeout: float, raw_dir: Path, name: str,
                root: Path):
    """Runs a probe once with tracing on. Returns (rc, stdout, stderr,
    Timelines, instance stats, what could not be traced, seconds)."""
    task = session.new_instance("task")
    cpu = None
    try:
        cpu = session.new_instance("cpu")
        for inst, kb in ((task, tracefs.TASK_BUFFER_KB), (cpu, tracefs.CPU_BUFFER_KB)):
            inst.write("buffer_size_kb", str(kb))
            inst.write("options/overwrite", "0")
        task.write("options/event-fork", "1")
        task.write("set_event_pid", "")
        missing = task.enable(tracefs.TASK_EVENTS) + cpu.enable(tracefs.CPU_EVENTS + tracefs.BLOCK_EVENTS)
        required = [e for e in tracefs.REQUIRED if e in missing]
        if required:
            raise OSError(f"this kernel lacks the events {', '.join(required)}")
        pid_file = task.path / "set_event_pid"

        def follow_me():  # in the probe's process, before it runs the probe: trace it and its children
            with open(pid_file, "w") as f:
                f.write(str(os.getpid()))

        t = time.monotonic()
        rc, out, err = launch.run(argv, timeout, env={"OSM_TRACE_MARKER": str(task.marker)}, before_exec=follow_me)
        secs = time.monotonic() - t
        task.stop()
        cpu.stop()
        stats = {"task": task.stats(), "cpu": cpu.stats()}
        texts = [task.trace_text(), cpu.trace_text()]
    except BaseException:
        launch.kill()  # an interruption: the probe goes first, so its instance can go
        raise
    finally:
        session.remove(task)
        if cpu is not None:
            session.remove(cpu)
    for kind, text in zip(("task", "cpu"), texts):
        with gzip.open(raw_dir / store.trace_file(name, kind), "wt", compresslevel=1) as f:
            f.write(text)
    tl = timelines(texts[0], texts[1], root)
    return rc, out, err, tl, stats, [m for m in missing if m not in tracefs.REQUIRED], secs


def timelines(task_text: str, cpu_text: str, root: Path) -> Timelines:
    """The timelines of a traced run's two instances; system calls named
    from the build's table (build/syscalls.tsv under root)."""
    return Timelines(parse(task_text), parse(cpu_text), syscall_names(root / "build" / "syscalls.tsv"))


def load_timelines(raw_dir: Path, name: str, root: Path) -> Timelines | None:
    """A traced probe's timelines from the traces a run kept."""
    from osmeter.ktrace.trace import read_text

    t, c = raw_dir / store.trace_file(name, "task"), raw_dir / store.trace_file(name, "cpu")
    if not t.exists():
        return None
    return timelines(read_text(t), read_text(c) if c.exists() else "", root)


def save_arrays(results_dir: Path, mid: str, got: dict) -> str:
    """The per-sample components of an id (ns per operation) as kpaths/<id>.npz."""
    (results_dir / store.KPATHS).mkdir(exist_ok=True)
    name = store.kpaths_file(safe_name(mid))
    write_atomic(results_dir / name, lambda f: np.savez_compressed(
        f, labels=np.asarray(got["labels"]), values=got["matrix"], window_ns=got["window_ns"],
        figure_ns=got["figure_ns"], index=got["index"]), binary=True)
    return name

