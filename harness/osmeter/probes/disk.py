"""Disk: iogen's Iometer-model workloads below the page cache, and a
queue-depth sweep. iogen prints its own JSON object per run; iogen_lines
turns it into probe lines."""
from __future__ import annotations

import json

from ..probe import Area, Probe, m
from ..stats import tail_of

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
    "intervals. The target is a file in the results directory (filled with data, never sparse), "
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


def iogen_lines(stdout: str, workload: str, sweep: bool) -> list[dict]:
    """iogen's JSON objects -> probe lines. The trials are the report
    intervals of the run: disk.<w>.iops, .mbps, .lat_mean, .lat_p99 have one
    sample per interval; a queue-depth sweep becomes one series whose rows
    are the interval IOPS at each depth."""
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
    base = f"disk.{workload}"

    def summary(o):
        keep = ("engine", "engine_fallback", "qd", "workers", "target_type", "filesystem", "device", "direct", "logical_block_size",
                "region_bytes", "run_s", "iops", "mbps", "read_iops", "write_iops", "cpu_us_per_io",
                "syscalls_per_io", "ctx_switches_per_io", "reads", "writes")
        p = {k: o.get(k) for k in keep}
        p["lat_ns"] = o.get("lat_ns")
        p["system"] = (o.get("system") or {}).get("whole_run")
        return p

    if sweep:
        rows = [[iv["iops"] for iv in o["intervals"]] for o in objs]
        width = min(len(r) for r in rows)
        return [{
            "id": f"{base}.qd_sweep", "unit": "IOPS",
            "params": {"runs": [summary(o) for o in objs],
                       "lat_mean_ns": [o["lat_ns"]["mean"] for o in objs],
                       "lat_p99_ns": [o["lat_ns"]["p99"] for o in objs]},
            "overhead_subtracted": 0,
            "samples": rows[-1][:width], "disturbed": [],
            "series": {"x_name": "queue depth", "y_unit": "IOPS", "x": [o["qd"] for o in objs],
                       "samples": [r[:width] for r in rows]},
        }]
    o = objs[-1]
    iv = o["intervals"]
    p = summary(o)
    out = []
    lat = o["lat_ns"]  # every I/O of the measured part of the run, in iogen's histogram
    keys = {50.0: "p50", 90.0: "p90", 99.0: "p99", 99.9: "p99_9"}
    per_io = tail_of(int(lat["count"]), lambda q: float(lat[keys[q]]), float(lat["max"]))
    per_io["source"] = "every I/O, from iogen's histogram"
    for suffix, unit, vals in (
        ("iops", "IOPS", [i["iops"] for i in iv]),
        ("mbps", "MB/s", [i["mbps"] for i in iv]),
        ("lat_mean", "ns", [i["lat_ns"]["mean"] for i in iv]),
        ("lat_p99", "ns", [i["lat_ns"]["p99"] for i in iv]),
    ):
        line = {"id": f"{base}.{suffix}", "unit": unit, "params": p, "overhead_subtracted": 0,
                "samples": vals, "disturbed": []}
        if unit == "ns":
            line["tail"] = per_io
        out.append(line)
    return out


def _workload(workload: str, quick_qd: int | None, full_qd: int) -> Probe:
    def args(qd, secs):
        return ("--target", "{disk_target}", "{disk_flags}", "--size", "{disk_size}", "--workload", workload,
                "--qd", str(qd), "--time", str(secs), "--ramp", "0.5", "--interval", str(secs / 10))
    presets = {"full": args(full_qd, 10)}
    if quick_qd:
        presets["quick"] = args(quick_qd, 2)
    return Probe(
        name=f"disk.{workload}", binary="iogen", area="disk",
        measures=(
            m(f"disk.{workload}.iops", "IOPS", f"{workload}: I/Os per second"),
            m(f"disk.{workload}.mbps", "MB/s", f"{workload}: millions of bytes per second"),
            m(f"disk.{workload}.lat_mean", "ns", f"{workload}: mean latency", ktimer="syscalls"),
            m(f"disk.{workload}.lat_p99", "ns", f"{workload}: 99th percentile latency within a report interval"),
        ),
        shared_method=METHOD,
        methodology=f"Workload {workload} (iogen --list-workloads) at queue depth {full_qd}"
                    + (f" ({quick_qd} in the quick preset)." if quick_qd and quick_qd != full_qd else "."),
        presets=presets,
        expect={"quick": 3.5, "full": 12},
        timeout=300.0,
        parse=lambda out, w=workload: iogen_lines(out, w, sweep=False),
        kernel_wait="device",
    )


PROBES = tuple(_workload(w, q, f) for w, (q, f) in RUNS.items()) + (
    Probe(
        name="disk.qd_sweep", binary="iogen", area="disk",
        measures=(m("disk.4k-random-read.qd_sweep", "IOPS", "4k random read IOPS against queue depth (series)",
                    curve=True),),
        shared_method=METHOD,
        methodology="The sweep runs the 4k-random-read workload once per queue depth, {arg:--cycle-qd=1:32:x2} (first:last:step).",
        presets={
            "quick": ("--target", "{disk_target}", "{disk_flags}", "--size", "{disk_size}", "--workload", "4k-random-read",
                      "--cycle-qd", "1:32:x2", "--time", "1", "--ramp", "0.3", "--interval", "0.1"),
            "full": ("--target", "{disk_target}", "{disk_flags}", "--size", "{disk_size}", "--workload", "4k-random-read",
                     "--cycle-qd", "1:128:x2", "--time", "5", "--ramp", "0.5", "--interval", "0.5"),
        },
        expect={"quick": 9, "full": 48},
        timeout=600.0,
        parse=lambda out: iogen_lines(out, "4k-random-read", sweep=True),
    ),
)
