"""Presentation, built once: how a value is written with its unit, how a
text table is laid out, and the rows every output of a run shows (the
terminal summary and results.csv)."""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Sequence

QUOTED = "median"  # the figure every output quotes for a measurement: the median across trials

# Rates and the time per unit that estimates add up in: rate = k / time.
RATE_TIME = {"MB/s": ("ns/B", 1e3), "IOPS": ("us/IO", 1e6), "files/s": ("us/file", 1e6)}
TIME_RATE = {t: (rate, k) for rate, (t, k) in RATE_TIME.items()}


def convert(v: float | None, frm: str, to: str) -> float | None:
    """Between a rate and its time per unit (MB/s <-> ns/B, IOPS <-> us/IO,
    files/s <-> us/file); the same unit passes through."""
    if v is None or frm == to:
        return v
    pair = RATE_TIME.get(frm) or TIME_RATE.get(frm)
    if pair is None or pair[0] != to:
        raise ValueError(f"cannot convert {frm} to {to}")
    return pair[1] / v if v else float("inf")


def fmt_value(v: float | None, unit: str) -> str:
    """A number with a sensible precision, and a human unit for ns and bytes."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    if unit == "bytes" and abs(v) >= 1024:
        for scale, name in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(v) >= scale:
                return f"{v / scale:.3g} {name}" if abs(v / scale) < 1000 else f"{v / scale:,.0f} {name}"
    if unit == "ns":
        for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if abs(v) >= scale:
                v, unit = v / scale, name
                break
        if abs(v) >= 1e6:
            return f"{v:.3g} {unit}"
        return f"{v:.3g} {unit}" if abs(v) < 100 else f"{v:.1f} {unit}"
    if abs(v) >= 1e15:
        return f"{v:.3g} {unit}"
    if abs(v) >= 1000:
        return f"{v:,.0f} {unit}"
    return f"{v:.4g} {unit}"


def text_table(head: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0,)) -> str:
    """Columns padded to their widest cell; numbers to the right, the
    columns named in `left` to the left; a rule under the header."""
    rows = [tuple(head)] + [tuple(r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(rows[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows[1:]]
    return "\n".join(x.rstrip() for x in out)


_MD_SPECIAL = set("\\`*_[]()|#!~{}")


def md(s) -> str:
    """Text safe for Markdown that becomes HTML (the notebook): anything from
    a results directory (ids, host facts, notes) shows as the literal text,
    never as markup, a link or HTML (&, <, > as entities; Markdown's
    punctuation backslash-escaped)."""
    out = []
    for c in str(s):
        if c in "&<>":
            out.append({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c])
        elif c in _MD_SPECIAL:
            out.append("\\" + c)
        elif c in "\r\n\t":
            out.append(" ")
        else:
            out.append(c)
    return "".join(out)


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The same cells as a Markdown table (the notebook), every cell escaped (md)."""
    out = ["| " + " | ".join(map(md, head)) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(map(md, r)) + " |" for r in rows]
    return "\n".join(out)


def tex_file_name(s: str) -> str:
    """A file name safe inside \\includegraphics{...}: ASCII letters, digits,
    - and _ only (an id or a file stem from elsewhere could end the brace
    or carry TeX)."""
    return "".join(c if (c.isascii() and c.isalnum()) or c in "-_" else "_" for c in str(s)) or "_"


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
        body.append((m["id"], fmt_value(m.get(QUOTED), unit), p99, fmt_value(t["max"], unit) if t else "",
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


def error_pct(measured: float | None, predicted: float | None) -> float | None:
    """(measured - predicted) / predicted, in percent."""
    if measured is None or not predicted or not math.isfinite(measured):
        return None
    return (measured - predicted) / predicted * 100


def estimate_rows(measurements: list[dict], est: dict, curves: set[str] | None = None) -> list[EstimateRow]:
    """The rows of estimates against measurements, in the order given;
    curves (drawn, not estimated) are left out. Error is (measured -
    predicted) / predicted of the median; a lower bound is compared only
    when it already exceeds the prediction."""
    rows = []
    for m in measurements:
        if curves and m["id"] in curves:
            continue
        e = est.get(m["id"])
        bound = bool((m.get("params") or {}).get("lower_bound"))
        value = m.get(QUOTED)
        err, note = error_pct(value, e.predicted if e else None), ""
        if e is None:
            note = "no estimate"
        elif bound and value is not None and e.predicted and value < e.predicted:
            err, note = None, "a lower bound below the estimate: not comparable"
        rows.append(EstimateRow(m["id"], m["unit"], value, m.get("std"), m.get("n"), bound, e, err, note))
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
    from .interference import run_level

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
    return out


def machine_rows(doc: dict) -> list[tuple[str, str]]:
    """The machine and the conditions of a run, as label and value: the
    report's first table and the notebook's."""
    m, c = doc.get("machine", {}), doc.get("conditions", {})
    caches = ", ".join(f"L{x['level']} {str(x.get('type', '')).lower()} {fmt_value(x['size'], 'bytes')}"
                       for x in m.get("caches") or [] if x.get("size"))
    sched = c.get("scheduler") or {}
    virt = ", ".join(x for x in (f"{m['hypervisor']} (hypervisor)" if m.get("hypervisor") else "",
                                 f"{m['container']} (container)" if m.get("container") else "") if x) or "none"
    timer = _timer_summary(doc)
    return [
        ("CPU", f"{m.get('cpu_model')} ({m.get('online_cpus')} CPUs online, {m.get('arch')})"),
        ("Caches", caches or "not stated by sysfs"),
        ("Memory", fmt_value(m.get("memory_bytes"), "bytes")),
        ("Kernel", str(m.get("kernel"))), ("OS", str(m.get("os"))),
        ("Virtualization", virt),
        ("Disks", ", ".join(f"{d['name']} ({fmt_value(d['size'], 'bytes')})" for d in m.get("disks") or []) or "-"),
        ("NICs", ", ".join(f"{n['name']} ({n['driver']})" for n in m.get("nics") or []) or "-"),
        ("Pinned CPU", str(c.get("pinned_cpu"))),
        ("Scheduler", f"{sched.get('policy')} {sched.get('priority', '')}".strip()
         + (f" ({sched['why_not_fifo']})" if sched.get("why_not_fifo") else "")),
        ("Timer", timer),
        ("Governor / boost / SMT", f"{c.get('governor')} / {c.get('boost')} / {c.get('smt_active')}"),
        ("THP", str(c.get("thp"))), ("Clocksource", str(c.get("clocksource"))),
        ("Compiler", str((c.get("compiler") or {}).get("cc_version"))),
        ("osmeter commit", str((c.get("osmeter") or {}).get("commit"))),
        ("Preset, wall time", f"{c.get('preset')}, {c.get('wall_s')} s"),
    ]


def _timer_summary(doc: dict) -> str:
    """Which timer the probes used, from the measurements' own records."""
    kinds = {}
    for m in doc.get("measurements", []):
        t = m.get("timer")
        if isinstance(t, dict) and t.get("kind"):
            kinds.setdefault(t["kind"], t)
    if not kinds:
        return "-"
    out = []
    for kind, t in kinds.items():
        extra = " (invariant TSC)" if t.get("invariant_tsc") else ""
        if t.get("fallback"):
            extra = f" (fallback: {t['fallback']})"
        res = t.get("resolution_ns")
        if isinstance(res, (int, float)) and res > 0:
            # the step the timer really advances by, measured at calibration (a guest's scaled TSC
            # moves tens of ticks at a time); every batched window spans 100 steps or more
            step = t.get("step_ticks")
            ticks = f" = {step:g} ticks" if isinstance(step, (int, float)) and step > 1 else ""
            extra += f", step {fmt_value(res, 'ns')}{ticks}"
        out.append(f"{kind}{extra}")
    return "; ".join(out)


# --------------------------------------------------------------- LaTeX text

_ESC = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_\allowbreak{}", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


# characters a note or a name may hold that T1 text fonts lack: typeset as math or named
_ESC_WIDE = {"≈": r"$\approx$", "≤": r"$\leq$", "≥": r"$\geq$", "≠": r"$\neq$", "±": r"$\pm$", "×": r"$\times$",
             "÷": r"$\div$", "→": r"$\rightarrow$", "←": r"$\leftarrow$", "∞": r"$\infty$", "−": "-",
             "µ": r"\textmu{}", "μ": r"\textmu{}", "°": r"\textdegree{}", "–": "--", "—": "---", "…": r"\ldots{}",
             "‘": "`", "’": "'", "“": "``", "”": "''", "\u00a0": "~"}


def _esc_char(c: str) -> str:
    if c in _ESC:
        return _ESC[c]
    if c in _ESC_WIDE:
        return _ESC_WIDE[c]
    o = ord(c)
    if c in "\n\r\t":
        return " "
    if o < 0x20 or 0x7F <= o < 0xA0:  # a control character: shown in caret notation, never sent to TeX
        return r"\textasciicircum{}" + ("?" if o == 0x7F else _ESC.get(chr((o & 0x1F) + 0x40), chr((o & 0x1F) + 0x40)))
    if o > 0xFF:  # beyond Latin-1 the fonts have no glyph: named by its code point
        return f"[U+{o:04X}]"
    return c


def esc(s) -> str:
    """Text safe for LaTeX (names, paths, notes: anything not ours): TeX's
    specials escaped, common symbols typeset, control characters shown in
    caret notation, characters the fonts lack named by code point; `--`
    stays two hyphens (an option), not an en dash."""
    return "-{}-".join("".join(map(_esc_char, part)) for part in str(s).split("--"))


def cell(s) -> str:
    """A LaTeX table cell: escaped, with the lower-bound sign typeset."""
    return esc(s).replace(">= ", r"$\geq$ ")
