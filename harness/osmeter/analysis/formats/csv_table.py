"""The CSV format (`osmeter compare --csv FILE`): of two sides, one row per
id, a verdict column, the conditions that differ and the notes as # lines;
of a fleet, one row per id and host against the baseline."""
from __future__ import annotations

import csv
import io
import math

from osmeter.analysis.fleet import FleetComparison, host_cells
from osmeter.analysis.kparts import moved_text
from osmeter.analysis.model import DESIGNS, DIRECTIONS, Comparison

CSV_COLUMNS = ("id", "unit", "area", "runs_a", "runs_b", "figure_a", "figure_b", "ratio", "ci_lo", "ci_hi", "p", "q",
               "basis", "test_unit", "units_a", "units_b", "p_within_run", "p_equivalence", "unit_cv", "runs_needed",
               "verdict", "moved", "clock_slope", "detectable", *(f"detectable_{n}" for n in DESIGNS), "width_slope",
               "width_explained", "width_applied")


def to_csv(c: Comparison) -> str:
    """One row per id; the verdict column holds one of VERDICTS. Lines
    starting with # before the header give the conditions that differ and
    the notes (read with comment='#')."""
    f = io.StringIO()
    for k, va, vb in c.conditions:
        f.write(f"# condition differs: {k}: {va} -> {vb}\n")
    for n in c.notes:
        f.write(f"# note: {n}\n")
    w = csv.writer(f)
    w.writerow(CSV_COLUMNS)
    for r in c.rows:
        w.writerow([r.id, r.unit, r.area, r.n_a, r.n_b, r.figure_a, r.figure_b, r.ratio, r.ci[0], r.ci[1], r.p, r.q,
                    r.basis, r.test_unit, r.units_a, r.units_b, r.p_within, r.p_equiv,
                    r.unit_cv if r.unit_cv is not None else "", r.runs_needed or "", r.verdict,
                    moved_text(r) if r.parts and r.verdict in DIRECTIONS else "",
                    r.clock_slope if r.clock_slope is not None else "",
                    r.detectable if math.isfinite(r.detectable) else "",
                    *(r.detectable_at[n] if math.isfinite(r.detectable_at.get(n, math.nan)) else "" for n in DESIGNS),
                    *((r.width["slope"], r.width["explained"], int(r.width["applied"])) if r.width else ("", "", ""))])
    return f.getvalue()


def fleet_csv(fc: FleetComparison) -> str:
    """One row per id and host: its figure, the baseline's, the ratio and the verdict."""
    buf = io.StringIO()
    w = csv.writer(buf)
    buf.write(f"# fleet {fc.dir}; baseline {fc.baseline}\n")
    w.writerow(["id", "unit", "host", "figure", "baseline_figure", "ratio", "verdict"])
    for mid, unit in fc.ids:
        base_med, cells = host_cells(fc, mid)
        w.writerow([mid, unit, fc.baseline, base_med, base_med, 1.0, "baseline"])
        for x, c in zip(fc.hosts[1:], cells):
            if c is not None:
                w.writerow([mid, unit, x, c[0], base_med, f"{c[1]:.6g}", c[2]])
    return buf.getvalue()


# the option of the commands that show a comparison or a fleet (formats/__init__.py), its place among them, and
# what it writes of each kind
OPTION = ("--csv", "FILE", "also write the table as CSV (a verdict column)")
ORDER = 10
RENDER = {"compare": to_csv, "fleet": fleet_csv}
