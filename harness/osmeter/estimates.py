"""Estimates (CSE 221 style) from a TOML file: one table per measurement id
with `hw` (base hardware cost), `sw` (software overhead), `total` (the
prediction; hw + sw when left out) in the id's unit, an optional `unit`
that must match, and an optional `note`."""
from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import registry


class EstimateError(ValueError):
    pass


@dataclass
class Estimate:
    id: str
    hw: float | None
    sw: float | None
    total: float
    note: str = ""


def _num(path: Path, mid: str, key: str, v) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise EstimateError(f"{path}: [\"{mid}\"] {key} = {v!r} is not a number")
    return float(v)


def load(path: Path) -> dict[str, Estimate]:
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise EstimateError(f"cannot read {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise EstimateError(f"{path} is not valid TOML: {e}") from None
    units = {m.id: m.unit for _, m in registry.all_measures()}
    out = {}
    for mid, t in data.items():
        if mid not in units:
            near = difflib.get_close_matches(mid, units, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise EstimateError(f"{path}: unknown measurement id {mid!r}{hint}; see ./osmeter list")
        if not isinstance(t, dict):
            raise EstimateError(f"{path}: {mid!r} must be a table with hw, sw and total")
        extra = set(t) - {"hw", "sw", "total", "unit", "note"}
        if extra:
            raise EstimateError(f"{path}: [\"{mid}\"] has unknown keys: {', '.join(sorted(extra))}")
        if "unit" in t and t["unit"] != units[mid]:
            raise EstimateError(f"{path}: [\"{mid}\"] unit = {t['unit']!r}, but {mid} is measured in {units[mid]!r}")
        hw, sw, total = (_num(path, mid, k, t.get(k)) for k in ("hw", "sw", "total"))
        if total is None:
            if hw is None or sw is None:
                raise EstimateError(f"{path}: [\"{mid}\"] needs total, or both hw and sw")
            total = hw + sw
        out[mid] = Estimate(mid, hw, sw, total, str(t.get("note", "")))
    return out


def error_pct(measured: float | None, est: Estimate | None) -> float | None:
    """(measured - predicted) / predicted, in percent."""
    if est is None or measured is None or not est.total:
        return None
    return (measured - est.total) / est.total * 100
