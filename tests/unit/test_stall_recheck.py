"""A host stall that lands on the chosen k only: its cell jumps, the policy leaves it, and only
a recheck of that k can tell the stall from a new cost (step_table.py `JUMP_RATIO`,
GoodputPolicy._recheck). Simulated costs; no performance claim."""

import pytest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.policy.step_table import StepTimeTable

from .test_switch_cost import run_switching, run_switching_on_ranks, static_rate

BUCKET, K = 2, 3  # 3-4 running, k = 3


def merge_samples(table, ms, n):
    """One sync of `n` samples of `ms` milliseconds each into the (3-4 running, k = 3) cell."""
    for _ in range(n):
        table.record(4, K, ms / 1000)
    table.sync(lambda v: v)


def well_measured_table():
    """The cell at 5.7 ms on 40 samples (JUMP_MIN_SAMPLES is 24), plain beside it at 2.7."""
    table = StepTimeTable(max_steps=3)
    for _ in range(5):
        for _ in range(8):
            table.record(4, 0, 0.0027)
            table.record(4, K, 0.0057)
        table.sync(lambda v: v)
    return table


def test_samples_well_after_a_jump_that_read_as_before_merge_as_if_it_had_not_come():
    table = well_measured_table()
    empty_syncs(table, 1)  # not sampled at the sync before: no hold (`_jump_held`)
    merge_samples(table, 10.0, 32)  # the stall: 10 / 5.7 = 1.75 > 1.25
    # (0.9 x 12 x 5.7 + 32 x 10) / (10.8 + 32) = 381.56 / 42.8 = 8.915 ms: taken at once
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(8.915, abs=0.001)
    for _ in range(4):  # syncs without samples of the cell: RECHECK_SYNCS (4) must pass
        assert table.recheck_due(BUCKET, K) is None
        table.record(4, 0, 0.0027)
        table.sync(lambda v: v)
    before, jump = table.recheck_due(BUCKET, K)
    assert before == pytest.approx(0.0057) and jump == table.syncs - 4
    merge_samples(table, 5.8, 6)
    # against the mean before the jump: (10.8 x 5.7 + 6 x 5.8) / 16.8 = 96.36 / 16.8 = 5.736 ms
    # (against the jumped one, (10.8 x 8.915 + 34.8) / 16.8 = 7.80)
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(5.736, abs=0.001)
    assert table.recheck_due(BUCKET, K) is None
    assert table.merge_events == [(table._i(BUCKET, K), "stall")]
    assert table.jump_counts == {"4": {"jump": 1, "stall": 1}}  # the status's step_jumps


def empty_syncs(table, n):
    """`n` syncs that bring the cell no samples (plain runs)."""
    for _ in range(n):
        table.record(4, 0, 0.0027)
        table.sync(lambda v: v)


def test_a_recheck_that_reads_the_jump_again_takes_it_and_rechecks_later():
    """The stall may outlast the recheck: its samples are taken (the cell starts again from
    them) and the jump stays open for a recheck twice as late (session 58; before, the first
    such reading let the jump stand for good)."""
    table = well_measured_table()
    merge_samples(table, 10.0, 32)  # 8.915 ms, as above
    empty_syncs(table, 4)
    merge_samples(table, 9.0, 6)  # 9.0 > 1.25 x 5.7 = 7.125
    # the cell starts again from them: 9.0 ms on 6 samples (merged against the jumped mean it
    # would read (10.8 x 8.915 + 6 x 9.0) / 16.8 = 8.945)
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(9.0, abs=0.001)
    assert table.samples(BUCKET, K) == 6
    assert table.merge_events == [(table._i(BUCKET, K), "recheck again")]
    jumped_at = table.syncs
    empty_syncs(table, 7)  # the next recheck waits 8 syncs, not 4
    assert table.recheck_due(BUCKET, K) is None
    empty_syncs(table, 1)
    assert table.recheck_due(BUCKET, K) == (pytest.approx(0.0057), jumped_at)
    merge_samples(table, 5.8, 6)  # the stall is over: back to the mean before the jump,
    # weighed as the cell's 6 samples since the restart: 0.9 x 6 = 5.4, (5.4 x 5.7 + 6 x 5.8) /
    # 11.4 = 65.58 / 11.4 = 5.753 ms
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(5.753, abs=0.001)
    assert table.merge_events == [(table._i(BUCKET, K), "stall")]
    assert table.jump_counts == {"4": {"jump": 1, "recheck again": 1, "stall": 1}}


def test_a_jump_that_every_recheck_repeats_stands_after_the_last():
    """Rechecks after 4, 8, 16 and 32 syncs (RECHECK_ROUNDS = 3 more after the first) all read
    it: then it is a new cost, and no recheck is due any more."""
    table = well_measured_table()
    merge_samples(table, 10.0, 32)
    events = []
    for wait in (4, 8, 16, 32):
        empty_syncs(table, wait - 1)
        assert table.recheck_due(BUCKET, K) is None
        empty_syncs(table, 1)
        assert table.recheck_due(BUCKET, K) is not None
        merge_samples(table, 9.0, 6)
        events += [event for _, event in table.merge_events]
    assert events == ["recheck again"] * 3 + ["new cost"]
    assert table.jumped_from[table._i(BUCKET, K)] == 0.0
    empty_syncs(table, 64)
    assert table.recheck_due(BUCKET, K) is None


def test_samples_as_dear_as_the_jump_within_recheck_syncs_do_not_decide():
    """The stall may still last (one of ~1 s spans many syncs while k keeps running): such
    samples merge against the jumped mean and the jump stays open."""
    table = well_measured_table()
    empty_syncs(table, 1)  # not sampled at the sync before: no hold (`_jump_held`)
    merge_samples(table, 10.0, 32)
    merge_samples(table, 9.5, 6)  # 9.5 > 1.25 x 5.7 = 7.125
    # (10.8 x 8.915 + 6 x 9.5) / 16.8 = 153.28 / 16.8 = 9.124 ms
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(9.124, abs=0.001)
    assert table.merge_events == []
    assert table.jumped_from[table._i(BUCKET, K)] == pytest.approx(0.0057)


def test_samples_that_read_as_before_settle_the_jump_at_once():
    table = well_measured_table()
    merge_samples(table, 10.0, 32)
    merge_samples(table, 5.8, 6)  # the next sync: (10.8 x 5.7 + 6 x 5.8) / 16.8 = 5.736 ms
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(5.736, abs=0.001)
    assert table.merge_events == [(table._i(BUCKET, K), "stall")]


def test_a_stall_that_began_before_a_sync_is_measured_from_the_mean_before_it():
    table = well_measured_table()
    merge_samples(table, 6.5, 32)  # 6.5 / 5.7 = 1.14: no jump
    # (10.8 x 5.7 + 32 x 6.5) / 42.8 = 269.56 / 42.8 = 6.298 ms
    assert table.mean[table._i(BUCKET, K)] * 1000 == pytest.approx(6.298, abs=0.001)
    merge_samples(table, 10.0, 32)  # 10 / 6.298 = 1.59: a jump, from the lower 5.7
    assert table.jumped_from[table._i(BUCKET, K)] == pytest.approx(0.0057)


# Session 53's final table at 3-4 running on the MoE layout (H100, ms, k = 0..3; k = 2 put
# between k = 1 and 3, its 6.16 read on few samples after switches)
MOE4_MS = (2.67, 5.32, 5.5, 5.72)


def stalled_costs(start, length, factor):
    """Every k's step `factor` x dearer for decisions start .. start + length - 1 (a host
    stall: it lands on whichever k runs then), one call a decision."""
    calls = [0]

    def cost(bs):
        i = calls[0]
        calls[0] += 1
        f = factor if start <= i < start + length else 1.0
        return tuple(f * ms / 1000 for ms in MOE4_MS)
    return cost


@pytest.mark.parametrize("factor, length", [(2.0, 40), (3.0, 64)])
def test_a_stall_on_the_chosen_k_does_not_keep_it_unchosen(factor, length):
    """4 running for 8,000 decisions, k = 3 the better choice (2.53 / 5.72 against 1 / 2.67 a
    ms: 1.18x plain), every step `factor` x dearer for `length` decisions from 3,000, while
    k = 3 runs. Before the recheck, plain ran on 1,993 (2x) and 1,972 (3x) of the 2,000
    decisions after the stall, 0.92-0.96x of static k = 3; the recheck without the realized
    sums put back left the 3x case plain too (k = 3's realized ratio still read the stall)."""
    loads = [4] * 8000
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    chosen, rate, _ = run_switching(ctl, loads, stalled_costs(3000, length, factor), 0.005, 0)
    end = 3000 + length
    assert chosen[end:end + 2000].count(0) <= 300
    k3 = static_rate(loads, stalled_costs(3000, length, factor), 3)
    assert rate >= 0.98 * k3


@pytest.mark.parametrize("length", [200, 400])
def test_a_stall_that_outlasts_the_recheck_does_not_keep_k_unchosen(length):
    """As above, every step 2x dearer for 200 / 400 decisions from 3,000: k = 3's recheck
    (4 syncs, 128 decisions after the jump) falls within the stall. Before session 58 its
    reading let the jump stand for good and plain ran on (200: on 1,999 of the 2,000 decisions
    after the stall, 0.919x of static k = 3); now the jump is rechecked again 8 and 16 syncs
    later."""
    loads = [4] * 8000
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    chosen, rate, _ = run_switching(ctl, loads, stalled_costs(3000, length, 2.0), 0.005, 0)
    end = 3000 + length
    assert chosen[end + 500:end + 2500].count(0) <= 300
    assert rate >= 0.98 * static_rate(loads, stalled_costs(3000, length, 2.0), 3)


def test_a_stall_on_plain_does_not_keep_it_unchosen():
    """The same with plain chosen: 64 running on session 50's H100 costs (k = 0..3 7.4 / 16.7 /
    18.9 / 19.2 ms: plain 1 / 7.4 = 0.135 a ms against k = 3's 2.53 / 19.2 = 0.132), a switch on
    94 ms, every step 2x dearer for 40 decisions from 3,000 while plain runs. Before, the
    policy drafted on 1,993 of the 2,000 decisions after."""
    ms = (7.4, 16.7, 18.9, 19.2)
    calls = [0]

    def cost(bs):
        calls[0] += 1
        f = 2.0 if 3000 <= calls[0] - 1 < 3040 else 1.0
        return tuple(f * t / 1000 for t in ms)
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    chosen, _, _ = run_switching(ctl, [64] * 6000, cost, 0.094, 0)
    assert chosen[1000:3000].count(0) == 2000
    assert chosen[3040:5040].count(0) >= 1700


def test_ranks_recheck_together():
    """Three simulated TP ranks, each its own step times (rank 2 10% slower) and the same
    stall: the jump, the recheck and the realized sums put back come from merged values, so
    every rank decides the same at every step."""
    out = run_switching_on_ranks([4] * 6000, lambda: stalled_costs(3000, 40, 2.0), 0.005)
    assert all(o is not None for o in out)
    assert out[0] == out[1] == out[2]
    assert out[0][0][3040:5040].count(0) <= 300


def test_a_jump_of_the_k_that_runs_is_held_one_sync_and_a_stall_then_leaves_no_trace():
    """Session 60 (H100, MoE layout, 4 requests): ~100 ms of slow k = 3 steps moved the chosen
    cell 5.91 -> 7.15 ms and plain ran ~1.5 s until the recheck. A cell sampled at the sync
    before (the k that runs) keeps its mean through its jump; the next sync decides."""
    table = well_measured_table()  # k = 3 sampled at every sync
    merge_samples(table, 10.0, 32)  # 1.75x: a jump, held
    i = table._i(BUCKET, K)
    assert table.mean[i] == pytest.approx(0.0057) and table.samples(BUCKET, K) == 40
    assert table.merge_events == [(i, "jump")] and table.last_move(BUCKET, K) == 0.0
    merge_samples(table, 5.8, 32)  # back: (10.8 x 5.7 + 32 x 5.8) / 42.8 = 5.775 ms
    assert table.mean[i] * 1000 == pytest.approx(5.775, abs=0.001)
    assert table.merge_events == [(i, "stall")] and table.jumped_from[i] == 0.0


def test_a_held_jump_the_next_sync_repeats_is_followed():
    table = well_measured_table()
    merge_samples(table, 10.0, 32)  # held at 5.7
    merge_samples(table, 9.5, 32)  # still dear: merged against the mean before the jump,
    # (10.8 x 5.7 + 32 x 9.5) / 42.8 = 8.541 ms; the jump stays open for its recheck
    i = table._i(BUCKET, K)
    assert table.mean[i] * 1000 == pytest.approx(8.541, abs=0.001)
    assert table.merge_events == [] and table.jumped_from[i] == pytest.approx(0.0057)


def test_the_policy_keeps_its_k_through_a_stall_of_a_few_steps():
    """Session 53's MoE table at 3-4 running, every step 3x dearer for 64 decisions from 3,000
    while k = 3 runs: plain in the 2,000 decisions after (154 per seed before the hold, one
    refresh's 7 or none with it). Simulated costs; no performance claim."""
    loads = [4] * 5064
    plain_after = []
    for seed in range(3):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        chosen, _, _ = run_switching(ctl, loads, stalled_costs(3000, 64, 3.0), 0.005, seed)
        plain_after.append(chosen[3064:5064].count(0))
    assert max(plain_after) <= 50, plain_after
