"""`osmeter stability`: the run-to-run spread of every id over several runs,
and per area."""
from __future__ import annotations

from pathlib import Path

from osmeter.core.errors import RunError


def main(args) -> int:
    from osmeter.analysis.stability import (STABILITY_HEAD, area_stability_table, core_state_table, host_params_table,
                                            stability_rows, stability_table)
    from osmeter.results.store import load_side

    try:
        runs = load_side(args.dirs)
    except ValueError as e:
        raise RunError(str(e)) from None
    if len(runs) < 2:
        raise RunError(f"{len(runs)} run: run-to-run spread needs at least two runs")
    rows = stability_rows(runs)
    extra = "".join(f"\n\n{t}" for t in (core_state_table(runs), host_params_table(runs)) if t)
    print(f"{len(runs)} runs.\n{STABILITY_HEAD}{stability_table(rows)}\n\n{area_stability_table(rows)}{extra}")
    return 0


NAME = "stability"


def add_parser(sub) -> None:
    st = sub.add_parser("stability", help="run-to-run spread of every id over several runs, and per area",
                        description="Every run of the campaigns and run directories given (an A/A ab: DIR/a DIR/b) "
                                    "taken together: per id, the run-to-run CV and where its variance comes from; "
                                    "per area, the median CV, the ids at or below 2%% and the worst three.")
    st.add_argument("dirs", type=Path, nargs="+", metavar="DIR")
