import logging

import pytest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller, DecisionLog
from adaptive_spec.policy import Decision
from adaptive_spec.signals import AcceptanceStats, LoadSnapshot


def test_acceptance_is_attributed_to_the_steps_the_batch_ran_with():
    acc = AcceptanceStats(ema_alpha=1.0)
    acc.observe(0, [0, 0])  # an off-step result: no drafting, nothing to learn
    assert acc.ema_accept_len is None and acc.samples == 0
    acc.observe(3, [3, 1, 0, 2])
    assert acc.ema_accept_len == 1 + 6 / 4
    assert acc.pos_tries == [4, 3, 2]
    assert acc.pos_hits == [3, 2, 1]
    assert acc.per_position() == [0.75, 2 / 3, 0.5]
    assert acc.draft_accept_rate == 6 / 12


def test_controller_uses_scheduler_queue_and_worker_batch_size():
    ctl = Controller(AdaptiveSpecConfig(threshold=16, queue_threshold=2))
    ctl.on_snapshot(LoadSnapshot(running=3, waiting=0))
    assert ctl.decide(batch_size=4).steps == 3
    assert ctl.decide(batch_size=16).steps == 0  # worker's batch size is authoritative
    ctl2 = Controller(AdaptiveSpecConfig(threshold=16, queue_threshold=2))
    ctl2.on_snapshot(LoadSnapshot(running=1, waiting=5))
    assert ctl2.decide(batch_size=1) == Decision(0, "queue")
    status = ctl2.status()
    assert status["decision"] == {"steps": 0, "reason": "queue"}
    assert status["load"]["waiting"] == 5


class Boom:
    max_steps = 3

    def decide(self, snap, acc):
        raise RuntimeError("injected")


def test_policy_failure_falls_back_once_and_keeps_deciding(caplog):
    for fallback, steps in (("static", 3), ("plain", 0)):
        ctl = Controller(AdaptiveSpecConfig(fallback=fallback))
        ctl.policy = Boom()
        with caplog.at_level(logging.ERROR, logger="adaptive_spec"):
            caplog.clear()
            got = [ctl.decide(1) for _ in range(5)]
        assert all(d == Decision(steps, "fallback") for d in got)
        assert len([r for r in caplog.records if "falling back" in r.message]) == 1
        assert "injected" in ctl.status()["fallback"]


@pytest.mark.parametrize("spec", ["policy@4", "result@3"])
def test_injected_fault_drill_falls_back_at_the_given_call(monkeypatch, spec):
    """ADAPTIVE_SPEC_INJECT_FAULT: the drill for a real server (fallback visible in status
    and metrics, /health still 200) uses the same path as a real policy or hook failure."""
    monkeypatch.setenv("ADAPTIVE_SPEC_INJECT_FAULT", spec)
    ctl = Controller(AdaptiveSpecConfig(fallback="plain"))  # threshold 32: bs 1 drafts 3 steps
    got = []
    for _ in range(6):
        got.append(ctl.decide(1).steps)
        ctl.on_result(got[-1], [1])
    # decision 4 raises, or result 3 (which comes before decision 4): from then on drafting off
    assert got == [3, 3, 3, 0, 0, 0]
    assert "injected fault" in ctl.status()["fallback"]


@pytest.mark.parametrize("text", ["", "policy", "policy@0", "worker@3", "result@x"])
def test_malformed_fault_spec_is_ignored(text):
    from adaptive_spec.controller import injected_fault

    assert injected_fault(text) is None


def test_out_of_range_choice_is_a_failure():
    class TooMany:
        max_steps = 3

        def decide(self, snap, acc):
            return Decision(9, "idle")

    ctl = Controller(AdaptiveSpecConfig())
    ctl.policy = TooMany()
    assert ctl.decide(1) == Decision(3, "fallback")


def test_decision_log_one_line_per_change_and_rate_limited():
    now = [0.0]
    log = DecisionLog(True, per_second=10, clock=lambda: now[0])
    ctl = Controller(AdaptiveSpecConfig(threshold=4, hysteresis=0, queue_threshold=None, log_decisions=True))
    ctl.log = log
    for bs in [1, 1, 1, 5, 5, 5]:  # two changes: None->3, 3->0
        now[0] += 1.0
        ctl.decide(bs)
    assert len(log.lines) == 2
    assert "steps=None->3" in log.lines[0] and "steps=3->0 reason=threshold" in log.lines[1]
    for bs in [1, 5] * 20:  # 40 changes within 0.4 s: rate limit keeps ~5
        now[0] += 0.01
        ctl.decide(bs)
    assert 2 < len(log.lines) <= 2 + 5
    assert ctl.switches == 1 + 40


def test_listener_errors_do_not_break_decisions():
    ctl = Controller(AdaptiveSpecConfig())
    seen = []
    ctl.listeners.append(lambda d, n, s: seen.append((d.steps, n)))
    ctl.listeners.append(lambda d, n, s: 1 / 0)
    assert ctl.decide(1).steps == 3
    assert ctl.decide(1).steps == 3
    assert ctl.decisions[(3, "idle")] == 2  # reading the counts books the pending run
    assert seen == [(3, 1), (3, 1)] and len(ctl.listeners) == 1


def test_a_failing_metrics_listener_is_dropped_not_a_fallback():
    """Metrics must never stop serving: a listener that raises is removed (the next one still
    runs) and the controller keeps deciding; it does not fall back."""
    ctl = Controller(AdaptiveSpecConfig())
    seen = []

    def boom(*args):
        raise RuntimeError("metrics down")

    ctl.listeners += [boom, lambda d, n, s: seen.append(("decision", d.steps))]
    ctl.result_listeners += [boom, lambda steps, dt: seen.append(("result", steps))]
    ctl.decide(1)
    ctl.on_result(3, [1])
    ctl.decide(1)
    assert ctl.status()["fallback"] is None  # the status books the second decision
    assert seen == [("decision", 3), ("result", 3), ("decision", 3)]
    assert len(ctl.listeners) == 1 and len(ctl.result_listeners) == 1


def test_status_reports_the_decision_cost_as_percentiles():
    """The GPU sweeps' servers read a 77-84 us mean decision time: a median and a p99 tell a
    slow decision from a rare wait (a GIL hand-over) that the mean cannot."""
    ctl = Controller(AdaptiveSpecConfig(threshold=16))
    assert "decide_us_p50" not in ctl.status()
    for _ in range(3):
        ctl.decide(batch_size=4)
    assert len(ctl.recent_decide_s) == 3  # every decision is kept (its time is not tested)
    ctl.recent_decide_s.clear()
    ctl.recent_decide_s.extend([10e-6] * 195 + [5e-3] * 5)  # 2.5% of the window are 5 ms waits
    st = ctl.status()
    assert st["decide_us_p50"] == 10.0 and st["decide_us_p99"] == 5000.0
    ctl.reset_stats()
    assert "decide_us_p50" not in ctl.status()


def test_every_sixteenth_decision_also_reads_the_threads_cpu_time():
    """Wall minus CPU time per decision is time the scheduler thread waited (GIL, preemption):
    the server's 35-45 us vs the CPU machine's 7-10 us (session 8) needs that split."""
    from adaptive_spec import controller

    ctl = Controller(AdaptiveSpecConfig(threshold=16))
    for _ in range(3 * controller.CPU_SAMPLE_EVERY):
        ctl.decide(batch_size=4)
    assert len(ctl.recent_decide_cpu_s) == 3 and all(t >= 0 for t in ctl.recent_decide_cpu_s)
    # the policy's share is read on the same decisions (session 10: 41 us per decision on the
    # server vs the policy's 3.7 us selftest; the split says which part is slow)
    assert len(ctl.recent_policy_cpu_s) == 3
    ctl.recent_decide_cpu_s.clear()
    ctl.recent_decide_cpu_s.extend([4e-6, 5e-6, 6e-6])
    ctl.recent_policy_cpu_s.clear()
    ctl.recent_policy_cpu_s.extend([1e-6, 2e-6, 3e-6])
    st = ctl.status()
    assert st["decide_cpu_us_p50"] == 5.0 and st["decide_cpu_us_p99"] == 6.0
    assert st["decide_policy_cpu_us_p50"] == 2.0
    ctl.reset_stats()
    assert "decide_cpu_us_p50" not in ctl.status()
    assert "decide_policy_cpu_us_p50" not in ctl.status()


@pytest.mark.parametrize("below, above, as_tuple", [(-1, 2, False), (0, 2, False), (0, 0, False), (0, 0, True)])
def test_per_position_counts_equal_the_per_request_reference(below, above, as_tuple):
    """SGLang's counts (0..steps, a list) take the counting fast path; out-of-range values
    (-1, steps + 2: clamped) the slower one; both must count as the per-request loop does."""
    import random

    from adaptive_spec.signals import AcceptanceStats

    rng = random.Random(7)
    history = []
    for _ in range(300):
        steps = rng.choice([0, 1, 2, 3, 7])
        results = [rng.randint(below, steps + above) for _ in range(rng.randint(0, 70))]
        history.append((steps, tuple(results) if as_tuple else results))
    from adaptive_spec.bench.decision_cost import PerRequestCounts

    stats, reference = AcceptanceStats(), PerRequestCounts()
    for steps, results in history:
        stats.observe(steps, results)
        reference.observe(steps, results)
    assert stats.pos_tries == pytest.approx(reference.tries) and stats.pos_hits == pytest.approx(reference.hits)
    assert stats.total_accepted_drafts == sum(min(max(c, 0), s) for s, r in history if s > 0 for c in r)


def test_status_carries_a_decide_selftest_that_never_calls_the_tp_reducer():
    """The servers' decisions took 29-55 us of wall time where this CPU takes 3-11 (GPU, session
    9): each controller times its policy's decide at start, on this host, so the status can tell
    a slow host from a waiting scheduler thread. Under TP the reducer is a collective: the
    throwaway policy must never call it (a rank that did would hang the others)."""
    def reducer(values):
        raise AssertionError("the selftest called the TP reducer")

    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3), reducer=reducer)
    st = ctl.status()["decide_selftest"]
    assert set(st) == {"policy_decide_us_p50", "clock_read_us"}, st
    assert 0 < st["policy_decide_us_p50"] < 10_000 and 0 <= st["clock_read_us"] < 1_000
    assert ctl.decision_count == 0 and ctl.policy._decisions == 0  # the real policy untouched


def scripted_controller(script):
    """A Controller whose policy returns script[i] at its i-th decision."""
    ctl = Controller(AdaptiveSpecConfig())

    class Scripted:
        max_steps = 3

        def decide(self, snap, acc):
            return script[ctl.decision_count]

    ctl.policy = Scripted()
    return ctl


def test_runs_of_equal_decisions_book_what_booking_each_one_would(caplog, monkeypatch):
    """The controller books a run of equal decisions in one go (counts, digest, listeners);
    what any reader sees must equal booking every decision: the counts, the crc32 digest the
    ranks compare (also in the rank_check lines, which may fall inside a run), the listeners'
    totals, and the gauges' current decision right after a change."""
    import random
    import zlib
    from collections import Counter

    import adaptive_spec.controller as controller

    monkeypatch.setattr(controller, "RANK_CHECK_EVERY", 50)
    caplog.set_level("INFO", logger="adaptive_spec")
    rng = random.Random(7)
    script = []  # runs of 1..150 equal decisions: shorter and longer than FLUSH_EVERY
    while len(script) < 2000:
        d = Decision(rng.choice((0, 1, 3)), rng.choice(("threshold", "queue")))
        script += [d] * rng.randint(1, 150)

    ctl = scripted_controller(script)
    booked, latest = Counter(), []
    ctl.listeners.append(lambda d, n, s: (booked.update({(d.steps, d.reason): n}), latest.append(d)))
    digest, digests_at = 0, {}
    for i, d in enumerate(script):
        ctl.decide(1)
        digest = zlib.crc32(bytes((d.steps,)), digest)
        if (i + 1) % 50 == 0:
            digests_at[i + 1] = digest
        assert latest[-1] == d  # a change reaches the listeners (gauges) at once
        assert sum(booked.values()) >= i + 1 - controller.FLUSH_EVERY
    assert ctl.decisions == Counter((d.steps, d.reason) for d in script)
    assert ctl.steps_histogram == Counter(d.steps for d in script)
    assert booked == ctl.decisions
    assert ctl.decision_digest == digest
    lines = [r.message for r in caplog.records if "rank_check" in r.message]
    assert lines == [f"adaptive_spec rank_check rank=0 decisions={n} digest={v:08x}" for n, v in digests_at.items()]


def test_off_run_counts_the_zero_step_decisions_since_the_last_drafting_one():
    # flap:3 decides 3 on, 3 off, ...; the plain prefill (hooks_plain) waits for a long off run
    ctl = Controller(AdaptiveSpecConfig(force="flap:3"))
    runs = []
    for _ in range(9):
        ctl.decide(4)
        runs.append(ctl.off_run)
    assert runs == [0, 0, 0, 1, 2, 3, 0, 0, 0]


@pytest.mark.parametrize("reason, resumes", [("probe", True), ("refresh", True), ("reprobe", True),
                                             ("cost_model", False), ("threshold", False)])
def test_a_policys_drafting_excursion_pauses_the_off_run_and_a_choice_ends_it(reason, resumes):
    """A probe, refresh or re-probe that drafts for a few decisions is not the policy's choice:
    the prefills after it may run plain again at once (GPU, session 21: at 256 requests each
    probe turned the next 32 decisions' prefills into spec prefills). While it drafts the off
    run reads 0 (its prefills are spec: a plain one would make its next step a catch-up)."""
    script = [Decision(0, "cost_model")] * 40 + [Decision(2, reason)] * 3 + [Decision(0, "cost_model")] * 2
    ctl = scripted_controller(script)
    runs = []
    for _ in script:
        ctl.decide(4)
        runs.append(ctl.off_run)
    assert runs[:40] == list(range(1, 41))
    assert runs[40:43] == [0, 0, 0]
    assert runs[43:] == ([41, 42] if resumes else [1, 2])


class _Drafting:
    """k = 3 below 128 requests, plain from there (what a busy dense pair's table says)."""
    max_steps = 3

    def __init__(self, forecast=True, fail=False):
        self.fail = fail
        if not forecast:
            self.forecast = None

    def decide(self, snap, acc):
        return Decision(self.forecast(snap, acc), "cost_model")

    def forecast(self, snap, acc):
        if self.fail:
            raise RuntimeError("boom")
        return 0 if snap.running >= 128 else 3


@pytest.mark.parametrize("decided, new, policy, plain", [
    (20, 2, _Drafting(), False),  # within the last decision's size class (17-32)
    (130, 2, _Drafting(), False),  # ... even where the policy runs plain: the off run decides
    (20, 40, _Drafting(), False),  # a larger class where the policy drafts
    (120, 10, _Drafting(), True),  # a larger class where it runs plain
    (120, 10, _Drafting(forecast=False), False),  # a policy that cannot forecast
    (120, 10, _Drafting(fail=True), False),  # a forecast that fails: a spec prefill, and fallback
])
def test_a_prefill_skips_the_draft_when_its_batch_grows_where_the_policy_runs_plain(decided, new, policy, plain):
    """The refill wave of a busy closed loop (GPU, session 21): the batch drafted while it
    drained, and its new requests are prefilled before the next decision at the larger size."""
    ctl = Controller(AdaptiveSpecConfig())
    ctl.policy = _Drafting()
    ctl.decide(decided)
    ctl.policy = policy
    ctl.on_snapshot(LoadSnapshot(running=decided))
    assert ctl.off_run < 32
    assert ctl.prefill_may_run_plain(new, min_off_run=32) is plain
    assert (ctl.fallback_reason is not None) is policy.fail


def test_a_long_off_run_lets_a_prefill_skip_the_draft_whatever_the_forecast():
    ctl = Controller(AdaptiveSpecConfig(force="off"))
    for _ in range(32):
        ctl.decide(200)
    ctl.policy = _Drafting()  # would draft at 8 requests; the off run alone decides
    ctl.on_snapshot(LoadSnapshot(running=6))
    assert ctl.prefill_may_run_plain(2, min_off_run=32)
    assert not ctl.prefill_may_run_plain(2, min_off_run=33)


def test_forcing_drafting_and_lifting_it_keeps_the_goodput_policys_learned_model():
    """An operator (or the interleaved benchmark) forces drafting off and lifts it again at run
    time: the goodput policy comes back with its cost model, having kept observing the steps
    meanwhile; a change of a setting it reads starts a fresh one."""
    import dataclasses

    from adaptive_spec.policy.step_table import bucket_of

    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    learned = ctl.policy
    b = bucket_of(64)
    for _ in range(20):
        ctl._observe_step_time(64, 0, 0.010)
    ctl.update_settings(dataclasses.replace(ctl.cfg, force="off"))
    assert ctl.decide(64) == Decision(0, "forced")
    ctl._observe_step_time(64, 3, 0.020)  # a step observed while forced still teaches it
    learned.table.sync(lambda v: v)  # what its next decision's sync merges (one rank)
    assert learned.table.samples(b, 3) == 1
    assert ctl.status()["cost_model"] is not None  # the model stays readable while forced
    ctl.update_settings(dataclasses.replace(ctl.cfg, force=None, log_decisions=True))
    assert ctl.policy is learned and learned.table.samples(b, 0) == 20
    assert ctl.decide(64).reason != "forced"
    ctl.update_settings(dataclasses.replace(ctl.cfg, tpot_slo_ms=50.0))
    assert ctl.policy is not learned and ctl.policy.table.samples(b, 0) == 0


def test_a_server_started_forced_keeps_the_configured_policy_underneath():
    """--adaptive-spec-force at start: the forced pattern decides, the configured policy learns
    beneath it, and lifting the force hands it the decisions."""
    import dataclasses

    from adaptive_spec.policy.step_table import bucket_of

    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3, force="on"))
    assert ctl.decide(8) == Decision(3, "forced")
    inner = ctl.policy.inner
    ctl._observe_step_time(8, 3, 0.012)
    ctl.update_settings(dataclasses.replace(ctl.cfg, force=None))
    inner.table.sync(lambda v: v)
    assert ctl.policy is inner and inner.table.samples(bucket_of(8), 3) == 1


def test_a_goodput_decision_line_carries_the_models_basis_and_a_failing_basis_does_not_stop_it():
    """Each line of a goodput server's decision log ends with what its cost model read (each k's
    goodput over plain's, `GoodputPolicy.decision_basis`); a threshold server's lines have no
    such field, and a basis that raises is named in the line while the decision stands."""
    goodput = Controller(AdaptiveSpecConfig(policy="goodput", log_decisions=True))
    for bs in [1] * 40 + [60] * 40:
        goodput.decide(bs)
    assert goodput.log.lines and all(" model=1.000/" in ln for ln in goodput.log.lines)
    threshold = Controller(AdaptiveSpecConfig(threshold=4, log_decisions=True))
    threshold.decide(1)
    assert "model=" not in threshold.log.lines[0]

    def broken():
        raise ValueError("no table")
    goodput.policy.decision_basis = broken
    goodput.log.min_gap = 0.0
    before = len(goodput.log.lines)
    for bs in [1] * 40 + [60] * 40:
        goodput.decide(bs)
    assert goodput.fallback_reason is None
    assert len(goodput.log.lines) > before and goodput.log.lines[-1].endswith("basis_error=ValueError")
