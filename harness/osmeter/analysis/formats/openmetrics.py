"""The Prometheus text exposition format (0.0.4), which node_exporter's textfile collector and `promtool check
metrics` read: one side's runs (a run, a campaign, an ab's side) as one gauge per id, its value the side's
figure (one run's figure, or the median of the runs' figures as compare takes a side's), in the base unit
Prometheus names want, with the machine and the area as labels. `osmeter export DIR --format openmetrics --out
DIR/osmeter.prom` writes the file whole and renames it into place (its temporary name ends in .tmp, which the
collector passes over), so a scrape sees the old figures or the new ones.

- Name: `osmeter_<id>_<unit>`, the id's `.` and `-` as `_` (a name holds [a-zA-Z0-9_:] only). Two ids that
  would meet in one name are refused, and so is an id with any other character.
- Unit, in Prometheus's base units (the value converted): a time in seconds; MB/s as bytes_per_second;
  IOPS as ios_per_second; files/s as files_per_second; bytes as bytes; MHz as hertz; % as a ratio (0..1);
  cycles, loads and a factor (x) as they are (cycles, loads, ratio). An id of a unit not in this table is
  left out, said in a comment line.
- Labels: host (the machine's hostname), area (the id's area), and runs (how many runs the figure is of).
  An id with no figure in any run (refused, or kept nothing) has no sample: a gauge that is absent, not NaN,
  so that an alert on it does not fire on a figure never measured.
"""
from __future__ import annotations

import re
import statistics

NAME = "openmetrics"
ORDER = 92
OPTION = None
UNITS = {  # osmeter's unit -> (the name's suffix, the factor into it)
    "ns": ("seconds", 1e-9), "us": ("seconds", 1e-6), "ms": ("seconds", 1e-3), "s": ("seconds", 1.0),
    "MB/s": ("bytes_per_second", 1e6), "IOPS": ("ios_per_second", 1.0), "files/s": ("files_per_second", 1.0),
    "bytes": ("bytes", 1.0), "MHz": ("hertz", 1e6), "%": ("ratio", 1e-2), "x": ("ratio", 1.0),
    "cycles": ("cycles", 1.0), "loads": ("loads", 1.0),
}


def metric_name(mid: str, unit: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", mid):
        raise ValueError(f"{mid!r}: an id with a character a metric name cannot hold")
    return f"osmeter_{re.sub(r'[.-]', '_', mid)}_{UNITS[unit][0]}"


def _label(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(v: str) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", " ")


def render_runs(runs) -> str:
    """The side's figures as gauges; ValueError for an id no name can carry."""
    from osmeter.analysis.model import area_of

    host = (runs[0].doc.get("machine") or {}).get("hostname", "unknown")
    ids: dict[str, list] = {}
    for run in runs:
        for m in run.measurements.values():
            ids.setdefault(m.id, []).append(m)
    descs = {m.get("id"): m.get("description") for r in runs for m in r.doc["measurements"]}
    names: dict[str, str] = {}
    out = []
    for mid in sorted(ids):
        ms = ids[mid]
        if ms[0].unit not in UNITS:  # said in a comment line, which the collector and promtool pass over
            out.append(f"# osmeter: {mid} left out: its unit {_help(ms[0].unit)} has no Prometheus name here")
            continue
        name = metric_name(mid, ms[0].unit)
        if name in names:
            raise ValueError(f"{mid} and {names[name]} would both be {name}")
        names[name] = mid
        figs = [m.figure for m in ms if m.figure is not None and m.figure == m.figure]
        desc = descs.get(mid) or mid
        out.append(f"# HELP {name} {_help(desc)} (osmeter id {mid}, in {ms[0].unit} there)")
        out.append(f"# TYPE {name} gauge")
        if figs:
            v = statistics.median(figs) * UNITS[ms[0].unit][1]
            out.append(f'{name}{{host="{_label(host)}",area="{_label(area_of(mid))}",runs="{len(figs)}"}} {v!r}')
    return "\n".join(out) + "\n"


RENDER = {"export": render_runs}
