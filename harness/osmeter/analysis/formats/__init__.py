"""compare's output formats, one module each: the terminal text, Markdown,
CSV and LaTeX. A format that declares an OPTION (csv_table.py) is written
by `osmeter compare` to the file that option names: a new one is its file
here alone."""
from __future__ import annotations

import importlib
import pkgutil


def with_option() -> list:
    """The format modules that declare an OPTION ((flag, metavar, help)),
    in their ORDER: each has render(comparison) -> the file's text."""
    mods = [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)]
    return sorted((m for m in mods if hasattr(m, "OPTION")), key=lambda m: (m.ORDER, m.__name__))
