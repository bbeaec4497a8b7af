"""`osmeter report`: the LaTeX report (and PDF) of a results directory with
estimates, or of a fleet directory."""
from __future__ import annotations

import sys
from pathlib import Path

from osmeter.cli.common import estimates_of
from osmeter.core.errors import RunError
from osmeter.results import store


def main(args) -> int:
    from osmeter.core.tree import repo_root
    from osmeter.present.latexdoc import LATEX_HINT, build_pdf, latex_installed
    from osmeter.report.latex import write_report
    from osmeter.results.store import load

    args.dir = store.run_dir(args.dir)
    try:
        if store.is_fleet(args.dir):
            from osmeter.analysis.fleet import compare_fleet
            from osmeter.analysis.formats.latex import fleet_document

            tex = fleet_document(compare_fleet(args.dir), args.dir / store.FLEET_TEX)
        else:
            tex = write_report(args.dir, estimates_of(args.estimates, load(args.dir)), repo_root(), args.quote)
    except ValueError as e:
        raise RunError(str(e)) from None
    print(f"report: {tex}")
    if args.no_pdf:
        return 0
    pdf, msg = build_pdf(tex)
    if pdf is None and not args.pdf and not latex_installed():
        print(f"report: no PDF: {LATEX_HINT}")  # not an error unless --pdf asked for it
        return 0
    print(msg, file=sys.stdout if pdf else sys.stderr)
    return 0 if pdf else 1


NAME = "report"


def add_parser(sub) -> None:
    rp = sub.add_parser("report", help="LaTeX report (and PDF) of a results directory, with estimates "
                                       "(of a fleet directory: the Fleet section)")
    rp.add_argument("dir", type=Path)
    rp.add_argument("--estimates", metavar="FILE|example", help="estimates: a TOML file (`osmeter estimates init` writes a blank one for this machine), or 'example' "
                        "for the shipped example (one machine's guesses; the report says so); default none")
    rp.add_argument("--quote", choices=("mean", "median"), default="mean",
                    help="the measured figure: the mean across trials, as CSE 221 asks (default), or the median")
    rp.add_argument("--pdf", action="store_true",
                    help="build the PDF, and fail when LaTeX is missing (by default it is built whenever "
                         "pdflatex or latexmk is installed)")
    rp.add_argument("--no-pdf", action="store_true", help="write the .tex and figures only")
