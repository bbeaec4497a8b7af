"""`osmeter export`: a results directory as CSV, one row per measurement."""
from __future__ import annotations

import sys
from pathlib import Path

from osmeter.cli.common import write_output
from osmeter.core.errors import RunError


def main(args) -> int:
    from osmeter.present.rows import to_csv
    from osmeter.results.store import load

    try:
        text = to_csv(load(args.dir))
    except ValueError as e:
        raise RunError(str(e)) from None
    if args.csv:
        write_output(args.csv, text, "--csv")
    else:
        sys.stdout.write(text)
    return 0


NAME = "export"


def add_parser(sub) -> None:
    ex = sub.add_parser("export", help="a results directory as CSV, one row per measurement")
    ex.add_argument("dir", type=Path)
    ex.add_argument("--csv", type=Path, metavar="FILE", help="write here instead of standard output")
