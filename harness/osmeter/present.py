"""Presentation, built once: how a value is written with its unit, how a
text table is laid out, and the rows every output of a run shows (the
terminal summary and results.csv)."""
from __future__ import annotations

import csv
import io
import math
from typing import Sequence

QUOTED = "median"  # the figure every output quotes for a measurement: the median across trials


def fmt_value(v: float | None, unit: str) -> str:
    """A number with a sensible precision, and a human time unit for ns."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
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


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The same cells as a Markdown table (the notebook)."""
    def cell(c: str) -> str:
        return c.replace("|", "\\|")

    out = ["| " + " | ".join(map(cell, head)) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(out)


def summary_table(doc: dict) -> str:
    """id, median, cycles, spread (std and CI95 of the median), n, dropped."""
    head = ("id", "median", "TSC cycles", "std", "ci95 of median", "n", "dropped")
    body = []
    for m in doc["measurements"]:
        unit = m["unit"]
        cyc = m.get("cycles", {}).get("median")
        lo, hi = m.get("ci95") or (None, None)
        body.append((m["id"], fmt_value(m.get(QUOTED), unit), f"{cyc:.4g}" if isinstance(cyc, (int, float)) else "-",
                     fmt_value(m.get("std"), unit), f"{fmt_value(lo, unit)} .. {fmt_value(hi, unit)}",
                     str(m.get("n")), str(m.get("dropped_disturbed", 0))))
    return text_table(head, body)


CSV_COLUMNS = ("id", "unit", "n", "mean", "median", "std", "min", "max", "ci95_lo", "ci95_hi", "dropped_disturbed",
               "description")


def to_csv(doc: dict) -> str:
    """One row per measurement, for spreadsheets."""
    f = io.StringIO()
    w = csv.writer(f)
    w.writerow(CSV_COLUMNS)
    for m in doc["measurements"]:
        lo, hi = m.get("ci95") or (None, None)
        w.writerow([m["id"], m["unit"], m.get("n"), m.get("mean"), m.get("median"), m.get("std"), m.get("min"),
                    m.get("max"), lo, hi, m.get("dropped_disturbed", 0), m.get("description", "")])
    return f.getvalue()
