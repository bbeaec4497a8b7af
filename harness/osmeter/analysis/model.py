"""compare's model: a row per id (its figures on each side, the ratio and
its interval, the test, the verdict) and the comparison of two sides, the
constants of the method (ALPHA, RUN_SD_FLOOR, the designs stated, the
verdicts), and how a verdict and a change are written."""
from __future__ import annotations

from dataclasses import dataclass, field

from osmeter.core.stats import MIN_CHANGE
from osmeter.results.store import Run

ALPHA = 0.05
# The least run-to-run spread (standard deviation of log run medians) the run-level test assumes. A
# shared machine's runs fall into discrete modes (address layout, the host core a vCPU lands on) a few
# percent apart; three runs a side can all land in one mode by chance, the observed spread is then
# near zero, and a mere split between the sides would look like a change.
RUN_SD_FLOOR = 0.01
# A process whose median lies further than this many robust standard deviations (1.4826 MAD of its side's
# process medians, at least RUN_SD_FLOOR) from its side's median is in a far mode: a host disturbance over
# the whole process, a rare placement. Such modes come at a rate that drifts with time, so processes are
# not draws of one distribution and the run is the unit.
FAR_PROCESS = 4.0
POWER = 0.8
DESIGNS = (4, 8)  # the runs a side each row also states its smallest detectable change for
# the processes of an id are compared at equal core width (width_adjust) where the slope of their figures'
# logs on their width's logs, within runs, is this significant, on this many degrees of freedom or more
WIDTH_P = 0.01
WIDTH_MIN_DF = 6
# the clock's slope in compare's analysis of covariance (clock_adjust) is bounded to +-this: a figure
# follows its core's clock at most in proportion (a time in ns all in core cycles: -1; a rate, or a
# time in cycles spent off the core: +1). A steeper fit is the clock moving with something else in a
# handful of runs (a neighbour that slows both), and extrapolated over the sides' clock gap it makes a
# change of nothing.
CLOCK_MAX_SLOPE = 1.0
# a run whose host-mode param (Probe.host_mode) lies this many times above the least of the
# compared runs' was measured in another state of the host (the vCPUs on two dies, not one)
HOST_MODE_FACTOR = 2.0
VERDICTS = ("faster", "slower", "higher", "lower", "=", "~", "too few runs")
DIRECTIONS = ("faster", "slower", "higher", "lower")
DECIDED = ("faster", "slower", "higher", "lower", "=", "~")


@dataclass
class Row:
    id: str
    unit: str
    area: str
    run_figures_a: list[float]  # each run's figure (core/stats.run_figure: the median of its processes' medians)
    run_figures_b: list[float]
    figure_a: float         # the side's figure: the median of its runs' figures
    figure_b: float
    ratio: float            # B/A
    ci: tuple[float, float]
    p: float                # the test whose unit is `test_unit` (NaN with one run a side)
    basis: str              # "runs" or "within-run"
    unit_cv: float | None   # the spread the test took: the sd of the logs of its unit's values (about their CV),
    #                         at least RUN_SD_FLOOR, or at equal clock the residual sd about the clock's line
    q: float = float("nan")
    runs_needed: int | None = None  # runs per side a decision would need, for "too few runs"
    verdict: str = "~"
    test_unit: str = "run"  # "run", or "process" where the runs show no run-level variance of their own
    #                         and no process is in a far mode (far_processes)
    units_a: int = 0        # how many values of that unit each side had
    units_b: int = 0
    p_within: float = float("nan")  # one run a side: Mann-Whitney on the two runs' trials (within-run only)
    p_equiv: float = float("nan")   # two one-sided tests that the change is inside +-min_change
    components: dict | None = None  # process and run spread of the logs (nested_components)
    # the test's difference of the sides' mean logs, its squared standard error and degrees of freedom
    test_parts: tuple[float, float, float] | None = field(default=None, repr=False)
    # the slope of the run figures' logs on their core clock's logs, where the test compared the runs at
    # equal clock (clock_adjust); None where it did not
    clock_slope: float | None = None
    parts: list = field(default_factory=list)  # its kernel-path components (Rows), where both sides were traced
    # fewer than two runs a side in one host mode (host_mode_split): shown on all its runs, never decided
    host_modes_apart: bool = False
    # the within-run slope of the processes' log figures on their core width's logs (width_adjust): slope,
    # se, df, p, explained (the share of the within-run variance of the process figures), applied
    width: dict | None = None
    # the smallest change this comparison, and 4 and 8 runs a side of the same spread, decide at
    # compare's alpha and POWER (detectable); NaN where the spread is not known
    detectable: float = float("nan")
    detectable_at: dict = field(default_factory=dict)  # runs a side -> smallest change

    @property
    def n_a(self) -> int:
        return len(self.run_figures_a)

    @property
    def n_b(self) -> int:
        return len(self.run_figures_b)


@dataclass
class Comparison:
    a: list[Run]
    b: list[Run]
    rows: list[Row]
    conditions: list[tuple[str, str, str]]   # key, A's value(s), B's value(s)
    notes: list[str] = field(default_factory=list)
    min_change: float = MIN_CHANGE
    labels: tuple[str, str] = ("A", "B")
    alpha: float = ALPHA
    within_run_verdicts: bool = False  # a fleet's hosts of one run each: within-run verdicts, labelled so

    @property
    def basis(self) -> str:
        return "runs" if len(self.a) > 1 or len(self.b) > 1 else "within-run"


def area_of(mid: str) -> str:
    from osmeter.probes import registry

    found = registry.find_measure(mid)
    return found[0].area if found and found[0].area else mid.split(".", 1)[0]


def per_run(r: Row) -> float:
    """Values of the test's unit in one run: 1, or its processes."""
    return (r.units_a + r.units_b) / max(r.n_a + r.n_b, 1) if r.test_unit == "process" else 1.0


def verdict_text(r: Row) -> str:
    if r.verdict == "too few runs" and r.host_modes_apart:
        return "too few runs (in one host mode)"
    if r.verdict == "too few runs":
        return f"too few runs (need {r.runs_needed})" if r.runs_needed else "too few runs (need >200)"
    return r.verdict


def pct_change(g: float) -> str:
    if abs(g - 1) < 5e-4:
        return "no change"
    if g >= 1.5 or g <= 1 / 1.5:  # a large change reads better as a factor
        return f"{max(g, 1 / g):.3g}x {'slower' if g > 1 else 'faster'}"
    return f"{abs(g - 1):.1%} {'slower' if g > 1 else 'faster'}"
