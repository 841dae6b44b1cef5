"""The runs a switch's price is spread over (policy/preferred_runs.py): timed on the cost model's
clock, kept by the batch bucket they began at."""

import math

import pytest

from adaptive_spec.policy.preferred_runs import PreferredRuns

EDGE, OTHER = 5, 2  # buckets 17-32 and 3-4


def alternate(runs, cycles, drafting_s=0.010, plain_s=0.005, length=3, bucket=EDGE):
    """`cycles` times: drafting preferred for `length` decisions of `drafting_s`, then plain."""
    for _ in range(cycles):
        for preferred, step_s in ((True, drafting_s), (False, plain_s)):
            for _ in range(length):
                runs.observe(preferred, bucket)
                runs.tick(step_s)


def test_horizons_are_unbounded_until_a_run_finishes_then_follow_the_runs_timed():
    runs = PreferredRuns()
    assert math.isinf(runs.horizon_s(True, EDGE)) and math.isinf(runs.horizon_s(False, EDGE))
    assert runs.snapshot() == {"drafting": {}, "plain": {}}
    alternate(runs, 30)
    runs.observe(True, EDGE)  # a new drafting-preferred run begins
    assert runs.horizon_s(True, EDGE) == pytest.approx(0.030)
    assert runs.horizon_s(False, EDGE) == pytest.approx(0.015)
    assert runs.snapshot()["drafting"] == {"32": [30.0, 30]}


def test_runs_that_began_at_another_bucket_say_nothing_of_this_one():
    runs = PreferredRuns()
    alternate(runs, 30)
    runs.observe(True, OTHER)  # the load dropped elsewhere: drafting preferred from 3-4 on
    assert math.isinf(runs.horizon_s(True, OTHER))
    assert runs.horizon_s(False, EDGE) == pytest.approx(0.015)  # not the current run: by bucket


def test_a_run_that_lasts_lengthens_its_horizon_at_once():
    runs = PreferredRuns()
    alternate(runs, 30)
    runs.observe(True, EDGE)  # drafting preferred from here on, for 50 decisions of 10 ms
    for _ in range(50):
        runs.tick(0.010)
        runs.observe(True, EDGE)
    assert runs.horizon_s(True, EDGE) == pytest.approx(0.500)  # the current run so far
    assert runs.horizon_s(False, EDGE) == pytest.approx(0.015)  # the plain runs' mean


def test_a_few_short_runs_pull_a_long_mean_down_and_a_few_long_ones_back_up():
    def horizon_after(runs):
        runs.observe(True, EDGE)
        return runs.horizon_s(True, EDGE)

    runs = PreferredRuns()
    alternate(runs, 1, length=100)
    assert horizon_after(runs) == pytest.approx(1.0)
    alternate(runs, 6, length=2)
    assert horizon_after(runs) < 0.15
    alternate(runs, 6, length=100)
    assert horizon_after(runs) > 0.85
