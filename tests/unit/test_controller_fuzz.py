"""The controller under long random sequences of what SGLang's hooks can report, in any order
and with any timing: no hook may fail. A failure is not a crash (the controller falls back to
static behaviour and the server keeps serving) but it ends adaptive speculation for the run, so
here every input the hooks can deliver must be taken without one: empty batches, results of a
step count other than the one decided, zero and minute-long intervals, prefills of nothing,
results with no requests. Every decision stays within 0..max and the status stays strict JSON
(no NaN or infinity); simulated tensor-parallel ranks fed the same calls on clocks of their own
decide alike. Bounded: a fixed number of events per case."""

import json
import random
import types

import pytest

from adaptive_spec import sample_log as sample_log_module
from adaptive_spec import signals
from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.signals import LoadSnapshot

from .draft_sim import on_threads
from .test_goodput_policy import _ThreadRanksMean

EVENTS = 6000
# seconds between events: none, sub-microsecond, a decode step's, a stall, an idle gap
GAPS = (0.0, 1e-7, 0.004, 0.012, 0.03, 0.25, 2.0, 40.0)
MODES = (None, "off", "on", "catchup", "reentry")


def drive(ctl: Controller, rng: random.Random, advance) -> list:
    """Random hook calls in a plausible but unchecked order, `advance(seconds)` moving the clock
    between them; returns the step counts chosen."""
    chosen, steps = [], 0
    running = rng.choice((0, 1, 4, 33, 64, 200))
    for _ in range(EVENTS):
        advance(rng.choice(GAPS) * rng.random())
        event = rng.random()
        if event < 0.15:  # the load moves, a little or a lot
            running = max(0, min(600, running + rng.choice((-64, -3, -1, 0, 1, 3, 64))))
            kv_total = rng.choice((0, 1000, 200000))
            ctl.on_snapshot(LoadSnapshot(running=running, waiting=rng.choice((0, 0, 3, 500)),
                                         waiting_tokens=rng.choice((0, 10, 10 ** 6)),
                                         kv_used=rng.randint(0, kv_total), kv_total=kv_total))
        elif event < 0.45:
            decision = ctl.decide(running if rng.random() < 0.9 else rng.randint(0, 600))
            assert 0 <= decision.steps <= ctl.cfg.max_steps
            steps = decision.steps
            chosen.append(steps)
        elif event < 0.5:
            ctl.on_extend()
        elif event < 0.55:  # a prefill asks whether its requests may skip the draft
            still = rng.choice((None, lambda: max(0, running - 2)))
            assert ctl.prefill_may_run_plain(rng.choice((0, 1, 40)), 32, still) in (True, False)
        elif event < 0.65:
            ctl.on_prefill_result(admitted=rng.choice((0, 1, 5, 300)))
        else:  # a decode result, mostly of the step count decided
            k = steps if rng.random() < 0.9 else rng.randint(0, ctl.cfg.max_steps)
            n = running if rng.random() < 0.9 else rng.choice((0, 1, 700))
            correct = [rng.randint(0, k) for _ in range(n)]
            mode = ("on" if k else "off") if rng.random() < 0.8 else rng.choice(MODES)
            opened = rng.random() < 0.7
            if opened:
                ctl.open_result()
            ctl.on_result(k, correct, mode)
            if opened:
                ctl.close_result()
        assert ctl.fallback_reason is None, ctl.fallback_reason
    return chosen


def fake_clock(monkeypatch):
    """The controller's clock (signals.time.monotonic) made a counter; returns `advance(s)`."""
    clock = [1000.0]
    monkeypatch.setattr(signals, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))

    def advance(seconds):
        clock[0] += seconds
    return advance


CONFIGS = [dict(policy="goodput"), dict(policy="goodput", max_steps=7),
           dict(policy="goodput", tpot_slo_ms=12.0), dict(policy="goodput", goodput_model="parts"),
           dict(policy="threshold"), dict(policy="threshold", queue_threshold=None,
                                          min_accept_len=None)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
@pytest.mark.parametrize("seed, sample_log", [(0, False), (1, True)])
def test_no_sequence_of_hook_calls_makes_the_controller_fall_back(monkeypatch, config, seed,
                                                                  sample_log):
    advance = fake_clock(monkeypatch)
    if sample_log:  # the diagnostic log's bookkeeping rides on the same hooks
        monkeypatch.setenv(sample_log_module.ENV, "1")
    else:
        monkeypatch.delenv(sample_log_module.ENV, raising=False)
    ctl = Controller(AdaptiveSpecConfig(**config))
    if sample_log:
        ctl.sample_log.emit = lambda line: None
    chosen = drive(ctl, random.Random(seed), advance)
    assert len(chosen) > EVENTS // 5
    status = ctl.status()
    assert ctl.fallback_reason is None, ctl.fallback_reason
    json.dumps(status, allow_nan=False)  # strict JSON: what /adaptive_spec/status serves


# a phase: one batch size for this many decode results, with a prefill beside this share of them
PHASE_BATCHES = (1, 2, 4, 8, 16, 33, 64, 128, 200)
PHASE_RESULTS = (60, 600, 4000, 20000)
PHASE_PREFILL_SHARE = (0.0, 0.0, 0.02, 0.3)


def drive_phases(ctl: Controller, rng: random.Random, advance, phases: int) -> int:
    """Long phases of steady load, as a server sees them and a random order of hook calls never
    does: each a batch size held for up to 20,000 decode results, the step count decided run,
    its step time (longer with k, an 8x stall 1 in 500) and acceptance drawn per phase, prefills
    beside a share of the results (none in half the phases). Returns the results run."""
    results = 0
    for _ in range(phases):
        running, length = rng.choice(PHASE_BATCHES), rng.choice(PHASE_RESULTS)
        share, p = rng.choice(PHASE_PREFILL_SHARE), rng.choice((0.0, 0.5, 0.7, 0.95))
        step_s = rng.choice((0.002, 0.006, 0.02)) * (1 + running / 256)
        for _ in range(length):
            if rng.random() < 0.01:
                ctl.on_snapshot(LoadSnapshot(running=running, kv_used=running * 500,
                                             kv_total=10 ** 6))
            k = ctl.decide(running).steps
            if share and rng.random() < share:
                admitted = rng.choice((1, 1, 2, 8))
                ctl.on_extend(admitted)
                advance(step_s * rng.uniform(0.5, 3.0))
                ctl.on_prefill_result(admitted=admitted)
            stall = 8.0 if rng.random() < 0.002 else 1.0
            advance(step_s * (1 + 0.5 * k) * rng.uniform(0.95, 1.05) * stall)
            # each request's drafts right in a row until the first wrong one, each right with p
            correct = [next((c for c in range(k) if rng.random() >= p), k) for _ in range(running)]
            ctl.open_result()
            ctl.on_result(k, correct, "on" if k else "off")
            ctl.close_result()
            results += 1
            assert ctl.fallback_reason is None, (results, ctl.fallback_reason)
    return results


@pytest.mark.parametrize("seed", [0, 7])
def test_long_phases_of_steady_load_make_no_policy_fail(monkeypatch, seed):
    """GPU, session 54 (MoE layout, 4 requests): ~30 s in, the goodput policy raised a division
    by zero in its prefill term and the server fell back for the rest of the run: the bucket it
    priced arrivals from had run steady steps with no new request for thousands of decisions,
    its admissions a step decayed to 5.4e-17. The random hook calls above never hold a batch
    that long. Here 12 phases of up to 20,000 results each; both seeds fail on 799101a (before
    the fix), at results 57,152 and 11,200 (of seeds 0-7 these two did there)."""
    advance = fake_clock(monkeypatch)
    ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
    assert drive_phases(ctl, random.Random(seed), advance, phases=12) > 10000
    json.dumps(ctl.status(), allow_nan=False)


def test_a_plain_run_timed_at_no_time_makes_a_switch_off_unpaid_not_a_failure():
    """What the fuzz found, run longer by hand (goodput with a TPOT target): a plain-preferred
    run that lasted 0 s of predicted time (a step priced at nanoseconds added to a clock grown
    large: nothing) made the horizon of a switch off 0, and the price's share a division by
    zero, which sent the server to its fallback for the rest of the run. A switch that no
    horizon pays back is not made."""
    from adaptive_spec.policy.goodput import GoodputPolicy

    pol = GoodputPolicy(AdaptiveSpecConfig(policy="goodput"))
    bucket = 1
    pol.runs.mean[(False, bucket)] = 0.0  # plain-preferred runs here lasted no time
    pol.switch.seconds[bucket], pol.switch.count[bucket] = 0.1, 4.0  # a switch on costs 100 ms
    pol._current = 2
    times, expected = [0.004, 0.009, 0.010, 0.012], [1.0, 1.7, 2.19, 2.53]
    goodput = [e / t for e, t in zip(expected, times)]  # plain 250 a second, k = 2 219
    best, *_ = pol._choose(bucket, times, [0, 1, 2, 3], goodput, expected)
    assert best == 2  # plain's runs here end at once: the switch off would not pay


@pytest.mark.parametrize("config", CONFIGS[:3] + CONFIGS[4:5],
                         ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_simulated_ranks_decide_alike_under_any_sequence_of_hook_calls(config):
    """Tensor parallel: three ranks (threads meeting in an all-reduce mean, started and waited
    for later as the server's) get the same random hook calls, each with its own clock (rank r's
    intervals (1 + 0.1 r) x the shared ones, +-5% of its own noise): every rank chooses the same
    step count at every decision, and none falls back."""
    ranks = 3
    reducers = _ThreadRanksMean(ranks, asynchronous=True)
    out = [None] * ranks

    def run(r):
        clock, noise = [1000.0], random.Random(900 + r)
        ctl = Controller(AdaptiveSpecConfig(**config), rank=r, reducer=reducers.for_rank(r))
        timer = ctl.timer  # this rank's clock (the module's is shared by the threads)
        tick, elapsed, restart = timer.tick, timer.elapsed, timer.restart
        timer.tick = lambda steps, now=None: tick(steps, now=clock[0])
        timer.elapsed = lambda now=None: elapsed(now=clock[0])
        timer.restart = lambda now=None: restart(now=clock[0])

        def advance(seconds):
            clock[0] += seconds * (1 + 0.1 * r) * (1 + noise.uniform(-0.05, 0.05))
        out[r] = drive(ctl, random.Random(0), advance)

    on_threads(ranks, run)
    assert all(o is not None for o in out)  # no rank failed an assertion or fell back
    assert out[0] == out[1] == out[2]
    if config["policy"] == "goodput":  # the threshold policy reads rank-identical inputs only
        assert reducers.started[0] > len(out[0]) // 64  # the ranks did merge their timings
