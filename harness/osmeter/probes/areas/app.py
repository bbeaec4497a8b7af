"""Application I/O: a trace recorded by iotrace (docs/iotrace.md) replayed
as a measurement with `osmeter run --app-trace TRACE` (and, for a trace
recorded under MPI, `--app-launcher "MPIRUN ARGS"`). Its ids do not depend
on the trace: the replay's wall time and bandwidth, and per class of call
(read, write, the rest) the bandwidth and the per-call latency's median and
tails, so that ab, compare, the report and the notebook treat an
application like any other probe."""
from __future__ import annotations

import json

import numpy as np

from osmeter.probes.model import Area, Probe, measure

AREA = Area("app", "Application I/O", 60)

CLASSES = ("read", "write", "meta")
CLASS_TEXT = {"read": "data-reading calls (read, pread, readv ...; MPI_File_read*)",
              "write": "data-writing calls (write, pwrite, writev ...; MPI_File_write*)",
              "meta": "the other calls (open, close, seek, sync, truncate; MPI_File_open, set_view, seek, sync ...)"}
PCTS = (("lat_p50", "p50", "median"), ("lat_p99", "p99", "99th percentile"),
        ("lat_p99_9", "p99_9", "99.9th percentile"))
REPLAYS = 5  # replays of the trace in one run, spread over it as the other probes' processes are


def _measures():
    out = [measure("app.wall", "ns", "the replay's wall time, from its first call to its last"),
           measure("app.mbps", "MB/s", "bytes the replay's calls moved over its wall time")]
    for c in CLASSES:
        if c != "meta":
            out.append(measure(f"app.{c}.mbps", "MB/s", f"bytes moved by {CLASS_TEXT[c]} over the replay's wall time"))
        out += [measure(f"app.{c}.{key}", "ns", f"{what} time of one of {CLASS_TEXT[c]}") for key, _, what in PCTS]
    return tuple(out)


def _hist_total(h: dict) -> dict:
    return {"count": h["count"], "hist": h["hist"], "min": h["min"], "max": h["max"]}


def app_lines(stdout: str) -> list[dict]:
    """One replay's JSON object (the last line iotrace replay printed: an
    MPI launcher may print before it) -> one line per id, one sample each.
    A class the trace has no call of refuses its ids; a replay whose calls
    returned other results than recorded says so in params.mismatch_count."""
    doc = None
    for raw in reversed(stdout.splitlines()):
        if raw.strip().startswith("{"):
            try:
                doc = json.loads(raw)
                break
            except json.JSONDecodeError as e:
                raise ValueError(f"iotrace replay's result is not JSON ({e.msg})") from None
    if doc is None or "classes" not in doc:
        raise ValueError("iotrace replay printed no result")
    wall = doc["replayed_wall_ns"]
    classes = doc["classes"]
    moved = sum(classes[c]["moved"] for c in CLASSES)
    params = {"trace": doc.get("trace"), "ranks": doc.get("ranks"), "processes": doc.get("processes"),
              "threads": doc.get("threads"), "timing": doc.get("timing", "asap"),
              "recorded_wall_ns": doc.get("recorded_wall_ns"), "replayed_wall_ns": [wall],
              "mismatch_count": doc.get("mismatch_count", 0), "rank_hosts": doc.get("rank_hosts"),
              "calls": {k: {"count": v["count"], "bytes": v["bytes"], "replayed_ns": v["replayed_ns"]}
                        for k, v in doc["calls"].items()},
              "classes": {c: _hist_total(classes[c]["lat_ns"]) | {"moved": classes[c]["moved"]} for c in CLASSES}}

    def line(mid: str, unit: str, value: float) -> dict:
        return {"id": mid, "unit": unit, "params": params, "overhead_subtracted": 0, "samples": [value],
                "disturbed": []}

    out = [line("app.wall", "ns", wall), line("app.mbps", "MB/s", moved / wall * 1e3 if wall else 0.0)]
    for c in CLASSES:
        lat = classes[c]["lat_ns"]
        if not lat["count"]:
            why = f"the trace has no {c} call ({CLASS_TEXT[c]})"
            out += [{"id": f"app.{c}.{key}", "refused": why} for key, _, _ in PCTS]
            out += [{"id": f"app.{c}.mbps", "refused": why}] if c != "meta" else []
            continue
        if c != "meta":
            out.append(line(f"app.{c}.mbps", "MB/s", classes[c]["moved"] / wall * 1e3 if wall else 0.0))
        out += [line(f"app.{c}.{key}", "ns", float(lat[pk])) for key, pk, _ in PCTS]
    return out


def merge_app_params(ps: list[dict]) -> dict:
    """The params of a run's replays: the first's, each replay's wall time
    listed, each class's per-call histograms added (hist.merge) so that the
    run's pooled per-call distribution is kept, mismatches added."""
    from osmeter.core import hist

    out = dict(ps[0])
    out["replayed_wall_ns"] = [w for p in ps for w in p.get("replayed_wall_ns") or []]
    out["mismatch_count"] = sum(p.get("mismatch_count") or 0 for p in ps)
    classes = {}
    for c in CLASSES:
        hs = [p["classes"][c] for p in ps if (p.get("classes") or {}).get(c)]
        counts = hist.merge([h["hist"] for h in hs])
        classes[c] = {"count": sum(h["count"] for h in hs), "moved": sum(h["moved"] for h in hs),
                      "min": min((h["min"] for h in hs if h["count"]), default=0),
                      "max": max((h["max"] for h in hs), default=0),
                      "hist": {"sub_bits": hist.SUB_BITS, "counts": sorted([b, n] for b, n in counts.items())}}
    out["classes"] = classes
    return out


METHOD = (
    "The trace given with --app-trace ({param:trace}) is replayed by iotrace replay (docs/iotrace.md) "
    f"in {REPLAYS} processes spread over the run, interleaved with the other probes; "
    "each is one sample of every id. A trace recorded under MPI is replayed under --app-launcher with as "
    "many ranks as were recorded; a POSIX trace with as many processes and threads as were recorded. The "
    "replay runs as the application did, not as a pinned probe: the harness neither pins it nor raises "
    "its policy, and iotrace --unpin widens it to every CPU of its cpuset. Before each replay the files it reads are made again in a "
    "directory of the results (or --app-dir), removed after the run. Each call is timed alone with "
    "CLOCK_MONOTONIC and counted in its class: read, write or the rest (an MPI completion in the class "
    "of the call it completed); a class's latency figures are the percentiles of its calls' times in "
    "one replay (a 1.6% log-linear histogram), its bandwidth the bytes its calls moved over the "
    "replay's wall time. The calls are issued as fast as possible (timing asap): the figures are the "
    "I/O's, without the application's compute time. A replay that has not ended within --app-timeout (default: a "
    "minute and ten times the trace's recorded time) is ended, with where each process or rank waited.")

PROBES = (
    Probe(
        name="app.replay", binary="iotrace",
        measures=_measures(),
        methodology=METHOD,
        presets={p: ("replay", "{app_trace}", "--dir", "{app_dir}", "--unpin", "{app_timeout}", "{app_launcher}")
                 for p in ("quick", "full")},
        needs="app_trace",
        pinned=False,
        processes=REPLAYS,
        merge_params=merge_app_params,
        timeout=1800.0,
        parse=app_lines,
    ),
)


def app_latency(doc: dict, est=None):
    """The replayed application's calls: the time of one call, per class,
    over every replay of the run (each class's histograms added), as the
    fraction of calls slower than a time (log-log: the tail is the right
    end)."""
    from osmeter.core import hist
    from osmeter.present.plots import measured, plt
    m = measured(doc).get("app.wall")
    classes = ((m or {}).get("params") or {}).get("classes")
    if not classes:
        return None
    fig, ax = plt.subplots()
    drawn = False
    for k, c in enumerate(CLASSES):
        h = classes.get(c) or {}
        counts = hist.counts_of(h["hist"]) if h.get("count") else {}
        if not counts:
            continue
        buckets = sorted(counts)
        n = np.array([counts[b] for b in buckets], dtype=float)
        top = np.array([hist.bucket_range(b)[1] for b in buckets], dtype=float)
        slower = 1.0 - np.cumsum(n) / n.sum()
        keep = slower > 0
        ax.step(top[keep] / 1e3, slower[keep], where="post", color=f"C{k}",
                label=f"{c}: {int(n.sum()):,} calls")
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time of one call (us)")
    ax.set_ylabel("fraction of calls slower")
    ax.legend()
    from osmeter.present.plots import lit
    ax.set_title(lit(f"replays of {str(m['params'].get('trace') or 'the trace').rsplit('/', 1)[-1]}"))
    return fig


def app_calls(doc: dict, est=None):
    """Where the replay's time went, per call type: each type's total
    replayed time in one replay (the first of the run), summed over its
    processes or ranks, with its count of calls; the most costly at the
    top."""
    from osmeter.present.plots import lit, measured, plt
    m = measured(doc).get("app.wall")
    calls = ((m or {}).get("params") or {}).get("calls")
    if not calls:
        return None
    rows = sorted(((v["replayed_ns"], k, v["count"]) for k, v in calls.items() if v.get("count")), reverse=True)[:12]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 0.3 * len(rows) + 1.0))
    y = np.arange(len(rows))[::-1]
    ax.barh(y, [r[0] / 1e6 for r in rows], color="C0")
    ax.set_yticks(y, [lit(f"{r[1]} ({r[2]:,})") for r in rows])
    ax.set_xlabel("replayed time, all processes or ranks (ms)")
    ax.set_title("time per call type (count of calls in brackets)")
    return fig


FIGURES = (app_latency, app_calls)
