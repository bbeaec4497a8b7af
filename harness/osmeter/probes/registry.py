"""The probe registry: collects every area's declarations
(harness/osmeter/probes/areas/<area>.py) and answers the questions the rest of
the harness asks of them: which probes a request selects, which ids exist,
with what unit, in which area."""
from __future__ import annotations

import fnmatch

from osmeter.probes.areas import collect
from osmeter.probes.model import PRESETS, Area, Derived, Measure, Probe  # noqa: F401  (re-exported)

AREAS, PROBES, DERIVED = collect()


def area(name: str) -> Area | None:
    return next((a for a in AREAS if a.name == name), None)


def all_measures() -> list[tuple[Probe | Derived, Measure]]:
    return [(p, m) for p in PROBES for m in p.measures] + [(d, d.measure) for d in DERIVED]


def find_measure(mid: str) -> tuple[Probe, Measure] | None:
    for p, m in all_measures():
        if m.id == mid:
            return p, m
    return None


def matches(pattern: str, mid: str) -> bool:
    """`cpu.*` and other globs; a plain word matches the id or any id under it."""
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(mid, pattern)
    return mid == pattern or mid.startswith(pattern + ".")


class SelectionError(ValueError):
    pass


NEEDS_HINT = {"peer": "--peer HOST:PORT or --remote USER@HOST", "fs_remote": "--fs-remote PATH",
              "app_trace": "--app-trace TRACE"}


def select(patterns: list[str] | None, preset: str, have: frozenset[str] = frozenset(),
           probes: tuple[Probe, ...] | None = None,
           derived: tuple[Derived, ...] | None = None) -> list[tuple[Probe, list[str]]]:
    """Probes to run, each with the ids wanted from it, in registry order.
    A pattern is an id, a prefix of ids, a glob, or a probe's name.
    A probe that only feeds a selected derived figure runs with no id wanted.
    The .remote probes run only when a peer is given."""
    if preset not in PRESETS:
        raise SelectionError(f"unknown preset '{preset}' (choose from {', '.join(PRESETS)})")
    pool = PROBES if probes is None else probes
    derived = select_derived(patterns, DERIVED if derived is None else derived)
    inputs = {i for d in derived for i in d.inputs}
    chosen = []
    used = {pat for pat in patterns or () for d in derived if matches(pat, d.measure.id)}
    for p in pool:
        if preset not in p.presets or (p.needs and p.needs not in have):
            continue
        if patterns is None:
            chosen.append((p, p.ids()))
            continue
        by_name = [pat for pat in patterns if pat == p.name]  # a probe's name (cpu.proc) stands for all its ids
        ids = [i for i in p.ids() if by_name or any(matches(pat, i) for pat in patterns)]
        used.update(pat for pat in patterns for i in p.ids() if matches(pat, i))
        used.update(by_name)
        if ids or inputs & set(p.ids()):
            chosen.append((p, ids))
    if patterns is not None:
        unknown = [pat for pat in patterns if pat not in used]
        for p in pool:
            if p.needs and p.needs not in have and any(matches(pat, m.id) for pat in unknown for m in p.measures):
                raise SelectionError(f"{', '.join(repr(u) for u in unknown)}: these ids need {NEEDS_HINT[p.needs]}")
        if unknown:
            raise SelectionError(
                f"no measurement id matches {', '.join(repr(u) for u in unknown)} "
                f"in preset '{preset}' (see ./osmeter list)"
            )
    return chosen


def select_derived(patterns: list[str] | None, derived: tuple[Derived, ...] | None = None) -> list[Derived]:
    derived = DERIVED if derived is None else derived
    if patterns is None:
        return list(derived)
    return [d for d in derived if any(matches(pat, d.measure.id) for pat in patterns)]
