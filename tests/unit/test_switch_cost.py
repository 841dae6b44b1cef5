"""The goodput policy's price of a switch from off to drafting (policy/switch_cost.py): learned
from the results around each switch, and paid back before drafting turns on. Simulated costs,
no GPU, no performance claim."""

import random

import pytest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.policy.goodput import GoodputPolicy
from adaptive_spec.policy.step_table import MAX_BUCKET_EXP, bucket_of
from adaptive_spec.policy.switch_cost import SwitchCost
from adaptive_spec.signals import AcceptanceStats, LoadSnapshot

from .draft_sim import correct_drafts, on_threads
from .test_goodput_policy import _ThreadRanksMean

P = 0.7
E3 = 1 + P + P * P + P ** 3


def test_a_switch_cost_is_a_decayed_mean_per_bucket_bounded_below_by_smaller_buckets():
    cost = SwitchCost(MAX_BUCKET_EXP + 1)
    assert cost.cost(6) == 0.0  # nothing measured: the first switch is free
    cost.observe(5, 0.050)
    cost.observe(5, 0.070)
    cost.merge(cost.local_vector())
    assert abs(cost.cost(5) - 0.060) < 1e-9
    assert cost.cost(7) == cost.cost(5)  # a larger batch has at least as much to catch up
    assert cost.cost(4) == 0.0
    cost.observe(5, 0.200)
    cost.merge(cost.local_vector())
    assert 0.060 < cost.cost(5) < 0.200  # the old mean weighs in, decayed
    settled = cost.cost(5)
    cost.observe(5, 5.0)  # a stall: counted as STALL_FACTOR x the settled price
    cost.merge(cost.local_vector())
    assert cost.cost(5) < SwitchCost.STALL_FACTOR * settled
    cost.observe(2, -0.004)  # noise around a cheap catch-up
    cost.merge(cost.local_vector())
    assert cost.cost(2) == 0.0
    assert cost.local_vector() == [0.0] * (2 * (MAX_BUCKET_EXP + 1))  # consumed at each sync


class SeenSwitches:
    def __init__(self, ctl):
        self.calls = []
        ctl.policy.observe_switch_on = lambda size, results: self.calls.append((size, list(results)))


def test_the_results_around_a_switch_on_reach_the_policy_priced_as_what_they_output():
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    seen = SeenSwitches(ctl)
    dts = [0.008, 0.008, 0.060, 0.050, 0.020, 0.008, 0.070, 0.020, 0.020]
    ctl.timer.tick = lambda steps, now=None: dts.pop(0)
    for steps, mode in ((0, "off"), (0, "off"), (3, "catchup"), (3, "on"), (3, "on")):
        ctl.on_result(steps, [0] * 4, mode)
    # the last off step, SGLang's catch-up step (one token a request: priced as a plain step),
    # the first drafting step
    assert seen.calls == [(4, [(0, 0.008), (0, 0.060), (3, 0.050)])]
    for steps, mode in ((0, "off"), (3, "reentry"), (3, "on"), (3, "on")):
        ctl.on_result(steps, [0] * 4, mode)
    # a full catch-up's step drafts: priced as a drafting step
    assert seen.calls[1] == (4, [(0, 0.008), (3, 0.070), (3, 0.020)])


def test_a_prefills_launch_around_a_switch_is_marked_and_not_priced_twice():
    """A result around a switch on that also held a prefill's launch is marked: the launch is
    priced in the prefill term (prefill_load.py), so the switch's price leaves it out."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    seen = SeenSwitches(ctl)
    dts = [0.008, 0.008, 0.018, 0.060, 0.020]
    ctl.timer.tick = lambda steps, now=None: dts.pop(0)
    ctl.on_result(0, [0] * 4, "off")
    ctl.on_result(0, [0] * 4, "off")
    ctl.on_extend()  # a prefill launched before the last off step's result is processed
    ctl.on_result(0, [0] * 4, "off")
    ctl.on_prefill_result(1)
    ctl.on_result(3, [0] * 4, "reentry")
    ctl.on_result(3, [0] * 4, "on")
    assert seen.calls == [(4, [(0, 0.018, True), (3, 0.060), (3, 0.020)])]
    pol = GoodputPolicy(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    pol.price_launches = True  # the mechanism (off by default since session 38)
    fill = {0: (8.0, 30), 3: (20.0, 30)}
    for k, (ms, n) in fill.items():
        for _ in range(n):
            pol.table.record(4, k, ms / 1000)
    pol.table.merge(pol.table.local_vector())
    i = bucket_of(4) * pol.prefill.width  # k = 0
    pol.prefill.launch[i], pol.prefill.launches[i] = 0.010, 8.0
    pol.observe_switch_on(4, [(0, 0.018, True), (3, 0.060), (3, 0.020)])
    pol.switch.merge(pol.switch.local_vector())
    # 18 - 8 - 10 (the launch) + 60 - 20 + 20 - 20 = 40 ms, not 50
    assert pol.switch.cost(bucket_of(4)) == pytest.approx(0.040, abs=1e-6)


def test_a_catch_up_while_drafting_is_no_switch_on():
    """A request prefilled plain joins a drafting batch: the catch-up step that follows is the
    prefill's cost, not a switch's."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    seen = SeenSwitches(ctl)
    ctl.timer.tick = lambda steps, now=None: 0.02
    for steps, mode in ((3, "on"), (3, "catchup"), (3, "on"), (3, "on")):
        ctl.on_result(steps, [0] * 4, mode)
    assert seen.calls == []


def costs_at(bs: int, busy_ratio: float, idle_ratio: float) -> tuple:
    """Step seconds for k = 0..3: k = 3's goodput `busy_ratio` x plain's above 32 requests,
    `idle_ratio` x at 32 and below; k = 1, 2 lose."""
    if bs > 32:
        return (0.008, 0.016, 0.019, 0.008 * E3 / busy_ratio)
    return (0.006, 0.011, 0.0135, 0.006 * E3 / idle_ratio)


def run_switching(ctl, loads, cost, switch_s, seed, noise=0.05, time_seed=None, skew=1.0,
                  host_sleep=None):
    """Drive the controller as the server does (overlap scheduler: step i's result after decision
    i + 1, times through its timer, worker modes), where each switch from off to drafting costs
    `switch_s` of catch-up, half on the last off step's result and half on the switching step's.
    Acceptance draws come from `seed`, times (x `skew`) from `time_seed` (default: `seed`), so
    simulated TP ranks share the first and not the second. `switch_s` may be a function of the
    batch size. `host_sleep()`, asked after each decision: seconds the scheduler slept after
    it, which land in the previous step's result interval (as on the GPU, session 58).
    Returns (chosen k per decision, simulated tokens per second, switches on)."""
    dts = []
    ctl.timer.tick = lambda steps, now=None: dts.pop(0)
    rng = random.Random(seed)
    time_rng = random.Random(seed if time_seed is None else time_seed)
    pending, last_k, chosen, wall, tokens, switches = None, None, [], 0.0, 0, 0
    for bs in loads:
        ctl.on_snapshot(LoadSnapshot(running=bs))
        k = ctl.decide(bs).steps
        if host_sleep is not None:
            slept = host_sleep()
            wall += slept
            if pending is not None:
                pending[2] += slept
        mode = "off" if k == 0 else ("catchup" if last_k == 0 else "on")
        t = skew * cost(bs)[k] * (1 + time_rng.uniform(-noise, noise))
        wall += t
        if mode == "catchup":
            switches += 1
            price = switch_s(bs) if callable(switch_s) else switch_s
            wall += skew * price
            t += skew * price / 2
            if pending is not None:
                pending[2] += skew * price / 2
        if pending is not None:
            dts.append(pending[2])
            ctl.on_result(pending[0], pending[1], pending[3])
        correct = correct_drafts(rng, bs, P, k)
        tokens += len(correct) if mode == "catchup" else sum(1 + c for c in correct)
        pending, last_k = [k, correct, t, mode], k
        chosen.append(k)
    return chosen, tokens / wall, switches


def run_switching_on_ranks(loads, cost, switch_s, read=lambda ctl: None, ranks=3):
    """`run_switching` on simulated TP ranks (threads) whose policies merge through an
    asynchronous all-reduce: the same acceptance draws and modes, each rank its own times (rank
    2 10% slower). Returns per rank (its choices, `read(ctl)` at the end); None where a rank
    did not finish."""
    reducers = _ThreadRanksMean(ranks, True)
    out = [None] * ranks

    def run(r):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3), rank=r,
                         reducer=reducers.for_rank(r))
        chosen, _, _ = run_switching(ctl, loads, cost(), switch_s, 0, time_seed=100 + r,
                                     skew=1.1 if r == 2 else 1.0)
        out[r] = (chosen, read(ctl))

    on_threads(ranks, run)
    return out


def test_short_dips_into_a_size_where_drafting_barely_wins_do_not_pay_a_catch_up_each():
    """The batch dips from 48 to 28 running for 20 decisions in every 80: drafting wins by 6% at
    28 and loses by 3% at 48, and each switch on costs 100 ms of catch-up (GPU, session 34: 7
    switches on in one 6-s window at 64 requests). Priced, the dips stay plain once the price
    is learned. (Until session 36 the gain here was 8%, at the price's edge: 8% against ~6% of
    price and the 3% margin; it passed because the off step each switch lands in, counted as a
    plain sample, had the plain cell at 48 read 16 ms instead of 8, and the policy drafted
    through the 48 phase.)"""
    loads = ([48] * 60 + [28] * 20) * 75

    def cost(bs):
        return costs_at(bs, 0.97, 1.06)

    priced_total = unpriced_total = 0
    for seed in range(6):
        unpriced = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        unpriced.policy.observe_switch_on = lambda *args: None  # as before session 34
        _, unpriced_rate, unpriced_switches = run_switching(unpriced, loads, cost, 0.1, seed)
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        chosen, rate, switches = run_switching(ctl, loads, cost, 0.1, seed)
        late_dips_on = sum(1 for i in range(len(loads) // 2, len(loads))
                           if loads[i] == 28 and chosen[i - 1] == 0 and chosen[i] > 0)
        assert late_dips_on <= 2, (seed, late_dips_on)  # of 37 dips (a refresh may land in one)
        # the rest: learning the price (the first switch is free) and the refreshes at 48
        assert switches <= 16, (seed, switches)
        assert rate >= 0.999 * unpriced_rate, (seed, rate, unpriced_rate)
        learned = ctl.policy.switch.cost(bucket_of(28))
        assert 0.07 < learned < 0.13, learned  # the simulated 100 ms, from the step times alone
        plain_at_48 = ctl.policy.table.settled(bucket_of(48), 0)
        assert plain_at_48 == pytest.approx(0.008, rel=0.1)  # no switch's time in it
        priced_total += switches
        unpriced_total += unpriced_switches
    assert unpriced_total >= 3 * priced_total, (unpriced_total, priced_total)


def test_a_large_gain_still_turns_drafting_on_at_once_whatever_a_switch_costs():
    """Issue 5's step load: from 256 requests (plain) down to 1 (drafting ~1.8x) the choice
    follows within 5 decisions, with every switch on priced at 100 ms."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))

    def cost(bs):
        return (0.004 + 0.00004 * bs, 0.0055 + 0.00012 * bs, 0.006 + 0.0002 * bs, 0.0065 + 0.00028 * bs)

    run_switching(ctl, [1] * 1500 + [256] * 1500, cost, 0.1, 0)
    assert ctl.policy.switch.cost(bucket_of(1)) > 0.05
    down, _, _ = run_switching(ctl, [256] * 200 + [1] * 200, cost, 0.1, 1)
    assert down[150:200].count(0) == 50  # plain at 256
    assert down[200:260].index(3) <= 5, down[200:220]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_every_rank_prices_a_switch_alike_from_its_own_timings(asynchronous):
    """Simulated TP ranks: the same batches, acceptance and worker modes, each rank's own step and
    catch-up times (noise; rank 2 10% slower). The switch cost is merged at the policy's syncs
    through the reducer like the step-time table, so every rank decides the same."""
    ranks = 3
    reducers = _ThreadRanksMean(ranks, asynchronous)
    loads = ([48] * 60 + [28] * 20) * 20
    out = [None] * ranks

    def run(r):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3), rank=r, reducer=reducers.for_rank(r))
        chosen, _, switches = run_switching(ctl, loads, lambda bs: costs_at(bs, 0.97, 1.08), 0.1, 0,
                                            time_seed=100 + r, skew=1.1 if r == 2 else 1.0)
        out[r] = (chosen, switches, ctl.policy.switch.snapshot())

    on_threads(ranks, run)
    assert all(o is not None for o in out)
    assert out[0] == out[1] == out[2]
    assert out[0][1] >= 2 and out[0][2]  # it did switch on, and priced it


def test_a_stalled_price_does_not_keep_a_large_gain_off():
    """A switch at one request that stalled for 2 s (a kernel built for a new shape) prices it
    far above what 128 drafting steps gain; capped at a share of them, drafting (~1.8x) still
    turns on when the load drops back to one request."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))

    def cost(bs):
        return (0.004 + 0.00004 * bs, 0.0055 + 0.00012 * bs, 0.006 + 0.0002 * bs, 0.0065 + 0.00028 * bs)

    run_switching(ctl, [1] * 1500 + [256] * 1500, cost, 0.001, 0)
    ctl.policy.switch.seconds[bucket_of(1)] = 2.0
    down, _, _ = run_switching(ctl, [256] * 200 + [1] * 200, cost, 0.001, 1)
    assert down[200:260].index(3) <= 5, down[200:220]


def static_rate(loads, cost, k, seed=0):
    """Tokens per second of a server that runs k on every decision (no switch)."""
    rng, wall, tokens = random.Random(seed), 0.0, 0
    for bs in loads:
        wall += cost(bs)[k]
        tokens += sum(1 + c for c in correct_drafts(rng, bs, P, k))
    return tokens / wall


@pytest.mark.parametrize("period", [2, 3, 5, 10])
def test_a_batch_crossing_a_bucket_edge_every_few_decisions_does_not_flap(period):
    """The running batch moves between 28 and 36 (buckets 17-32 and 33-64) every `period`
    decisions; drafting wins by 20% at 28 and loses by 10% at 36, and a switch on costs 50 ms.
    Spread over a fixed 128 drafting steps the price looked small, and the policy switched on
    at almost every crossing: 301-1,464 switches on in 6,000 decisions, 0.41-0.86x of the
    better static choice (periods 10-2). With the price spread over the drafting runs
    measured, 12-16 switches on and 0.969-0.974x (the rest: learning the table and the price);
    with a switching probe's budget counted in the bucket's own decisions (session 50), 7-13
    and 0.973-0.981x."""
    loads = ([28] * period + [36] * period) * (6000 // (2 * period))

    def cost(bs):
        return costs_at(bs, 0.90, 1.20)

    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    chosen, rate, switches = run_switching(ctl, loads, cost, 0.05, 0)
    best_static = max(static_rate(loads, cost, 0), static_rate(loads, cost, 3))
    assert switches <= 40, switches
    assert rate >= 0.94 * best_static, rate / best_static
    # the drafting-preferred runs were timed at what they lasted: a few steps each; where none
    # began at 28 (period 2 since session 50: a switching probe's budget is the bucket's own
    # decisions, and k = 3's cell at 28 stayed short of samples), plain ran throughout
    if ctl.policy.runs.runs.get((True, bucket_of(28)), 0):
        assert ctl.policy.runs.horizon_s(True, bucket_of(28)) < 0.05 * period
    else:
        assert chosen[1000:].count(0) >= 0.99 * len(chosen[1000:])


def test_where_static_drafting_wins_the_alternation_it_stays_drafting_through_the_busy_side():
    """As above, every 5 decisions, but drafting wins 30% at 28 and loses only 5% at 36:
    static drafting makes 1.07x of plain. Switching off at 36 buys a switch on 5 decisions
    later; priced over the plain runs measured, drafting stays on (0.974x of static drafting,
    14 switches on; before, 581 switches on and 0.679x)."""
    loads = ([28] * 5 + [36] * 5) * 600

    def cost(bs):
        return costs_at(bs, 0.95, 1.30)

    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    chosen, rate, switches = run_switching(ctl, loads, cost, 0.05, 0)
    assert static_rate(loads, cost, 3) > 1.05 * static_rate(loads, cost, 0)
    assert rate >= 0.97 * static_rate(loads, cost, 3), rate / static_rate(loads, cost, 3)
    late_busy = [k for bs, k in zip(loads[3000:], chosen[3000:]) if bs == 36]
    assert sum(1 for k in late_busy if k > 0) >= 0.9 * len(late_busy)
    assert switches <= 40, switches


def test_after_flapping_at_an_edge_a_drop_to_a_small_batch_drafts_at_once():
    """Issue 5's "follows within 5 decode steps", after a phase at the 28 <-> 36 edge where the
    short runs kept the policy in plain: a drop to 4 requests (drafting ~1.5x) turns drafting on
    at once, whatever a switch costs. With one run mean for every bucket it waited until the
    gain had earned the switch's price; runs are kept by the bucket they began at."""
    def cost(bs):
        if bs <= 8:
            return (0.004 + 0.00004 * bs, 0.0055 + 0.00012 * bs, 0.006 + 0.0002 * bs,
                    0.0065 + 0.00028 * bs)
        return costs_at(bs, 0.85, 1.1)

    for switch_s in (0.01, 0.1):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        run_switching(ctl, [4] * 1500, cost, switch_s, 0)
        edge, _, _ = run_switching(ctl, ([28] * 3 + [36] * 3) * 500, cost, switch_s, 1)
        assert edge[-600:].count(0) >= 550  # it sat in plain at the edge
        drop, _, _ = run_switching(ctl, [4] * 300, cost, switch_s, 2)
        assert next(i for i, k in enumerate(drop) if k > 0) <= 5, drop[:20]


def test_at_a_busy_batch_where_plain_wins_drafting_cells_are_not_refreshed_at_a_switch_each():
    """GPU, session 38 (`be64`, dense pair, 56-72 requests): plain was chosen on every steady
    decision and goodput made 0.93-0.98x of plain. On that run's final table (k = 1..3 at 2.5-3x
    a plain step, a switch on 133 ms) a refresh of a drafting k every 1,024 decisions, 7 steps
    and a catch-up each, cost ~3% (0.966-0.968x of static plain in simulation, 6 switches on in
    6,000 decisions). Priced, a refresh waits until its switch fits 0.5% of the time since."""
    def cost(bs):
        return (0.0058, 0.0144, 0.0168, 0.0171)

    for seed in range(3):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        chosen, rate, switches = run_switching(ctl, [72] * 6000, cost, 0.133, seed)
        refreshes = ctl.policy._probes
        assert switches <= 3, (seed, switches, refreshes)  # two probes, one refresh
        assert rate >= 0.985 * static_rate([72] * 6000, cost, 0), seed
        assert sum(1 for k in chosen if k) <= 7 * switches  # probes and refreshes only


def test_where_a_switch_on_is_cheap_a_drafting_cell_is_still_refreshed_every_interval():
    """The price only stretches refreshes where a switch costs much: at one request, where a
    switch on cost 3 ms on the H200 (session 38), a drafting cell that could still win is
    refreshed at each `refresh_interval` as before (GPU, session 27: plain chosen while k = 3,
    refreshed by no rule, made 1.34x)."""
    pol = GoodputPolicy(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    times, goodput = [0.0045, 0.0057, 0.0065, 0.0071], [1.0, 0.9, 0.9, 0.9]
    pol._current = 0
    pol.switch.observe(bucket_of(1), 0.003)
    pol.switch.merge(pol.switch.local_vector())
    pol._probes[(bucket_of(1), 3)] = (1, 0)
    pol._probed_at[(bucket_of(1), 3)] = 0  # its decisions at one request since (session 50)
    pol._decisions = pol._bucket_decisions[bucket_of(1)] = pol.refresh_interval
    assert pol._switch_paid(bucket_of(1), 3, times, pol.refresh_budget)
    pol.switch.observe(bucket_of(1), 0.133)  # a busy batch's price: waits ~5,000 decisions
    pol.switch.merge(pol.switch.local_vector())
    assert not pol._switch_paid(bucket_of(1), 3, times, pol.refresh_budget)
    # plain from plain: no switch
    assert pol._switch_paid(bucket_of(1), 0, times, pol.refresh_budget) is True


def test_a_switching_refresh_is_paid_by_the_decisions_at_its_own_bucket():
    """GPU, session 50 (H100, dense pair, dial 0.5, 64 requests): goodput ran plain on 382 of
    389 steady decisions and made 0.936x of plain, a k = 1 refresh and its catch-up in the 4.8-s
    window. Its price (a switch on within `refresh_budget` of the time since the bucket's last
    switching probe) had been paid by the decisions at the other levels since the warm-up's
    probes at 64. Here 150 decisions at 64 (the warm-up's probes), 3,000 at 16, then 64 again,
    where plain wins (k = 3 at 0.76x) and a switch on is learned at ~0.12 s: the refresh waits
    for the decisions at 64 to pay it, 0.12 / (0.005 x 7.4 ms) = ~3,270 since the probe (at the
    bucket's 32nd decision), so none in the first ~3,150 back at 64. Before: at the first
    refresh turn after the return (decision 4,096, the 945th back)."""
    def cost(bs):
        if bs > 32:
            k3 = 0.0074 * E3 / 0.76
            return (0.0074, 0.9 * k3, 0.95 * k3, k3)
        return (0.0066, 0.0099, 0.0104, 0.0115)

    loads = [64] * 150 + [16] * 3000 + [64] * 4500
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    chosen, _, _ = run_switching(ctl, loads, cost, lambda bs: 0.094 if bs > 32 else 0.0127, 0)
    back = chosen[3150:]
    ons = [i for i in range(1, len(back)) if back[i - 1] == 0 and back[i] > 0]
    assert len(ons) == 1 and ons[0] > 3150 - 32, ons  # one refresh, once 64's decisions paid


def test_a_busy_batchs_cell_whose_probes_never_fill_is_not_reprobed_at_a_switch_each():
    """A drafting cell at a busy batch whose probe samples never reach the table (here: all
    dropped; on the GPU, the sample log's "dropped" class) is probed again: from plain each probe
    costs a switch on (133 ms at 33-64 running on the H200, session 38). After a cell's first
    probe a repeat waits until the switch's price fits 1% of the time since the bucket's last
    switching probe; before, 4 free probes 16 decisions apart and then a doubling gap up to
    1,024 decisions made 39 switches on in 6,000 decisions and 0.849x of static plain on
    be64's table (`policy_sim.py`, `unfilled-busy` lines; 5 and 0.976x after)."""
    def cost(bs):
        return (0.0058, 0.0144, 0.0168, 0.0171)

    for seed in range(3):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        record = ctl.policy.table.record
        ctl.policy.table.record = lambda bs, k, s: record(bs, k, s) if k == 0 else None
        chosen, rate, switches = run_switching(ctl, [72] * 6000, cost, 0.133, seed)
        assert switches <= 6, (seed, switches, ctl.policy._probes)  # 3 first probes
        assert rate >= 0.97 * static_rate([72] * 6000, cost, 0), (seed, rate)


def drop_costs(gain: float):
    """Plain wins at 65-128 running; at 33-64 k = 3's goodput is `gain` x plain's (k = 1, 2 at
    0.84x / 0.98x of its step, the H200 table's shape)."""
    def cost(bs):
        plain, k3 = (0.012, 0.012 * E3 / 0.7) if bs > 64 else (0.0074, 0.0074 * E3 / gain)
        return (plain, 0.84 * k3, 0.98 * k3, k3)
    return cost


@pytest.mark.parametrize("longest, drafts", [(None, True), (128, False)])
def test_a_load_that_holds_where_drafting_wins_a_little_pays_for_its_switch_on(longest, drafts):
    """A drop from 128 running to 60, where drafting wins by 7% and a switch on costs 130 ms:
    spread over 128 drafting steps (~2 s, the horizon before session 41) the price takes ~6%
    and the margin 3%, and plain stayed for all 6,000 decisions; spread over the time the batch
    has held its bucket, the switch pays once the load has held long enough."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    if longest is not None:
        ctl.policy.switch_on_horizon_max = longest
    chosen, _, _ = run_switching(ctl, [128] * 600 + [60] * 6000, drop_costs(1.07), 0.13, 0)
    at60 = chosen[600:]
    assert (at60[-3000:].count(3) >= 2700) == drafts, at60[-3000:].count(3)


def test_the_switch_on_horizon_grows_only_while_the_batch_holds_its_bucket():
    """The horizon is the batch's stay in its bucket (at least 128 drafting steps, at most
    1,024): a new bucket starts it again, and a forecast for another bucket reads none."""
    pol = GoodputPolicy(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    acc, step = AcceptanceStats(), 0.01
    for _ in range(3000):
        pol.decide(LoadSnapshot(running=60), acc)
    b60, b20 = bucket_of(60), bucket_of(20)
    assert pol.runs.clock > 1024 * step  # the decisions' predicted time: the stay so far
    assert pol._switch_on_horizon_s(b60, step) == pytest.approx(1024 * step)
    assert pol._switch_on_horizon_s(b20, step) == pytest.approx(128 * step)  # a forecast's
    stay = pol.describe()["bucket_stay_ms"]["64"]
    assert stay == pytest.approx(1000 * pol.runs.clock, abs=0.1)  # 60 running from the start
    pol.decide(LoadSnapshot(running=20), acc)
    assert pol._switch_on_horizon_s(b20, step) == pytest.approx(128 * step)
    (label, again), = pol.describe()["bucket_stay_ms"].items()  # the status: it starts again
    assert label == "32" and again < stay / 1000  # one decision's predicted time


def test_a_switch_off_held_back_by_its_price_is_named_in_the_decision_basis(monkeypatch):
    """Session 44 (H100, 64 requests, 6-s levels): goodput arrived at 64 drafting and kept k = 3
    for 3-5 s where plain made 1.06x; its decision lines showed the switches only. Drafting at
    60 running where plain's goodput is 7% higher, plain runs here having lasted 1.2 s and a
    switch on costing 100 ms (8% of that): the switch off is held, and the basis says by what,
    with each k's goodput over plain's."""
    pol = GoodputPolicy(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    bucket = bucket_of(60)
    pol.runs.mean[(False, bucket)] = 1.2
    pol.switch.seconds[bucket], pol.switch.count[bucket] = 0.1, 4.0
    pol._current = 3
    times, expected = [0.0072, 0.016, 0.018, 0.0195], [1.0, 1.7, 2.19, 2.53]
    goodput = [e / t for e, t in zip(expected, times)]
    monkeypatch.setattr(pol, "expected_tokens", lambda acc: expected)
    monkeypatch.setattr(pol, "_goodput_at", lambda b, e: (times, [0, 1, 2, 3], goodput))
    monkeypatch.setattr(pol, "_probe", lambda *args: None)
    assert pol._decide(bucket, AcceptanceStats()).steps == 3
    # goodput over plain's: (1.7 / 16) / (1 / 7.2) = 0.765, (2.19 / 18) * 7.2 = 0.876,
    # (2.53 / 19.5) * 7.2 = 0.934; the price's share: 0.1 s over the 1.2-s plain runs = 0.083
    assert pol.decision_basis() == "model=1.000/0.765/0.876/0.934 held=price:0.083"
    pol.runs.mean[(False, bucket)] = 60.0  # long plain runs here: the switch pays
    assert pol._decide(bucket, AcceptanceStats()).steps == 0
    assert pol.decision_basis() == "model=1.000/0.765/0.876/0.934"
    times[0] = 0.00765  # plain 0.7% up on k = 3 now, within the switch off's margin: held
    goodput[:] = [e / t for e, t in zip(expected, times)]
    pol._current = 3
    assert pol._decide(bucket, AcceptanceStats()).steps == 3
    assert pol.decision_basis().endswith(" held=margin")


def _decide_on(monkeypatch, current: int, plain_lead: float) -> int:
    """The k chosen from `current` at 60 running where plain's goodput is `plain_lead` times
    k = 3's (k = 1, 2 far behind), switches priced at nothing (long runs, a cheap switch)."""
    pol = GoodputPolicy(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    bucket = bucket_of(60)
    for drafting in (False, True):
        pol.runs.mean[(drafting, bucket)] = 60.0
    pol.switch.seconds[bucket], pol.switch.count[bucket] = 0.001, 4.0
    pol._current = current
    expected = [1.0, 1.7, 2.19, 2.53]
    times = [0.0072, 0.016, 0.018, 2.53 * 0.0072 * plain_lead]
    goodput = [e / t for e, t in zip(expected, times)]
    monkeypatch.setattr(pol, "expected_tokens", lambda acc: expected)
    monkeypatch.setattr(pol, "_goodput_at", lambda b, e: (times, [0, 1, 2, 3], goodput))
    monkeypatch.setattr(pol, "_probe", lambda *args: None)
    return pol._decide(bucket, AcceptanceStats()).steps


def test_a_switch_to_plain_clears_a_smaller_margin_than_a_switch_on(monkeypatch):
    """GPU, session 62 (H100, DeepSeek-V3 layout, 64 requests): k = 3 read 0.97-0.98x of plain
    for half the level, held there by the 3% margin, and goodput made 0.926x of plain. Plain 2%
    ahead now ends drafting; drafting 2% ahead still does not start it (the hysteresis stays,
    narrower), and plain within 1% leaves drafting on."""
    assert _decide_on(monkeypatch, current=3, plain_lead=1.02) == 0
    assert _decide_on(monkeypatch, current=3, plain_lead=1.005) == 3
    assert _decide_on(monkeypatch, current=0, plain_lead=1 / 1.02) == 0
    assert _decide_on(monkeypatch, current=0, plain_lead=1 / 1.04) == 3
