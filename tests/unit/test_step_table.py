"""The goodput policy's step-time table (`policy/step_table.py`) on its own: buckets, the trim,
the plausible bound, caps, floors and estimates, against cells filled with chosen times."""

import math

import pytest

from adaptive_spec.policy.step_table import MAX_BUCKET_EXP, StepTimeTable, bucket_of

from .tables import P2_DENSE_64, P2_DENSE_128, fill_cells


def test_table_estimates_unmeasured_cells_from_neighbours():
    table = StepTimeTable(max_steps=3)
    table.record(8, 0, 0.010)
    table.record(8, 3, 0.020)
    table.record(64, 0, 0.030)
    table.sync(lambda v: v)
    assert table.estimate(bucket_of(8), 3) == pytest.approx(0.020)
    # bucket 64 has k=0 only: scaled by the ratio measured at bucket 8.
    assert table.estimate(bucket_of(64), 3) == pytest.approx(0.030 * 2.0)
    assert table.estimate(bucket_of(64), 1) is None or table.estimate(bucket_of(64), 1) > 0


def test_a_lone_stall_in_a_sync_does_not_move_a_well_measured_cell():
    """Too few samples in a sync for the trim to judge: each is judged by the cell's mean."""
    table = StepTimeTable(max_steps=3)
    for _ in range(12):
        table.record(64, 0, 0.0057)
    table.sync(lambda v: v)
    table.record(64, 0, 0.045)  # alone in its sync
    table.sync(lambda v: v)
    assert table.settled(bucket_of(64), 0) == pytest.approx(0.0057)
    table.record(64, 0, 0.0070)  # a plausible one still moves it
    table.sync(lambda v: v)
    assert table.settled(bucket_of(64), 0) > 0.0058


def test_stalls_are_trimmed_even_when_they_are_most_of_a_sync():
    table = StepTimeTable(max_steps=3)
    for t in (0.090, 0.091, 0.023, 0.089, 0.024, 0.092):  # two probes, four stalled steps
        table.record(128, 2, t)
    table.sync(lambda v: v)
    assert table.estimate(bucket_of(128), 2) == pytest.approx(0.0235)


def test_one_stall_among_a_probes_samples_does_not_move_the_estimate():
    table = StepTimeTable(max_steps=3)
    for t in (0.010, 0.200, 0.011):  # one probe: three steps, the middle one a stall
        table.record(8, 0, t)
    table.sync(lambda v: v)
    assert table.estimate(bucket_of(8), 0) == pytest.approx(0.0105)  # the stall trimmed


def test_larger_batch_ratio_reads_the_nearest_fresh_well_sampled_larger_bucket():
    table = StepTimeTable(max_steps=3)
    for bs, k, s in ((8, 0, 0.010), (8, 2, 0.016), (32, 0, 0.012), (32, 2, 0.024), (128, 2, 0.05)):
        for _ in range(8):
            table.record(bs, k, s)
    table.merge(table.local_vector())
    assert table.larger_batch_ratio(bucket_of(2), 2, 6) == pytest.approx(1.6)  # 8's, not 32's
    assert table.larger_batch_ratio(bucket_of(16), 2, 6) == pytest.approx(2.0)  # 32's
    assert table.larger_batch_ratio(bucket_of(64), 2, 6) is None  # 128 has no k=0
    assert table.larger_batch_ratio(bucket_of(2), 1, 6) is None  # no k=1 anywhere
    assert table.larger_batch_ratio(bucket_of(2), 2, 9) is None  # too few samples
    table.syncs += StepTimeTable.CAP_FRESH_SYNCS + 1  # long ago: no bound on today's costs
    assert table.larger_batch_ratio(bucket_of(2), 2, 6) is None


def test_floor_is_the_slowest_measured_smaller_step_count():
    table = StepTimeTable(max_steps=3)
    for k, t in ((0, 0.010), (1, 0.030)):
        for _ in range(3):
            table.record(256, k, t)
    table.sync(lambda v: v)
    b = bucket_of(256)
    assert table.floor(b, 0) == 0.0
    assert table.floor(b, 1) == pytest.approx(0.010)
    assert table.floor(b, 3) == pytest.approx(0.030)


def test_a_longer_chain_measured_faster_caps_the_shorter_ones():
    """GPU, session 10 (dial 0.7; 2026-11-30-s10-goodput-dial-0.7.json): the final table
    held k=2 at 29.9 ms and k=3 at 17.8 ms for 33-64 requests, k=2 at 10.0 and k=3 at 9.7
    for 9-16. As the floor under k=3, k=2's stalled samples priced k=3 at k=2's time. Stalls
    only slow a step, so the shorter chain's reading is the wrong one: k=3's caps it."""
    table = StepTimeTable(max_steps=3)
    b = bucket_of(16)
    fill_cells(table, 16, {0: (4.95, 30), 1: (7.9, 30), 2: (29.9, 7), 3: (9.7, 30)})
    assert table.settled(b, 2) == pytest.approx(0.0097)
    assert table.floor(b, 3) == pytest.approx(0.0097)
    assert table.settled(b, 1) == pytest.approx(0.0079)  # below every longer chain: its own
    # a longer chain with too few samples caps nothing (one lucky sample is not evidence)
    fill_cells(table, 64, {0: (5.9, 30), 2: (16.0, 30), 3: (12.0, 2)})
    assert table.settled(bucket_of(64), 2) == pytest.approx(0.016)


def test_a_larger_batch_measured_faster_caps_the_smaller_ones():
    """A larger batch never decodes faster, and a stall (here: samples taken between the
    prefills of a ramp-up) only slows a step: the larger bucket's well-sampled, recent cell
    bounds the smaller bucket's, for the same or a longer chain."""
    table = StepTimeTable(max_steps=3)
    fill_cells(table, 64, P2_DENSE_64)
    fill_cells(table, 128, P2_DENSE_128)
    b64 = bucket_of(64)
    assert table.settled(b64, 0) == pytest.approx(0.006726)
    assert table.settled(b64, 3) == pytest.approx(0.022081)  # below 128's k=3: its own
    assert table.settled(bucket_of(128), 0) == pytest.approx(0.006726)
    # an unmeasured cell's estimate is bounded the same way
    fill_cells(table, 16, {0: (30.0, 8), 1: (40.0, 8)})
    assert table.estimate(bucket_of(32), 1) <= 0.015869
    # a bound needs CEILING_SAMPLES samples, and recent ones
    fill_cells(table, 256, {2: (5.0, 2)})
    assert table.settled(b64, 2) == pytest.approx(0.018471)
    for _ in range(table.CAP_FRESH_SYNCS + 1):
        fill_cells(table, 64, {2: (18.471, 6)})
    assert table.settled(b64, 0) == pytest.approx(0.008948)  # 128's k=0 has gone stale


def test_implausibly_slow_drafting_samples_are_dropped():
    table = StepTimeTable(max_steps=3)
    for _ in range(4):
        table.record(8, 0, 0.005)
    table.sync(lambda v: v)
    table.record(8, 1, 0.050)  # 10x a plain step for one draft step: a stall
    table.record(8, 1, 0.007)
    table.sync(lambda v: v)
    assert table.estimate(bucket_of(8), 1) == pytest.approx(0.007)


def test_samples_over_the_plausible_bound_count_when_a_sync_has_enough_of_them():
    """At a large batch the bound is wrong, not the samples: a probe whose steps all read 7x
    a plain step measured a slow cell. A lone one (a single step between syncs) is dropped."""
    table = StepTimeTable(max_steps=3)
    for _ in range(4):
        table.record(200, 0, 0.008)
    table.sync(lambda v: v)
    for t in (0.054, 0.056, 0.057, 0.058, 0.060, 0.055):
        table.record(200, 1, t)  # 7x: over the 1.5 x (2k+2) = 6x bound
    table.sync(lambda v: v)
    assert table.samples(bucket_of(200), 1) == 6
    assert table.estimate(bucket_of(200), 1) == pytest.approx(0.0567, rel=0.01)
    table.record(200, 2, 0.080)  # 10x, alone
    table.sync(lambda v: v)
    assert table.samples(bucket_of(200), 2) == 0


def test_bucket_is_the_capped_ceiling_of_log2_of_the_batch_size():
    import math

    from adaptive_spec.policy.step_table import MAX_BUCKET_EXP, bucket_of

    for n in range(-2, 3 * 2 ** MAX_BUCKET_EXP):
        assert bucket_of(n) == min(MAX_BUCKET_EXP, max(0, math.ceil(math.log2(max(1, n))))), n


def test_a_cells_launched_samples_enter_it_at_its_buckets_launched_share():
    """GPU, sessions 48-49 (16 requests): a cell sampled in an arrival burst, every result
    beside a prefill's launch, read as if every step had one (step_table.py)."""
    table = StepTimeTable(max_steps=3)
    for _ in range(45):  # k = 2's first sync: 5 of 50 beside a launch, the bucket's share 0.1
        table.record(16, 2, 0.010)
    for _ in range(5):
        table.record(16, 2, 0.022, launched=True)
    table.merge(table.local_vector())
    b = bucket_of(16)
    # under LAUNCH_SHARE_MIN (32) samples at the bucket before it: all five in,
    # (45 x 10 + 5 x 22) / 50 = 11.2 ms
    assert table.mean[table._i(b, 2)] == pytest.approx(0.0112)
    assert table.launch_share[b] == pytest.approx(0.1) and table.launch_weight[b] == 50
    for _ in range(13):  # k = 3 in a burst: 7 of its 20 samples beside a launch
        table.record(16, 3, 0.011)
    for _ in range(7):
        table.record(16, 3, 0.022, launched=True)
    table.merge(table.local_vector())
    # ceil(0.1 / 0.9 x 13) = 2 launched in: (13 x 11 + 2 x 22) / 15 = 12.467 ms (all 7: 14.85)
    assert table.mean[table._i(b, 3)] == pytest.approx(0.187 / 15)
    assert table.count[table._i(b, 3)] == 15
    # the share counts every sample seen: (5 + 7) / (50 + 20)
    assert table.launch_share[b] == pytest.approx(12 / 70)
    assert table.snapshot_launch_share() == {"16": [round(12 / 70, 4), 70.0]}
