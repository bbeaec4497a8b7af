"""`osmeter run`: run probes and write a results directory, or a campaign of
several runs (--runs), with the report and the notebook after it."""
from __future__ import annotations

import sys

from osmeter.cli.common import estimates_of
from osmeter.core.errors import RunError
from osmeter.results import store
from osmeter.running import runopts


def main(args) -> int:
    from osmeter.running.runner import run

    opts = runopts.from_args(args)
    if args.runs:
        from osmeter.running.campaign import run_campaign

        done = run_campaign(opts, args.runs, args.seed)
        if opts.history:
            keep(done.out)
        return done.status
    est = None if args.no_report else estimates_of(args.estimates)
    status, out = run(opts)
    if opts.history:
        keep(out)
    if est is not None and (out / store.RESULTS).exists():
        from osmeter.core.tree import repo_root
        from osmeter.present.latexdoc import build_pdf
        from osmeter.report.latex import write_report

        try:
            tex = write_report(out, est, repo_root(), args.quote)
        except ValueError as e:  # estimates in cycles this run cannot convert, say
            raise RunError(str(e)) from None
        pdf, msg = build_pdf(tex)
        print(f"osmeter: report {tex}; {msg}")
        from osmeter.report.notebook import execute

        ok, msg = execute(out, est, repo_root())
        print(f"osmeter: {msg}", file=sys.stdout if ok else sys.stderr)
        if not ok:  # the measurements stand: the run does not fail on its notebook
            print(f"osmeter: the measurements and the report are complete; make the notebook again with "
                  f"`./osmeter notebook {out} --execute`", file=sys.stderr)
    return status


def keep(out) -> None:
    """The run (or campaign) added to the history; a history that cannot take it is said, and the run stands."""
    from osmeter.history import store as history

    if not out or not (out / store.RESULTS).exists() and not store.is_campaign(out):
        return
    try:
        history.add([out])
    except (RunError, OSError) as e:
        print(f"osmeter: warning: the run was not added to the history: {e}", file=sys.stderr)


NAME = "run"


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="run probes and write a results directory (or a campaign of several runs)")
    runopts.add_to(r, "run")
    r.add_argument("--estimates", metavar="FILE|example", default=None,
                   help="estimates: a TOML file (`osmeter estimates init` writes a blank one for this machine), or 'example' "
                        "for the shipped example (one machine's guesses; the report says so); default none")
    r.add_argument("--quote", choices=("mean", "median"), default="mean",
                   help="the report's measured figure: the mean across trials, as CSE 221 asks (default), or the "
                        "median")
    r.add_argument("--no-report", action="store_true",
                   help="write neither the LaTeX report nor the executed notebook")
