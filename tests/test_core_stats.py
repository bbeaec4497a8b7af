"""core/stats.py: the statistics of one run that every reader shares, each
defined once (the run's figure, the robust standard deviation, the minimum
change), and held to what they claim."""
from __future__ import annotations

import re

import numpy as np

from conftest import ROOT
from osmeter.core import stats


def test_the_robust_sd_is_a_normal_samples_sd_and_far_values_do_not_move_it():
    """1.4826 MAD estimates a normal sample's standard deviation (20,000 draws of sd 0.05: within 3%);
    with 5% of the values far away (x 100) it stays within 10%, where the plain sd is 40 times larger."""
    rng = np.random.default_rng(11)
    x = rng.normal(1.0, 0.05, 20000)
    assert abs(stats.robust_sd(x) / 0.05 - 1) < 0.03
    x[:1000] = 100.0
    assert abs(stats.robust_sd(x) / 0.05 - 1) < 0.10 and np.std(x) > 40 * 0.05
    assert stats.robust_sd([3.0, 3.0, 3.0]) == 0.0


def test_a_runs_figure_is_the_median_of_its_processes_medians_and_the_writer_takes_it():
    """Three processes of 3, 4 and 1 samples: medians 2, 11.5 and 5, figure 5 (the pooled median of
    the eight samples would be 7.5); an empty process counts for nothing; no process, NaN. The writer's
    per-process summary states the same figure, and its within_cv is the root mean square of the
    processes' robust sds of their logs."""
    from osmeter.results.writer import process_summary
    procs = [np.array([1.0, 2.0, 3.0]), np.array([10.0, 11.0, 12.0, 13.0]), np.array([5.0]), np.array([])]
    assert stats.run_figure(procs) == 5.0 and np.median(np.concatenate(procs)) == 7.5
    assert np.isnan(stats.run_figure([])) and np.isnan(stats.run_figure([np.array([])]))
    values = np.concatenate(procs[:3])
    process = np.repeat([0, 1, 2], [3, 4, 1])
    got = process_summary(values, np.ones(values.size, dtype=bool), process)
    assert got["median_of_medians"] == 5.0 and got["medians"] == [2.0, 11.5, 5.0] and got["kept"] == [3, 4, 1]
    want = np.sqrt(np.mean([stats.robust_sd(np.log(p)) ** 2 for p in procs[:2]]))
    assert abs(got["within_cv"] - want) < 1e-12


def test_the_minimum_change_is_one_constant_that_every_default_reads():
    """No function's min_change and no command's --min-change has a default of its own: each reads
    stats.MIN_CHANGE (a literal default is the drift issue 58 found eleven times)."""
    own = []
    for path in sorted((ROOT / "harness" / "osmeter").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r"min_change: float = [0-9.]+|\"--min-change\"[^)]*default=[0-9.]+", text):
            own.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert own == []
    assert stats.MIN_CHANGE == 0.02


def test_an_interval_too_wide_for_a_float_is_unbounded_not_an_error():
    """log_interval brings a log-scale interval back: exp(c -+ h), its ends
    0 and inf where exp would overflow (at one degree of freedom a t
    quantile of 12.7 times a wide spread passes 709). Mutant caught: the
    plain exp, an OverflowError."""
    import math

    from osmeter.core.stats import log_interval

    lo, hi = log_interval(math.log(2.0), math.log(2.0))
    assert abs(lo - 1.0) < 1e-12 and abs(hi - 4.0) < 1e-12
    assert log_interval(0.04, 2700.0) == (0.0, math.inf)
