"""`osmeter export`: a run as CSV, one row per measurement; or, with --format, one side's runs (a run, a
campaign, an ab's side) in the format another tool reads (analysis/formats: benchstat ...)."""
from __future__ import annotations

import sys
from pathlib import Path

from osmeter.cli.common import write_output
from osmeter.core.errors import RunError


def _side(args) -> list:
    from osmeter.results.store import AB_SIDES, ab_sides, load_side

    d = Path(args.dir)
    if d.is_dir() and all((d / s).is_dir() for s in AB_SIDES):
        if not args.side:
            raise RunError(f"{d} is an ab: give --side {' or '.join(s.upper() for s in AB_SIDES)}")
        d = ab_sides(d)[AB_SIDES.index(args.side.lower())]
    elif args.side:
        raise RunError("--side goes with an ab's directory")
    try:
        return load_side([d])
    except ValueError as e:
        raise RunError(str(e)) from None


def main(args) -> int:
    from osmeter.analysis.formats import exporters

    if args.format in (None, "csv"):
        from osmeter.present.rows import to_csv
        from osmeter.results.store import load

        try:
            text = to_csv(load(args.dir))
        except ValueError as e:
            raise RunError(str(e)) from None
    else:
        try:
            text = exporters()[args.format](_side(args))
        except ValueError as e:  # an id the format cannot carry
            raise RunError(f"--format {args.format}: {e}") from None
    out = args.out or args.csv
    if out:
        write_output(out, text, "--out" if args.out else "--csv")
    else:
        sys.stdout.write(text)
    return 0


NAME = "export"


def add_parser(sub) -> None:
    from osmeter.analysis.formats import exporters

    ex = sub.add_parser("export", help="a run as CSV, or one side's runs in another tool's format (--format)")
    ex.add_argument("dir", type=Path)
    ex.add_argument("--format", choices=["csv", *sorted(exporters())], default=None,
                    help="csv (a run, one row per measurement; the default) or a tool's format of one side's runs")
    ex.add_argument("--side", choices=["a", "b", "A", "B"], help="an ab's side to export")
    ex.add_argument("--out", type=Path, metavar="FILE", help="write here (whole, then renamed) instead of standard output")
    ex.add_argument("--csv", type=Path, metavar="FILE", help="the CSV into FILE (the older spelling of --out)")
