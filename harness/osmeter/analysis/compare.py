"""`osmeter compare A B`: what changed between two sides (each one or more
runs or campaigns) beyond run-to-run drift, per id, with a verdict. The
method (the run as the unit, the tests, RUN_SD_FLOOR, the verdicts) is in
docs/DESIGN.md, "Before and after (compare)"; this module carries it out.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from osmeter.analysis.conditions import conditions_diff
from osmeter.analysis.kparts import compare_parts
from osmeter.analysis.model import ALPHA, HOST_MODE_FACTOR, MIN_CHANGE, Comparison, Row, verdict_text
from osmeter.analysis.per_id import compare_id, width_adjust
from osmeter.analysis.verdicts import decide
from osmeter.results.readings import CLOCK_ID, SLOWED, core_clocks, measurement_clock
from osmeter.results.store import Run, load_side


def compare_sides(a: list[Run], b: list[Run], min_change: float = MIN_CHANGE,
                  labels: tuple[str, str] = ("A", "B"), alpha: float = ALPHA,
                  sensitivity: bool = True, within_run_verdicts: bool = False) -> Comparison:
    if not a or not b:
        raise ValueError(f"side {labels[0] if not a else labels[1]} is empty: give at least one run or campaign")
    if not math.isfinite(min_change) or not 0 <= min_change < 10:
        raise ValueError(f"--min-change {min_change}: expected a fraction such as 0.02")
    notes = []
    for label, side in zip(labels, (a, b)):
        presets = sorted({str(r.doc["conditions"].get("preset")) for r in side})
        if len(presets) > 1:
            raise ValueError(f"side {label} mixes presets ({', '.join(presets)}): compare runs of one preset")
        for r in side:
            notes += [f"{label} {r.name}: {n}" for n in r.notes]
    ids_a = _ids(a)
    ids_b = _ids(b)
    common = [i for i in ids_a if i in ids_b]
    if not common:
        raise ValueError("the two sides have no measurement id in common")
    only_a = [i for i in ids_a if i not in ids_b]
    only_b = [i for i in ids_b if i not in ids_a]
    if only_a:
        notes.append(f"only in {labels[0]} (not compared): {', '.join(only_a)}")
    if only_b:
        notes.append(f"only in {labels[1]} (not compared): {', '.join(only_b)}")
    rows = []
    for mid in common:
        unit = ids_a[mid]
        if ids_b[mid] != unit:
            notes.append(f"{mid}: unit {unit} in {labels[0]}, {ids_b[mid]} in {labels[1]} (not compared)")
            continue
        ha, hb, mode_note = host_mode_split(a, b, mid)
        apart = False
        if mode_note:
            notes.append(mode_note)
            apart = min(sum(mid in r.measurements for r in side) for side in (ha, hb)) < 2
            if apart:  # shown on all its runs, and left undecided
                ha, hb = a, b
        ta, tb = _trials(ha, mid), _trials(hb, mid)
        (ta, tb), width = width_adjust([ta, tb], [_widths(ha, mid), _widths(hb, mid)])
        row = compare_id(mid, unit, ta, tb, clocks=(_clocks(ha, mid), _clocks(hb, mid)))
        if row is not None:
            row.host_modes_apart = apart
            row.width = width
            rows.append(row)
        else:  # every sample of one side was disturbed (or not finite): said, never dropped in silence
            empty = [lab for lab, t in zip(labels, (ta, tb)) if not any(x.size for run in t for x in run)]
            notes.append(f"{mid}: no kept sample in {' or '.join(empty)} (every sample disturbed or not finite): "
                         "not compared")
    for label, side in zip(labels, (a, b)):
        short = [f"{mid} ({sum(mid in r.measurements for r in side)} of {len(side)})" for mid in common
                 if sum(mid in r.measurements for r in side) < len(side)]
        if short and len(side) > 1:
            notes.append(f"ids missing from some runs of {label}: {', '.join(short)}")
    decide(rows, min_change, alpha, within_run_verdicts)
    notes += _clock_note(a, b, rows, labels)
    notes += _shared_note(a, b, [r.id for r in rows], labels)
    compare_parts(a, b, rows, min_change, alpha, within_run_verdicts, labels, notes)
    if sensitivity:
        notes += _without_flagged(a, b, rows, min_change, labels, alpha)
    return Comparison(a, b, rows, conditions_diff(a, b), notes, min_change, labels, alpha, within_run_verdicts)


def _clock_note(a: list[Run], b: list[Run], rows: list[Row], labels: tuple[str, str]) -> list[str]:
    """What the ids compared at equal clock (clock_adjust) mean, with each
    side's clock and the verdict on the clock itself."""
    adjusted = [r for r in rows if r.clock_slope is not None]
    if not adjusted:
        return []
    ca, cb = ([c for r in side for c in core_clocks(r.doc)] for side in (a, b))
    own = next((r for r in rows if r.id == CLOCK_ID), None)
    return [f"{len(adjusted)} ids compared at equal core clock (unit 'run, equal clock'): their {labels[1]}/"
            f"{labels[0]} is the change a clock the same on both sides would show. The probe processes' clock "
            f"(a chain of adds): {labels[0]} median {np.median(ca):,.0f} MHz, {labels[1]} {np.median(cb):,.0f} MHz"
            + (f"; {CLOCK_ID}: {verdict_text(own)}" if own else "")]


def _shared_note(a: list[Run], b: list[Run], ids: list[str], labels: tuple[str, str]) -> list[str]:
    """How many of each side's process measurements of the compared ids were
    set aside as run on a shared core (store.Run.shared_processes)."""
    counts = []
    for side in (a, b):
        out = total = 0
        for r in side:
            ms = r.measurements
            for mid in ids:
                m = ms.get(mid)
                if m is not None:
                    out += len(r.shared_processes(m))
                    total += m.processes
        counts.append((out, total))
    if not any(n for n, _ in counts):
        return []
    return [f"process measurements set aside as run on a shared core (the core's width, adds per cycle of eight "
            f"independent chains, below {SLOWED:.0%} of its run's median at the process's start or end: another "
            f"hardware thread on the host's core): {labels[0]} {counts[0][0]} of {counts[0][1]}, {labels[1]} "
            f"{counts[1][0]} of {counts[1][1]}"]


def _without_flagged(a: list[Run], b: list[Run], rows: list[Row], min_change: float, labels: tuple[str, str],
                     alpha: float) -> list[str]:
    """Runs whose sentinels moved inside them, or that a noisier machine
    disturbed (readings.noisy_runs), named; and whether leaving them out
    changes any verdict."""
    from osmeter.results.readings import noisy_runs

    flagged = noisy_runs(a + b)
    for r in a + b:
        if (r.doc.get("sentinels") or {}).get("drifted"):
            flagged.setdefault(r.name, f"drifted inside the run ({r.doc['sentinels'].get('why')})")
    if not flagged:
        return []
    out = [f"flagged run {name}: {why}" for name, why in flagged.items()]
    ka = [r for r in a if r.name not in flagged]
    kb = [r for r in b if r.name not in flagged]
    if not ka or not kb:
        return out + ["leaving out the flagged runs would leave a side empty: their effect is not known"]
    again = compare_sides(ka, kb, min_change, labels, alpha, sensitivity=False)
    before = {r.id: verdict_text(r) for r in rows}
    moved = [f"{r.id} ({before[r.id]} -> {verdict_text(r)})" for r in again.rows
             if r.id in before and before[r.id].split(" (")[0] != verdict_text(r).split(" (")[0]]
    if moved:
        return out + [f"without the flagged runs these verdicts change: {', '.join(moved)}"]
    return out + ["leaving out the flagged runs changes no verdict"]


def compare_paths(a: list[Path], b: list[Path], min_change: float = MIN_CHANGE) -> Comparison:
    if not a or not b:
        raise ValueError(f"side {'A' if not a else 'B'} is empty: give at least one run or campaign")
    return compare_sides(load_side(a), load_side(b), min_change)


def _ids(side: list[Run]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in side:
        for m in r.measurements.values():
            out.setdefault(m.id, m.unit)
    return out


def host_mode_split(a: list[Run], b: list[Run], mid: str) -> tuple[list[Run], list[Run], str | None]:
    """For an id whose probe names a host-mode param (Probe.host_mode): each
    run's mode is "far" where that param (before or after its samples) lies
    over HOST_MODE_FACTOR times the least value among the compared runs,
    else "near". Where the sides' runs are not all in one mode, only the runs
    of the mode both sides have most of are compared, and a note says which
    were left out: a host that moved its vCPUs between A's runs and B's is
    no change of the machine. Returns the runs kept and the note."""
    from osmeter.probes import registry

    found = registry.find_measure(mid)
    key = getattr(found[0], "host_mode", "") if found else ""  # a derived id has none
    if not key:
        return a, b, None

    def values(r: Run) -> list[float]:
        p = r.measurements[mid].params if mid in r.measurements else {}
        return [float(v) for v in (p.get(key), p.get(f"{key}_after"))
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]

    # keyed by the Run object itself: two campaigns on one side may both have a run-01
    vals = {id(r): values(r) for r in a + b}
    lows = [min(v) for v in vals.values() if v]
    if not lows:
        return a, b, None
    ref = min(lows)

    def mode(r: Run) -> str:
        v = vals[id(r)]
        return "unknown" if not v else "far" if max(v) > HOST_MODE_FACTOR * ref else "near"

    ma = {id(r): mode(r) for r in a if mid in r.measurements}
    mb = {id(r): mode(r) for r in b if mid in r.measurements}
    if len(set(ma.values()) | set(mb.values())) <= 1:
        return a, b, None
    pick = max(("near", "far", "unknown"),
               key=lambda m: (min(list(ma.values()).count(m), list(mb.values()).count(m)), m == "near"))
    ka = [r for r in a if ma.get(id(r)) == pick]
    kb = [r for r in b if mb.get(id(r)) == pick]
    left = [f"{lab} {sum(v != pick for v in m.values())} of {len(m)}" for lab, m in (("A", ma), ("B", mb))]
    where = (f"{key} within {HOST_MODE_FACTOR:g}x of the least, {ref:.3g}" if pick == "near"
             else f"{key} over {HOST_MODE_FACTOR:g}x the least, {ref:.3g}" if pick == "far" else f"no {key}")
    note = (f"{mid}: compared on the runs in one host mode ({where}); left out: {', '.join(left)} "
            "(the host's state moved the figure, not the machine)")
    return ka, kb, note


def _trials(side: list[Run], mid: str) -> list[list[np.ndarray]]:
    """Per run, the kept trials of each of its processes."""
    return [r.by_process(r.measurements[mid]) for r in side if mid in r.measurements]


def _widths(side: list[Run], mid: str) -> list[list[float | None]]:
    """Per run that has the id (as _trials), the core width of each of its kept processes."""
    return [r.process_widths(r.measurements[mid]) for r in side if mid in r.measurements]


def _clocks(side: list[Run], mid: str) -> list[float | None]:
    """Per run that has the id (as _trials), the core clock its probe's
    processes ran at (readings.measurement_clock), None where unknown."""
    return [measurement_clock(r.doc, r.measurements[mid]) for r in side if mid in r.measurements]
