"""ADAPTIVE_SPEC_INJECT_STALL: the host-stall drill that lets a GPU run show the goodput
policy's recheck (stall_drill.py). Simulated step times; no performance claim."""

import pytest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.stall_drill import STALL_ENV, StallDrill, stall_drill

from .test_stall_recheck import MOE4_MS
from .test_switch_cost import run_switching, static_rate


@pytest.mark.parametrize("text, want", [
    ("3@2000+64:10", (3, 2000, 64, 0.010)),
    (" 0@1+1:0.5 ", (0, 1, 1, 0.0005)),
    ("2@7+3:1000", (2, 7, 3, 1.0)),
])
def test_a_well_formed_spec_gives_its_drill(text, want):
    drill = stall_drill(text)
    assert (drill.steps, drill.first_decision, drill.stalls) == want[:3]
    assert drill.seconds == pytest.approx(want[3])


@pytest.mark.parametrize("text", ["", "3", "3@2000", "3@2000+64", "3@0+64:10", "3@1+0:10",
                                  "3@1+4:0", "3@1+4:1001", "x@1+4:10", "3@1+4:10ms", "-1@1+4:10"])
def test_a_malformed_spec_is_ignored(text):
    assert stall_drill(text) is None


def test_only_the_first_m_decisions_of_k_from_n_on_sleep():
    slept = []
    drill = StallDrill(3, first_decision=5, stalls=3, seconds=0.01, sleep=slept.append)
    steps = [3, 3, 3, 3, 0, 3, 2, 3, 3, 3, 3]  # decisions 1..11
    stalled = [i for i, k in enumerate(steps, start=1) if drill.after_decision(i, k)]
    assert stalled == [6, 8, 9]  # decision 5 chose plain, 7 chose 2; 10-11 after the third
    assert slept == [0.01] * 3


def test_the_drill_sleeps_after_the_decision_is_timed(monkeypatch):
    """The sleep is a stalled step, not decision cost: the decision's own time is booked
    before it (the status's decide_us and the decision-cost benchmark read those)."""
    monkeypatch.setenv(STALL_ENV, "3@2+2:10")
    ctl = Controller(AdaptiveSpecConfig(fallback="plain"))  # threshold 32: bs 1 drafts 3 steps
    booked_at_sleep = []
    ctl.stall.sleep = lambda s: booked_at_sleep.append((ctl.decision_count,
                                                        len(ctl.recent_decide_s)))
    for _ in range(4):
        ctl.on_result(ctl.decide(1).steps, [1])
    assert booked_at_sleep == [(2, 2), (3, 3)]


def test_the_drill_stall_on_the_chosen_k_is_rechecked_and_k_comes_back(monkeypatch):
    """What a GPU run of the drill must show, here on session 53's MoE costs at 4 running
    (k = 3 5.72 ms a step, 1.18x plain): 40 of k = 3's steps from decision 3,000 each take
    5.72 ms more (2x), through the drill's sleep. The policy leaves k = 3, its cell's jump
    is rechecked and settled as a stall (the status's step_jumps), and k = 3 runs again."""
    monkeypatch.setenv(STALL_ENV, "3@3000+40:5.72")
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    pending_sleep = [0.0]
    stalled_at = []

    def sleep(seconds):
        pending_sleep[0] += seconds
        stalled_at.append(ctl.decision_count)
    ctl.stall.sleep = sleep

    def cost(bs):  # called once a decision, after it: the sleep lands on that step
        extra, pending_sleep[0] = pending_sleep[0], 0.0
        return tuple(ms / 1000 + extra for ms in MOE4_MS)

    chosen, rate, _ = run_switching(ctl, [4] * 8000, cost, 0.005, 0)
    assert len(stalled_at) == 40 and stalled_at[0] >= 3000
    assert all(chosen[d - 1] == 3 for d in stalled_at)
    end = stalled_at[-1]
    assert 0 < sum(k != 3 for k in chosen[3000:end + 200])  # it left k = 3 ...
    assert chosen[end:end + 2000].count(3) >= 1700  # ... and came back
    assert ctl.policy.table.jump_counts["4"].get("stall", 0) >= 1
    assert rate >= 0.97 * static_rate([4] * 8000, lambda bs: tuple(ms / 1000 for ms in MOE4_MS),
                                      3)
