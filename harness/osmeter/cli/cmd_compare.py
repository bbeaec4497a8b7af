"""`osmeter compare`: two sides (or a fleet directory's hosts) compared beyond
run-to-run drift, printed, and written in each format asked for (each
format's own option: analysis/formats/)."""
from __future__ import annotations

from pathlib import Path

from osmeter.analysis import formats
from osmeter.cli.common import fraction, sides
from osmeter.core.errors import RunError
from osmeter.core.stats import MIN_CHANGE
from osmeter.results import store

KINDS = ("compare", "fleet")  # what this command shows, in every format that shows it


def main(args) -> int:
    from osmeter.analysis import compare

    if len(args.dirs) == 1 and store.is_fleet(args.dirs[0]):
        from osmeter.analysis.fleet import compare_fleet

        try:
            fc = compare_fleet(args.dirs[0], args.baseline, args.min_change)
        except ValueError as e:
            raise RunError(str(e)) from None
        formats.emit("fleet", fc, args, KINDS)
        return 0
    if args.baseline:
        raise RunError("--baseline is for a fleet directory (one with fleet.json)")
    a, b = sides(args.dirs)
    try:
        c = compare.compare_paths(a, b, args.min_change)
    except ValueError as e:
        raise RunError(str(e)) from None
    formats.emit("compare", c, args, KINDS)
    return 0


NAME = "compare"


def add_parser(sub) -> None:
    cp = sub.add_parser(
        "compare", help="before/after: what changed beyond run-to-run drift",
        usage="osmeter compare A B [options]  |  osmeter compare A1 A2 ... -- B1 B2 ... [options]",
        description="Each side is a results directory or a campaign (all its runs); several per side are "
                    "separated by --. With several runs per side the unit of the statistics is the run.")
    cp.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="A B, or A1 A2 ... -- B1 B2 ...")
    formats.add_options(cp, KINDS)  # --csv, --tex, --plot
    cp.add_argument("--min-change", type=fraction, default=MIN_CHANGE, metavar="FRACTION",
                    help=f"smallest relative change reported (default {MIN_CHANGE})")

    cp.add_argument("--baseline", metavar="HOST",
                    help="for a fleet directory: the host the others are compared with (default: the first)")
