"""Disk: iogen's Iometer-model workloads below the page cache (the
sequential read also binned by offset: SPEK's ZCAV), a queue-depth sweep
and the size x queue depth matrix. iogen prints its own JSON object per
run; iogen_lines and size_qd_lines turn them into probe lines."""
from __future__ import annotations

import json

import numpy as np

from osmeter.core import hist
from osmeter.core.stats import tail_of
from osmeter.probes.model import Area, Probe, measure

AREA = Area("disk", "Disk", 30)

METHOD = (
    "iogen drives the target below the page cache (O_DIRECT) with io_uring: one ring per worker "
    "sized to its queue depth, the file and the request buffers registered, up to four requests "
    "submitted per io_uring_enter, the last of which also waits for the first completion. Each request "
    "picks an access-specification line by its % of accesses, then read or write and random or "
    "sequential by that line's own percentages (Iometer's model); sequential requests share the "
    "worker's position, advanced atomically. Latency is submission to reaping, kept in a "
    "log-linear histogram (1.6% resolution). After a ramp-up that is not recorded, the run is "
    "cut into report intervals: each interval is one trial, so the figures' spread is across "
    "intervals; where some interval completed nothing (a throttle's bursts and gaps), the rates' "
    "trials are windows of the fewest intervals in which each holds a completion, so the figure is "
    "the rate the device kept, not a median of 0 (an interval without a completion has no latency "
    "trial). The target is a file in the results directory (filled with data, never sparse), "
    "or --disk-target. The generator's CPU time, system calls and context switches per I/O, "
    "and a system prober's view of /proc (CPU, interrupts, the device's utilization and queue) "
    "are kept in the parameters and in raw/."
)

RUNS = {  # workload: (quick qd or None, full qd)
    "4k-random-read": (32, 32),
    "4k-random-write": (None, 32),
    "1m-seq-read": (4, 4),
    "1m-seq-write": (None, 4),
    "database": (16, 16),
    "file-server": (None, 16),
    "web-server": (None, 16),
    "workstation": (None, 16),
}


def iogen_objects(stdout: str) -> list[dict]:
    """iogen's JSON objects, one per run, each with its report intervals."""
    objs = []
    for k, raw in enumerate(stdout.splitlines(), 1):
        if raw.strip():
            try:
                objs.append(json.loads(raw))
            except json.JSONDecodeError as e:
                raise ValueError(f"iogen output line {k} is not JSON ({e.msg})") from None
    if not objs:
        raise ValueError("iogen printed no result")
    for o in objs:
        if not o.get("intervals"):
            raise ValueError("iogen reported no intervals (run with --interval)")
    return objs


def _summary(o: dict) -> dict:
    """What a run's params keep of iogen's object."""
    keep = ("engine", "engine_fallback", "qd", "workers", "target_type", "filesystem", "device", "direct",
            "logical_block_size", "region_bytes", "run_s", "iops", "mbps", "read_iops", "write_iops", "cpu_us_per_io",
            "syscalls_per_io", "ctx_switches_per_io", "reads", "writes")
    p = {k: o.get(k) for k in keep}
    p["lat_ns"] = o.get("lat_ns")
    p["system"] = (o.get("system") or {}).get("whole_run")
    return p


def merge_run_params(ps: list[dict]) -> dict:
    """The params of a workload's processes in one run (_summary's, one per
    process) as those of all their I/Os: counts and measured seconds added,
    rates over the summed seconds, per-I/O costs over the summed I/Os, the
    latency percentiles from the histograms added, the system's whole-run
    rates weighted by their seconds. What the processes were asked (engine,
    depth, target) is the first one's: the same for every process."""
    out = dict(ps[0])
    secs = sum(p.get("run_s") or 0 for p in ps)
    ios = [(p.get("reads") or 0) + (p.get("writes") or 0) for p in ps]
    out.update(run_s=secs, reads=sum(p.get("reads") or 0 for p in ps), writes=sum(p.get("writes") or 0 for p in ps))
    for k in ("iops", "mbps", "read_iops", "write_iops"):
        if all(isinstance(p.get(k), (int, float)) for p in ps) and secs > 0:
            out[k] = sum(p[k] * p["run_s"] for p in ps) / secs
    for k in ("cpu_us_per_io", "syscalls_per_io", "ctx_switches_per_io"):
        if all(isinstance(p.get(k), (int, float)) for p in ps) and sum(ios) > 0:
            out[k] = sum(p[k] * n for p, n in zip(ps, ios)) / sum(ios)
    if all(isinstance(p.get("lat_ns"), dict) and "hist" in p["lat_ns"] for p in ps):
        out["lat_ns"] = hist.merge_summaries([p["lat_ns"] for p in ps])
    systems = [p["system"] for p in ps if isinstance(p.get("system"), dict) and (p["system"].get("dt") or 0) > 0]
    if systems:
        dt = sum(x["dt"] for x in systems)
        out["system"] = {k: (dt if k == "dt" else sum(x[k] * x["dt"] for x in systems) / dt)
                         for k, v in systems[0].items()
                         if k != "t" and all(isinstance(x.get(k), (int, float)) for x in systems)}
    if any(p.get("intervals_without_io") for p in ps):
        out["intervals_without_io"] = sum(p.get("intervals_without_io") or 0 for p in ps)
    return out


def merge_sweep_params(ps: list[dict]) -> dict:
    """A queue-depth sweep's params over a run's processes: each depth's
    run summary merged as a workload's (merge_run_params), and its mean and
    p99 latency read from the merged summary (None at a depth without a
    completion)."""
    runs = [merge_run_params(list(rs)) for rs in zip(*(p["runs"] for p in ps))]
    # a depth at which no process saw a completion (a throttle's gap) has no latency: None
    return dict(ps[0], runs=runs, lat_mean_ns=[(r.get("lat_ns") or {}).get("mean") for r in runs],
                lat_p99_ns=[(r.get("lat_ns") or {}).get("p99") for r in runs])


def rate_window(iv: list[dict]) -> int:
    """The fewest report intervals a rate sample spans so that every sample
    holds a completion: 1 where every interval has one. A throttle lets
    I/Os through in bursts (blk-throttle's 100 ms slices): intervals shorter
    than its rhythm alternate between bursts and gaps, and their median rate
    is 0 on a device doing 2,000 IOPS. A window as long as the gaps gives
    the rate the device kept."""
    has = [i["iops"] > 0 for i in iv]
    for k in range(1, len(iv) + 1):
        if all(any(has[a:b]) for a, b in _windows(len(iv), k)):
            return k
    return len(iv) or 1  # no completion at all: one window, its rate 0


def _windows(n: int, k: int) -> list[tuple[int, int]]:
    """[a, b) of n intervals cut k at a time, the rest joined to the last."""
    cuts = list(range(0, n - n % k if n >= k else 0, k)) or [0]
    return [(a, cuts[j + 1] if j + 1 < len(cuts) else n) for j, a in enumerate(cuts)]


def window_rates(rates: list[float], k: int) -> list[float]:
    """Each window's rate: the mean of its intervals' (they are of one length)."""
    return [float(np.mean(rates[a:b])) for a, b in _windows(len(rates), k)] if rates else []


def iogen_lines(stdout: str, workload: str, sweep: bool) -> list[dict]:
    """iogen's JSON objects -> probe lines. The trials are the report
    intervals of the run: disk.<w>.iops, .mbps, .lat_mean, .lat_p99 have one
    sample per interval (the rates one per rate_window of intervals where
    some interval has no completion), and a run with --zones adds disk.<w>.zones; a
    queue-depth sweep becomes one series whose rows are the interval IOPS at
    each depth."""
    objs = iogen_objects(stdout)
    base = f"disk.{workload}"
    if sweep:
        rows = [[iv["iops"] for iv in o["intervals"]] for o in objs]
        width = min(len(r) for r in rows)
        return [{
            "id": f"{base}.qd_sweep", "unit": "IOPS",
            "params": {"runs": [_summary(o) for o in objs],
                       "lat_mean_ns": [o["lat_ns"]["mean"] for o in objs],
                       "lat_p99_ns": [o["lat_ns"]["p99"] for o in objs]},
            "overhead_subtracted": 0,
            "samples": rows[-1][:width], "disturbed": [],
            "series": {"x_name": "queue depth", "y_unit": "IOPS", "x": [o["qd"] for o in objs],
                       "samples": [r[:width] for r in rows]},
        }]
    o = objs[-1]
    iv = o["intervals"]
    p = _summary(o)
    out = []
    lat = o["lat_ns"]  # every I/O of the measured part of the run, in iogen's histogram
    keys = {50.0: "p50", 90.0: "p90", 99.0: "p99", 99.9: "p99_9"}
    done = [i for i in iv if i["iops"] > 0]  # an interval without a completion has no latency (a throttle's gap)
    if len(done) < len(iv):
        p = dict(p, intervals_without_io=len(iv) - len(done))
    per_io = tail_of(int(lat["count"]), lambda q: float(lat[keys[q]]), float(lat["max"]))
    per_io["source"] = "every I/O, from iogen's histogram"
    k = rate_window(iv)
    if k > 1:
        p = dict(p, rate_window_intervals=k)
    for suffix, unit, vals in (
        ("iops", "IOPS", window_rates([i["iops"] for i in iv], k)),
        ("mbps", "MB/s", window_rates([i["mbps"] for i in iv], k)),
        ("lat_mean", "ns", [i["lat_ns"]["mean"] for i in done]),
        ("lat_p99", "ns", [i["lat_ns"]["p99"] for i in done]),
    ):
        line = {"id": f"{base}.{suffix}", "unit": unit, "params": p, "overhead_subtracted": 0,
                "samples": vals, "disturbed": []}
        if unit == "ns":
            line["tail"] = per_io
        out.append(line)
    if o.get("zones") is not None:
        out.append(zones_line(o, base, p))
    return out


def zones_line(o: dict, base: str, p: dict) -> dict:
    """A run's --zones as the series disk.<w>.zones: x the offset of each
    zone's first byte in the target, one figure per zone (its MB/s over the
    whole run: a zone has no per-interval figure). Its samples are those
    figures, one per zone, so its min and max are the slowest and the
    fastest zone. A zone the run never reached (a slow disk, a short run)
    is left out and counted; a run that reached none refuses the id."""
    first = (o["zones"] or [{}])[0].get("target")
    zs = [z for z in o["zones"] if z.get("target") == first]  # the first target's zones
    reached = [z for z in zs if z["bytes"] > 0]
    if not reached:  # no I/O completed in the measured time (a stalled device): no figure, and why
        return {"id": f"{base}.zones", "refused": "no zone reached: the device completed no I/O in the time measured"}
    zone_bytes = (o.get("region_bytes") or 0) // len(zs)
    return {"id": f"{base}.zones", "unit": "MB/s", "overhead_subtracted": 0, "disturbed": [],
            "params": dict(p, zones=len(zs), zone_bytes=zone_bytes, zones_unreached=len(zs) - len(reached),
                           zone_bytes_read=[z["bytes"] for z in reached]),
            "samples": [z["mbps"] for z in reached],
            "series": {"x_name": "offset (bytes)", "y_unit": "MB/s", "x": [z["offset"] for z in reached],
                       "samples": [[z["mbps"]] for z in reached]}}


def size_qd_lines(stdout: str, workload: str) -> list[dict]:
    """A --cycle-size x --cycle-qd run (one object per cell) -> the 2-D
    series disk.<w>.size_qd: grid x the transfer sizes, y the queue depths,
    and per cell the interval MB/s and IOPS (values["mbps"], values["iops"]:
    samples[x][y] = the cell's trials). Every cell must be there, once. Its
    own samples are the intervals of the last cell (largest size, deepest
    queue): the figure compare and the summary quote."""
    objs = iogen_objects(stdout)
    cells: dict[tuple[int, int], dict] = {}
    for o in objs:
        c = o.get("cycle") or {}
        if c.get("size") is None or c.get("qd") is None:
            raise ValueError("iogen's runs are not a size x queue depth cycle (run with --cycle-size and --cycle-qd)")
        if (c["size"], c["qd"]) in cells:
            raise ValueError(f"iogen reported size {c['size']} at queue depth {c['qd']} twice")
        cells[c["size"], c["qd"]] = o
    sizes = sorted({s for s, _ in cells})
    depths = sorted({q for _, q in cells})
    missing = [(s, q) for s in sizes for q in depths if (s, q) not in cells]
    if missing:
        raise ValueError(f"iogen's size x queue depth matrix lacks {len(missing)} of {len(sizes) * len(depths)} "
                         f"cells (size {missing[0][0]} at queue depth {missing[0][1]})")
    width = min(len(o["intervals"]) for o in objs)

    def trials(key):
        return [[[iv[key] for iv in cells[s, q]["intervals"][:width]] for q in depths] for s in sizes]

    mbps = trials("mbps")
    first = _summary(objs[0])
    params = {k: first[k] for k in ("engine", "engine_fallback", "workers", "target_type", "filesystem", "device",
                                    "direct", "logical_block_size", "region_bytes", "run_s")}
    params["cells"] = [{"size": s, "qd": q, "iops": cells[s, q]["iops"], "mbps": cells[s, q]["mbps"],
                        "lat_mean_ns": cells[s, q]["lat_ns"]["mean"], "lat_p99_ns": cells[s, q]["lat_ns"]["p99"],
                        "cpu_us_per_io": cells[s, q].get("cpu_us_per_io")} for s in sizes for q in depths]
    params.update(sizes=sizes, depths=depths, intervals=width)
    return [{
        "id": f"disk.{workload}.size_qd", "unit": "MB/s", "params": params, "overhead_subtracted": 0,
        "samples": mbps[-1][-1], "disturbed": [],
        "grid": {"x_name": "transfer size", "x_unit": "bytes", "x": sizes,
                 "y_name": "queue depth", "y_unit": "outstanding I/Os per worker and target", "y": depths,
                 "values": {"mbps": {"unit": "MB/s", "samples": mbps},
                            "iops": {"unit": "IOPS", "samples": trials("iops")}}},
    }]


ZONES = {"1m-seq-read": (8, 16)}  # workload: --zones in the quick and the full preset (SPEK's ZCAV)

ZONES_METHOD = (" The run also bins its throughput by offset into {arg:--zones=16} equal zones of the region "
                "(iogen --zones, SPEK's ZCAV figure): a completion's bytes go to its zone, and so does the time "
                "since the previous completion of the same stream; a zone's MB/s is its bytes over that time, the "
                "streams' rates added, over the whole run (a zone has no per-interval figure, so the series has one "
                "value per zone). The offsets are the target's: a block device's own, a file's as the file "
                "system placed it, so only a device shows the disk's zones.")

# The --kernel-paths pass: every I/O makes about ten events on the two trace instances, and a fast
# device does hundreds of thousands a second, more than the buffers hold over a preset's run. The
# traced run is cut to about TRACED_IOS I/Os at the timed run's IOPS (never longer than the
# preset's run, never under TRACED_MIN_S), in ten intervals after a short ramp: its samples.
TRACED_IOS = 100_000
TRACED_MIN_S = 0.3


def traced_args(workload: str, preset_secs: dict[str, float], preset_qd: dict[str, int]):
    def args(medians: dict[str, float], preset: str) -> tuple[str, ...]:
        full = preset_secs.get(preset, min(preset_secs.values()))
        lat = medians.get(f"disk.{workload}.lat_mean") or 0  # without the IOPS: Little's law, one worker
        iops = medians.get(f"disk.{workload}.iops") or (preset_qd.get(preset, 1) / (lat * 1e-9) if lat > 0 else 0)
        secs = min(full, max(TRACED_MIN_S, TRACED_IOS / iops)) if iops > 0 else TRACED_MIN_S
        return "--time", f"{secs:.3g}", "--ramp", "0.2", "--interval", f"{secs / 10:.3g}"
    return args

# a few tenths of a second in place of the presets' times: a function test of the probe and its parse
SMOKE = ("--time", "0.2", "--ramp", "0", "--interval", "0.02")


WORKLOAD_PROCESSES = 3  # processes of each workload's probe in one run
RAMP = {"quick": "0.25", "full": "0.5"}  # seconds of each process's ramp before it measures


def _workload(workload: str, quick_qd: int | None, full_qd: int) -> Probe:
    zones = ZONES.get(workload)

    def args(qd, secs, preset):
        return ("--target", "{disk_target}", "{disk_flags}", "--size", "{disk_size}", "--workload", workload,
                "--qd", str(qd), "--time", str(secs), "--ramp", RAMP[preset], "--interval", str(secs / 10),
                *(("--zones", str(zones[preset == "full"])) if zones else ()))
    # each preset's measured seconds, shared among the probe's processes: a run's figure is the median
    # of WORKLOAD_PROCESSES short runs spread over the osmeter run, not one run at one moment of the
    # host's storage (whose state drifts from one minute to the next)
    total = {p: t for p, t in (("full", 10.0), ("quick", 1.2)) if p == "full" or quick_qd}
    secs = {p: round(t / WORKLOAD_PROCESSES, 2) for p, t in total.items()}
    presets = {"full": args(full_qd, secs["full"], "full")}
    if quick_qd:
        presets["quick"] = args(quick_qd, secs["quick"], "quick")
    measures = (
        measure(f"disk.{workload}.iops", "IOPS", f"{workload}: I/Os per second"),
        measure(f"disk.{workload}.mbps", "MB/s", f"{workload}: millions of bytes per second"),
        measure(f"disk.{workload}.lat_mean", "ns", f"{workload}: mean latency", ktimer="syscalls"),
        measure(f"disk.{workload}.lat_p99", "ns", f"{workload}: 99th percentile latency within a report interval"),
    )
    if zones:
        measures += (measure(f"disk.{workload}.zones", "MB/s", f"{workload}: MB/s of each zone of the target's address "
                       "range against its offset (series)", curve=True),)
    return Probe(
        name=f"disk.{workload}", binary="iogen",
        measures=measures,
        shared_method=METHOD,
        methodology=f"Workload {workload} (iogen --list-workloads) at queue depth {full_qd}"
                    + (f" ({quick_qd} in the quick preset)." if quick_qd and quick_qd != full_qd else ".")
                    + f" A run measures it in {WORKLOAD_PROCESSES} processes spread over the run, interleaved with "
                      "the other probes, each a ramp of {arg:--ramp} s and then {arg:--time} s in intervals "
                      "of {arg:--interval} s; the run's figure is the median of the processes' medians."
                    + (ZONES_METHOD if zones else ""),
        presets=presets,
        smoke=SMOKE,
        # the traced pass is one process: at most the preset's whole seconds, not one process's share
        # (a slow device's traced pass then still holds enough I/Os to spread its fixed costs)
        traced=traced_args(workload, total, {"full": full_qd, "quick": quick_qd or full_qd}),
        expect={"quick": 1.5, "full": 4.5},
        processes=WORKLOAD_PROCESSES,
        merge_params=merge_run_params,
        timeout=300.0,
        parse=lambda out, w=workload: iogen_lines(out, w, sweep=False),
        kernel_wait="device",
    )


def _cycle(*args: str) -> tuple[str, ...]:
    """The 4k-random-read workload on the disk target with these cycles and times."""
    return ("--target", "{disk_target}", "{disk_flags}", "--size", "{disk_size}", "--workload", "4k-random-read",
            *args)


PROBES = tuple(_workload(w, q, f) for w, (q, f) in RUNS.items()) + (
    Probe(
        name="disk.qd_sweep", binary="iogen",
        measures=(measure("disk.4k-random-read.qd_sweep", "IOPS", "4k random read IOPS against queue depth (series)",
                    curve=True),),
        shared_method=METHOD,
        methodology="The sweep runs the 4k-random-read workload once per queue depth, {arg:--cycle-qd=1:32:x2} "
                    f"(first:last:step). A run sweeps in {WORKLOAD_PROCESSES} processes spread over the run, "
                    "interleaved with the other probes, each a ramp of {arg:--ramp} s and then {arg:--time} s at "
                    "each depth in intervals of {arg:--interval} s; a depth's trials are the intervals of all of "
                    "them, its params the I/Os of all of them.",
        presets={  # each preset's seconds at a depth shared among the processes, as the workloads' are
            "quick": _cycle("--cycle-qd", "1:32:x2", "--time", "0.17", "--ramp", "0.1", "--interval", "0.017"),
            "full": _cycle("--cycle-qd", "1:128:x2", "--time", "1.67", "--ramp", "0.5", "--interval", "0.167"),
        },
        smoke=("--cycle-qd", "1:4:x4", *SMOKE),
        expect={"quick": 3.2, "full": 16},
        processes=WORKLOAD_PROCESSES,
        merge_params=merge_sweep_params,
        timeout=600.0,
        parse=lambda out: iogen_lines(out, "4k-random-read", sweep=True),
    ),
    Probe(
        name="disk.size_qd", binary="iogen",
        measures=(measure("disk.4k-random-read.size_qd", "MB/s", "random reads (4 KiB aligned): MB/s and IOPS against "
                    "transfer size and queue depth (a 2-D series; its own figure: the largest size at the deepest "
                    "queue)", curve=True),),
        shared_method=METHOD,
        methodology="The PenguinoMeter paper's test matrix, transfer size against outstanding I/Os, in one iogen "
                    "invocation: the 4k-random-read workload (random reads at 4 KiB-aligned offsets) with every "
                    "line's transfer size cycled over {arg:--cycle-size=4096:1048576:x2} bytes and, at each size, "
                    "the queue depth over {arg:--cycle-qd=1:64:x4} (first:last:step). Each cell is a run of its "
                    "own: a ramp of {arg:--ramp=0.3} s, then {arg:--time=1} s cut into report intervals of "
                    "{arg:--interval=0.1} s, its trials. The heat map gives each cell's median interval MB/s and "
                    "IOPS.",
        presets={
            "quick": _cycle("--cycle-size", "4096:65536:x4", "--cycle-qd", "1:16:x4", "--time", "0.12", "--ramp", "0.06",
                            "--interval", "0.012"),
            "full": _cycle("--cycle-size", "4096:1048576:x2", "--cycle-qd", "1:64:x4", "--time", "1", "--ramp", "0.3",
                           "--interval", "0.1"),
        },
        smoke=("--cycle-size", "4096:16384:x2", "--cycle-qd", "1:4:x4", "--time", "0.05", "--ramp", "0",
               "--interval", "0.01"),
        expect={"quick": 3, "full": 48},
        timeout=600.0,
        parse=lambda out: size_qd_lines(out, "4k-random-read"),
    ),
)


# ---- figures (the report's and the notebook's; shared plot kinds in plots.py) -------------

def disk_sweep(doc: dict, est=None):
    """4 KiB random reads against the queue depth: IOPS (left axis) and
    the mean latency (right axis)."""
    from osmeter.present.plots import measured, plt
    s = measured(doc).get("disk.4k-random-read.qd_sweep")
    if not s or "series" not in s:
        return None
    fig, ax = plt.subplots()
    x = s["series"]["x"]
    ax.plot(x, np.array(s["series"]["median"]) / 1e3, "o-", label="IOPS (thousands)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("queue depth (outstanding I/Os)")
    ax.set_ylabel("IOPS (thousands)")
    lat = s["params"].get("lat_mean_ns")
    if lat:
        ax2 = ax.twinx()
        ax2.plot(x, np.array([np.nan if v is None else v for v in lat], float) / 1e3, "s--", color="C1",
                 label="mean latency")
        ax2.set_ylabel("mean latency (us)")
        ax2.grid(False)
    ax.set_title("4 KiB random read: IOPS and latency against queue depth")
    return fig


def disk_size_qd(doc: dict, est=None):
    """Random reads (4 KiB-aligned offsets) against transfer size (rows)
    and outstanding I/Os (columns), the PenguinoMeter paper's test matrix:
    each cell's median report interval, in MB/s (left) and IOPS (right)."""
    from osmeter.present.plots import measured, size_qd_map
    d = measured(doc).get("disk.4k-random-read.size_qd")
    g = (d or {}).get("grid")
    if not g:
        return None
    v = g["values"]
    nan = lambda rows: [[np.nan if c is None else c for c in r] for r in rows]  # noqa: E731
    where = d.get("params") or {}
    return size_qd_map(g["x"], g["y"], nan(v["mbps"]["median"]), nan(v["iops"]["median"]),
                       f"random reads at every size: {where.get('workers') or '?'} worker(s), "
                       f"{where.get('engine') or '?'} engine, on a {where.get('target_type') or 'target'}")


def disk_zones(doc: dict, est=None):
    """Sequential reads of 1 MiB across the target's address range (SPEK's
    ZCAV figure): each zone's MB/s over the run, a bar over the offsets the
    zone covers; a block device shows its zoned recording, a file the
    places its file system gave it."""
    from osmeter.present.plots import measured, zones_figure
    d = measured(doc).get("disk.1m-seq-read.zones")
    if not d or "series" not in d:
        return None
    p = d.get("params") or {}
    path = (doc.get("conditions", {}).get("disk_target") or {}).get("path") or "the disk target"
    name = f"{p.get('target_type') or 'target'} {path.rsplit('/', 1)[-1]}" + (
        f" on {p['filesystem']}" if p.get("filesystem") else "") + (f" ({p['device']})" if p.get("device") else "")
    return zones_figure({name: (d["series"]["x"], d["series"]["median"], p.get("zone_bytes") or 0)})


FIGURES = (disk_sweep, disk_size_qd, disk_zones)
