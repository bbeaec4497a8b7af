"""`osmeter estimates init`: a blank estimates file for this machine to fill
in."""
from __future__ import annotations

from pathlib import Path

from osmeter.cli.common import Parser
from osmeter.core.errors import RunError
from osmeter.results import store


def main(args) -> int:
    from osmeter.report.estimates import init_text
    from osmeter.results.store import load

    doc = None
    if args.run is not None:
        try:
            doc = load(store.run_dir(args.run))
        except ValueError as e:
            raise RunError(str(e)) from None
    try:
        with open(args.out, "x", encoding="utf-8") as f:  # never over a student's filled-in file
            f.write(init_text(doc))
    except FileExistsError:
        raise RunError(f"{args.out} exists: choose another --out (nothing was overwritten)") from None
    except OSError as e:
        raise RunError(f"{args.out}: cannot write it: {e.strerror}") from None
    n = len(doc["measurements"]) if doc else None
    print(f"estimates: {args.out}: " + (f"the {n} ids of {args.run}" if doc else "every id osmeter measures")
          + f"; fill in hw and sw, then ./osmeter report RUN --estimates {args.out}")
    return 0


NAME = "estimates"


def add_parser(sub) -> None:
    es = sub.add_parser("estimates", help="estimates files: `estimates init` writes a blank one to fill in")
    esub = es.add_subparsers(dest="estimates_cmd", required=True, parser_class=Parser)
    ei = esub.add_parser("init", help="a blank estimates file for this machine: every id (of RUN, when given) "
                                      "with its unit, empty hw/sw/total, reasoning and discussion")
    ei.add_argument("run", type=Path, nargs="?", help="a results directory: its ids only, and its core clock "
                                                      "for estimates in cycles")
    ei.add_argument("--out", type=Path, metavar="FILE", default=Path("estimates.toml"),
                    help="where to write it (default ./estimates.toml; never overwritten)")
