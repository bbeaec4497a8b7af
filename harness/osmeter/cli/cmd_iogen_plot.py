"""`osmeter iogen-plot`: figures from iogen's JSON lines (the size x queue
depth heat map, throughput by offset)."""
from __future__ import annotations

import sys
from pathlib import Path


def main(args) -> int:
    import json

    from osmeter.present import plots
    from osmeter.results.writer import save_figure

    try:
        objs = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"osmeter: error: {args.results}: not iogen's JSON lines ({e})", file=sys.stderr)
        return 2
    figs = [f for f in (fn(objs) for fn in plots.IOGEN_FIGURES) if f is not None]
    if not figs:
        print(f"osmeter: error: {args.results}: nothing to draw (run iogen with --cycle-size and --cycle-qd, "
              "or with --zones)", file=sys.stderr)
        return 2
    for k, fig in enumerate(figs):
        out = args.out if k == 0 else args.out.with_name(f"{args.out.stem}-{k + 1}{args.out.suffix}")
        save_figure(fig, out, dpi=150)
        print(out)
    return 0


NAME = "iogen-plot"


def add_parser(sub) -> None:
    ip = sub.add_parser("iogen-plot", help="figures from iogen's JSON lines: the size x queue depth heat map "
                        "(--cycle-size with --cycle-qd), throughput by offset (--zones)")
    ip.add_argument("results", type=Path, help="iogen's standard output, one JSON object per line")
    ip.add_argument("out", type=Path, help="the PNG to write (a second figure: NAME-2.png)")
