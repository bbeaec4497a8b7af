"""The units measurements are reported in, one table: which way is better
(compare's verdicts and area changes), a rate's time per unit (the unit its
estimates add up in: present.values.convert, estimates) and which units are the
time of one event (results: tail percentiles). A new unit is one row here.
A unit not in the table (a size, a count, a ratio, a clock rate) has no
better direction: compare calls its changes higher or lower."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    name: str
    better: str           # "lower" (a time) or "higher" (a rate)
    per: str = ""         # a rate's time per unit: rate = k / time
    k: float = 0.0
    tail: bool = False    # the time of one event: its measurements get tail percentiles


UNITS = {u.name: u for u in (
    Unit("ns", "lower", tail=True),
    Unit("us", "lower", tail=True),
    Unit("ms", "lower", tail=True),
    Unit("s", "lower", tail=True),
    Unit("cycles", "lower"),
    Unit("MB/s", "higher", per="ns/B", k=1e3),
    Unit("IOPS", "higher", per="us/IO", k=1e6),
    Unit("files/s", "higher", per="us/file", k=1e6),
)}

def better(unit: str) -> str:
    """"lower", "higher", or "" (a unit with no better direction)."""
    u = UNITS.get(unit)
    return u.better if u else ""


def time_per(rate: str) -> str:
    """A rate's time per unit (MB/s: ns/B); "" for a unit that is no rate."""
    u = UNITS.get(rate)
    return u.per if u else ""


def is_time_per(unit: str) -> bool:
    """The time per unit of one of the rates (ns/B, us/IO, ...)."""
    return any(u.per == unit for u in UNITS.values())


def rate_time_pair(unit: str) -> tuple[str, float] | None:
    """The other side of a rate and its time per unit, and k: rate = k / time."""
    u = UNITS.get(unit)
    if u and u.per:
        return u.per, u.k
    return next(((r.name, r.k) for r in UNITS.values() if r.per == unit), None)


def has_tail(unit: str) -> bool:
    """The time of one event: its measurements get tail percentiles."""
    u = UNITS.get(unit)
    return bool(u and u.tail)
