"""core/inference.py and the distributions under it (core/stats.py): the
numbers against published tables, and every interval and test that
compare, stability, history and the fleet view state checked by
simulation for what it claims: a 95% interval covers the true value in
95 (+-2)% of simulated campaigns, a test at 5% rejects 5 (+-2)% of
identical sides (or, where the test is conservative by design, at most
that). The draws are seeded: a run of the suite sees the same campaigns
on any machine, so a bound that holds once holds in CI."""
from __future__ import annotations

import math

import numpy as np
import pytest

from osmeter.analysis.per_id import compare_id
from osmeter.core import inference, stats

DRAWS = 1000  # campaigns a claim is checked on: the binomial sd of a 95% coverage is 0.7%


# --- published tables ------------------------------------------------------------------------------

@pytest.mark.parametrize("q,df,want", [(0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 10, 2.228),
                                       (0.95, 5, 2.015), (0.995, 20, 2.845), (0.975, 1e6, 1.960)])
def test_student_t_quantiles_are_those_of_the_table(q, df, want):
    assert stats.t_quantile(q, df) == pytest.approx(want, abs=1e-3)
    assert stats.t_cdf(want, df) == pytest.approx(q, abs=1e-4)


def test_the_normal_and_the_incomplete_beta_against_known_values():
    assert stats.normal_quantile(0.975) == pytest.approx(1.959964, abs=1e-5)
    assert stats.normal_quantile(0.995) == pytest.approx(2.575829, abs=1e-5)
    assert stats.normal_cdf(1.959964) == pytest.approx(0.975, abs=1e-6)
    assert stats.betainc(2, 3, 0.5) == pytest.approx(11 / 16, abs=1e-9)  # a binomial tail: (6 + 4 + 1) / 16


def test_runs_needed_are_cohens_table_and_bh_rejects_as_in_its_paper():
    # Cohen (1988), table 2.4.1: per group at alpha 0.05 two-sided and power 0.8, d = 0.5, 0.8, 1.0
    assert [inference.runs_needed(d, 1.0) for d in (0.5, 0.8, 1.0)] == [64, 26, 17]
    # Benjamini and Hochberg (1995), section 4: of these 15 p values, the 4 smallest are rejected at 0.05
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719,
         0.6528, 0.7590, 1.000]
    assert sum(q <= 0.05 for q in inference.benjamini_hochberg(p)) == 4


def test_the_median_tables_are_what_normal_draws_give():
    """MEDIAN_VAR (the tabulated variance of a normal sample's median) and
    MEDIAN_PIVOT95 (the 95% point of |median| / s) drawn again."""
    rng = np.random.default_rng(40)
    for k in range(2, 13):
        x = rng.normal(size=(200_000, k))
        med = np.median(x, axis=1)
        assert med.var() == pytest.approx(stats.median_var(k), rel=0.02), k
        if k in stats.MEDIAN_PIVOT95:
            got = np.quantile(np.abs(med) / x.std(axis=1, ddof=1), 0.95)
            assert got == pytest.approx(stats.MEDIAN_PIVOT95[k], rel=0.03), k
    assert all(stats.median_var(k) >= 1 / k for k in range(1, 40))  # a median is never better than the mean
    assert all(stats.median_var(k) > stats.median_var(k + 2) for k in range(1, 40))


# --- intervals: coverage by simulation ---------------------------------------------------------------

def coverage(draw, truth: float, draws: int = DRAWS) -> float:
    inside = 0
    for _ in range(draws):
        lo, hi = draw()
        inside += lo <= truth <= hi
    return inside / draws


@pytest.mark.parametrize("n", [20, 100, 1000])
def test_the_median_of_one_process_is_covered_95_percent(n):
    rng = np.random.default_rng(41 + n)
    got = coverage(lambda: stats.bootstrap_ci95_median(100 * np.exp(rng.normal(0, 0.1, n))), 100.0)
    assert 0.93 <= got <= 0.97, got


@pytest.mark.parametrize("procs", [2, 3, 5, 8, 20])
def test_a_runs_figure_interval_covers_95_percent_at_any_process_count(procs):
    """figure_ci, the precision loop's interval of a run's figure. Processes
    sit in modes (a log-normal process effect, 3%) over trial noise (1%).
    Mutant caught: the hierarchical bootstrap of the processes, which
    covered 78% at 3 (the median of 3 lies between their extremes 75% of
    the time) and 89% at 8."""
    rng = np.random.default_rng(50 + procs)

    def draw():
        return stats.figure_ci([100 * np.exp(rng.normal(0, 0.03)) * np.exp(rng.normal(0, 0.01, 50))
                                for _ in range(procs)])
    got = coverage(draw, 100.0)
    assert 0.93 <= got <= 0.97, got


def campaign(rng, runs: int, base: float, run_cv: float = 0.03, trial_cv: float = 0.01, trials: int = 20):
    return [base * np.exp(rng.normal(0, run_cv)) * np.exp(rng.normal(0, trial_cv, trials)) for _ in range(runs)]


@pytest.mark.parametrize("runs_a,runs_b", [(3, 3), (5, 5), (3, 5), (6, 6)])
def test_compares_ratio_interval_covers_95_percent(runs_a, runs_b):
    """compare's interval of B/A (the ratio of the sides' medians of run
    figures), a 10% change under 3% run-to-run drift. Over fewer than
    FEW_GROUPS runs a side it is Student's t on the run figures' logs
    (few_runs_ratio_ci: see its own test; the 1% run-sd floor widens it
    where the runs look quieter than that), from there the hierarchical
    bootstrap. Mutant caught: the bootstrap at 3
    runs a side (89%)."""
    rng = np.random.default_rng(60 + 10 * runs_a + runs_b)

    def draw():
        return compare_id("x", "ns", campaign(rng, runs_a, 100.0), campaign(rng, runs_b, 110.0), area="x").ci
    got = coverage(draw, 1.1, DRAWS if max(runs_a, runs_b) < stats.FEW_GROUPS else 400)
    assert 0.93 <= got <= 0.975, got


@pytest.mark.parametrize("ka,kb,sd_b", [(2, 2, 1), (3, 3, 1), (3, 3, 3), (5, 3, 3), (3, 5, 3), (2, 5, 1),
                                         (3, 10, 1)])
def test_the_few_runs_interval_covers_95_percent_over_counts_and_spreads(ka, kb, sd_b):
    """few_runs_ratio_ci alone (no floor), normal run logs. Mutant caught:
    Welch's degrees of freedom at equal counts (97.7% at 2 runs a side)."""
    rng = np.random.default_rng(130 + 10 * ka + kb + sd_b)

    def draw():
        la, lb = rng.normal(0, 0.05, ka), rng.normal(math.log(1.1), 0.05 * sd_b, kb)
        return inference.few_runs_ratio_ci(la, lb, math.exp(float(np.median(lb) - np.median(la))))
    got = coverage(draw, 1.1, 2000)
    assert 0.93 <= got <= 0.97, got


def test_a_history_change_points_interval_covers_95_percent():
    """history's shift_interval: segments of 3 runs (the least --min-runs
    allows) take the t interval, of 8 the bootstrap. Mutant caught: the
    bootstrap at 3 (89%)."""
    from osmeter.history.changes import shift_interval
    rng, boot = np.random.default_rng(140), np.random.default_rng(141)
    for k, draws in ((3, DRAWS), (8, 400)):
        got = coverage(lambda: shift_interval(100 * np.exp(rng.normal(0, 0.03, k)),
                                              110 * np.exp(rng.normal(0, 0.03, k)), boot)[1:], 1.1, draws)
        assert 0.93 <= got <= 0.97, (k, got)


def test_the_within_run_ratio_interval_covers_95_percent():
    """One run a side: ratio_ci, trials resampled."""
    rng = np.random.default_rng(70)
    got = coverage(lambda: inference.ratio_ci(100 * np.exp(rng.normal(0, 0.1, 50)),
                                              110 * np.exp(rng.normal(0, 0.1, 50))), 1.1, 500)
    assert 0.93 <= got <= 0.97, got


# --- tests: size by simulation --------------------------------------------------------------------

def size(test, draws: int = 4000) -> float:
    return sum(test() < 0.05 for _ in range(draws)) / draws


@pytest.mark.parametrize("n", [5, 10])
def test_welch_rejects_5_percent_of_identical_sides(n):
    rng = np.random.default_rng(80 + n)
    assert 0.03 <= size(lambda: inference.welch(rng.normal(0, 1, n), rng.normal(0, 1, n))[2]) <= 0.07
    # unequal spreads and counts: what Welch's degrees of freedom are for
    assert 0.03 <= size(lambda: inference.welch(rng.normal(0, 1, n), rng.normal(0, 3, n + 3))[2]) <= 0.07


def test_welch_at_two_and_three_runs_is_conservative_never_liberal():
    rng = np.random.default_rng(82)
    for n in (2, 3):
        got = size(lambda: inference.welch(rng.normal(0, 1, n), rng.normal(0, 1, n))[2])
        assert 0.01 <= got <= 0.06, (n, got)


@pytest.mark.parametrize("n", [3, 5, 10])
def test_the_clock_covariate_test_rejects_5_percent_of_identical_sides(n):
    rng = np.random.default_rng(90 + n)

    def p():
        xa, xb = rng.normal(0, 1, n), rng.normal(0, 1, n)
        return inference.t_test(inference.ancova_parts(0.5 * xa + rng.normal(0, 1, n), xa,
                                                       0.5 * xb + rng.normal(0, 1, n), xb))[2]
    assert 0.03 <= size(p) <= 0.07


def test_the_rank_test_of_one_run_a_side_keeps_its_size():
    """mann_whitney (one run a side): normal approximation with a continuity
    correction, a little below 5%."""
    rng = np.random.default_rng(100)
    got = size(lambda: inference.mann_whitney(rng.normal(0, 1, 30), rng.normal(0, 1, 30))[1])
    assert 0.03 <= got <= 0.06, got


def test_equivalence_shows_a_change_at_the_margin_equal_at_most_5_percent():
    """TOST at a true difference on the margin: 5% where the margin is many
    standard errors (its size), less where it is not (no power)."""
    rng = np.random.default_rng(110)
    big = size(lambda: inference.tost(rng.normal(0, 1, 100), rng.normal(0.5, 1, 100), 0.5))
    assert 0.03 <= big <= 0.07, big
    small = size(lambda: inference.tost(rng.normal(0, 1, 5), rng.normal(0.5, 1, 5), 0.5))
    assert small <= 0.07, small


def test_the_two_intervals_of_compare_meet_where_the_groups_are_many():
    """At FEW_GROUPS runs a side both methods state nearly the same width
    (the t interval is no wider than the bootstrap by more than 30%): the
    switch between them is no cliff."""
    rng = np.random.default_rng(120)
    ratio = []
    for _ in range(60):
        a, b = campaign(rng, stats.FEW_GROUPS, 100.0), campaign(rng, stats.FEW_GROUPS, 110.0)
        ma, mb = (np.log([stats.run_figure([x]) for x in side]) for side in (a, b))
        r = math.exp(float(np.median(mb)) - float(np.median(ma)))
        t_lo, t_hi = inference.few_runs_ratio_ci(ma, mb, r)
        b_lo, b_hi = inference.hierarchical_ratio_ci(a, b, resamples=1000)
        ratio.append(math.log(t_hi / t_lo) / math.log(b_hi / b_lo))
    assert 0.8 < float(np.median(ratio)) < 1.3, np.median(ratio)
