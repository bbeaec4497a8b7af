"""Every area's probe declarations: one module per area (cpu.py, mem.py,
...), each with AREA (an Area), PROBES and, where figures are computed from
several probes, DERIVED. This package only collects them: a module added
here is found without being named anywhere else."""
from __future__ import annotations

import importlib
import pkgutil

from ..probe import Area, Derived, Probe


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


def collect() -> tuple[tuple[Area, ...], tuple[Probe, ...], tuple[Derived, ...]]:
    mods = sorted(_modules(), key=lambda mod: mod.AREA.order)
    areas = tuple(mod.AREA for mod in mods)
    probes = tuple(p for mod in mods for p in mod.PROBES)
    derived = tuple(d for mod in mods for d in getattr(mod, "DERIVED", ()))
    return areas, probes, derived
