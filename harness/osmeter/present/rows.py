"""The rows every output of a run shows, built once from results.json: the
terminal summary and results.csv, the estimates against the measured
figures, the spread, interference, machine and lmbench tables of the
report and the notebook."""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from osmeter.present.values import QUOTED, fmt_value, text_table
from osmeter.results.model import Timer, timers


def summary_table(doc: dict) -> str:
    """id, median, p99 and max (time units), cycles, spread (std and CI95 of
    the median), n, dropped; refused ids at the end with their reason."""
    head = ("id", "median", "p99", "max", "TSC cycles", "std", "ci95 of median", "n", "dropped")
    body = []
    short = False
    for m in doc["measurements"]:
        unit = m["unit"]
        cyc = m.get("cycles", {}).get("median")
        lo, hi = m.get("ci95") or (None, None)
        t = m.get("tail") or {}
        p99 = fmt_value(t.get("p99"), unit) if t.get("p99") is not None else ("n<1k" if t else "")
        short = short or (bool(t) and t.get("p99") is None)
        top = fmt_value(t["max"], unit) if t.get("max") is not None else ""
        body.append((m["id"], fmt_value(m.get(QUOTED), unit), p99, top,
                     f"{cyc:.4g}" if isinstance(cyc, (int, float)) else "-",
                     fmt_value(m.get("std"), unit), f"{fmt_value(lo, unit)} .. {fmt_value(hi, unit)}",
                     str(m.get("n")), str(m.get("dropped_disturbed", 0))))
    out = text_table(head, body)
    if short:
        out += ("\np99 is given where at least 10 samples lie beyond it (n >= 1,000); "
                "n<1k marks the ids with fewer (see tail in results.json)")
    for r in doc.get("refused", []):
        out += f"\nrefused here: {r['id']}: {r['why']}"
    return out


CSV_COLUMNS = ("id", "unit", "n", "mean", "median", "std", "min", "max", "ci95_lo", "ci95_hi", "p90", "p99", "p99.9",
               "dropped_disturbed", "description")


def to_csv(doc: dict) -> str:
    """One row per measurement, for spreadsheets."""
    f = io.StringIO()
    w = csv.writer(f)
    w.writerow(CSV_COLUMNS)
    for m in doc["measurements"]:
        lo, hi = m.get("ci95") or (None, None)
        w.writerow([m["id"], m["unit"], m.get("n"), m.get("mean"), m.get("median"), m.get("std"), m.get("min"),
                    m.get("max"), lo, hi, *((m.get("tail") or {}).get(k) for k in ("p90", "p99", "p99.9")),
                    m.get("dropped_disturbed", 0), m.get("description", "")])
    return f.getvalue()


# ------------------------------------------------- estimates against measurements

@dataclass
class EstimateRow:
    """One id as every output of a run shows it beside its estimate."""

    id: str
    unit: str                  # the measurement's unit
    measured: float | None     # the quoted figure (QUOTED: the median)
    std: float | None
    n: int | None
    lower_bound: bool          # the measurement is a lower bound (a search stopped by a limit)
    est: object | None         # estimates.Estimate, or None: no estimate
    error: float | None        # percent, in the id's unit; None when not comparable
    error_note: str            # "", "no estimate", or why there is no error
    mean: float | None = None
    median: float | None = None
    p99: float | None = None
    quote: str = QUOTED        # which figure `measured` is: "median" or "mean"
    kernel: dict | None = None  # the id's kernel_paths, from a traced run (--kernel-paths)

    def report_cells(self) -> tuple[str, ...]:
        """REPORT_HEAD's cells: every figure of the row in one display unit
        (the unit column), three significant digits; a rate's hardware and
        software estimates as time per unit, their unit in the cell."""
        e = self.est if self.est is not None and self.est.given else None
        scale, shown = display_unit(self.mean if self.mean is not None else self.measured, self.unit)
        f = lambda v: num3(v / scale) if isinstance(v, (int, float)) and math.isfinite(v) else "-"  # noqa: E731
        bound = ">= " if self.lower_bound else ""
        if e and e.unit != self.unit:  # a rate estimated as time per unit: those cells say their unit
            hw, sw = (f"{num3(v)} {e.unit}" if v is not None else "-" for v in (e.hw, e.sw))
        else:
            hw, sw = (f(v) if e else "-" for v in ((e.hw if e else None), (e.sw if e else None)))
        mean = f"{bound}{f(self.mean)} ± {f(self.std)}" if self.mean is not None else "-"
        err = f"{bound}{self.error:+.0f}%" if self.error is not None else "-"
        return (self.id, shown, hw, sw, f(e.predicted) if e else "no estimate", mean, f"{bound}{f(self.median)}",
                f(self.p99), str(self.n) if self.n is not None else "-", err)

    def kernel_cell(self) -> str:
        """The measured kernel share (KERNEL_HEAD): the share of the traced
        sample's time in the kernel (system calls, faults, interrupts,
        softirqs), and, where the id names a kernel timer, that path's
        virtual time per operation in the row's display unit."""
        k = self.kernel or {}
        if not isinstance(k.get("kernel_share"), (int, float)):
            return "-"
        out = f"{k['kernel_share']:.0%}"
        sw = (k.get("software") or {}).get("virtual_ns")
        if isinstance(sw, (int, float)) and self.unit == "ns" and k.get("per") != "I/O":
            scale, _ = display_unit(self.mean if self.mean is not None else self.measured, self.unit)
            out += f" ({num3(sw / scale)})"
        return out

    def cells(self) -> tuple[str, ...]:
        """Measurement, HW est., SW est., Predicted, Measured, Std. dev., n, Error."""
        e = self.est
        eu = e.unit if e else self.unit
        measured = fmt_value(self.measured, self.unit)
        if self.lower_bound:
            measured = f">= {measured}"
        if self.error is not None:
            err = f"{'>= ' if self.lower_bound else ''}{self.error:+.0f}%"
        else:
            err = "-"
        return (self.id, fmt_value(e.hw, eu) if e else "-", fmt_value(e.sw, eu) if e else "-",
                fmt_value(e.predicted, self.unit) if e else "no estimate", measured,
                fmt_value(self.std, self.unit), str(self.n) if self.n is not None else "-", err)


ESTIMATE_HEAD = ("Measurement", "HW est.", "SW est.", "Predicted", "Measured", "Std. dev.", "n", "Error")
REPORT_HEAD = ("Operation", "Unit", "HW est.", "SW est.", "Predicted", "Measured: mean ± std", "Median", "p99", "n",
               "Error")
KERNEL_HEAD = "Kernel (traced)"  # the column a run with --kernel-paths adds: EstimateRow.kernel_cell
KERNEL_NOTE = ("Kernel (traced): in a run of the probe with the kernel's tracer on (--kernel-paths), the share of a "
               "sample's time spent in the kernel on its CPU (system calls, page faults, interrupts, softirqs); in "
               "parentheses, for an operation that names its kernel path, that path's virtual time per operation "
               "(interrupts, softirqs and time off the CPU taken out), in the row's unit: a measured counterpart of "
               "the software estimate, inflated by the tracing itself (its overhead is in results.json).")


def traced(rows: list["EstimateRow"]) -> bool:
    """Whether any row has a kernel-path breakdown: its table gets KERNEL_HEAD."""
    return any(r.kernel for r in rows)

# a time shown in the unit its size calls for; every figure of a row in the same one
_TIME_SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns"))
_BYTE_SCALES = ((2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "bytes"))


def display_unit(v: float | None, unit: str) -> tuple[float, str]:
    """(divisor, unit) to show a row whose typical value is v in."""
    scales = _TIME_SCALES if unit == "ns" else _BYTE_SCALES if unit == "bytes" else None
    if scales is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return 1.0, unit
    for k, name in scales:
        if abs(v) >= k:
            return k, name
    return 1.0, unit


def num3(v: float | None) -> str:
    """Three significant digits, thousands grouped: 59,999 -> 60,000;
    110.04 -> 110; 0.003456 -> 0.00346."""
    if v is None or not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    digits = 3 - 1 - math.floor(math.log10(abs(v)))
    r = round(v, digits)
    if abs(r) >= 100:
        return f"{r:,.0f}"
    return f"{r:.{max(digits, 0)}f}"


def error_pct(measured: float | None, predicted: float | None) -> float | None:
    """(measured - predicted) / predicted, in percent."""
    if measured is None or not predicted or not math.isfinite(measured):
        return None
    return (measured - predicted) / predicted * 100


QUOTES = ("mean", "median")


def estimate_rows(measurements: list[dict], est: dict, curves: set[str] | None = None,
                  quote: str = QUOTED) -> list[EstimateRow]:
    """The rows of estimates against measurements, in the order given;
    curves (drawn, not estimated) are left out. Error is (measured -
    predicted) / predicted of the quoted figure (the median, or the mean
    CSE 221 asks for); a lower bound is compared only when it already
    exceeds the prediction. A blank estimate (no numbers) is no estimate."""
    rows = []
    for m in measurements:
        if curves and m["id"] in curves:
            continue
        e = est.get(m["id"])
        if e is not None and not getattr(e, "given", True):
            e = None
        bound = bool((m.get("params") or {}).get("lower_bound"))
        value = m.get(quote)
        value = value if isinstance(value, (int, float)) else None
        err, note = error_pct(value, e.predicted if e else None), ""
        if e is None:
            note = "no estimate"
        elif bound and value is not None and e.predicted and value < e.predicted:
            err, note = None, "a lower bound below the estimate: not comparable"
        p99 = (m.get("tail") or {}).get("p99")
        rows.append(EstimateRow(m["id"], m["unit"], value, m.get("std"), m.get("n"), bound, e, err, note,
                                m.get("mean"), m.get("median"), p99, quote,
                                m.get("kernel_paths") if isinstance(m.get("kernel_paths"), dict) else None))
    return rows


SPREAD_HEAD = ("id", "processes", "samples", "within a process", "between processes", "larger")


def spread_rows(doc: dict, skip: set[str] = frozenset()) -> list[tuple[str, ...]]:
    """Per id measured in several processes: how much its samples spread
    inside a process, and how much the processes' medians spread (each a
    standard deviation of logs, about a CV), and which of the two weighs
    more on the run's figure (the median of P process medians of n samples:
    pi/2 within^2 / (n P) against between^2 / P)."""
    import math

    rows = []
    for m in doc.get("measurements", []):
        ps = m.get("processes")
        if m["id"] in skip or not isinstance(ps, dict) or not ps.get("n"):
            continue
        w, b = ps.get("within_cv"), ps.get("between_cv")
        n = sum(ps.get("kept") or [0]) / ps["n"]
        larger = "-"
        if isinstance(w, (int, float)) and isinstance(b, (int, float)) and n:
            from_samples = math.pi / 2 * w * w / n
            larger = "between processes" if b * b - from_samples > from_samples else "within a process"
        pct = lambda v: f"{v:.2%}" if isinstance(v, (int, float)) else "-"  # noqa: E731
        rows.append((m["id"], str(ps["n"]), f"{n:.0f}", pct(w), pct(b), larger))
    return rows


def interference_rows(doc: dict) -> list[tuple[str, str]]:
    """What else used the measuring CPU during the run (interference.py)."""
    from osmeter.results.readings import SLOWED, run_level

    f = doc.get("interference") or {}
    lv = run_level(doc)
    out = []
    if "steal_share" in lv:
        out.append(("steal time (all probes)", f"{lv['steal_share']:.2%} of the pinned CPU"))
    if "interrupts_per_s" in lv:
        out.append(("interrupts on the pinned CPU", f"{lv['interrupts_per_s']:,.0f} per second"))
    for key, what in (("noise_start", "at the start"), ("noise_end", "at the end")):
        x = f.get(key)
        if isinstance(x, dict) and isinstance(x.get("lost_share"), (int, float)):
            out.append((f"time lost to interruptions {what}",
                        f"{x['lost_share']:.2%} ({x.get('interruptions_per_s') or 0:,.0f} interruptions per second)"))
    if "core_mhz" in lv:
        out.append(("core clock at the probes' starts and ends (a chain of adds)",
                    f"median {lv['core_mhz']:,.0f} MHz; {lv['core_slowed_share']:.0%} of "
                    f"{lv['core_processes']} processes below {SLOWED:.0%} of it"))
    if "core_width" in lv:
        out.append(("core width at the probes' starts and ends (adds per cycle, eight independent chains)",
                    f"median {lv['core_width']:.2f}; {lv['core_shared_share']:.0%} of "
                    f"{lv['core_width_processes']} processes below {SLOWED:.0%} of it (another thread on the core)"))
    return out


def known(v, why: str) -> str:
    """A value, or 'unknown (why)': a report never prints None."""
    if v is None or v == "" or v == []:
        return f"unknown ({why})"
    return str(v)


def machine_rows(doc: dict) -> list[tuple[str, str]]:
    """The machine and the conditions of a run, as label and value: the
    report's first table and the notebook's. Every value is known or says
    why it is not."""
    m, c = doc.get("machine", {}), doc.get("conditions", {})
    caches = ", ".join(f"L{x['level']} {str(x.get('type', '')).lower()} {fmt_value(x['size'], 'bytes')}"
                       for x in m.get("caches") or [] if x.get("size"))
    sched = c.get("scheduler") or {}
    virt = ", ".join(x for x in (f"{m['hypervisor']} (hypervisor)" if m.get("hypervisor") else "",
                                 f"{m['container']} (container)" if m.get("container") else "") if x) or "none"
    ident = ", ".join(f"{k} {v}" for k, v in (("family", m.get("cpu_family")), ("model", m.get("cpu_model_number")),
                                              ("stepping", m.get("cpu_stepping")),
                                              ("microcode", c.get("microcode"))) if v is not None)
    cpu = (f"{known(m.get('cpu_model'), 'not in /proc/cpuinfo')}" + (f" ({ident})" if ident else "")
           + f"; {known(m.get('online_cpus'), 'not counted')} CPUs online, {known(m.get('arch'), 'not stated')}")
    mm = m.get("memory_modules") or {}
    mods = mm.get("modules") or []
    if mods:
        kinds = {}
        for x in mods:
            key = (x.get("size_bytes"), x.get("type"), x.get("speed_mts"))
            kinds[key] = kinds.get(key, 0) + 1
        modules = ", ".join(f"{n} x {fmt_value(sz, 'bytes')} {t or ''}" + (f"-{sp}" if sp else "")
                            for (sz, t, sp), n in kinds.items())
    else:
        modules = known(None, mm.get("why_unknown") or "not recorded by this osmeter version")
    disks = ", ".join(f"{d['name']} ({fmt_value(d.get('size'), 'bytes')}, "
                      f"{d.get('model') or 'model unknown: none in sysfs'}, "
                      + (f"driver {d['driver']}, " if d.get("driver") else "")
                      + ("rotational" if d.get("rotational") else "not rotational") + ")"
                      for d in m.get("disks") or []) or "none found"
    nics = ", ".join(f"{n['name']} ({n.get('driver') or 'no driver'}" + (f", PCI {n['pci_id']}" if n.get("pci_id") else "")
                     + (f", {n['speed_mbps']} Mb/s" if n.get("speed_mbps") else "") + ")"
                     for n in m.get("nics") or []) or "none found"
    mit = c.get("mitigations") or {}
    affected = {k: v for k, v in mit.items() if v and not str(v).startswith("Not affected")}
    mitig = ("; ".join(f"{k}: {v}" for k, v in affected.items())
             + (f" ({len(mit) - len(affected)} more: not affected)" if len(mit) > len(affected) else "")) \
        if mit else known(None, "no /sys/devices/system/cpu/vulnerabilities")
    freq = c.get("cpufreq_driver") or c.get("governor")
    govern = (f"{known(c.get('governor'), 'none')} ({known(c.get('cpufreq_driver'), 'no driver')})" if freq
              else "unknown (no cpufreq in sysfs: the hypervisor sets the clock)")
    boost = known(c.get("boost"), "no cpufreq boost switch in sysfs")
    smt = ("on" if c.get("smt_active") else "off") + f" (control: {known(c.get('smt_control'), 'no smt/control')})" \
        if c.get("smt_active") is not None else known(None, "no /sys/devices/system/cpu/smt")
    refused = "; ".join(f"{r.get('id')}: {r.get('why')}" for r in doc.get("refused") or [])
    failed = "; ".join(f"{f.get('probe', f.get('id', '?'))}: {f.get('error', f.get('why', ''))}"
                       for f in doc.get("failures") or [] if isinstance(f, dict))
    comp = c.get("compiler") or {}
    commit = c.get("osmeter") or {}
    return [
        ("Host", known(m.get("hostname"), "not recorded")),
        ("CPU", cpu),
        ("Caches", caches or "unknown (not stated by sysfs)"),
        ("Memory", f"{fmt_value(m.get('memory_bytes'), 'bytes')}; modules: {modules}"),
        ("Kernel", f"{known(m.get('kernel'), 'not recorded')} {m.get('kernel_version') or ''}".strip()),
        ("OS", known(m.get("os"), "no /etc/os-release")),
        ("Kernel command line", known(c.get("kernel_cmdline"), "/proc/cmdline unreadable")),
        ("Mitigations", mitig),
        ("Virtualization", virt),
        ("Disks", disks),
        ("NICs", nics),
        ("Pinned CPU", known(c.get("pinned_cpu"), "not pinned")),
        ("Scheduler", f"{sched.get('policy') or 'unknown'} {sched.get('priority', '')}".strip()
         + (f" ({sched['why_not_fifo']})" if sched.get("why_not_fifo") else "")),
        ("Timer", _timer_summary(doc)),
        ("Governor", govern), ("Boost", boost), ("SMT", smt),
        ("THP", known(c.get("thp"), "no transparent_hugepage in sysfs")),
        ("Clocksource", known(c.get("clocksource"), "not in sysfs")),
        ("Load before the run", known(c.get("loadavg_before"), "/proc/loadavg unreadable")),
        ("Compiler", f"{known(comp.get('cc_version'), 'build/buildinfo.json missing')}"
         + (f", {comp['cflags']}" if comp.get("cflags") else "")),
        ("osmeter commit", known(commit.get("commit"), "not a git checkout") + (" (with uncommitted changes)"
                                                                               if commit.get("dirty") else "")),
        ("Preset, wall time", f"{known(c.get('preset'), 'a selection of probes')}, {known(c.get('wall_s'), 'unfinished')} s"),
        ("Refused here", refused or "none"),
        ("Failed probes", failed or "none"),
    ]


def _timer_summary(doc: dict) -> str:
    """Which timer the probes used, from the measurements' own records."""
    kinds: dict[str, Timer] = {}
    for _, t in timers(doc):
        kinds.setdefault(t.kind, t)
    return "; ".join(timer_text(t) for t in kinds.values()) or "-"


def timer_text(t: Timer) -> str:
    """A timer in a few words: its kind, the TSC's invariance or the
    fallback's reason, and the step it really advances by, measured at
    calibration (a guest's scaled TSC moves tens of ticks at a time; every
    batched window spans 100 steps or more)."""
    extra = f" (fallback: {t.fallback})" if t.fallback else " (invariant TSC)" if t.invariant_tsc else ""
    if t.resolution_ns is not None and t.resolution_ns > 0:
        ticks = f" = {t.step_ticks:g} ticks" if t.step_ticks is not None and t.step_ticks > 1 else ""
        extra += f", step {fmt_value(t.resolution_ns, 'ns')}{ticks}"
    return f"{t.kind}{extra}"


LMBENCH_HEAD = ("lmbench row", "figure", "osmeter id")


def lmbench_rows(doc: dict, quote: str = "median") -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    """lmbench's summary tables filled from a run: (title, unit, rows of
    (lmbench's row, figure, osmeter id)), in lmbench's order; a row whose id
    the run lacks says so."""
    from osmeter.present.lmbench import TABLES, value

    got = {m["id"]: m for m in doc.get("measurements", [])}
    out = []
    for title, unit, rows in TABLES:
        cells = []
        for row in rows:
            m = got.get(row[1])
            v = value(m, row, quote) if m else None
            own = (m or {}).get("unit", "")
            shown = unit if own in ("ns", "files/s") else own  # a clock or a count keeps its own unit
            if v is not None and shown == "us":
                v = v / 1e3
            cells.append((row[0], f"{num3(v)} {shown}" if v is not None else "not measured",
                          row[1] + (f" ({row[2][0]}p, {row[2][1]} KiB)" if len(row) > 2 else "")))
        out.append((title, unit, cells))
    return out
