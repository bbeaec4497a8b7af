"""Estimates (CSE 221 style) from a TOML file: one table per measurement id
with `hw` (base hardware cost), `sw` (software overhead), `total` (the
prediction; hw + sw when left out), an optional `unit`, the `reasoning`
behind the numbers (`note` is its older name) and the student's
`discussion` of the measurement. Every id is optional, and a table with no
number at all is a blank: no estimate yet, its text kept.

Times add, rates do not: the estimate of a rate (MB/s, IOPS, files/s) is
written as time per unit (unit = "ns/B", "us/IO", "us/file"), where
hw + sw adds up; `predicted` converts the total back to the rate. A rate's
estimate may also be a total alone in the id's own unit. A time may be
given in core cycles (unit = "cycles"), turned into ns with the run's core
clock (core_clock). Curves have no single estimate.

`init_text` writes the blank file `osmeter estimates init` gives a student
for their own machine; the example file is used only when asked for
(`--estimates example`)."""
from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from osmeter.core.units import is_time_per, time_per
from osmeter.present.values import convert
from osmeter.probes import registry

MAX_BYTES = 1 << 20  # an estimates file is a page of text, not a stream


class EstimateError(ValueError):
    pass


EXAMPLE = "example"  # --estimates example: the shipped example file, one machine's guesses


@dataclass
class Estimate:
    id: str
    hw: float | None
    sw: float | None
    total: float | None   # None: a blank (no number given yet)
    note: str = ""        # the reasoning behind the numbers
    unit: str = ""        # the unit hw, sw and total are in (cycles are turned into ns on loading)
    predicted: float | None = None  # total in the id's own unit
    discussion: str = ""  # the student's explanation of the measurement against the estimate
    given_unit: str = ""  # the unit as written ("cycles" where cycles were given)

    @property
    def given(self) -> bool:
        """Numbers were given (not a blank)."""
        return self.total is not None

    @property
    def as_time(self) -> bool:
        """A rate estimated as time per unit."""
        return is_time_per(self.unit)


@dataclass
class Source:
    """Where a run's estimates came from, said on the report's first page."""

    path: Path | None
    example: bool = False

    def describe(self) -> str:
        if self.path is None:
            return "none given: `osmeter estimates init` writes a blank file for this machine"
        if self.example:
            return (f"the example file {self.path.name}, one machine's guesses made for another machine: not "
                    "this student's estimates (`osmeter estimates init` writes a blank file to fill in)")
        return str(self.path)


# an estimate's plausible values, in its own unit (ns, MB/s, ns/B, cycles ...): 0, or within these. Beyond them a
# figure is a typo (1e308 made the total overflow to inf, 1e-300 printed 300 digits), not a machine
PLAUSIBLE = (1e-6, 1e12)


def _num(path: Path, mid: str, key: str, v, unit: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise EstimateError(f"{path}: [\"{mid}\"] {key} = {v!r} is not a number")
    if v < 0:
        raise EstimateError(f"{path}: [\"{mid}\"] {key} = {v!r} is negative: an estimate is a time or a rate, "
                            "0 or more")
    if v and not PLAUSIBLE[0] <= v <= PLAUSIBLE[1]:
        raise EstimateError(f"{path}: [\"{mid}\"] {key} = {v!r} {unit} is not a plausible figure: 0, or from "
                            f"{PLAUSIBLE[0]:g} to {PLAUSIBLE[1]:g}")
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


def load(path: Path, clock_hz: float | None = None) -> dict[str, Estimate]:
    """The estimates of a file. `clock_hz`, the core clock, turns cycles
    into ns; a file that gives cycles without it is refused."""
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
        extra = set(t) - {"hw", "sw", "total", "unit", "note", "reasoning", "discussion"}
        if extra:
            raise EstimateError(f"{path}: [\"{mid}\"] has unknown keys: {', '.join(sorted(extra))}")
        for k in ("note", "reasoning", "discussion"):
            if k in t and not isinstance(t[k], str):
                raise EstimateError(f"{path}: [\"{mid}\"] {k} must be text")
        if "note" in t and "reasoning" in t:
            raise EstimateError(f"{path}: [\"{mid}\"] has both note and reasoning (note is reasoning's old name)")
        text = {"note": t.get("reasoning", t.get("note", "")), "discussion": t.get("discussion", "")}
        if m.curve:
            if any(k in t for k in ("hw", "sw", "total")):
                raise EstimateError(f"{path}: [\"{mid}\"] is a curve: it is drawn, with no single estimate "
                                    f"(estimate the figures found on it instead)")
            out[mid] = Estimate(mid, None, None, None, unit=m.unit, given_unit=m.unit, **text)
            continue
        rate_time = time_per(m.unit) or None
        given_unit = t.get("unit", m.unit)
        cycles = given_unit == "cycles" and m.unit == "ns"
        if given_unit not in (m.unit, rate_time) and not cycles:
            allowed = f"{m.unit!r}" + (f" or {rate_time!r} (time per unit)" if rate_time else "") + \
                (" or 'cycles' (core cycles)" if m.unit == "ns" else "")
            raise EstimateError(f"{path}: [\"{mid}\"] unit = {given_unit!r}, but {mid} is measured in {m.unit!r}: "
                                f"use {allowed}")
        hw, sw, total = (_num(path, mid, k, t.get(k), given_unit) for k in ("hw", "sw", "total"))
        if hw is None and sw is None and total is None:  # a blank: no estimate yet, its text kept
            out[mid] = Estimate(mid, None, None, None, unit=m.unit, given_unit=given_unit, **text)
            continue
        if rate_time and given_unit == m.unit and hw is not None and sw is not None and total is None:
            raise EstimateError(f"{path}: [\"{mid}\"] rates do not add: write hw and sw as time per unit "
                                f"(unit = \"{rate_time}\"), or give the rate as total alone")
        if total is None:
            if hw is None or sw is None:
                raise EstimateError(f"{path}: [\"{mid}\"] needs total, or both hw and sw")
            total = hw + sw
        unit = given_unit
        if cycles:
            if not clock_hz:
                raise EstimateError(f"{path}: [\"{mid}\"] is in cycles, and no core clock is known to turn "
                                    "cycles into ns (give the run the estimates are for)")
            hw, sw, total = (None if v is None else v * 1e9 / clock_hz for v in (hw, sw, total))
            unit = "ns"
        if unit != m.unit and total <= 0:
            raise EstimateError(f"{path}: [\"{mid}\"] a time per unit must be above 0")
        out[mid] = Estimate(mid, hw, sw, total, unit=unit, predicted=convert(total, unit, m.unit),
                            given_unit=given_unit, **text)
    return out


def core_clock(doc: dict | None) -> tuple[float | None, str]:
    """(Hz, where it came from): the core clock a run measured (an id in
    MHz under cpu.clock), else its TSC rate, else none."""
    if not doc:
        return None, "no run given"
    for m in doc.get("measurements", []):
        if m.get("unit") == "MHz" and str(m.get("id", "")).startswith("cpu.clock") and m.get("median"):
            return float(m["median"]) * 1e6, f"the measured core clock ({m['id']})"
    for m in doc.get("measurements", []):
        if isinstance(m.get("tsc_hz"), (int, float)) and m["tsc_hz"] > 0:
            return float(m["tsc_hz"]), "the TSC rate (the core may run faster where it boosts)"
    return None, "the run has neither a core clock nor a TSC rate"


def init_text(doc: dict | None) -> str:
    """A blank estimates file: every id (of the run, when given) with its
    unit, empty numbers to fill in, and its reasoning and discussion."""
    measured = {m["id"] for m in doc["measurements"]} if doc else None
    hz, clock_from = core_clock(doc)
    head = [
        "# Estimates for this machine, CSE 221 style: fill in hw (the base hardware cost),",
        "# sw (the software overhead on top of it) and, if it is not hw + sw, total (the",
        "# prediction), BEFORE you measure; then write what the measurement taught you",
        "# in discussion. An id whose numbers stay commented out has no estimate yet;",
        "# the report then says so. Numbers are in the id's unit (the unit line): a time",
        "# may also be given in core cycles (unit = \"cycles\", turned into ns with the",
        f"# run's core clock: {clock_from}" + (f", {hz / 1e6:.0f} MHz" if hz else "") + "),",
        "# and a rate (MB/s, IOPS, files/s) as time per unit (unit = \"ns/B\", \"us/IO\",",
        "# \"us/file\"), so that hw and sw add up.",
        "#   ./osmeter report RUN --estimates THIS_FILE",
        "",
    ]
    body = []
    by_area: dict[str, list] = {}
    for p, m in registry.all_measures():
        if measured is not None and m.id not in measured:
            continue
        by_area.setdefault(p.area, []).append(m)
    for area in registry.AREAS:
        ms = by_area.get(area.name, [])
        if not ms:
            continue
        body += [f"# ---- {area.title} " + "-" * max(4, 70 - len(area.title)), ""]
        for m in ms:
            body.append(f"[{_toml_str(m.id)}]")
            body.append(f"# {m.description}" + (" (a curve: drawn, not estimated; discuss it)" if m.curve else ""))
            if not m.curve:
                rate_time = time_per(m.unit)
                alt = f' (or "{rate_time}")' if rate_time else (' (or "cycles")' if m.unit == "ns" else "")
                body += [f"unit = {_toml_str(rate_time or m.unit)}  # the id is measured in {m.unit}{alt}",
                         "# hw = ", "# sw = ", "# total = "]
            body += ['reasoning = ""', 'discussion = ""', ""]
    return "\n".join(head + body)


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def resolve(arg: str | Path | None, root: Path) -> Source:
    """--estimates as given: a file, 'example' (the shipped example file),
    or nothing (no estimates: the report says how to write them)."""
    if arg is None or str(arg) == "":
        return Source(None)
    if str(arg) == EXAMPLE:
        return Source(root / "estimates" / "example.toml", example=True)
    return Source(Path(arg))


def for_run(source: Source, doc: dict | None) -> dict[str, Estimate]:
    """The estimates of a source for one run (its core clock turns cycles into ns)."""
    if source.path is None:
        return {}
    return load(source.path, core_clock(doc)[0])
