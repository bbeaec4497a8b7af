"""What the commands share: the parser class (one-line errors, exit 2), the
argument types, the `--` between compare's sides, writing an output file,
and the estimates a run or a report takes."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from osmeter.core.errors import RunError

SIDES = "\0--"  # stands for the `--` between the two sides of compare


class Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 2 with a one-line reason and a hint
        self.print_usage(sys.stderr)
        print(f"osmeter: error: {message}", file=sys.stderr)
        sys.exit(2)


def fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02, got {text!r}") from None
    if not math.isfinite(v) or not 0 <= v < 10:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02 (0 or more, finite), got {text!r}")
    return v


def minutes(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes such as 30, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive, finite number of minutes, got {text!r}")
    return v


def estimates_of(arg: str | None, doc: dict | None = None):
    """--estimates as a Source, checked now (a bad file fails before a run,
    not after it): none, a file, or 'example'."""
    from osmeter.core.tree import repo_root
    from osmeter.report.estimates import EstimateError, for_run, resolve

    source = resolve(arg, repo_root())
    try:
        for_run(source, doc or {"measurements": [{"id": "-", "unit": "MHz", "tsc_hz": 1e9}]})
    except EstimateError as e:
        raise RunError(str(e)) from None
    return source


def write_output(path: Path, text: str, what: str) -> None:
    from osmeter.results.writer import write_text_atomic
    try:
        write_text_atomic(path, text)
    except OSError as e:
        raise RunError(f"{what} {path}: cannot write it: {e.strerror}") from None


def sides(dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    marks = [k for k, d in enumerate(dirs) if str(d) == SIDES]
    if not marks:
        if len(dirs) != 2:
            raise RunError(f"compare takes two directories, A B, or several per side separated by --; got {len(dirs)}")
        return [dirs[0]], [dirs[1]]
    if len(marks) > 1:
        raise RunError("compare takes one -- between the two sides")
    a, b = dirs[:marks[0]], dirs[marks[0] + 1:]
    if not a or not b:
        raise RunError(f"side {'A' if not a else 'B'} is empty: give at least one directory on each side of --")
    return a, b
