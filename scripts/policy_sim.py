"""The goodput policy against simulated costs from session 28's GPU tables (CPU only, no GPU, no
performance claim): the numbers the README's session-28 policy paragraphs quote.

    python scripts/policy_sim.py [--root CHECKOUT]

`--root` runs the policy of another checkout (e.g. a `git worktree` of an older commit) with
the same scenarios, for the before/after pairs. Scenarios:
- moe16-stalled: MoE layout at 16 requests (`mr` final table, dial 0.7), k = 3's first N
  samples stalled by a factor; the decision from which 95 of 100 choices are k = 3, and the
  last 4,000 decisions' goodput against k = 3's.
- jump-256: dense pair, a jump to 180-256 running (k = 1 at 6.6x a plain step, over the
  plausible bound); drafting steps in the 1,000 decisions after it, per seed.
- moe4-r0-table (session 29): the table kept after `mq`'s first 4-request repeat (k = 1 at 1
  request 2.48x a plain step on 6 warm-up samples, 1.75x at 4 on 12); the decision at an
  explore step at 4 running, for position-1 acceptance of 30-69 in 100.
- k7-h200 (session 37): up to 7 steps on costs shaped like session 36's final table, dial
  0.7, at 4 / 16 / 32 / 64 requests: the best chain against k = 3 and what the policy makes.
- bucket-edge (session 38): the running batch moving across the edge of buckets 17-32 and
  33-64 (strict alternation 28 <-> 36 every 2-50 decisions; random walks around 32), drafting
  winning on one side and losing on the other, a switch on costing 50-100 ms: switches on and
  tokens per second against the better static choice (k = 0 or 3 throughout), per case.
- closed-loop (session 38): 34-48 closed-loop clients whose requests need 60-240 tokens, each
  next request joining 2-8 decode steps after the last one finished, so the running batch
  fluctuates below the client count, across the 32 / 33 edge at 34-36 clients; goodput's
  tokens per second against the better static choice, on the same cost shapes.
- closed-loop-wall (session 41): the same, each next request joining 1-3, 5-20 or 20-60 ms of
  wall time after the last one finished (a delay in decode steps is ~2x longer in time while
  drafting, which lowers drafting's batch more than a client's delay would).
- steady-busy (session 39): costs from session 38's `be64` final table (dense pair, dial 0.7,
  H200: k = 1..3 at 2.5-3x a plain step at 33-128 running, a switch on 133 / 162 ms), 6,000
  decisions at a steady 56 / 72 / 100 running, or after a ramp from 1 over 200 decisions:
  goodput's tokens per second against static plain, switches on, drafting decisions by reason.
- unfilled-busy (session 39): the same table's 33-64 row at a steady 72 running, every drafting
  sample dropped before the table (a cell whose probes never fill it): tokens per second against
  static plain and switches on, per seed.
- hidden-stalls (session 40): 60 running on costs shaped like session 40's H100 table (plain
  7.43 ms, k = 3 16.8: the model puts k = 3 12% ahead) where 13% of the drafting steps stall
  2.8x, which the table trims and the wall clock keeps (plain truly ~10% ahead), 4,000
  decisions: tokens per second against static plain and decisions in plain over the last
  2,000, with what each k delivered counted (policy/realized.py) and without (`calibrate` off).
- shared-stalls (session 41): 60 running, k = 3's goodput 0.93-1.07x plain's, 5% or 10% of
  every k's steps stalling 2.8x (trimmed by the table, kept by the wall clock), 4,000
  decisions with and without the realized rate: tokens per second against the better static
  choice, switches on, plain decisions over the last 2,000.
- descend (session 41): 128 running (plain wins) for 600 decisions, then 60 for 6,000, where
  k = 3's goodput is 1.03-1.15x plain's and a switch on costs 130 ms: how many decisions at 60
  draft, and from when. With `--switch-on-horizon N` every scenario runs with a switch on's
  price spread over N drafting steps instead of the policy's 128.
- level-starts (session 44): the sweep's levels at 60 running after a drain where it drafted,
  plain leading k = 3 by 6% or 3%, 800- and 2,800-decision levels: the drafting decisions at 60
  per level and the levels' rate against plain.
- surge-64 (session 48): session 46's costs at 64 requests, prefills at 7 ms + 2 ms a new
  request (plain half), 7-request plain prefills in the first 40 steps, then 3,000 closed-loop
  decisions: plain decisions in the last 1,000, per seed (`--root` of an older checkout: the
  pricing before session 48).
- moe16-stalled with 30-40 stalled samples (session 48): the same as above, more of k = 3's
  first samples dear (16 requests' run 2 on the H100: 31 samples, the dear ones beside launches).
- launch-burst-16 (session 49): 16 running on session 49's H100 costs (k = 0..3 6.5 / 9.4 /
  10.3 / 10.7 ms, dial 0.7: k = 3 11% ahead of k = 2), a prefill's launch (+12 ms) beside every
  6th result and beside 7 of k = 3's first results in a row (an arrival burst: its results 0-6,
  8-14, 16-22 or 24-30), 6,000 decisions: the decision from which 95 of 100 choices are k = 3,
  the choices at 200-1,000 and the run's goodput against k = 3's, per seed (`--root` of an older
  checkout: every launched sample entering its cell).
- sweep-levels (session 50): the same-run sweep's order on session 50's H100 table (dense pair,
  dial 0.7; plain 2.6% ahead of k = 3 at 33-64, a switch on 1-193 ms by bucket), and on it with
  drafting dearer from 32 up as at dial 0.5 (`plain-from-32`): a 150-decision warm-up level at
  each of 1 / 4 / 16 / 32 / 64 / 128 running, then a 600-decision level at each (~5 s), a drain to
  1 between: per measured level, the switches on and the rate against the better static choice
  there (`--root` of an older checkout: a switching refresh's budget counted over every bucket's
  decisions).
- level-entry (session 51): a warm-up visit of 150 decisions at 1 / 32 / 64 running (at 64 no
  turnover yet and three dips to 55, each followed by three 13-ms plain prefills), then measured
  levels of 600 at each, a drain to 1 between, steady turnover (arrivals as requests finish, 192
  tokens each) and prefill batches of 6.2 / 8.5 ms (plain / spec) on session 50's step times: at
  64 plain leads k = 3 by ~4%. Per seed, plain's realized ratio at 64 as the measured 64 level
  begins, that level's drafting decisions (in its first 150 and in all) and its rate against the
  better static choice (`--root` of an older checkout: results
  whose interval holds prefills the prefill term left out counted in the realized rate).
- level-entry-requests (session 52): the sweep's order with requests as it makes them (each
  level's N at once, each finished one replaced, a drain after; a warm-up of 2N of 128 tokens at
  each N, then measured levels of 900 decisions with lengths 96-288): at 64 the drafting
  decisions in the first 150 and in all, and at each level the rate against the better of k = 0
  and k = 3 run alone over the same levels (`--root` of an older checkout: arrivals as measured
  at each bucket, no request length, a plain / spec prefill prior of 1).
- level-entry-dear-plain (session 53): level-entry-requests with plain 1.07x a step and its
  prefill batches 2x in the warm-up at 64 (session 52's GPU warm-up: its plain cell 7.7-7.9 ms
  against a steady 7.41, its batches 10-15 ms against ~6.2); the same lines. Session 53's plain
  window (3f51f33, not landed: on the H100 its plain read dear too) made 0.947-0.970 at 64 here
  against 0.945-0.950 (`2026-12-06-s53-policy-sim*.txt`). `--only NAME` runs one of the
  scenarios in `ONLY` alone.
- incumbent-stall (session 54): session 53's MoE table at 3-4 running (k = 0..3 2.67 / 5.32 /
  5.5 / 5.72 ms, dial 0.7: k = 3 1.18x plain), 8,000 decisions at 4 running, every step 1.5-3x
  dearer for 32-64 decisions (2x for 200 / 400 since session 58) from 3,000 while k = 3 runs
  (a host stall): per seed, the rate against static k = 3 and plain's decisions in the 2,000
  after the stall (`--root` of an older checkout: no recheck of a cell that jumped).
- drill-stall (session 58, `--only`): the stall drill on the same table, each k = 3 step among
  decisions 3,000 to 3,063 / 3,199 / 3,599 5.72 ms dearer: per seed, the rate against static
  k = 3 (which meets no stall), the step jumps and the runs of one k from 3,000.
- within-bucket (session 62, `--only`): level-entry-requests on costs where plain is flat
  within 33-64 (7.25 ms) and drafting grows with the batch (k = 3 16.6 ms at 37 running, 19.8
  at 63: session 61's H100 DeepSeek-V3 steps; k = 1, 2 at session 50's shares of k = 3),
  session 50's table elsewhere (plain leads k = 3 by ~4.5% at a steady 64, k = 3 leads by 8-11%
  at 36-40; the GPU's k = 3 line less 1.1 ms, as at dial 0.7 with session 50's prefills): the
  same lines, with the count and mean batch of k = 3's samples at 33-64; `wave-40`: a warm-up
  wave at 40 before 64's, k = 3's cell filled in the 30s-40s (the sweep's order fills it at
  64) and read at the top of the bucket.
- start-ladder (session 62, `--only`): level-entry-requests (session 50's costs, then
  within-bucket's) after the extend warm-up's 67 one-token prefills at start, counted as the
  server reports them (`--root` of an older checkout: every admission in the request length).
  Per seed the same lines, with the request length L at the end.
- level-128 (session 31): dense pair (session 28's costs: k = 1 at 3.3x a plain step at 64
  requests, 4.1x at 128), dial 0.7, 1,500 decisions at 64 running, then 6,000 at 128; the
  drafting steps at 128 by reason, per seed.
"""
import argparse
import math
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Optional


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--switch-on-horizon", type=int, default=None,
                    help="drafting steps a switch on's price is spread over (the policy's own "
                         "default if not given; session 41's trial of a longer one)")
    ap.add_argument("--only", choices=sorted(ONLY),
                    help="run one scenario (its lines as in the full run)")
    args = ap.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    import adaptive_spec  # the policy under test: from --root
    if args.switch_on_horizon is not None:
        set_switch_on_horizon(args.switch_on_horizon)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the helpers: this checkout's
    if args.only:
        print("policy from", Path(adaptive_spec.__file__).parent)
        ONLY[args.only]()
        return 0
    from tests.unit.draft_sim import run_rank
    from tests.unit.test_goodput_policy import (MOE16_MS, StallingFirstSamples, make_ctl, moe16_step_s,
                                                s28_step_s, simulate)
    from adaptive_spec.signals import LoadSnapshot
    from tests.unit.test_goodput_policy import mq_r0_policy
    print("policy from", Path(adaptive_spec.__file__).parent)
    e = [1.0, 1.7, 2.19, 2.533]  # 1 + p + p^2 + ..., p = 0.7
    best = e[3] / (MOE16_MS[3] / 1000)
    for factor, n in ((1.0, 0), (1.3, 8), (1.4, 14), (2.0, 8), (1.3, 30), (1.2, 30), (1.3, 40)):
        ctl = make_ctl()
        if n:
            StallingFirstSamples(ctl.policy, k=3, n=n, factor=factor)
        chosen = simulate(ctl, 16, 0.7, 6000, random.Random(0), cost=moe16_step_s)
        settled = next((i for i in range(len(chosen) - 100) if chosen[i:i + 100].count(3) >= 95), None)
        tail = chosen[2000:]
        eff = sum(e[k] / moe16_step_s(16, k) for k in tail) / len(tail) / best
        print(f"moe16-stalled factor={factor} n={n}: k=3 from decision {settled}, "
              f"last 4000 at {eff:.4f} of k=3, {dict(Counter(tail))}")
    for seed in range(6):
        ctl = make_ctl()
        rng = random.Random(seed)
        loads = [1, 25, 50, 75, 100, 128, 150, 200, 256] + [rng.randint(180, 256) for _ in range(1000)]
        chosen = run_rank(ctl, loads, s28_step_s, accept=0.7)
        print(f"jump-256 seed={seed}: drafting steps {dict(Counter(k for k in chosen[9:] if k > 0))}")
    for seed in range(3):
        ctl, reasons = make_ctl(), Counter()
        decide = ctl.decide

        def counting(bs, decide=decide, reasons=reasons):
            d = decide(bs)
            if bs == 128 and d.steps > 0:
                reasons[f"{d.steps}:{d.reason}"] += 1
            return d
        ctl.decide = counting
        run_rank(ctl, [64] * 1500 + [128] * 6000, s28_step_s, accept=0.7, time_seed=seed)
        print(f"level-128 seed={seed}: drafting decisions at 128 {dict(sorted(reasons.items()))}")
    for right in (30, 40, 45, 50, 55, 60, 69):
        pol, acc = mq_r0_policy(right)
        d = pol.decide(LoadSnapshot(running=4), acc)
        print(f"moe4-r0-table position 1 right {right}/100: k = {d.steps} ({d.reason})")
    surge_64()
    launch_burst_16()
    k7_h200(simulate)
    bucket_edge()
    closed_loop()
    closed_loop(gaps_ms=((1, 3), (5, 20), (20, 60)))
    steady_busy()
    unfilled_busy()
    hidden_stalls()
    shared_stalls()
    descend()
    level_starts()
    sweep_levels()
    level_entry()
    level_entry_requests()
    level_entry_dear_plain()
    incumbent_stall()
    return 0


def set_switch_on_horizon(steps: int) -> None:
    """Every goodput policy made from here on spreads a switch on's price over `steps`."""
    from adaptive_spec.policy import goodput

    init = goodput.GoodputPolicy.__init__

    def with_horizon(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.switch_on_horizon = steps
    goodput.GoodputPolicy.__init__ = with_horizon


def descend() -> None:
    """Session 41: the load drops from 128 running, where plain wins, to 60, where k = 3's goodput
    is `gain` x plain's (k = 1, 2 at 0.84x / 0.98x of k = 3's step, as on the H200's table), a
    switch on 130 ms: the decisions at 60 in k = 3, and when a run of them began."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import drop_costs, run_switching

    for gain in (1.03, 1.05, 1.07, 1.10, 1.15):
        for seed in range(2):
            loads = [128] * 600 + [60] * 6000
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
            chosen, _, switches = run_switching(ctl, loads, drop_costs(gain), 0.13, seed)
            at60 = chosen[600:]
            began = next((i for i in range(len(at60) - 50) if at60[i:i + 50].count(3) >= 45), None)
            print(f"descend 128->60 k3/plain={gain} seed={seed}: k=3 on {at60.count(3)} of "
                  f"{len(at60)} decisions at 60, drafting from decision {began}, {switches} "
                  f"switches on")


def surge_64() -> None:
    """Session 48: plain's prefills priced from a surge's larger batches (the 64-request run 2)."""
    from tests.unit.test_goodput_policy import make_ctl, surge_then_closed_loop
    for seed in range(3):
        tail = surge_then_closed_loop(make_ctl(), seed=46 + seed)
        print(f"surge-64 seed={seed}: plain on {tail.count(0)} of the last {len(tail)} decisions, "
              f"{dict(Counter(tail))}")


def launch_burst_16() -> None:
    """Session 49: an arrival burst of launches in k = 3's first samples at 16 requests."""
    from tests.unit.test_goodput_policy import S49_16_MS, expected_tokens, simulate_launch_burst
    e = [expected_tokens(0.7, k) for k in range(4)]
    for seed, first in enumerate((0, 8, 16, 24)):
        chosen = simulate_launch_burst(seed, 6000, burst=(first, first + 7))
        settled = next((i for i in range(len(chosen) - 100) if chosen[i:i + 100].count(3) >= 95),
                       None)
        rate = sum(e[k] for k in chosen) / sum(S49_16_MS[k] for k in chosen)
        print(f"launch-burst-16 seed={seed} burst at k=3's results {first}-{first + 6}: k=3 from "
              f"decision {settled}, decisions 200-1000 "
              f"{dict(Counter(chosen[200:1000]))}, all 6000 at {rate / (e[3] / S49_16_MS[3]):.4f} "
              f"of k=3 (launches left out)")


def k7_h200(simulate) -> None:
    """Session 37: up to 7 steps on costs shaped like session 36's final table (dial 0.7): the
    best chain's gain over k = 3, and the policy's goodput against the best k (and the best
    k <= 3) over the first 600 and over 3,000 decisions, per batch size and seed."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_goodput_policy import expected_tokens, h200_shaped_step_s, H200_SHAPE_MS
    p = 0.7
    for bs in H200_SHAPE_MS:
        goodput = [expected_tokens(p, k) / h200_shaped_step_s(bs, k) for k in range(8)]
        best, best3 = max(goodput), max(goodput[:4])
        for seed in (1, 2):
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=7))
            ctl.timer.tick = lambda steps, now=None: None
            chosen = simulate(ctl, bs, p, 3000, random.Random(seed), cost=h200_shaped_step_s)

            def rate(ks):  # tokens per second over these decisions, per request
                return (sum(expected_tokens(p, k) for k in ks)
                        / sum(h200_shaped_step_s(bs, k) for k in ks))
            print(f"k7-h200 bs={bs} seed={seed}: best k={goodput.index(best)} at "
                  f"{best / best3:.3f}x of the best k <= 3; first 600 "
                  f"{rate(chosen[:600]) / best:.3f} of the best ({rate(chosen[:600]) / best3:.3f} "
                  f"of k <= 3), all 3000 "
                  f"{rate(chosen) / best:.3f}, last 1000 {dict(Counter(chosen[-1000:]))}")


def bucket_edge() -> None:
    """Session 38: a batch crossing a bucket edge (policy/preferred_runs.py). Costs from
    tests/unit/test_switch_cost.py's `costs_at(bs, busy, idle)`: k = 3's goodput `idle` x plain's
    at <= 32 running, `busy` x above; a switch on costs `sw` seconds of catch-up."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import costs_at, run_switching, static_rate

    def walk(spread, hold, seed, n=6000):
        rng, bs, out = random.Random(seed), 32, []
        while len(out) < n:
            bs = min(32 + spread, max(32 - spread, bs + rng.choice((-1, 0, 1))))
            out += [bs] * hold
        return out[:n]

    for busy, idle, sw in ((0.9, 1.1, 0.1), (0.9, 1.2, 0.05), (0.95, 1.3, 0.05),
                           (0.8, 1.4, 0.05), (0.97, 1.06, 0.02)):
        def cost(bs, busy=busy, idle=idle):
            return costs_at(bs, busy, idle)
        cases = [(f"alternating every {p}", 0, ([28] * p + [36] * p) * (6000 // (2 * p)))
                 for p in (2, 3, 5, 10, 20, 50)]
        cases += [(f"walk +-{spread} hold {hold} seed {seed}", seed, walk(spread, hold, seed))
                  for spread, hold in ((4, 1), (6, 1), (6, 4)) for seed in (0, 1)]
        for name, seed, loads in cases:
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
            _, rate, switches = run_switching(ctl, loads, cost, sw, seed)
            static = [static_rate(loads, cost, k) for k in (0, 3)]
            print(f"bucket-edge busy={busy} idle={idle} switch={sw * 1000:.0f}ms {name}: "
                  f"{switches} switches on, {rate / max(static):.3f} of the better static "
                  f"(k=3 / plain static {static[1] / static[0]:.3f})")


def closed_loop(gaps_ms=None) -> None:
    """Session 38: closed-loop clients, the batch shaped by completions and admission delays
    (see the module docstring); the same costs as `bucket_edge`. `gaps_ms` (session 41): the
    next request joins a uniform draw from each (low, high) range of wall-clock ms after the
    last one finished, instead of 2-8 decode steps (a client's delay is time, not steps: a
    drafting step is ~2x a plain one, so a delay in steps is ~2x longer while drafting)."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from adaptive_spec.signals import LoadSnapshot
    from tests.unit.draft_sim import correct_drafts
    from tests.unit.test_switch_cost import costs_at

    def run(clients, cost, switch_s, seed, static_k=None, steps=6000, gap_ms=None):
        rng = random.Random(seed)
        left = [rng.randint(60, 240) for _ in range(clients)]  # tokens left per running request
        # per next request: decode steps until it joins, or (gap_ms) the wall time it joins at
        joining, dts, ctl = [], [], None
        if static_k is None:
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
            ctl.timer.tick = lambda steps, now=None: dts.pop(0)
        wall = tokens = 0.0
        pending, last_k, switches = None, None, 0
        for _ in range(steps):
            bs = len(left)
            if ctl is not None:
                ctl.on_snapshot(LoadSnapshot(running=bs))
                k = ctl.decide(bs).steps
            else:
                k = static_k
            mode = "off" if k == 0 else ("catchup" if last_k == 0 and ctl else "on")
            t = cost(bs)[k] * (1 + rng.uniform(-0.03, 0.03))
            began = wall
            wall += t
            if mode == "catchup":
                switches += 1
                wall += switch_s
                t += switch_s / 2
                if pending is not None:
                    pending[2] += switch_s / 2
            if ctl is not None and pending is not None:
                dts.append(pending[2])
                ctl.on_result(pending[0], pending[1], pending[3])
            correct = correct_drafts(rng, bs, 0.7, k)
            made = [1 if mode == "catchup" else 1 + c for c in correct]
            tokens += sum(made)
            pending, last_k = [k, correct, t, mode], k
            still = [n - m for n, m in zip(left, made) if n - m > 0]
            if gap_ms is None:
                joining = [w - 1 for w in joining] + [rng.randint(2, 8) - 1
                                                       for _ in range(bs - len(still))]
            else:  # wall seconds from now until it joins
                elapsed = wall - began
                joining = [w - elapsed for w in joining] + [rng.uniform(*gap_ms) / 1000
                                                            for _ in range(bs - len(still))]
            left = still + [rng.randint(60, 240) for w in joining if w <= 0]
            joining = [w for w in joining if w > 0]
        return tokens / wall, switches

    for busy, idle, sw in ((0.9, 1.1, 0.1), (0.9, 1.2, 0.05), (0.95, 1.3, 0.05),
                           (0.8, 1.4, 0.05), (0.97, 1.06, 0.02)):
        def cost(bs, busy=busy, idle=idle):
            return costs_at(bs, busy, idle)
        for gap in gaps_ms or (None,):
            name = "closed-loop" if gap is None else f"closed-loop-wall gap={gap[0]}-{gap[1]}ms"
            for clients in (34, 36, 40, 48):
                rate, switches = run(clients, cost, sw, 0, gap_ms=gap)
                plain, drafting = (run(clients, cost, sw, 0, k, gap_ms=gap)[0] for k in (0, 3))
                print(f"{name} busy={busy} idle={idle} switch={sw * 1000:.0f}ms "
                      f"clients={clients}: {switches} switches on, "
                      f"{rate / max(plain, drafting):.3f} of the better static "
                      f"(k=3 / plain static {drafting / plain:.3f})")


# session 38's `be64` final table (ms per step, k = 0..3, by the bucket's upper batch size) and
# its switch-on prices (s): `call_s38.sh be64`'s run log,
# benchmarks/results/2026-12-05-s38-run-be64.log
# (at 2 running, k = 1, 2 and the switch were not measured: the means of 1's and 4's, and 1's)
BE64_MS = {1: (4.49, 5.73, 6.51, 7.12), 2: (5.41, 5.95, 6.51, 6.93), 4: (4.98, 6.17, 6.50, 7.16),
           8: (4.96, 7.56, 7.78, 8.08), 16: (5.09, 8.84, 9.46, 9.80),
           32: (5.36, 11.57, 12.49, 12.31), 64: (5.79, 14.41, 16.81, 17.09),
           128: (5.92, 15.53, 17.21, 20.82)}
BE64_SWITCH_S = {1: 0.003, 2: 0.003, 4: 0.010, 8: 0.004, 16: 0.084, 32: 0.043, 64: 0.133,
                 128: 0.162}


def steady_busy() -> None:
    """Session 39: a busy batch where plain wins, the price of refreshing drafting cells."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import run_switching, static_rate

    def upper(bs):
        return min((b for b in BE64_MS if b >= bs), default=128)

    def cost(bs):
        return tuple(ms / 1000 for ms in BE64_MS[upper(bs)])

    for n in (56, 72, 100):
        for ramp in (False, True):
            for seed in range(3):
                loads = [max(1, n * i // 200) for i in range(1, 201)] if ramp else []
                loads += [n] * 6000
                ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
                reasons = Counter()
                decide = ctl.decide

                def counting(bs, decide=decide, reasons=reasons):
                    d = decide(bs)
                    if d.steps > 0:
                        reasons[f"{d.steps}:{d.reason}"] += 1
                    return d
                ctl.decide = counting
                _, rate, switches = run_switching(ctl, loads, cost, BE64_SWITCH_S[upper(n)], seed)
                print(f"steady-busy running={n} {'ramp' if ramp else 'flat'} seed={seed}: "
                      f"{rate / static_rate(loads, cost, 0):.3f} of static plain, {switches} "
                      f"switches on, drafting decisions {dict(sorted(reasons.items()))}")


def unfilled_busy() -> None:
    """Session 39: repeated probes of a cell that never fills, each behind a switch on."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import run_switching, static_rate

    def cost(bs):
        return tuple(ms / 1000 for ms in BE64_MS[64])

    loads = [72] * 6000
    for seed in range(3):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        record = ctl.policy.table.record
        # drafting samples never reach the table
        ctl.policy.table.record = lambda bs, k, s, rec=record: rec(bs, k, s) if k == 0 else None
        _, rate, switches = run_switching(ctl, loads, cost, BE64_SWITCH_S[64], seed)
        print(f"unfilled-busy running=72 seed={seed}: {rate / static_rate(loads, cost, 0):.3f} of "
              f"static plain, {switches} switches on")


def hidden_stalls() -> None:
    """Session 40: a model blind to stalls it trims, against what each k delivered."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_realized import hidden_stalls as costs
    from tests.unit.test_switch_cost import run_switching, static_rate

    loads = [60] * 4000
    for calibrate in (True, False):
        for seed in range(3):
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
            if not hasattr(ctl.policy, "calibrate") and calibrate:
                print("hidden-stalls: this policy counts no realized goodput")
                return
            ctl.policy.calibrate = calibrate
            chosen, rate, switches = run_switching(ctl, loads, costs(seed), 0.13, seed)
            plain = static_rate(loads, costs(seed), 0)
            print(f"hidden-stalls running=60 {'realized' if calibrate else 'model only'} "
                  f"seed={seed}: {rate / plain:.3f} of static plain, plain on "
                  f"{chosen[-2000:].count(0)} of the last 2000, {switches} switches on")


def shared_stalls() -> None:
    """Session 41: stalls that hit every k alike (a host hiccup, not a drafting cost), which
    the table trims and the wall clock keeps. The realized rate then reads the k that runs
    below 1 and a k without results of its own at 1: an exploration bonus for the k not
    running, right where that k truly wins, a cost where it truly loses."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import E3, run_switching, static_rate

    def costs(seed, share, gain):
        """60 running, plain 7.4 ms a step; k = 3's goodput `gain` x plain's (k = 1, 2 lose);
        `share` of all steps stall 2.8x."""
        rng = random.Random(seed)

        def cost(bs):
            stall = 2.8 if rng.random() < share else 1.0
            k3 = 0.0074 * E3 / gain * stall
            return (0.0074 * stall, 0.67 * k3, 0.85 * k3, k3)
        return cost

    loads = [60] * 4000
    for gain in (0.93, 0.97, 1.03, 1.07):
        for share in (0.05, 0.1):
            for calibrate in (True, False):
                runs = []
                for seed in range(3):
                    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
                    if not hasattr(ctl.policy, "calibrate"):
                        print("shared-stalls: this policy counts no realized goodput")
                        return
                    ctl.policy.calibrate = calibrate
                    chosen, rate, switches = run_switching(ctl, loads, costs(seed, share, gain),
                                                           0.13, seed)
                    best = max(static_rate(loads, costs(seed, share, gain), k) for k in (0, 3))
                    runs.append(f"{rate / best:.3f} ({switches} on, plain "
                                f"{chosen[-2000:].count(0)})")
                print(f"shared-stalls k3/plain={gain} stalled={share} "
                      f"{'realized' if calibrate else 'model only'}: of the better static, "
                      f"per seed: {', '.join(runs)}")


def level_starts() -> None:
    """Session 44: the sweep's closed-loop levels at 60 running (plain 7.2 ms a step on the
    H100's table, k = 3's goodput `busy` x plain's), each after a drain to 2 running where
    drafting wins 1.45x, a switch on 100 ms, a 160-decision warm-up level first: the decisions
    at 60 that draft in each level (800 decisions ~ the sweep's 6-s level, 2,800 ~ 20 s) and
    the levels' rate against plain at 60. On the H100 goodput settled on plain 3.1-5.1 s into
    6.6-s levels where plain led k = 3 by ~6%; with the costs known (not learned from a GPU's
    samples) a 6% lead takes it to plain at once."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import E3, run_switching

    def cost_for(busy):
        def cost(bs):
            if bs > 32:
                k3 = 0.0072 * E3 / busy
                return (0.0072, 0.84 * k3, 0.94 * k3, k3)
            return (0.006, 0.011, 0.0135, 0.006 * E3 / 1.45)
        return cost

    drain = [max(1, 60 - 60 * i // 40) for i in range(40)] + [2] * 30
    expected = [1.0, 1.7, 2.19, E3]  # E_k at p = 0.7
    for busy in (0.94, 0.97):
        at_60 = cost_for(busy)(60)
        for level in (800, 2800):
            for seed in range(2):
                loads = [60] * 160 + drain + ([60] * level + drain) * 3
                ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
                chosen, _, switches = run_switching(ctl, loads, cost_for(busy), 0.10, seed)
                at60, rates, start = [], [], 160 + len(drain)
                for _ in range(3):
                    ks = chosen[start:start + level]
                    at60.append(sum(k > 0 for k in ks))
                    # tokens a second at 60 against plain's: E_k over each k's step time
                    rates.append(sum(expected[k] for k in ks) / sum(at_60[k] for k in ks)
                                 * at_60[0])
                    start += level + len(drain)
                print(f"level-starts k3/plain={busy} level={level} seed={seed}: drafting decisions"
                      f" at 60 per level {at60}, rate vs plain {', '.join(f'{r:.3f}' for r in rates)}"
                      f", {switches} switches on")


# Session 50's final table (H100, dense pair, dial 0.7; `2026-12-06-s50-dense-1-128-fs.json`'s
# step_ms, k = 0..3, ms, rounded) and its switch-on prices (switch_on_ms, ms) per bucket
S50_STEP_MS = {1: (5.9, 6.4, 8.0, 8.7), 4: (6.45, 7.8, 8.2, 9.0), 16: (6.6, 9.85, 10.4, 11.5),
               32: (6.8, 12.2, 12.9, 14.5), 64: (7.4, 16.7, 18.9, 19.2), 128: (8.4, 27.0, 29.4, 33.0)}
S50_SWITCH_MS = {1: 1.0, 4: 4.9, 16: 12.7, 32: 44.2, 64: 94.2, 128: 192.8}


def s50_cost(bs):
    """Session 50's step seconds (k = 0..3) at a batch size: the smallest listed bucket
    holding it."""
    return tuple(ms / 1000 for ms in S50_STEP_MS[next(n for n in sorted(S50_STEP_MS) if bs <= n)])


def s50_switch_s(bs):
    """Session 50's switch-on price (s) at a batch size, likewise."""
    return S50_SWITCH_MS[next(n for n in sorted(S50_SWITCH_MS) if bs <= n)] / 1000


def sweep_levels() -> None:
    """Session 50 (H100, dial 0.5, 64 requests): plain on 382 of 389 steady decisions and 0.936x
    of plain, a k = 1 refresh and its catch-up in the 4.8-s window; the refresh's budget had been
    counted over every bucket's decisions since the warm-up's probes at 64. Here the sweep's
    order on session 50's dial-0.7 table, and on it with drafting dearer from 32 up as at dial
    0.5: per measured level, the switches on and the rate against the better static choice
    there."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_switch_cost import E3, run_switching

    levels = sorted(S50_STEP_MS)
    cost, switch_s = s50_cost, s50_switch_s

    def edge(bs):  # the table's row for a batch size: the smallest listed bucket holding it
        return next(n for n in levels if bs <= n)

    # dial 0.5's shape from 32 up (its run: EAGLE-3 at 0.92x / 0.76x / 0.57x of plain at 32 /
    # 64 / 128): the drafting steps there dearer by these factors, p = 0.7 kept
    plain_from_32 = {32: 1.29, 64: 1.28, 128: 1.13}

    def dearer(bs):
        step, f = cost(bs), plain_from_32.get(edge(bs), 1.0)
        return (step[0],) + tuple(f * t for t in step[1:])

    drain = [1] * 30
    expected = [1.0, 1.7, 2.19, E3]  # E_k at p = 0.7
    warm = [n for level in levels for n in [level] * 150 + drain]
    measured = [n for level in levels for n in [level] * 600 + drain]
    for name, table in (("dial-0.7", cost), ("plain-from-32", dearer)):
        for seed in range(2):
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
            chosen, _, _ = run_switching(ctl, warm + measured, table, switch_s, seed)
            out, start = [], len(warm)
            for level in levels:
                ks = chosen[start:start + 600]
                prev = chosen[start - 1:start + 599]
                ons = sum(1 for a, b in zip(prev, ks) if a == 0 and b > 0)
                step = table(level)
                # E_k over the steps' times and the catch-ups' (a catch-up step's own tokens
                # counted at E_k too: a bound above by ~1.5 tokens per switch on)
                rate = (sum(expected[k] for k in ks)
                        / (sum(step[k] for k in ks) + ons * switch_s(level)))
                best = max(expected[k] / step[k] for k in (0, 3))
                out.append(f"{level}: {ons} on, {rate / best:.3f}")
                start += 600 + len(drain)
            print(f"sweep-levels {name} seed={seed}: " + "; ".join(out))


# Session 51 (H100, dense pair, dial 0.7): prefill batches a ms, plain and spec kind (the final
# status of `2026-12-06-s51-dense-16-128-prefill-bucket.json`: 6.2 / 9.9 at 64, spec 8.6 at 32;
# spec set to 8.5 here so that plain leads k = 3 at 64 by ~4%, as forced on made 0.963x of plain)
S51_PREFILL_MS = (6.2, 8.5)
S51_NEW_TOKENS = 192  # the sweep's mean new tokens a request (one finishes every L / E_k steps)


def _poisson(rng, mean: float) -> int:
    """A Poisson draw (Knuth's, for the small means here)."""
    limit, n, prod = math.exp(-mean), 0, rng.random()
    while prod > limit:
        n, prod = n + 1, prod * rng.random()
    return n


def _report(ctl, pending, dts, pre_dts) -> None:
    """The last step's decode result, then its prefills' results, to the controller (their
    times through the stubbed timer: `dts` / `pre_dts`); `pending`: [k, correct drafts, the
    result's seconds, the worker's mode, [(prefill ms, admitted)]]."""
    dts.append(pending[2])
    ctl.on_result(pending[0], pending[1], pending[3])
    for ms, admitted in pending[4]:
        ctl.note_mode("prefill-plain" if pending[0] == 0 else "prefill-spec")
        pre_dts.append(ms / 1000)
        ctl.on_prefill_result(admitted)


def run_with_prefills(ctl, plan, cost, switch_s, seed, measured_from, on_measured=None):
    """The controller driven as the server drives it (overlap scheduler: a decode result after
    the next decision; its prefills' results after it, their time in the next result's wall),
    each step of `plan` (batch size, dip prefills or None) followed by prefills of the requests
    it finished: None draws steady turnover (a Poisson number of arrivals, bs x E_k / L a step;
    one prefill batch if any), else the given [(ms, admitted)]. Plain prefills while plain,
    spec ones while drafting; `on_measured(ctl)` called as the measured part begins. Returns
    (chosen k, from `measured_from` on: tokens at E_k, seconds with prefills and catch-ups)."""
    from tests.unit.draft_sim import correct_drafts
    from tests.unit.test_goodput_policy import expected_tokens
    from adaptive_spec.signals import LoadSnapshot
    dts, pre_dts = [], []
    ctl.timer.tick = lambda steps, now=None: dts.pop(0)
    ctl.timer.elapsed = lambda now=None: pre_dts.pop(0)
    rng = random.Random(seed)
    expected = [expected_tokens(0.7, k) for k in range(4)]
    pending, last_k, chosen, tokens, seconds = None, None, [], 0.0, 0.0
    for i, (bs, dip) in enumerate(plan):
        if i == measured_from and on_measured is not None:
            on_measured(ctl)
        ctl.on_snapshot(LoadSnapshot(running=bs))
        k = ctl.decide(bs).steps
        mode = "off" if k == 0 else ("catchup" if last_k == 0 else "on")
        t = cost(bs)[k] * (1 + rng.uniform(-0.02, 0.02))
        spent = t
        if mode == "catchup":
            price = switch_s(bs)
            spent += price
            t += price / 2
            if pending is not None:
                pending[2] += price / 2
        if pending is not None:
            _report(ctl, pending, dts, pre_dts)
        if dip is None:
            n = _poisson(rng, bs * expected[k] / S51_NEW_TOKENS)
            prefills = [(S51_PREFILL_MS[k > 0], n)] if n else []
        else:
            prefills = dip
        if i >= measured_from:
            tokens += expected[k]
            seconds += spent + sum(ms for ms, _ in prefills) / 1000
        pending, last_k = [k, correct_drafts(rng, bs, 0.7, k), t, mode, prefills], k
        chosen.append(k)
    return chosen, tokens, seconds


def level_entry() -> None:
    """Session 51 (H100, dial 0.7, 64 requests): the first measured pass began drafting on what
    the warm-up visit had left, plain's realized ratio 0.853 from results after dips of the batch
    whose intervals held 33-45 ms of plain prefills the prefill term had left out. Here a warm-up
    visit at 1 / 32 / 64 (150 decisions; at 64 three dips to 55 running, each followed by three
    plain prefills of 13 ms), then measured levels of 600 at 1 / 32 / 64, a drain to 1 between,
    steady turnover everywhere else, on session 50's step times and the prefill costs above:
    per seed, the 64 level's drafting decisions in its first 150 and in all, and its rate
    against the better static choice there (k = 0 or 3 with its expected prefills). Its
    turnover is drawn, not made by requests finishing (no wave is admitted, arrivals come from
    the first decision): the request length it gives (session 52) is not the 192 drawn from;
    `level_entry_requests` makes requests."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_goodput_policy import expected_tokens

    levels = (1, 32, 64)
    cost, switch_s = s50_cost, s50_switch_s

    drain = [(1, None)] * 30
    dips = {60, 90, 120}
    warm = []
    for level in levels:
        for i in range(150):
            if level == 64 and i in dips:
                warm.append((55, [(13.0, 3)] * 3))
            else:
                warm.append((level, [] if level == 64 else None))  # the wave: no turnover yet
        warm += drain
    measured = [step for level in levels for step in [(level, None)] * 600 + drain]
    start_64 = len(warm) + 2 * (600 + len(drain))
    expected = [expected_tokens(0.7, k) for k in range(4)]

    def static_rate(k):  # tokens a second a request at 64, prefills at their expected cost
        a = 64 * expected[k] / S51_NEW_TOKENS
        return expected[k] / (cost(64)[k] + (1 - math.exp(-a)) * S51_PREFILL_MS[k > 0] / 1000)

    best = max(static_rate(0), static_rate(3))
    def plain_ratio_at_64(ctl):
        return ctl.policy.describe()["realized_ratio"].get("64", {}).get("0", ["-"])[0]

    for seed in range(3):
        ctl, on_arrival = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3)), []
        chosen, tokens, seconds = run_with_prefills(
            ctl, (warm + measured)[:start_64 + 600], cost, switch_s, seed, start_64,
            on_measured=lambda c: on_arrival.append(plain_ratio_at_64(c)))
        entry, ks = on_arrival[0], chosen[start_64:]
        print(f"level-entry seed={seed}: plain's realized ratio at 64 on arrival {entry}; "
              f"at 64 drafting {sum(1 for k in ks[:150] if k)} of the "
              f"first 150, {sum(1 for k in ks if k)} of 600; rate {tokens / seconds / best:.3f} "
              f"of the better static (plain {static_rate(0) / static_rate(3):.3f}x k = 3)")


WAVE_MS_A_REQUEST = 2.5  # a prefill batch's cost beyond its first request (session 47's waves)


def run_requests(levels, cost, switch_s, seed, ctl=None, static_k=None):
    """A request-level closed loop, as the same-run sweep drives a server: per level (N,
    requests, length range, decisions) N requests at once (a wave), each finished one replaced
    while the level issues (at most `requests`, every `decisions` decisions), then a drain to
    none. Each request gains 1 + its correct drafts a step (dial 0.7); the requests finished in
    a step arrive in one prefill batch (S51_PREFILL_MS of its kind plus WAVE_MS_A_REQUEST per
    further request) reported after the next decision, as `run_with_prefills` orders them. The
    controller decides (`ctl`) or a static k runs. A level may carry a fifth field, (step,
    prefill) factors on plain's costs there (`level_entry_dear_plain`). Returns per level
    (tokens, seconds, the k of each decision) over its issuing part."""
    from tests.unit.draft_sim import correct_drafts
    from adaptive_spec.signals import LoadSnapshot
    rng = random.Random(seed)
    dts, pre_dts = [], []
    if ctl is not None:
        ctl.timer.tick = lambda steps, now=None: dts.pop(0)
        ctl.timer.elapsed = lambda now=None: pre_dts.pop(0)
    pending, last_k, out = None, None, []
    for n, budget, (short, long), decisions, *dear in levels:
        step_x, prefill_x = dear[0] if dear else (1.0, 1.0)
        reqs, issued, tokens, seconds, waiting = [], 0, 0.0, 0.0, min(n, budget)
        step, chosen = 0, []
        wave = [(prefill_x * (S51_PREFILL_MS[0] + WAVE_MS_A_REQUEST * (waiting - 1)), waiting)]
        seconds += wave[0][0] / 1000
        if ctl is not None and pending is not None:  # reported after the next decision
            pending[4] = pending[4] + wave
        elif ctl is not None:
            pre_dts.append(wave[0][0] / 1000)
            ctl.on_prefill_result(waiting)
        while (step < decisions or reqs) and step < 20 * decisions:
            issuing = step < decisions
            if waiting:  # arrivals join after their prefill (run below, beside the last step)
                reqs += [rng.randint(short, long) for _ in range(waiting)]
                issued, waiting = issued + waiting, 0
            bs = len(reqs)
            if bs == 0:
                break
            if ctl is not None:
                ctl.on_snapshot(LoadSnapshot(running=bs))
            k = static_k if ctl is None else ctl.decide(bs).steps
            mode = "off" if k == 0 else ("catchup" if last_k == 0 else "on")
            t = cost(bs)[k] * (1 + rng.uniform(-0.02, 0.02)) * (step_x if k == 0 else 1.0)
            spent = t
            if mode == "catchup":  # half in this result, half in the last (run_with_prefills)
                spent += switch_s(bs)
                t += switch_s(bs) / 2
                if pending is not None:
                    pending[2] += switch_s(bs) / 2
            drafts = correct_drafts(rng, bs, 0.7, k)
            if ctl is not None and pending is not None:
                _report(ctl, pending, dts, pre_dts)
            reqs = [left - 1 - c for left, c in zip(reqs, drafts)]
            finished = sum(1 for left in reqs if left <= 0)
            reqs = [left for left in reqs if left > 0]
            if issuing:
                waiting = min(finished, budget - issued)
            batch_ms = S51_PREFILL_MS[k > 0] + WAVE_MS_A_REQUEST * (waiting - 1)
            prefills = ([(batch_ms * (prefill_x if k == 0 else 1.0), waiting)]
                        if waiting else [])
            if issuing:
                tokens += bs + sum(drafts)
                seconds += spent + sum(ms for ms, _ in prefills) / 1000
                chosen.append(k)
            pending, last_k = [k, drafts, t, mode, prefills], k
            step += 1
        out.append((tokens, seconds, chosen))
    return out


def level_entry_requests(label: str = "level-entry-requests",
                         dear_warm_up: Optional[dict] = None, cost=s50_cost,
                         on_ctl=None, warm_sizes: tuple = ()) -> None:
    """Session 52: the same-run sweep's order with requests as the sweep makes them, so that a
    level's arrivals wait for its requests to finish: a warm-up of 2N requests of 128 tokens at
    each N of 1 / 16 / 32 / 64 / 128 (decisions enough for them), then measured levels of 900
    decisions with lengths 96-288 (the sweep's 192 +- 50%), each level's N requests arriving
    at once and a drain after, on session 50's table. Per seed: at 64 the drafting decisions in
    the level's first 150 and in all; at each level the rate against the better of k = 0 and
    k = 3 run alone over the same levels and requests (`--root` of an older checkout: arrivals
    as measured at a bucket, a plain / spec prefill ratio of 1 before any bucket has run
    both). `dear_warm_up`: {N: (step, prefill) factors on plain's costs in N's warm-up};
    `cost`: step seconds (k = 0..3) at a batch size; `on_ctl(ctl)`: called on each seed's
    controller before its run, returning a function called after it (a line's tail);
    `warm_sizes`: further warm-up waves' N (in order with the others)."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller

    sizes = (1, 16, 32, 64, 128)
    dear = dear_warm_up or {}
    warm = [(n, 2 * n, (128, 128), 10_000, dear.get(n, (1.0, 1.0)))
            for n in sorted(set(sizes + warm_sizes))]
    measured = [(n, 10 ** 9, (96, 288), 900) for n in sizes]
    at_64 = len(warm) + sizes.index(64)
    for seed in range(3):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
        after = on_ctl(ctl) if on_ctl is not None else (lambda: "")
        runs = [run_requests(warm + measured, cost, s50_switch_s, seed, ctl=ctl)]
        runs += [run_requests(warm + measured, cost, s50_switch_s, seed, static_k=k)
                 for k in (0, 3)]
        rates = []
        for level in range(len(warm), len(warm) + len(sizes)):
            goodput, plain, k3 = (run[level][0] / run[level][1] for run in runs)
            rates.append(f"{goodput / max(plain, k3):.3f}")
        plain_x = (runs[1][at_64][0] / runs[1][at_64][1]) / (runs[2][at_64][0] / runs[2][at_64][1])
        ks = runs[0][at_64][2]
        print(f"{label} seed={seed}: at 64 drafting {sum(1 for k in ks[:150] if k)} "
              f"of the first 150, {sum(1 for k in ks if k)} of {len(ks)} (plain {plain_x:.3f}x "
              f"k = 3); rate of the better static at {' / '.join(map(str, sizes))}: "
              f"{' / '.join(rates)}{after()}")


# Session 61 (H100, DeepSeek-V3 layout, 64 requests): plain 7.1-7.4 ms a step at every batch of
# 33-64, k = 3 16.6 ms at 36-39 running to 19.3-19.8 at 60-64 (~linear); here k = 3 1.1 ms
# under that line, so that at p = 0.7 with session 50's prefills plain leads by ~4.5% at 64, as
# EAGLE-3 made 0.96x of plain there; k = 1, 2 at session 50's shares of k = 3 at 33-64
S62_PLAIN_MS = 7.25
S62_K3_MS = ((37, 15.5), (63, 18.6))  # (batch, ms): the line k = 3 lies on within 33-64
S62_K_SHARE = tuple(ms / S50_STEP_MS[64][3] for ms in S50_STEP_MS[64][1:])


def within_bucket_cost(bs):
    """Step seconds (k = 0..3): at 33-64 plain flat and drafting on the line above (k = 3
    +0.119 ms a request); elsewhere session 50's (`s50_cost`)."""
    if not 33 <= bs <= 64:
        return s50_cost(bs)
    (b0, t0), (b1, t1) = S62_K3_MS
    k3 = t0 + (t1 - t0) * (bs - b0) / (b1 - b0)
    return (S62_PLAIN_MS / 1000,) + tuple(share * k3 / 1000 for share in S62_K_SHARE)


def within_bucket() -> None:
    """Session 61 (H100, DeepSeek-V3 layout, 64 requests): k = 3's cell at 33-64 took its
    samples in the warm-up's wave and drains (batches in the 30s-40s, 17.2-17.7 ms) and priced
    k = 3 at 1.03-1.10x plain's goodput at a steady 61-64 running, where EAGLE-3 made 0.96x of
    plain; goodput drafted and made 0.936x. Here `level_entry_requests` on costs flat within a
    bucket for plain and growing with the batch for drafting (`within_bucket_cost`): the same
    lines, with the count and mean batch of k = 3's samples at 33-64. The sweep's order alone
    fills that cell at 64 (its probe in the 64 wave); `wave-40`: a warm-up wave at 40 first, so
    that it is filled in the 30s-40s, as the GPU's was."""
    def on_ctl(ctl):
        table, batches = ctl.policy.table, []
        record = table.record

        def recording(batch_size, k, seconds, *args, **kwargs):
            if k == 3 and 33 <= batch_size <= 64:
                batches.append(batch_size)
            return record(batch_size, k, seconds, *args, **kwargs)
        table.record = recording

        def after():
            mean = sum(batches) / len(batches) if batches else float("nan")
            return f"; k = 3 samples at 33-64: {len(batches)}, mean batch {mean:.1f}"
        return after

    level_entry_requests("within-bucket", cost=within_bucket_cost, on_ctl=on_ctl)
    level_entry_requests("within-bucket wave-40", cost=within_bucket_cost, on_ctl=on_ctl,
                         warm_sizes=(40,))


EXTEND_WARM_UP_PREFILLS = 67  # the extend warm-up's one-token prefills (33 + the prefix + 33)


def start_ladder() -> None:
    """Session 62: `level_entry_requests` after the extend warm-up's one-token prefills, which
    finish at their prefill and decode nothing (GPU, session 62, H100, DeepSeek-V3 layout, 64
    requests: L read 139 at the run's end). Told as the server's hook tells them (requests
    going on to decode: none); an older checkout counts every admission. Per seed the same
    lines, with L at the end, on session 50's costs and on `within_bucket_cost`."""
    def on_ctl(ctl):
        try:
            ctl.on_prefill_result(EXTEND_WARM_UP_PREFILLS, decoding=0)
        except TypeError:  # before session 62: every admission counts
            ctl.on_prefill_result(EXTEND_WARM_UP_PREFILLS)
        return lambda: f"; L {ctl.policy.prefill.request_length():.1f}"

    level_entry_requests("start-ladder", on_ctl=on_ctl)
    level_entry_requests("start-ladder within-bucket", cost=within_bucket_cost, on_ctl=on_ctl)


def incumbent_stall() -> None:
    """Session 54: a stall that lands on the chosen k only (GPU, session 53, H100, MoE layout,
    4 requests: k = 3 read 9.8-10.6 ms after a 1-s stall where ~1,000 samples had read 5.7, and
    plain ran 10 s of the 20-s level)."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from tests.unit.test_stall_recheck import stalled_costs
    from tests.unit.test_switch_cost import run_switching, static_rate

    loads = [4] * 8000
    for factor, length in ((1.5, 64), (2.0, 40), (2.0, 64), (3.0, 32), (3.0, 64), (2.0, 200),
                           (2.0, 400)):
        runs = []
        for seed in range(3):
            ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
            chosen, rate, _ = run_switching(ctl, loads, stalled_costs(3000, length, factor),
                                            0.005, seed)
            k3 = static_rate(loads, stalled_costs(3000, length, factor), 3)
            end = 3000 + length
            runs.append(f"{rate / k3:.3f} (plain {chosen[end:end + 2000].count(0)})")
        print(f"incumbent-stall x{factor} for {length}: of static k = 3, per seed (plain in "
              f"the 2,000 after): {', '.join(runs)}")


def level_entry_dear_plain() -> None:
    """Session 53: `level_entry_requests` with plain dear in the warm-up at 64, as session 52's
    GPU warm-up left it (H100, dial 0.7): a plain step 7% over its steady cost (its cell read
    7.7-7.9 ms against 7.41) and plain prefill batches 2x (10.3 / 15.2 ms against ~6.2, a split
    wave's). The measured levels run at the steady costs."""
    level_entry_requests("level-entry-dear-plain", {64: (1.07, 2.0)})


def drill_stall() -> None:
    """Session 58: the stall drill (`ADAPTIVE_SPEC_INJECT_STALL`) on session 53's MoE table at
    4 running (k = 3 1.18x plain): each k = 3 step among 64 / 200 / 600 decisions from 3,000
    5.72 ms dearer (2x), through the drill's sleep landing in the result interval before it,
    as on the GPU. Per seed: stalled steps, the rate against static k = 3 over 8,000
    decisions, the step jumps at 3-4 running, and the runs of one k from 3,000 (`--only`)."""
    import itertools

    from tests.unit.test_stall_drill import moe4_cost, run_drilled
    from tests.unit.test_switch_cost import static_rate

    for length in (64, 200, 600):
        for seed in range(2):
            ctl, chosen, rate, stalled_at = run_drilled(f"3@3000+{length}:5.72", seed)
            runs = " ".join(f"{k}x{len(list(g))}"
                            for k, g in itertools.groupby(chosen[2999:3000 + length + 300]))
            print(f"drill-stall {length} seed {seed}: {len(stalled_at)} stalled, "
                  f"{rate / static_rate([4] * 8000, moe4_cost, 3):.3f} of static k = 3, jumps "
                  f"{ctl.policy.table.jump_counts.get('4')}, runs {runs[:120]}")


# the scenarios `--only` runs alone: name -> function
ONLY = {"level-entry": level_entry, "level-entry-requests": level_entry_requests,
        "level-entry-dear-plain": level_entry_dear_plain, "sweep-levels": sweep_levels,
        "incumbent-stall": incumbent_stall, "drill-stall": drill_stall,
        "within-bucket": within_bucket, "start-ladder": start_ladder}


if __name__ == "__main__":
    sys.exit(main())
