"""`osmeter notebook`: a results directory's executed notebook, opened in
Jupyter."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from osmeter.cli.common import estimates_of
from osmeter.core.errors import RunError
from osmeter.results import store


def main(args) -> int:
    from osmeter.core.tree import repo_root
    from osmeter.report.notebook import open_in_jupyter

    root = repo_root()
    d = args.dir
    if d is None:
        runs = sorted((root / "results").glob("*/" + store.RESULTS), key=lambda p: p.stat().st_mtime)
        if not runs:
            raise RunError("no results directory in results/: run `make run` first, or name one")
        d = runs[-1].parent
    d = store.run_dir(d)
    if not (d / store.RESULTS).is_file():
        raise RunError(f"{d}: not a results directory (no {store.RESULTS})")
    if args.execute:
        from osmeter.report.notebook import execute

        ok, msg = execute(d, estimates_of(args.estimates), root)
        print(f"osmeter: {msg}", file=sys.stdout if ok else sys.stderr)
        return 0 if ok else 1
    return open_in_jupyter(d, estimates_of(args.estimates), root, args.jupyter_args)


NAME = "notebook"


def add_parser(sub) -> None:
    nbp = sub.add_parser("notebook", help="open a results directory's executed notebook in Jupyter",
                         description="Executes the notebook into DIR when it is not there yet (run does it; --execute "
                                     "does it again and exits), "
                                     "then starts Jupyter's notebook front end on DIR/notebook.ipynb. Options "
                                     "after -- go to Jupyter (e.g. -- --no-browser --port 8890).")
    nbp.add_argument("dir", type=Path, nargs="?", help="a results directory (default: the newest in results/)")
    nbp.add_argument("--estimates", metavar="FILE|example", help="estimates: a TOML file (`osmeter estimates init` writes a blank one for this machine), or 'example' "
                        "for the shipped example (one machine's guesses; the report says so); default none")
    nbp.add_argument("--execute", action="store_true",
                     help="execute the notebook into DIR again (notebook.ipynb, notebook.html) and exit, without "
                          "Jupyter's front end: 0 when every cell ran, 1 when one failed (its error in its output)")
    nbp.add_argument("jupyter_args", nargs="*", help=argparse.SUPPRESS)
