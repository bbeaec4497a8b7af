"""Estimates (CSE 221 style) from a TOML file: one table per measurement id
with `hw` (base hardware cost), `sw` (software overhead), `total` (the
prediction; hw + sw when left out), an optional `unit` and an optional
`note`. Every id is optional.

Times add, rates do not: the estimate of a rate (MB/s, IOPS, files/s) is
written as time per unit (unit = "ns/B", "us/IO", "us/file"), where
hw + sw adds up; `predicted` converts the total back to the rate. A rate's
estimate may also be a total alone in the id's own unit. Curves have no
single estimate."""
from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import registry
from .present import RATE_TIME, convert

MAX_BYTES = 1 << 20  # an estimates file is a page of text, not a stream


class EstimateError(ValueError):
    pass


@dataclass
class Estimate:
    id: str
    hw: float | None
    sw: float | None
    total: float
    note: str = ""
    unit: str = ""       # the unit hw, sw and total are in
    predicted: float = 0.0  # total in the id's own unit

    @property
    def as_time(self) -> bool:
        """A rate estimated as time per unit."""
        return self.unit in {t for t, _ in RATE_TIME.values()}


def _num(path: Path, mid: str, key: str, v) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise EstimateError(f"{path}: [\"{mid}\"] {key} = {v!r} is not a number")
    return float(v)


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise EstimateError(f"{path} is a directory, not an estimates file") from None
    except OSError as e:
        raise EstimateError(f"cannot read {path}: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise EstimateError(f"{path} is larger than {MAX_BYTES >> 10} KiB: not an estimates file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise EstimateError(f"{path} is not UTF-8 text (byte {e.start}): TOML files are UTF-8") from None


def load(path: Path) -> dict[str, Estimate]:
    try:
        data = tomllib.loads(_read(Path(path)))
    except tomllib.TOMLDecodeError as e:
        raise EstimateError(f"{path} is not valid TOML: {e}") from None
    measures = {m.id: m for _, m in registry.all_measures()}
    out = {}
    for mid, t in data.items():
        if mid not in measures:
            near = difflib.get_close_matches(mid, measures, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise EstimateError(f"{path}: unknown measurement id {mid!r}{hint}; see ./osmeter list")
        m = measures[mid]
        if not isinstance(t, dict):
            raise EstimateError(f"{path}: {mid!r} must be a table with hw, sw and total")
        extra = set(t) - {"hw", "sw", "total", "unit", "note"}
        if extra:
            raise EstimateError(f"{path}: [\"{mid}\"] has unknown keys: {', '.join(sorted(extra))}")
        if m.curve:
            raise EstimateError(f"{path}: [\"{mid}\"] is a curve: it is drawn, with no single estimate "
                                f"(estimate the figures found on it instead)")
        rate_time = RATE_TIME.get(m.unit, (None,))[0]
        unit = t.get("unit", m.unit)
        if unit not in (m.unit, rate_time):
            allowed = f"{m.unit!r}" + (f" or {rate_time!r} (time per unit)" if rate_time else "")
            raise EstimateError(f"{path}: [\"{mid}\"] unit = {unit!r}, but {mid} is measured in {m.unit!r}: "
                                f"use {allowed}")
        hw, sw, total = (_num(path, mid, k, t.get(k)) for k in ("hw", "sw", "total"))
        if rate_time and unit == m.unit and hw is not None and sw is not None and total is None:
            raise EstimateError(f"{path}: [\"{mid}\"] rates do not add: write hw and sw as time per unit "
                                f"(unit = \"{rate_time}\"), or give the rate as total alone")
        if total is None:
            if hw is None or sw is None:
                raise EstimateError(f"{path}: [\"{mid}\"] needs total, or both hw and sw")
            total = hw + sw
        if unit != m.unit and total <= 0:
            raise EstimateError(f"{path}: [\"{mid}\"] a time per unit must be above 0")
        out[mid] = Estimate(mid, hw, sw, total, str(t.get("note", "")), unit, convert(total, unit, m.unit))
    return out
