"""compare's table as CSV (`osmeter compare --csv FILE`): one row per id, a
verdict column, the notes as # lines. A format with an OPTION is one
file: the compare command adds its option and writes what render()
returns."""
from __future__ import annotations

import csv
import io
import math

from osmeter.analysis.kparts import moved_text
from osmeter.analysis.model import DESIGNS, DIRECTIONS, Comparison

CSV_COLUMNS = ("id", "unit", "area", "runs_a", "runs_b", "median_a", "median_b", "ratio", "ci_lo", "ci_hi", "p", "q",
               "basis", "test_unit", "units_a", "units_b", "p_within_run", "p_equivalence", "run_cv", "runs_needed",
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
        w.writerow([r.id, r.unit, r.area, r.n_a, r.n_b, r.median_a, r.median_b, r.ratio, r.ci[0], r.ci[1], r.p, r.q,
                    r.basis, r.test_unit, r.units_a, r.units_b, r.p_within, r.p_equiv,
                    r.run_sd if r.run_sd is not None else "", r.need or "", r.verdict,
                    moved_text(r) if r.parts and r.verdict in DIRECTIONS else "",
                    r.clock_slope if r.clock_slope is not None else "",
                    r.mdc if math.isfinite(r.mdc) else "",
                    *(r.mdc_at[n] if math.isfinite(r.mdc_at.get(n, math.nan)) else "" for n in DESIGNS),
                    *((r.width["slope"], r.width["explained"], int(r.width["applied"])) if r.width else ("", "", ""))])
    return f.getvalue()


# the option `osmeter compare` takes for this format, and its place among the formats' options; the
# command writes render()'s text to the file it names (formats/__init__.py: with_option)
OPTION = ("--csv", "FILE", "also write the table as CSV (a verdict column)")
ORDER = 10


def render(c: Comparison) -> str:
    return to_csv(c)
