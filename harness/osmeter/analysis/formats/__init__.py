"""The reporters of compare, the fleet view and stability, one module per
format: the terminal text, Markdown, CSV, LaTeX and plots. A format module
declares what it shows (RENDER: kind -> text, or WRITE: kind -> a writer of
files), the option a command gives it (OPTION, or None for one shown
otherwise) and its place among the options (ORDER). The commands take their
options and their output from here alone: a new format is its file here.

The kinds, and what a renderer or writer of each is given:
  compare    analysis.model.Comparison (two sides)
  fleet      analysis.fleet.FleetComparison (hosts against a baseline)
  stability  the runs taken together (results.store.Run, two or more)
  export     one side's runs (results.store.Run, one or more) for another tool: `osmeter export --format NAME`
             takes the formats that render it, by their NAME (or the names of a dict of renderers)
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.results.writer import write_text_atomic

KINDS = ("compare", "fleet", "stability", "export")


def catalogue() -> list:
    """Every format module, in ORDER."""
    mods = [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)]
    return sorted(mods, key=lambda m: (m.ORDER, m.__name__))


def exporters() -> dict:
    """Name -> renderer of one side's runs for another tool: a format's NAME, or the names its RENDER's
    "export" maps to renderers where it writes more than one file (gab: one per direction)."""
    out = {}
    for m in catalogue():
        r = getattr(m, "RENDER", {}).get("export")
        if r:
            out.update(r if isinstance(r, dict) else {m.NAME: r})
    return out


def serves(fmt, kind: str) -> bool:
    return kind in getattr(fmt, "RENDER", {}) or kind in getattr(fmt, "WRITE", {})


def terminal():
    """The format a command prints."""
    return next(m for m in catalogue() if getattr(m, "TERMINAL", False))


def with_option(kinds: tuple[str, ...] = KINDS) -> list:
    """The formats with an option that serve any of kinds, in ORDER."""
    return [m for m in catalogue() if m.OPTION and any(serves(m, k) for k in kinds)]


def add_options(parser, kinds: tuple[str, ...]) -> None:
    """Each format's option, for a command that shows these kinds."""
    for fmt in with_option(kinds):
        flag, metavar, what = fmt.OPTION
        parser.add_argument(flag, type=Path, metavar=metavar, help=what)


def _dest(fmt) -> str:
    return fmt.OPTION[0].lstrip("-").replace("-", "_")


def asked(args, kinds: tuple[str, ...] = KINDS) -> list[tuple[object, Path]]:
    """(format, path) for every format option given on the command line."""
    return [(f, getattr(args, _dest(f))) for f in with_option(kinds) if getattr(args, _dest(f), None)]


def emit(kind: str, obj, args, kinds: tuple[str, ...] = KINDS) -> None:
    """Print obj in the terminal format, then write each format asked for
    (its option on args) in ORDER. An option whose format does not show
    this kind is refused before anything is printed or written."""
    todo = asked(args, kinds)
    refused = [f"{f.OPTION[0]} shows {' or '.join(k for k in KINDS if serves(f, k))} only" for f, _ in todo
               if not serves(f, kind)]
    if refused:
        raise RunError(f"not for a {kind}: {'; '.join(refused)}")
    print(terminal().RENDER[kind](obj))
    for fmt, path in todo:
        flag = fmt.OPTION[0]
        if kind in getattr(fmt, "RENDER", {}):
            try:
                write_text_atomic(path, fmt.RENDER[kind](obj))
            except OSError as e:
                raise RunError(f"{flag} {path}: cannot write it: {e.strerror}") from None
            continue
        try:
            said = fmt.WRITE[kind](obj, path)
        except OSError as e:
            raise RunError(f"{flag} {path}: " + (f"cannot write it: {e.strerror}" if e.strerror else str(e))) from None
        except ValueError as e:  # what the path asks for cannot be made (matplotlib: an unknown image format)
            raise RunError(f"{flag} {path}: {e}") from None
        if said:
            print(said)
