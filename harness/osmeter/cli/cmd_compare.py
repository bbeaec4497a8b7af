"""`osmeter compare`: two sides (or a fleet directory's hosts) compared beyond
run-to-run drift, printed, and written in each format asked for (the formats
that declare an option, then --tex and --plot)."""
from __future__ import annotations

from pathlib import Path

from osmeter.analysis import formats
from osmeter.cli.common import fraction, sides, write_output
from osmeter.core.errors import RunError
from osmeter.results import store
from osmeter.results.writer import save_figure


def main(args) -> int:
    from osmeter.analysis import compare
    from osmeter.analysis.formats.text import text as compare_text

    if len(args.dirs) == 1 and store.is_fleet(args.dirs[0]):
        from osmeter.analysis.fleet import compare_fleet, fleet_text

        if args.tex or args.plot:  # refused before anything is printed or written
            raise RunError("--tex and --plot are for two sides; for a fleet: osmeter report FLEETDIR")
        try:
            fc = compare_fleet(args.dirs[0], args.baseline, args.min_change)
        except ValueError as e:
            raise RunError(str(e)) from None
        print(fleet_text(fc))
        if args.csv:
            from osmeter.analysis.fleet import fleet_csv

            write_output(args.csv, fleet_csv(fc), "--csv")
        return 0
    if args.baseline:
        raise RunError("--baseline is for a fleet directory (one with fleet.json)")
    a, b = sides(args.dirs)
    try:
        c = compare.compare_paths(a, b, args.min_change)
    except ValueError as e:
        raise RunError(str(e)) from None
    print(compare_text(c))
    for fmt in formats.with_option():
        path = getattr(args, fmt.OPTION[0].lstrip("-").replace("-", "_"))
        if path:
            write_output(path, fmt.render(c), fmt.OPTION[0])
    if args.tex:
        from osmeter.core.tree import repo_root
        from osmeter.report.latex import build_pdf, write_compare

        try:
            tex = write_compare(c, args.tex, repo_root())
        except OSError as e:
            raise RunError(f"--tex {args.tex}: cannot write it: {e.strerror}") from None
        pdf, msg = build_pdf(tex)
        print(f"compare: {tex}; {msg}")
    if args.plot:
        from osmeter.present.plots import forest, plt

        fig = forest(c.rows, "Before and after", c.min_change, c.labels)
        try:
            save_figure(fig, args.plot, bbox_inches="tight")
        except (OSError, ValueError) as e:
            raise RunError(f"--plot {args.plot}: {getattr(e, 'strerror', None) or e}") from None
        finally:
            plt.close(fig)
    return 0


NAME = "compare"


def add_parser(sub) -> None:
    cp = sub.add_parser(
        "compare", help="before/after: what changed beyond run-to-run drift",
        usage="osmeter compare A B [options]  |  osmeter compare A1 A2 ... -- B1 B2 ... [options]",
        description="Each side is a results directory or a campaign (all its runs); several per side are "
                    "separated by --. With several runs per side the unit of the statistics is the run.")
    cp.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="A B, or A1 A2 ... -- B1 B2 ...")
    for fmt in formats.with_option():  # each format's own option: --csv
        flag, metavar, what = fmt.OPTION
        cp.add_argument(flag, type=Path, metavar=metavar, help=what)
    cp.add_argument("--tex", type=Path, metavar="FILE",
                    help="also write a LaTeX document (forest plots, conditions diff, table); PDF when LaTeX is there")
    cp.add_argument("--plot", type=Path, metavar="FILE", help="also draw every ratio with its interval (PNG, PDF, SVG)")
    cp.add_argument("--min-change", type=fraction, default=0.02, metavar="FRACTION",
                    help="smallest relative change reported (default 0.02)")

    cp.add_argument("--baseline", metavar="HOST",
                    help="for a fleet directory: the host the others are compared with (default: the first)")
