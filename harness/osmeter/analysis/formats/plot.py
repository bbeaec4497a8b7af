"""The plot format (`osmeter compare --plot FILE`, PNG, PDF or SVG by its
name): of two sides, every ratio with its interval (a forest plot); of a
fleet, every host's ratio to the baseline per id. matplotlib is imported
when a figure is drawn: every command that shows a comparison builds its
options from this module, and importing pyplot took 1.2 s of each start."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from osmeter.analysis.fleet import FleetComparison, table
from osmeter.analysis.model import Comparison
from osmeter.results.writer import save_figure


def fleet_figure(fc: FleetComparison):
    """Each host's ratio to the baseline, one row per id (log scale), a
    marker per host; filled where the verdict says it changed."""
    import matplotlib.ticker

    from osmeter.present.plots import lit, plt
    head, rows = table(fc)
    ids = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.19 * max(len(ids), 1)))
    y = np.arange(len(ids))[::-1]
    ax.axvline(1, color="black", lw=0.8)
    markers = "osD^v<>p*h"
    for k, x in enumerate(fc.hosts[1:]):
        rs = {r.id: r for r in fc.columns[x].rows}
        pts = [(yy, rs[i]) for yy, i in zip(y, ids) if i in rs and math.isfinite(rs[i].ratio) and rs[i].ratio > 0]
        for yy, r in pts:
            changed = r.verdict not in ("~", "too few runs")
            ax.plot(r.ratio, yy + (k - (len(fc.hosts) - 2) / 2) * 0.18, markers[k % len(markers)],
                    color=f"C{k}", ms=4, mfc=f"C{k}" if changed else "none")
        ax.plot([], [], markers[k % len(markers)], color=f"C{k}", label=lit(x))
    ax.set_yticks(y, [lit(i) for i in ids], fontsize=6.5)
    ax.set_ylim(-0.7, len(ids) - 0.3)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: ""))
    ax.set_xlabel(f"host / {lit(fc.baseline)} (median; filled: a change beyond the spread; log scale)")
    ax.set_title(f"Fleet: every host against {lit(fc.baseline)}")
    ax.legend(fontsize=6.5, loc="lower right", framealpha=0.9)
    return fig


def _save(fig, path: Path) -> None:
    from osmeter.present.plots import plt
    try:
        save_figure(fig, path, bbox_inches="tight")
    finally:
        plt.close(fig)


def compare_plot(c: Comparison, path: Path) -> None:
    from osmeter.present.plots import forest
    _save(forest(c.rows, "Before and after", c.min_change, c.labels), path)


def fleet_plot(fc: FleetComparison, path: Path) -> None:
    if len(fc.hosts) < 2:
        raise ValueError("only one host has results: nothing to draw")
    _save(fleet_figure(fc), path)


# the option of the commands that show a comparison or a fleet (formats/__init__.py), its place among them, and
# what it draws of each kind
OPTION = ("--plot", "FILE", "also draw every ratio with its interval (PNG, PDF, SVG)")
ORDER = 30
WRITE = {"compare": compare_plot, "fleet": fleet_plot}
