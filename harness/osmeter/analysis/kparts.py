"""compare's kernel-path parts: where an id's kernel time moved between the
sides, per group of the kernel-path breakdown (ktrace/kpaths.py), for the
ids both sides traced."""
from __future__ import annotations

import numpy as np

from osmeter.analysis.model import Row, verdict_text
from osmeter.analysis.per_id import compare_id
from osmeter.analysis.verdicts import decide
from osmeter.present.values import fmt_value
from osmeter.results.store import Run

PART_FLOOR = 0.01  # a component under this share of the traced total on both sides is not compared


def _kernel_paths(side: list[Run], mid: str) -> list[dict]:
    return [r.measurements[mid].kernel_paths for r in side
            if mid in r.measurements and r.measurements[mid].kernel_paths is not None]


def compare_parts(a: list[Run], b: list[Run], rows: list[Row], min_change: float, alpha: float,
                   within_run_verdicts: bool, labels: tuple[str, str], notes: list[str]) -> None:
    """Where both sides were traced (--kernel-paths), each component of an
    id's kernel-path breakdown compared like the ids themselves: a run's
    value is its traced run's mean time per operation in that component
    (means, so the components add up to the traced total), B/A and the
    test as compare_id does with the run as unit, Benjamini-Hochberg over
    all the components compared. Row.parts holds them."""
    parts: list[Row] = []
    traced = 0
    for row in rows:
        ka, kb = _kernel_paths(a, row.id), _kernel_paths(b, row.id)
        if not ka or not kb:
            continue
        traced += 1
        names = list(dict.fromkeys(c for kp in ka + kb for c in kp.get("components", {})))
        for c in names:
            va = [float(kp["components"].get(c, 0.0)) for kp in ka]
            vb = [float(kp["components"].get(c, 0.0)) for kp in kb]
            if max(np.median(va) / max(np.median([kp["total_ns"] for kp in ka]), 1e-12),
                   np.median(vb) / max(np.median([kp["total_ns"] for kp in kb]), 1e-12)) < PART_FLOOR:
                continue
            part = compare_id(f"{row.id} [{c}]", "ns", [np.array([v]) for v in va], [np.array([v]) for v in vb],
                              row.area, interval=len(va) > 1 and len(vb) > 1)
            if part is not None:
                part.id = c
                row.parts.append(part)
                parts.append(part)
    if parts:
        decide(parts, min_change, alpha, within_run_verdicts)
        notes.append(f"kernel paths: {traced} id(s) traced on both sides, {len(parts)} components compared (their "
                     "traced runs' mean time per operation; Benjamini-Hochberg over the components)")


def moved_text(r: Row) -> str:
    """The verdict with what moved: "slower +3.1 us, of which softirq NET_RX
    +2.8 us" (the total from the timed runs, the components from the traced
    ones); components only where both sides were traced and one changed."""
    head = verdict_text(r)
    if r.verdict not in ("faster", "slower", "higher", "lower"):
        return head
    head += f" {_signed(r.figure_b - r.figure_a, r.unit)}"
    moved = sorted((p for p in r.parts if p.verdict in ("faster", "slower", "higher", "lower")),
                   key=lambda p: -abs(p.figure_b - p.figure_a))
    if moved:
        head += ", of which " + ", ".join(f"{p.id} {_signed(p.figure_b - p.figure_a, 'ns')}" for p in moved)
    elif r.parts:
        head += ", no component of its kernel path changed beyond run-to-run variation"
    return head


def _signed(v: float, unit: str) -> str:
    return ("+" if v >= 0 else "-") + fmt_value(abs(v), unit)
