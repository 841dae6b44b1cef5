"""The goodput policy's prefill term (policy/prefill_load.py): per-bucket prefill seconds per
decode step, scaled to another step count; merged across ranks like the step-time table."""
import math

import pytest

from adaptive_spec.policy.prefill_load import PrefillLoad
from adaptive_spec.policy.step_table import bucket_of


def fed(load, bucket, steps, tokens, prefills):
    """`steps` decode steps of `tokens` tokens per request and `prefills` (seconds, admitted[,
    plain])."""
    for _ in range(steps):
        load.on_decode(bucket, tokens, 100)
    for seconds, admitted, *plain in prefills:
        load.on_prefill(bucket, seconds, admitted, *plain)


def test_nothing_is_added_before_a_bucket_has_enough_steps():
    load = PrefillLoad(13)
    fed(load, 7, 16, 1.0, [(0.014, 1)] * 10)
    load.sync(lambda v: v)
    assert load.per_step(7, 2.5) == 0.0  # 16 < MIN_STEPS decode steps seen
    assert load.per_step(6, 1.0) == 0.0  # nothing seen at all


def test_moe_plain_server_at_128_requests():
    # GPU, session 17 (MoE layout, 128 requests): plain TPOT 15.4 ms, plain decode step 5.9 ms:
    # ~0.6 new requests per decode step, each in a prefill batch of its own (~14 ms)
    load = PrefillLoad(13)
    fed(load, 7, 500, 1.0, [(0.014, 1)] * 300)
    load.sync(lambda v: v)
    assert load.per_step(7, 1.0) == pytest.approx(0.6 * 0.014, rel=0.01)  # what ran: measured
    # at k = 3 (2.53 tokens a step) 1.52 new requests a step, 78% of steps with a prefill
    expect = 0.6 * 0.014 * (1 - math.exp(-0.6 * 2.53)) / (1 - math.exp(-0.6))
    assert load.per_step(7, 2.53) == pytest.approx(expect, rel=0.01)
    assert 0.6 * 0.014 < expect < 2.53 * 0.6 * 0.014  # more per step, less per token


def test_values_follow_a_load_change_and_stay_bounded():
    load = PrefillLoad(13)
    fed(load, 7, 512, 1.0, [(0.010, 1)] * 512)  # a prefill every step
    load.sync(lambda v: v)
    for _ in range(8):  # then none, for 8 syncs of 256 steps
        fed(load, 7, 256, 1.0, [])
        load.sync(lambda v: v)
    assert load.seconds[7] < 0.001 and load.steps[7] <= PrefillLoad.MEMORY_STEPS


def test_ranks_with_different_wall_times_merge_to_the_same_values():
    # each rank times its own prefills; the all-reduce mean gives all ranks the same table
    ranks = [PrefillLoad(13) for _ in range(2)]
    for r, load in enumerate(ranks):
        fed(load, 7, 100, 1.5, [(0.010 + 0.004 * r, 1)] * 40)
    local = [[v for row in load._local + load._local_launch for v in row] for load in ranks]
    mean = [sum(col) / len(col) for col in zip(*local)]
    for load in ranks:
        load.sync(lambda v: mean)
    assert ranks[0].snapshot() == ranks[1].snapshot()
    assert ranks[0].per_step(7, 2.0) == ranks[1].per_step(7, 2.0) > 0


def test_a_burst_of_new_requests_while_the_batch_grows_is_not_a_per_step_cost():
    # a level's start: 128 requests prefilled in a few large batches while the batch fills;
    # counted per step, that work would make every k look alike
    load = PrefillLoad(13)
    for running in range(8, 129, 8):  # the batch grows 8 at a step: not steady
        load.on_decode(7, 1.0, running)
        load.on_prefill(7, 0.030, 8)
    for _ in range(200):  # then steady at 128 with a few new requests now and then
        load.on_decode(7, 1.0, 128)
    for _ in range(20):
        load.on_prefill(7, 0.014, 1)
    load.sync(lambda v: v)
    # the burst left out: only the 1-request prefills of the steady part, over its steps (the
    # recent batch size takes ~30 steps to catch up with the ramp, those do not count)
    assert load.seconds[7] / load.admitted[7] == pytest.approx(0.014)
    assert 20 / 200 <= load.admitted[7] <= 20 / 150


def test_a_prefill_batch_cost_is_split_into_fixed_and_per_request_parts():
    # reported beside the term (not used by it yet): does a batch cost the same whatever it
    # holds (the term's assumption), or does each new request add to it?
    load = PrefillLoad(13)
    fed(load, 7, 100, 1.0, [(0.010 + 0.002 * n, n) for n in (1, 2, 3, 1, 2, 4)] * 5)
    load.sync(lambda v: v)
    fixed, per_request, batches = load.batch_fit(7)
    assert fixed == pytest.approx(0.010) and per_request == pytest.approx(0.002)
    assert batches == 30
    assert load.snapshot_fit()["128"] == [10.0, 2.0, 30.0]
    # every batch with one new request: no slope to fit
    same = PrefillLoad(13)
    fed(same, 7, 100, 1.0, [(0.014, 1)] * 20)
    same.sync(lambda v: v)
    assert same.batch_fit(7) == (pytest.approx(0.014), None, 20)
    assert PrefillLoad(13).batch_fit(7) == (0.0, None, 0.0)


def test_ranks_merge_the_batch_fit_to_the_same_values():
    ranks = [PrefillLoad(13) for _ in range(2)]
    for r, load in enumerate(ranks):
        fed(load, 7, 100, 1.0, [(0.010 + 0.002 * n + 0.001 * r, n) for n in (1, 2, 3)] * 4)
    local = [[v for row in load._local + load._local_launch for v in row] for load in ranks]
    mean = [sum(col) / len(col) for col in zip(*local)]
    for load in ranks:
        load.sync(lambda v: mean)
    assert ranks[0].snapshot_fit() == ranks[1].snapshot_fit()
    assert ranks[0].batch_fit(7)[1] == pytest.approx(0.002)


def test_a_launch_adds_its_extra_per_prefill_batch_at_the_measured_batch_rate():
    """A prefill's launch lands in the decode step beside it (overlap scheduler): per step it
    costs its extra times the prefill batches per step, scaled to k like the prefills."""
    load = PrefillLoad(13)
    fed(load, 7, 100, 1.0, [(0.005, 1)] * 25)  # 0.25 batches and 1.25 ms of prefill a step
    for _ in range(25):
        load.on_launch(7, 0, 0.010)
    load.sync(lambda v: v)
    beta = load.batches[7]
    assert beta == pytest.approx(0.25, rel=0.02)  # 25 batches over the steady decode steps
    assert load.launch_extra(7, 0, [0.006, 0.012, 0.014, 0.016]) == pytest.approx(0.010)
    base = load.per_step(7, 1.0)
    assert base == pytest.approx(0.005 * beta)
    assert load.per_step(7, 1.0, 0.010) == pytest.approx((0.005 + 0.010) * beta)
    ratio = load.per_step(7, 2.5) / base  # at k's arrival rate, launches scale alike
    assert ratio > 1.5
    assert load.per_step(7, 2.5, 0.010) == pytest.approx((0.005 + 0.010) * beta * ratio)


def test_an_unmeasured_step_counts_launch_extra_scales_with_the_step_times():
    """A longer GPU step hides more of a prefill's launch (GPU, session 36: 8.4 ms over a
    5.8-ms plain step at 33-64 requests, 2.4 over an 18.6-ms k = 3 step): an unmeasured k takes
    the nearest measured k's extra times t_j / t_k (here 2.6); nothing measured, nothing added;
    a mean below zero (no launch cost to see) adds nothing."""
    load = PrefillLoad(13)
    times = [0.0058, 0.0150, 0.0165, 0.0186]
    assert load.launch_extra(7, 3, times) == 0.0
    fed(load, 7, 100, 1.0, [])
    for _ in range(3):
        load.on_launch(7, 0, 0.0083)
    load.sync(lambda v: v)
    assert load.launch_extra(7, 0, times) == 0.0  # 3 < LAUNCH_MIN launches
    for _ in range(3):
        load.on_launch(7, 0, 0.0083)
    load.sync(lambda v: v)
    assert load.launch_extra(7, 0, times) == pytest.approx(0.0083)
    assert load.launch_extra(7, 3, times) == pytest.approx(0.0083 * 0.0058 / 0.0186)  # ~2.6 ms
    for _ in range(8):
        load.on_launch(7, 2, -0.001)
    load.sync(lambda v: v)
    assert load.launch_extra(7, 3, times) == 0.0  # nearest measured: k = 2, below zero


def test_ranks_merge_the_launch_extras_to_the_same_values():
    ranks = [PrefillLoad(13) for _ in range(2)]
    for r, load in enumerate(ranks):
        fed(load, 7, 100, 1.0, [(0.005, 1)] * 10)
        for _ in range(8):
            load.on_launch(7, 3, 0.002 + 0.001 * r)
    local = [[v for row in load._local + load._local_launch for v in row] for load in ranks]
    mean = [sum(col) / len(col) for col in zip(*local)]
    for load in ranks:
        load.sync(lambda v: mean)
    assert ranks[0].launch == ranks[1].launch and ranks[0].batches == ranks[1].batches
    assert ranks[0].launch_extra(7, 3, [0.005, 0.01, 0.01, 0.01]) == pytest.approx(0.0025)


def test_each_prefill_kind_is_priced_at_its_own_cost_a_batch():
    """A spec prefill (the draft's own prefill beside the target's) cost ~2x a plain one on an
    H100 at 64 requests (session 46): plain at k = 0 and spec while drafting each at their own
    cost a batch, times the measured batches a step; the kind unsaid at the mean of both."""
    load = PrefillLoad(13)
    # 401 steps (the first sets the recent batch size: 400 steady); 40 plain batches of 5 ms
    # and 40 spec ones of 10 ms, one new request each: 0.2 batches and 0.2 admitted a step,
    # 1.5 ms of prefill a step, 7.5 ms a batch over both
    fed(load, 7, 401, 1.0, [(0.005, 1, True)] * 40 + [(0.010, 1, False)] * 40)
    load.sync(lambda v: v)
    # the pooled ratio: 5 / 10 over 40 batches shrunk by 8 at 0.75, 0.5^(40/48) x 0.75^(8/48) =
    # 0.534957; the mean of all (7.5 ms) split at it in equal shares: spec 7.5 / (0.5 x 0.534957
    # + 0.5) = 9.772263 ms, plain 0.534957 x that = 5.227737 ms; each kind's own mean shrunk by 8
    # pseudo-batches at those: (40 x 5 + 8 x 5.227737) / 48, (40 x 10 + 8 x 9.772263) / 48
    assert load.kind_ratio == pytest.approx(0.534957, rel=1e-5)
    plain, spec = (0.200 + 8 * 0.005227737) / 48, (0.400 + 8 * 0.009772263) / 48  # 5.038, 9.962
    assert load.kind_cost(7, True) == pytest.approx(plain)
    assert load.kind_cost(7, False) == pytest.approx(spec)
    assert load.per_step(7, 1.0, plain=True) == pytest.approx(plain * 0.2)
    assert load.per_step(7, 1.0, plain=False) == pytest.approx(spec * 0.2)
    assert load.per_step(7, 1.0) == pytest.approx(0.0015)  # as before: the mean of both
    # at 2.5 tokens a step: (1 - e^-0.5) / (1 - e^-0.2) = 0.39347 / 0.18127 = 2.1706 x as many
    assert load.per_step(7, 2.5, plain=False) == pytest.approx(spec * 0.2 * 2.1706, rel=1e-4)
    assert load.snapshot_kinds() == {"128": [5.0, 40.0, 10.0, 40.0]}  # the kinds' own means


def test_a_kind_seen_in_few_batches_leans_to_the_mean_of_all():
    """Session 46: 8 spec batches taken in a few probes read 17.8 ms where 133 in the next run
    read 11.6; unshrunk they put k = 3 at 0.85x of plain where forced on made 0.95x."""
    load = PrefillLoad(13)
    fed(load, 7, 401, 1.0, [(0.005, 1, True)] * 40 + [(0.010, 1, False)] * 3)  # 400 steady
    load.sync(lambda v: v)
    mean_all = (40 * 0.005 + 3 * 0.010) / 43  # 5.349 ms a batch
    # ratio 0.5^(3/11) x 0.75^(8/11) = 0.671485 (3 batches of the fewer kind against 8 at 0.75);
    # the mean of all split at it in the shares 40 / 43 and 3 / 43: spec 5.349 / (0.930233 x
    # 0.671485 + 0.069767) = 7.702766 ms, the prior its 3 batches lean to
    prior = 0.007702766
    spec = (3 * 0.010 + 8 * prior) / 11  # 8.329 ms: nearer its prior than its own 10
    assert mean_all < prior < spec < 0.010 and spec - prior < 0.010 - spec
    assert load.kind_cost(7, False) == pytest.approx(spec, rel=1e-5)
    assert load.per_step(7, 1.0, plain=False) == pytest.approx(spec * 43 / 400, rel=1e-5)
    assert load.snapshot_kinds() == {"128": [5.0, 40.0, 10.0, 3.0]}
    # no spec batch at all: the plain mean over PRIOR_RATIO, 5 / 0.75 = 6.667 ms a batch, at 0.1
    # batches a step (session 52; the mean of all before)
    none_yet = PrefillLoad(13)
    fed(none_yet, 7, 401, 1.0, [(0.005, 1, True)] * 40)
    none_yet.sync(lambda v: v)
    assert none_yet.per_step(7, 1.0, plain=False) == pytest.approx(0.1 * 0.005 / 0.75)


def test_a_kinds_cost_outlives_a_stretch_of_the_other_kind():
    """While drafting runs only spec prefills happen: plain's cost, learned before, is kept
    (decayed only by its own batches), so plain is not priced at the spec prefills' cost."""
    load = PrefillLoad(13)
    fed(load, 7, 200, 1.0, [(0.005, 1, True)] * 40)
    load.sync(lambda v: v)
    for _ in range(20):  # then 20 syncs of drafting, spec prefills only
        fed(load, 7, 100, 2.5, [(0.010, 1, False)] * 20)
        load.sync(lambda v: v)
    # the spec batches, decayed: 20 x (1 - 0.9^20) / 0.1 = 175.7; the ratio 0.5^(40/48) x
    # 0.75^(8/48) = 0.534957; the mean of all has moved to ~10 ms, split in the shares 40 /
    # 215.7 and 175.7 / 215.7: spec 10 / (0.18544 x 0.534957 + 0.81456) = 10.944, plain
    # 0.534957 x that = 5.854 ms; plain: (40 x 5 + 8 x 5.854) / 48 = ~5.14 ms
    assert load.kind_cost(7, True) == pytest.approx((0.200 + 8 * 0.005854) / 48, rel=0.01)
    assert load.kind_cost(7, False) == pytest.approx(0.010, rel=0.01)
    assert load.per_step(7, 1.0, plain=True) < 0.6 * load.per_step(7, 1.0)


def test_ranks_merge_the_kinds_to_the_same_values():
    ranks = [PrefillLoad(13) for _ in range(2)]
    for r, load in enumerate(ranks):
        fed(load, 7, 101, 1.0, [(0.005 + 0.001 * r, 1, True)] * 8 + [(0.010, 1, False)] * 8)
    local = [[v for row in load._local + load._local_launch for v in row] for load in ranks]
    mean = [sum(col) / len(col) for col in zip(*local)]
    for load in ranks:
        load.sync(lambda v: mean)
    assert ranks[0].kinds == ranks[1].kinds
    assert ranks[0].kind_admitted == ranks[1].kind_admitted  # each kind's new requests: 8 each
    assert ranks[0].kind_admitted[7] == [8.0, 8.0]
    # plain 5.5 ms (the ranks' mean), spec 10, the ratio 0.55^(8/16) x 0.75^(8/16) = 0.642262,
    # the mean of all 7.75 ms split at it in equal shares: plain 0.642262 x 7.75 / 0.821131 =
    # 6.061796 ms; (8 x 5.5 + 8 x 6.061796) / 16
    assert ranks[0].kind_ratio == ranks[1].kind_ratio == pytest.approx(0.642262, rel=1e-5)
    assert ranks[0].kind_cost(7, True) == pytest.approx((0.044 + 8 * 0.006061796) / 16)


def test_a_wave_of_arrivals_is_left_out_like_a_ramp():
    """Session 47 (H100, 64 requests): the warm-up wave's prefills of 9-12 new requests each
    (~30 ms, against ~5 ms for the 1-4 of steady turnover) came while the batch read steady;
    counted as plain prefills at 64 they priced plain's prefills above drafting's."""
    def load_with(prefills):
        load = PrefillLoad(13)
        fed(load, 6, 401, 1.0, [])
        for seconds, admitted in prefills:
            load.on_prefill(6, seconds, admitted, True, batch_size=64)
        load.sync(lambda v: v)
        return load

    steady = [(0.005, 1)] * 40 + [(0.008, 8)]  # 8 = 64 / 8 new requests: still turnover
    waved = load_with(steady + [(0.030, 10)] * 5)  # 10 > max(4, 64 / 8): a wave
    alone = load_with(steady)
    assert waved.kinds == alone.kinds and waved.per_step(6, 1.0) == alone.per_step(6, 1.0)
    assert (waved.waves, alone.waves) == (5, 0)  # counted for the status
    assert alone.snapshot_kinds() == {"64": [pytest.approx(5.073, abs=1e-3), 41.0, None, 0.0]}
    assert PrefillLoad.is_wave(5, 8) and not PrefillLoad.is_wave(4, 8)  # past 4 at small batches
    assert PrefillLoad.is_wave(33, 256) and not PrefillLoad.is_wave(32, 256)


def test_a_kind_unseen_at_a_bucket_is_priced_at_the_ratio_seen_at_others():
    """Where goodput only drafted (64 requests in session 47's sweep), no plain prefill ran:
    plain was priced at the spec prefills' mean there, where at 128 plain ones cost 0.77x of
    spec ones. An unseen kind now takes the plain / spec ratio pooled over the other buckets."""
    load = PrefillLoad(13)
    fed(load, 7, 401, 1.0, [(0.007, 1, True)] * 40 + [(0.010, 1, False)] * 40)  # both at 128
    fed(load, 6, 401, 1.0, [(0.010, 1, False)] * 40)  # spec alone at 64
    load.sync(lambda v: v)
    # 0.7 over 40 batches shrunk by 8 at 0.75: 0.7^(40/48) x 0.75^(8/48) = 0.708096; at 64 the
    # mean of all is spec's own 10 ms (plain's share 0), plain none seen: 0.708096 x 10 ms
    assert load.kind_ratio == pytest.approx(0.708096, rel=1e-5)
    assert load.kind_cost(6, True) == pytest.approx(0.00708096, rel=1e-5)
    assert load.kind_cost(6, False) == pytest.approx(0.010)
    # no bucket with both kinds: PRIOR_RATIO (session 52; 1 before, plain at spec's mean)
    lone = PrefillLoad(13)
    fed(lone, 6, 401, 1.0, [(0.010, 1, False)] * 40)
    lone.sync(lambda v: v)
    assert lone.kind_ratio == 0.75 and lone.kind_cost(6, True) == pytest.approx(0.0075)


def test_a_kind_seen_in_larger_batches_is_priced_at_the_buckets_batch_size():
    """Session 48 (H100, 64 requests): plain's only prefills at 64 were the warm-up pass's, of
    1-10 new requests a batch (two of 6 under the wave's bar), 10.2 ms a batch against spec's 8.9
    from steady ones of 1-3; plain was priced dearer and goodput drafted where plain made 1.08x
    of EAGLE-3. A kind's mean is now moved to the bucket's batch size along the fit's slope."""
    load = PrefillLoad(13)
    # spec batches of 1, 2 and 3 new requests (10 each) at 6, 8 and 10 ms; plain only in 6
    # batches of 7 at 10.8 ms (its true cost at 2 would be ~5)
    fed(load, 6, 401, 1.0, [(0.006, 1), (0.008, 2), (0.010, 3)] * 10 + [(0.0108, 7, True)] * 6)
    load.sync(lambda v: v)
    # the fit over the 36 batches: sum n = 102, sum n^2 = 434, sum s = 304.8 ms, sum n s =
    # 973.6: slope (36 x 973.6 - 102 x 304.8) / (36 x 434 - 102^2) = 3960 / 5220 = 0.758621 ms
    # a request; the bucket's mean batch 102 / 36 = 2.833333 new requests
    assert load.batch_fit(6)[1] == pytest.approx(0.000758621, rel=1e-5)
    # plain: 10.8 - 0.758621 x (7 - 2.833333) = 7.639080 ms; spec: 8 - 0.758621 x (2 -
    # 2.833333) = 8.632184 ms
    assert load.kind_mean(6, True) == pytest.approx(0.007639080, rel=1e-6)
    assert load.kind_mean(6, False) == pytest.approx(0.008632184, rel=1e-6)
    # the ratio (7.639080 / 8.632184)^(6 / 14) x 0.75^(8 / 14) = 0.805115; the mean of all
    # 304.8 / 36 = 8.466667 ms split in the shares 6 / 36 and 30 / 36: spec 8.750903, plain
    # 7.045485 ms; plain (6 x 7.639080 + 8 x 7.045485) / 14 = 7.299883 ms, spec (30 x 8.632184 +
    # 8 x 8.750903) / 38 = 8.657177 ms. As measured (10.8 against 8) plain came out at 10.01 ms
    # against 8.06 (session 48's code).
    assert load.kind_ratio == pytest.approx(0.805115, rel=1e-5)
    assert load.kind_cost(6, True) == pytest.approx(0.007299883, rel=1e-5)
    assert load.kind_cost(6, False) == pytest.approx(0.008657177, rel=1e-5)
    assert load.snapshot_kinds() == {"64": [10.8, 6.0, 8.0, 30.0]}  # the status: as measured
    assert load.snapshot_kind_admitted() == {"64": [7.0, 2.0]}  # and each kind's batch
    # no further than half its own mean: 30 ms batches of 20 new requests among steady ones
    # (slope (36 x 4120 - 180 x 420) / (36 x 2540 - 180^2) = 1.2317 ms, mean batch 5: moved to
    # 30 - 1.2317 x 15 = 11.52 ms, under half of 30)
    far = PrefillLoad(13)
    fed(far, 6, 401, 1.0, [(0.006, 1), (0.008, 2), (0.010, 3)] * 10 + [(0.030, 20, True)] * 6)
    far.sync(lambda v: v)
    assert far.kind_mean(6, True) == pytest.approx(0.015)


def test_an_interval_is_priced_only_when_the_term_counted_it_whole():
    """Session 51: the realized rate counts a decode result only where this term counted every
    prefill in its interval (`interval_priced`); a wave's prefill, or one beside an unsteady
    step, is left out here, and the result after it is not priced."""
    load = PrefillLoad(buckets=8)
    b = bucket_of(64)
    load.on_decode(b, 1.0, 64)  # the first step: no recent batch yet, unsteady
    assert not load.interval_priced
    load.on_decode(b, 1.0, 64)
    assert load.interval_priced
    load.on_prefill(b, 0.008, 2, batch_size=64)  # steady turnover: counted
    load.on_decode(b, 1.0, 64)
    assert load.interval_priced
    load.on_prefill(b, 0.030, 12, batch_size=64)  # 12 > max(4, 64 / 8): a wave, left out
    load.on_decode(b, 1.0, 64)
    assert not load.interval_priced
    load.on_decode(b, 1.0, 57)  # 57 is more than 10% off the recent ~64: unsteady
    assert not load.interval_priced
    load.on_prefill(b, 0.035, 2, batch_size=57)  # beside that unsteady step: left out
    load.on_decode(b, 1.0, 64)  # steady again, but its interval holds the 35 ms
    assert load.steady and not load.interval_priced
    load.on_decode(b, 1.0, 64)
    assert load.interval_priced


def test_the_request_length_is_decode_tokens_over_every_admission():
    """L (decode tokens a request) from every admission and decode token, both decayed alike
    past LENGTH_MEMORY admissions (session 52, "Arrivals predicted")."""
    load = PrefillLoad(13)
    load.on_admitted(64)  # a wave: 64 in flight, none finished
    for _ in range(100):
        load.on_decode(6, 1.0, 64)
    assert load.request_length() is None  # 64 admitted - 64 in flight: no request finished yet
    load.on_admitted(32)
    # 96 admitted, 64 in flight: 32 finished (LENGTH_MIN); 6,400 tokens / 96 = 66.7 (those in
    # flight hold part of theirs yet: low until the memory fills)
    assert load.request_length() == pytest.approx(6400 / 96)
    load.on_admitted(3000)  # past LENGTH_MEMORY: admissions and tokens scaled alike to 2,048
    # 6,400 x 2,048 / 3,096 = 4,233.6 tokens over 2,048
    assert load.request_length() == pytest.approx(6400 / 3096)
    load.on_admitted(0)  # a prefill result admitting none
    assert load.length_admitted == 2048


def test_arrivals_come_from_the_request_length_not_a_level_without_turnover():
    """GPU, session 51 (H100, 64 requests): a level's requests all came at once and the steady
    steps before any finished held no prefill: the term read 0.31 / 0.72 ms a step (k = 0 / 3)
    and 1.74 / 4.79 once turnover had filled it, and goodput drafted until then (0.947x of
    plain). In steady load arrivals = finishes = batch x E_k / L."""
    load = PrefillLoad(13)
    load.on_admitted(384)  # earlier requests, the level's wave among them
    for _ in range(1152):  # 73,728 tokens at 64 running, plain
        load.on_decode(6, 1.0, 64)
    for _ in range(8):  # turnover just begun: 8 prefills of 5 ms, one request each
        load.on_prefill(6, 0.005, 1)
    load.sync(lambda v: v)
    # L = 73,728 / 384 = 192; 1,151 steady steps (the first is a change of batch)
    assert load.request_length() == pytest.approx(192.0)
    # a step with arrivals costs P / (1 - exp(-a)) = (0.04 / 1151) / (1 - exp(-8 / 1151))
    # = 5.017 ms; arrivals 64 x E_k / 192 a step: plain 1/3, k = 3 (E = 2.5) 0.833
    with_arrivals = (0.04 / 1151) / (1 - math.exp(-8 / 1151))
    assert load.per_step(6, 1.0) == pytest.approx(with_arrivals * (1 - math.exp(-1 / 3)))  # 1.42 ms
    assert load.per_step(6, 2.5) == pytest.approx(with_arrivals * (1 - math.exp(-2.5 / 3)))  # 2.84
    # (measured arrivals, 8 in 1,151 steps, gave 0.035 and 0.087 ms: the level's ramp)


def test_where_arrivals_match_the_length_the_term_is_what_ran():
    """Steady turnover at 64 running: one request finishes and one arrives every 3 plain steps
    (each takes 64 x 3 = 192 tokens), as measured and as predicted, so the term is what ran."""
    load = PrefillLoad(13)
    load.on_admitted(64)  # the wave
    for i in range(12288):
        load.on_decode(6, 1.0, 64)
        if i % 3 == 2:
            load.on_admitted(1)
            load.on_prefill(6, 0.005, 1)
    load.sync(lambda v: v)
    # past 2,048 admissions the decayed sums' ratio is their rates': 64 tokens a step over 1/3
    # of an admission, 192; it reads 189.9, the wave's start (64 admissions, no tokens) decayed
    assert load.request_length() == pytest.approx(192, rel=0.02)
    measured = load.seconds[6]  # a 5-ms prefill every 3 steady steps: 1.667 ms a step
    assert measured == pytest.approx(0.005 / 3, rel=1e-3)
    assert load.per_step(6, 1.0) == pytest.approx(measured, rel=0.02)  # 1.682 ms: 64 / 189.9


def test_a_bucket_without_prefills_yet_is_priced_from_the_nearest_once_the_length_is_known():
    """GPU, session 51 (64 requests): the sweep's warm-up visit left 64's bucket only waves, and
    a term of ~0 there let goodput draft. With L known, a bucket that has no prefills of its own
    prices its arrivals with the nearest bucket's batches (5 ms each, one request a batch)."""
    def level_32_then_64(admitted):
        load = PrefillLoad(13)
        load.on_admitted(admitted)
        for i in range(1536):  # 49,152 tokens at 32 running, a request arriving every 6 steps
            load.on_decode(5, 1.0, 32)
            if i % 6 == 5:
                load.on_admitted(1 if admitted else 0)
                load.on_prefill(5, 0.005, 1)
        for _ in range(100):  # then 64 running: steady, no request finished yet
            load.on_decode(6, 1.0, 64)
        load.sync(lambda v: v)
        return load

    load = level_32_then_64(128)
    assert load.cost_bucket(6) == 5 and load.cost_bucket(4) == 5 and load.cost_bucket(12) == 5
    length = load.request_length()  # (49,152 + 6,400) / (128 + 256) = 144.7
    assert length == pytest.approx(55552 / 384)
    # 32's steps: 256 prefills over 1,535 steady steps, a = 0.1668; a step with arrivals costs
    # 5 ms x a / (1 - exp(-a)) = 5.42 ms; at 64 (k = 3, E = 2.5) arrivals 64 x 2.5 / L a step
    a = 256 / 1535
    with_arrivals = 0.005 * a / (1 - math.exp(-a))
    expect = with_arrivals * (1 - math.exp(-64 * 2.5 / length))  # 1.32 ms a step
    assert load.per_step(6, 2.5) == pytest.approx(expect)
    # no length yet (no admission counted): a bucket prices only what it measured itself
    assert level_32_then_64(0).per_step(6, 2.5) == 0.0


def test_a_source_bucket_whose_values_decayed_to_almost_nothing_still_prices():
    """GPU, session 54 (H100, MoE layout, 4 requests): the nearest priced bucket's admitted
    requests a step had decayed to 5.4e-17, 1 - exp(-a) read 0.0 in floating point, and the
    division by it sent the server to its fallback for the rest of the run. Decayed alike,
    the values keep their ratios: a -> 0 leaves a step with arrivals at the batch's own
    5 ms (p / a = 0.005 x a / a), scaled to 64's arrivals as above."""
    load = PrefillLoad(13)
    load.on_admitted(128)
    for i in range(1536):
        load.on_decode(5, 1.0, 32)
        if i % 6 == 5:
            load.on_admitted(1)
            load.on_prefill(5, 0.005, 1)
    for _ in range(100):
        load.on_decode(6, 1.0, 64)
    load.sync(lambda v: v)
    for values in (load.seconds, load.admitted, load.batches):
        values[5] *= 5.4e-17 / load.admitted[5]
    length = load.request_length()  # 55,552 / 384, as above
    assert load.per_step(6, 2.5) == pytest.approx(0.005 * (1 - math.exp(-64 * 2.5 / length)))


def test_turnover_has_begun_where_arrivals_reach_half_the_predicted():
    """The realized rate waits for a bucket's requests to begin finishing: before, no prefill
    comes while the term predicts them, and whichever k ran read them as its own gain (simulated:
    plain's ratio at 64 read 1.21-1.22 after a warm-up visit without turnover)."""
    load = PrefillLoad(13)
    for _ in range(101):  # 64 running, plain, no request finished: 6,400 tokens
        load.on_decode(6, 1.0, 64)
    load.sync(lambda v: v)
    assert load.turnover_begun(6)  # no request length yet: as before
    load.on_admitted(128)  # L = 6,400 / 128 = 50: 64 / 50 = 1.28 arrivals a step predicted
    assert not load.turnover_begun(6)  # none measured here
    assert not load.turnover_begun(5)  # a bucket without MIN_STEPS steps: not yet either
    for _ in range(100):  # then 0.7 arrivals a step: past half of 1.28 (L now 12,800 / 128)
        load.on_decode(6, 1.0, 64)
    for _ in range(70):
        load.on_prefill(6, 0.005, 1)
    load.sync(lambda v: v)
    # 70 arrivals over the 200 steady steps: 0.35 a step, against half of 64 / 100 = 0.32
    assert load.turnover_begun(6)
    one = PrefillLoad(13)  # one request, L = 7,680 / 40 = 192: 1 / 192 arrivals a step, rare
    one.on_admitted(40)
    for _ in range(7680):
        one.on_decode(0, 1.0, 1)
    one.sync(lambda v: v)
    assert one.turnover_begun(0)
