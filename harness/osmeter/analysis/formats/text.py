"""The terminal's format, what `osmeter compare` and `osmeter stability`
print: for two sides, the table of every id (its figures, ratio, interval,
verdict), the method line that says how the sides were compared, the notes
and the conditions diff; for a fleet, every host's column against the
baseline and the slow node; for several runs, the spread of every id and
area."""
from __future__ import annotations

import math

from osmeter.analysis import outliers
from osmeter.analysis.fleet import FleetComparison, table
from osmeter.analysis.kparts import moved_text
from osmeter.analysis.model import (ALPHA, DESIGNS, DIRECTIONS, FAR_PROCESS, POWER, RUN_SD_FLOOR, WIDTH_P, Comparison,
                                    Row, pct_change, verdict_text)
from osmeter.analysis.stability import (STABILITY_HEAD, area_stability_table, core_state_table, host_params_table,
                                        stability_rows, stability_table)
from osmeter.analysis.verdicts import area_changes, counts
from osmeter.present.values import fmt_value, text_table
from osmeter.results.store import Run


def pct_or_dash(v: float | None) -> str:
    if isinstance(v, float) and v > 10:  # beyond any change worth stating (an early look's tiny level)
        return ">1000%"
    return f"{v:.1%}" if isinstance(v, float) and math.isfinite(v) else "-"


def detectable_text(r: Row) -> str:
    """The row's smallest detectable change: this comparison's, then at DESIGNS runs a side."""
    if not (math.isfinite(r.detectable) or r.detectable == math.inf):
        return "-"
    return " / ".join([pct_or_dash(r.detectable)] + [pct_or_dash(r.detectable_at.get(n)) for n in DESIGNS])


def describe_side(label: str, side: list[Run]) -> str:
    camps = list(dict.fromkeys(str(r.campaign) for r in side if r.campaign))
    dirs = [str(r.path) for r in side if not r.campaign]
    return f"{label}: {len(side)} run{'s' if len(side) != 1 else ''} ({', '.join(camps + dirs)})"


def method_line(c: Comparison) -> str:
    level = f"q < {c.alpha:.2g}" if c.alpha == ALPHA else f"q < {c.alpha:.4f} (this look's share of 5%)"
    if c.basis == "within-run" and c.within_run_verdicts:
        return ("one run per side: verdicts compare the trials of one run with those of the other (Mann-Whitney U, "
                "Benjamini-Hochberg q < 0.05, change >= {:.0%}). That is WITHIN-RUN ONLY: a machine drifts "
                "between runs by more than the spread inside one, so a verdict here may be drift. Repeat each side "
                "(--runs N) to test against run-to-run variance.").format(c.min_change)
    if c.basis == "within-run":
        return ("one run per side: one run against one run cannot tell the machine's drift between runs from a "
                "change, so no id is called changed; 'p within-run' compares the trials of one run with those of "
                "the other (Mann-Whitney U) and is shown for reading only. Repeat each side (osmeter run --runs N, "
                "or osmeter ab) to test against run-to-run variance")
    return (f"a run's figure is the median of its processes' medians; the unit of the test is the run, or the "
            f"process where the runs show no variance beyond their processes' and no process lies over "
            f"{FAR_PROCESS:g} robust sd from its side's median ('unit'); Welch's t test on the logs, "
            f"each side's spread taken as at least {RUN_SD_FLOOR:.0%}, or, with the run as the unit and the core "
            f"clock known for every run ('run, equal clock'), an analysis of covariance on the logs of the runs' "
            f"clocks, whose B/A and interval are then the change at equal clock; where the processes' figures follow "
            f"the core's width (adds per cycle, read at each process's start and end: another thread on the host's "
            f"core) within runs, at p < {WIDTH_P:g}, each process is first brought to the median width by that "
            f"within-run slope ('equal width'); Benjamini-Hochberg {level} over all ids, "
            f"change >= {c.min_change:.0%}; '=': shown within +-{c.min_change:.0%} by two one-sided tests; interval: "
            f"hierarchical bootstrap (runs, then trials), or at equal clock the covariance test's Student's t "
            f"interval; detectable: the smallest change these runs, and {' and '.join(map(str, DESIGNS))} runs a "
            f"side of the same spread, decide {POWER:.0%} of the time at {c.alpha:.2g} (seen as changed by the t "
            f"test, or shown '=' by the one-sided tests if unchanged), and '=' is given only where it is at most "
            f"{c.min_change:.0%}; 'too few runs': a {c.min_change:.0%} change (or the change seen, if larger) is "
            f"below these runs' detectable change, and 'need' runs a side would bring it there")


def cells(c: Comparison) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The table every output of compare shows: header and one row per id."""
    la, lb = c.labels
    if c.basis == "within-run":
        head = ("id", f"{la} median", f"{lb} median", f"{lb}/{la}", "95% CI", "p within-run", "runs", "verdict")
        body = [(r.id, fmt_value(r.figure_a, r.unit), fmt_value(r.figure_b, r.unit), f"{r.ratio:.3f}",
                 f"{r.ci[0]:.3f}..{r.ci[1]:.3f}", f"{r.p_within:.2g}", f"{r.n_a}/{r.n_b}", verdict_text(r))
                for r in c.rows]
        return head, body
    head = ("id", f"{la} median", f"{lb} median", f"{lb}/{la}", "95% CI", "q", "runs", "unit",
            "detectable (" + "/".join(["these"] + [str(n) for n in DESIGNS]) + ")", "verdict")
    body = [(r.id, fmt_value(r.figure_a, r.unit), fmt_value(r.figure_b, r.unit), f"{r.ratio:.3f}",
             f"{r.ci[0]:.3f}..{r.ci[1]:.3f}", f"{r.q:.2g}", f"{r.n_a}/{r.n_b}", unit_text(r), detectable_text(r),
             verdict_text(r))
            for r in c.rows]
    return head, body


def unit_text(r: Row) -> str:
    width = ", equal width" if r.width and r.width.get("applied") else ""
    if r.test_unit == "process":
        return f"process {r.units_a}/{r.units_b}{width}"
    return ("run, equal clock" if r.clock_slope is not None else "run") + width


def text(c: Comparison) -> str:
    la, lb = c.labels
    out = [describe_side(la, c.a), describe_side(lb, c.b), ""]
    if c.conditions:
        out.append(f"Conditions that differ between {la} and {lb}:")
        out += [f"  {k}: {va}  ->  {vb}" for k, va, vb in c.conditions]
    else:
        out.append("Conditions: the same on both sides (every recorded one).")
    if c.notes:
        out += ["", "Notes:"] + [f"  {n}" for n in c.notes]
    out.append("")
    out.append(text_table(*cells(c), left=(0, 7, 9)))
    out.append("")
    per = area_changes(c.rows)
    if per:
        out.append("Per area, geometric mean of the cost ratio (time per operation; rates inverted): "
                   + "; ".join(f"{a} {g:.3f} ({pct_change(g)}, {n} ids)" for a, g, n in per))
    moved = [f"  {r.id}: {moved_text(r)}" for r in c.rows if r.parts and r.verdict in DIRECTIONS]
    if moved:
        out += ["Which part moved (kernel paths of the traced runs, per operation):", *moved, ""]
    out.append(", ".join(f"{n} {v}" for v, n in counts(c.rows).items()) + (" (one run a side)" if c.basis ==
                                                                           "within-run" else ""))
    out.append(f"Method: {method_line(c)}.")
    return "\n".join(out)


def fleet_text(fc: FleetComparison) -> str:
    out = [f"fleet {fc.dir}: {len(fc.hosts)} hosts with results; each column is the host's median over "
           f"{fc.baseline}'s (the baseline); a verdict where the change is beyond the runs' spread"]
    basis = {c.basis for c in fc.columns.values()}
    if "within-run" in basis:
        out.append("one run per host: verdicts are WITHIN-RUN ONLY (run each host with --runs 3 or more to "
                   "test hosts against run-to-run drift)")
    if len(fc.hosts) < 2:
        out.append("only one host has results: nothing to compare")
    else:
        head, rows = table(fc)
        out.append(text_table(head, rows))
        out.append(outliers.text(fc.outliers))
    if fc.conditions:
        out.append("conditions that differ across hosts:")
        out.append(text_table(("condition", *fc.hosts), [(k, *vs) for k, vs in fc.conditions]))
    for s in fc.skipped:
        out.append(f"no results: {s}")
    return "\n".join(out)


def stability_text(runs: list[Run]) -> str:
    """Every id's run-to-run spread and where its variance lies, per area,
    and the cores' state and the host's facts where the runs record them."""
    rows = stability_rows(runs)
    extra = "".join(f"\n\n{t}" for t in (core_state_table(runs), host_params_table(runs)) if t)
    return f"{len(runs)} runs.\n{STABILITY_HEAD}{stability_table(rows)}\n\n{area_stability_table(rows)}{extra}"


# the format each command prints (formats/__init__.py): no option, every kind
TERMINAL = True
OPTION = None
ORDER = 0
RENDER = {"compare": text, "fleet": fleet_text, "stability": stability_text}
