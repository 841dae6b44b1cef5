"""ADAPTIVE_SPEC_INJECT_STALL: the host-stall drill that lets a GPU run show the goodput
policy's recheck (stall_drill.py). Simulated step times; no performance claim."""

import os

import pytest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.stall_drill import STALL_ENV, StallDrill, stall_drill

from .test_stall_recheck import MOE4_MS
from .test_switch_cost import run_switching, static_rate


def moe4_cost(bs):
    """Session 53's MoE table at 3-4 running, seconds a step for k = 0..3."""
    return tuple(ms / 1000 for ms in MOE4_MS)


def run_drilled(spec, seed, loads=(4,) * 8000, cost=moe4_cost):
    """`run_switching` of a goodput controller under the drill `spec`, its sleeps landing in
    the result interval before them (as on the GPU, session 58) instead of sleeping.
    Returns (the controller, chosen k per decision, tokens per second, the decisions that
    slept)."""
    saved = os.environ.get(STALL_ENV)
    os.environ[STALL_ENV] = spec
    try:
        ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    finally:
        if saved is None:
            del os.environ[STALL_ENV]
        else:
            os.environ[STALL_ENV] = saved
    slept, stalled_at = [0.0], []

    def sleep(seconds):
        slept[0] += seconds
        stalled_at.append(ctl.decision_count)
    ctl.stall.sleep = sleep

    def host_sleep():
        seconds, slept[0] = slept[0], 0.0
        return seconds
    chosen, rate, _ = run_switching(ctl, list(loads), cost, 0.005, seed, host_sleep=host_sleep)
    return ctl, chosen, rate, stalled_at


@pytest.mark.parametrize("text, want", [
    ("3@2000+64:10", (3, 2000, 64, 0.010)),
    (" 0@1+1:0.5 ", (0, 1, 1, 0.0005)),
    ("2@7+3:1000", (2, 7, 3, 1.0)),
])
def test_a_well_formed_spec_gives_its_drill(text, want):
    drill = stall_drill(text)
    assert (drill.steps, drill.first_decision, drill.decisions) == want[:3]
    assert drill.seconds == pytest.approx(want[3])


@pytest.mark.parametrize("text", ["", "3", "3@2000", "3@2000+64", "3@0+64:10", "3@1+0:10",
                                  "3@1+4:0", "3@1+4:1001", "x@1+4:10", "3@1+4:10ms", "-1@1+4:10"])
def test_a_malformed_spec_is_ignored(text):
    assert stall_drill(text) is None


def test_the_steps_of_k_within_the_stall_sleep_at_the_decision_after():
    slept = []
    drill = StallDrill(3, first_decision=5, decisions=4, seconds=0.01, sleep=slept.append)
    steps = [3, 3, 3, 3, 0, 3, 2, 3, 3, 3, 3]  # decisions 1..11; the stall spans 5..8
    stalled = [i for i, k in enumerate(steps, start=1) if drill.after_decision(i, k)]
    # the steps of decisions 6 and 8 chose 3 within it (5 chose plain, 7 chose 2): the sleeps
    # come at decisions 7 and 9, where they land in those steps' result intervals
    assert stalled == [7, 9]
    assert slept == [0.01, 0.01]


def test_the_drill_sleeps_after_the_decision_is_timed(monkeypatch):
    """The sleep is a stalled step, not decision cost: the decision's own time is booked
    before it (the status's decide_us and the decision-cost benchmark read those)."""
    monkeypatch.setenv(STALL_ENV, "3@2+2:10")
    ctl = Controller(AdaptiveSpecConfig(fallback="plain"))  # threshold 32: bs 1 drafts 3 steps
    booked_at_sleep = []
    ctl.stall.sleep = lambda s: booked_at_sleep.append((ctl.decision_count,
                                                        len(ctl.recent_decide_s)))
    for _ in range(5):
        ctl.on_result(ctl.decide(1).steps, [1])
    assert booked_at_sleep == [(3, 3), (4, 4)]  # for the steps of decisions 2 and 3


def test_a_drill_stall_on_the_chosen_k_is_left_and_k_comes_back():
    """What a GPU run of the drill should show, here on session 53's MoE costs at 4 running
    (k = 3 5.72 ms a step, 1.18x plain): a stall of 64 decisions from 3,000 in which each
    k = 3 step takes 5.72 ms more (the sleep at the decision after it lands in its result
    interval, as on the GPU, session 58). The policy leaves k = 3, the jump of its cell is
    settled as a stall (the status's step_jumps), and k = 3 runs again once it is over:
    simulated, 32 stalled steps, k = 3 on 1,986 of the 2,000 decisions from 200 after it,
    0.991x of static k = 3 (which meets no stall)."""
    ctl, chosen, rate, stalled_at = run_drilled("3@3000+64:5.72", 0)
    # a sleep at decision d stalls the step of decision d - 1 (chosen[d - 2])
    assert stalled_at and all(3001 <= d <= 3064 and chosen[d - 2] == 3 for d in stalled_at)
    assert len(stalled_at) < 64  # it left k = 3 within the stall ...
    assert chosen[3064 + 200:3064 + 2200].count(3) >= 1700  # ... and came back after it
    assert ctl.policy.table.jump_counts["4"].get("stall", 0) >= 1
    assert rate >= 0.97 * static_rate([4] * 8000, moe4_cost, 3)
