"""`osmeter stability`: the run-to-run spread of every id over several runs,
and per area."""
from __future__ import annotations

from pathlib import Path

from osmeter.analysis import formats
from osmeter.core.errors import RunError

KINDS = ("stability",)


def main(args) -> int:
    from osmeter.results.store import load_side

    try:
        runs = load_side(args.dirs)
    except ValueError as e:
        raise RunError(str(e)) from None
    if len(runs) < 2:
        raise RunError(f"{len(runs)} run: run-to-run spread needs at least two runs")
    formats.emit("stability", runs, args, KINDS)
    return 0


NAME = "stability"


def add_parser(sub) -> None:
    st = sub.add_parser("stability", help="run-to-run spread of every id over several runs, and per area",
                        description="Every run of the campaigns and run directories given (an A/A ab: DIR/a DIR/b) "
                                    "taken together: per id, the run-to-run CV and where its variance comes from; "
                                    "per area, the median CV, the ids at or below 2%% and the worst three.")
    st.add_argument("dirs", type=Path, nargs="+", metavar="DIR")
    formats.add_options(st, KINDS)  # each format that shows several runs' spread
