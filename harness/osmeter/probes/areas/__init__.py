"""Every area's probe declarations: one module per area (cpu.py, mem.py,
...), each with AREA (an Area), PROBES, where figures are computed from
several probes DERIVED, and where it draws figures FIGURES (functions of
the results document and the estimates; plots.py has the plot kinds they
share). This package only collects them: a module added here is found
without being named anywhere else. A declaration leaves its area out:
collect() stamps the module's AREA on it, and the module's FIGURES on the
AREA. An area module imports plots (matplotlib) only inside its figure
functions: collecting the declarations draws nothing."""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil

from osmeter.probes.model import Area, Derived, Probe


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


def in_area(decl: Probe | Derived, area: Area, module: str) -> Probe | Derived:
    """The declaration with its module's area; one that names another is an error."""
    name = decl.name if isinstance(decl, Probe) else decl.measure.id
    if decl.area and decl.area != area.name:
        raise ValueError(f"{module}: {name} says area {decl.area!r}, but its module's AREA is {area.name!r}")
    return dataclasses.replace(decl, area=area.name)


def collect() -> tuple[tuple[Area, ...], tuple[Probe, ...], tuple[Derived, ...]]:
    mods = sorted(_modules(), key=lambda mod: mod.AREA.order)
    areas = tuple(dataclasses.replace(mod.AREA, figures=tuple(getattr(mod, "FIGURES", ()))) for mod in mods)
    probes = tuple(in_area(p, mod.AREA, mod.__name__) for mod in mods for p in mod.PROBES)
    derived = tuple(in_area(d, mod.AREA, mod.__name__) for mod in mods for d in getattr(mod, "DERIVED", ()))
    return areas, probes, derived
