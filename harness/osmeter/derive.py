"""Measurements the harness derives from what probes printed (numpy lives
here, not in C): cache levels from the latency curve, the cost of a fault
against a copy. Each function returns lines of the probes' own form,
carrying the real samples they stand on."""
from __future__ import annotations

import json

import numpy as np

from .machine import caches
from .memlevels import detect_levels


def _sysfs_sizes() -> dict[str, int]:
    out = {}
    for c in caches():
        if c["type"] in ("Data", "Unified") and c["level"]:
            out[f"l{c['level']}"] = c["size"]
    return out


def mem_levels(lines: list[dict]) -> list[dict]:
    """mem.lat.l1 .. l3 and mem.lat.dram from mem.lat.curve."""
    curve = next((ln for ln in lines if ln["id"] == "mem.lat.curve"), None)
    if curve is None or "series" not in curve:
        return []
    s = curve["series"]
    x = np.asarray(s["x"], dtype=float)
    rows = np.asarray(s["samples"], dtype=float)
    dist = s.get("disturbed") or [[] for _ in s["x"]]
    clean = [np.delete(r, d) if len(d) < r.size else r for r, d in zip(rows, dist)]
    levels = detect_levels(x, np.array([np.median(r) for r in clean]))
    sysfs = _sysfs_sizes()
    out = []
    for lv in levels:
        params = {
            "size": lv.at,
            "level_start": lv.start,
            "level_end": lv.end,
            "plateau_end": lv.plateau_end,
            "sysfs_size": sysfs.get(lv.name),
            "levels_found": [v.name for v in levels],
            "from": "mem.lat.curve",
            "method": "piecewise-constant fit of log latency; plateau cores",
            "chain": curve.get("params", {}).get("chain"),
        }
        out.append(
            {
                "id": f"mem.lat.{lv.name}",
                "unit": curve["unit"],
                "tsc_hz": curve.get("tsc_hz"),
                "timer": curve.get("timer"),
                "params": params,
                "overhead_subtracted": curve.get("overhead_subtracted", 0),
                "samples": rows[lv.index].tolist(),
                "disturbed": list(dist[lv.index]),
            }
        )
    thp = next((ln for ln in lines if ln["id"] == "mem.lat.dram.thp"), None)
    dram = next((o for o in out if o["id"] == "mem.lat.dram"), None)
    if thp is not None and dram is not None and thp["samples"]:
        small = float(np.median(dram["samples"]))
        huge = float(np.median(thp["samples"]))
        thp["params"]["dram_4k_median"] = small
        thp["params"]["tlb_share"] = (small - huge) / small if small > 0 else None
    return out


def fault_vs_copy(lines: dict[str, dict]) -> dict:
    """mem.pagefault.major_vs_copy: (fault ns per byte) / (memcpy ns per byte)."""
    fault, copy = lines["mem.pagefault.major"], lines["mem.bw.copy"]
    page = fault["params"].get("page_size", 4096)
    hz = fault["tsc_hz"] if fault["unit"] == "cycles" else 1e9
    bad = set(fault.get("disturbed", []))
    ns = np.array([v for i, v in enumerate(fault["samples"]) if i not in bad], dtype=float) * 1e9 / hz
    copy_ns_per_byte = 1e3 / float(np.median(copy["samples"]))  # MB/s -> ns/B
    return {
        "id": "mem.pagefault.major_vs_copy",
        "unit": "x",
        "params": {
            "fault_ns_per_byte": float(np.median(ns)) / page,
            "copy_ns_per_byte": copy_ns_per_byte,
            "page_size": page,
            "from": ["mem.pagefault.major", "mem.bw.copy"],
        },
        "overhead_subtracted": 0,
        "samples": (ns / page / copy_ns_per_byte).tolist(),
        "disturbed": [],
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
        keep = ("engine", "qd", "workers", "target_type", "filesystem", "device", "direct", "logical_block_size",
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
    for suffix, unit, vals in (
        ("iops", "IOPS", [i["iops"] for i in iv]),
        ("mbps", "MB/s", [i["mbps"] for i in iv]),
        ("lat_mean", "ns", [i["lat_ns"]["mean"] for i in iv]),
        ("lat_p99", "ns", [i["lat_ns"]["p99"] for i in iv]),
    ):
        out.append({"id": f"{base}.{suffix}", "unit": unit, "params": p, "overhead_subtracted": 0,
                    "samples": vals, "disturbed": []})
    return out


def ping_lines(stdout: str, where: str) -> list[dict]:
    """ping's per-reply times -> net.rtt.icmp.<where> (samples in ns)."""
    import re

    times = [float(m.group(1)) * 1e6 for m in re.finditer(r"time[=<]([0-9.]+) ms", stdout)]
    if not times:
        raise ValueError("ping printed no reply times")
    sent = re.search(r"(\d+) packets transmitted, (\d+) received", stdout)
    params = {"tool": "ping", "where": where}
    if sent:
        params.update(transmitted=int(sent.group(1)), received=int(sent.group(2)))
    return [{"id": f"net.rtt.icmp.{where}", "unit": "ns", "params": params, "overhead_subtracted": 0,
             "samples": times, "disturbed": []}]
