"""The runs a switch's price is spread over (policy/preferred_runs.py): timed on the cost model's
clock."""

import math

import pytest

from adaptive_spec.policy.preferred_runs import PreferredRuns


def alternate(runs, cycles, drafting_s=0.010, plain_s=0.005, length=3):
    """`cycles` times: drafting preferred for `length` decisions of `drafting_s`, then plain."""
    for _ in range(cycles):
        for preferred, step_s in ((True, drafting_s), (False, plain_s)):
            for _ in range(length):
                runs.observe(preferred)
                runs.tick(step_s)


def test_horizons_are_unbounded_until_a_run_finishes_then_follow_the_runs_timed():
    runs = PreferredRuns()
    assert math.isinf(runs.horizon_s(True)) and math.isinf(runs.horizon_s(False))
    assert runs.snapshot() == {"drafting": [None, 0], "plain": [None, 0]}
    alternate(runs, 30)
    assert runs.horizon_s(True) == pytest.approx(0.030)
    assert runs.horizon_s(False) == pytest.approx(0.015)
    assert runs.snapshot()["drafting"] == [30.0, 30]


def test_a_run_that_lasts_lengthens_its_horizon_at_once():
    runs = PreferredRuns()
    alternate(runs, 30)
    runs.observe(True)  # drafting preferred from here on, for 50 decisions of 10 ms
    for _ in range(50):
        runs.tick(0.010)
        runs.observe(True)
    assert runs.horizon_s(True) == pytest.approx(0.500)  # the current run so far
    assert runs.horizon_s(False) == pytest.approx(0.015)  # the plain runs' mean: not this run


def test_a_few_short_runs_pull_a_long_mean_down_and_a_few_long_ones_back_up():
    runs = PreferredRuns()
    alternate(runs, 1, length=100)
    assert runs.horizon_s(True) == pytest.approx(1.0)
    alternate(runs, 6, length=2)
    assert runs.horizon_s(True) < 0.15
    alternate(runs, 6, length=100)
    assert runs.horizon_s(True) > 0.85
