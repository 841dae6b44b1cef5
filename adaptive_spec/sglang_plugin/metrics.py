"""Prometheus series on SGLang's own /metrics (with --enable-metrics).

Created inside the scheduler process, after SGLang set PROMETHEUS_MULTIPROC_DIR, so SGLang's
multiprocess collector exports them; every series carries `tp_rank`. Updated from the
controller's listeners: per booked run of equal decisions (the controller books a run when the
decision changes and at least every 64 decisions: a counter, and two gauges on a change), per
processed result (step-time histogram; a count of the slow ones, `slow_results.py`), and every
`SLOW_EVERY` decisions for the per-position acceptance and the goodput cost model's predictions.
"""

from __future__ import annotations

from . import slow_results

SLOW_EVERY = 64
_STEP_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.013, 0.016, 0.020, 0.025, 0.032, 0.040, 0.050, 0.070, 0.100, 0.200)


class Metrics:
    def __init__(self, controller, rank: int, registry=None):
        from prometheus_client import REGISTRY, Counter, Gauge, Histogram

        reg = registry if registry is not None else REGISTRY
        r = str(rank)
        self.ctl = controller
        gauge = dict(registry=reg, multiprocess_mode="mostrecent")
        self.drafting = Gauge("adaptive_spec_drafting", "1 while drafting is on for the current decode step", ["tp_rank"], **gauge).labels(r)
        self.steps = Gauge("adaptive_spec_steps", "Draft steps chosen for the current decode step", ["tp_rank"], **gauge).labels(r)
        self.fallback = Gauge("adaptive_spec_fallback", "1 once a hook or the policy failed (static/plain fallback)", ["tp_rank"], **gauge).labels(r)
        self.decisions = Counter("adaptive_spec_decisions", "Decode-step decisions by reason and steps", ["tp_rank", "reason", "steps"], registry=reg)
        self.switches = Counter("adaptive_spec_switches", "Changes of the chosen step count", ["tp_rank"], registry=reg).labels(r)
        self.hook_seconds = Counter("adaptive_spec_decide_seconds", "CPU time spent deciding", ["tp_rank"], registry=reg).labels(r)
        self.slow_decode_results = Counter(
            "adaptive_spec_slow_decode_results", "Decode results that took "
            "slow_results.SLOW_RESULT_S or more (a host stall: a kernel built on first use, a "
            "catch-up); each is logged", ["tp_rank"], registry=reg).labels(r)
        self.step_seconds = Histogram(
            "adaptive_spec_step_seconds", "Measured decode step time by steps", ["tp_rank", "steps"], buckets=_STEP_BUCKETS, registry=reg
        )
        self.accept_pos = Gauge("adaptive_spec_accept_rate_position", "P(draft j accepted | drafts before accepted)", ["tp_rank", "position"], **gauge)
        self.predicted = Gauge("adaptive_spec_predicted_step_seconds", "Cost model's step time at the current batch bucket", ["tp_rank", "steps"], **gauge)
        self.realized = Gauge("adaptive_spec_realized_ratio", "Goodput policy: what each step count delivered over the cost model's prediction at the current batch bucket (1 = as modelled)", ["tp_rank", "steps"], **gauge)
        self.rank = r
        self._last_steps = None
        self._next_slow = 0  # decision count at which the slow series are next updated
        self._last_decide_s = 0.0
        self._decision_children = {}  # (reason, steps) -> labelled counter: no lookup per step
        self._step_children = {}  # steps -> labelled histogram: likewise per result (session 12)

    def on_decisions(self, decision, count: int, snap) -> None:
        """`count` decisions equal to `decision` were made (a run booked by the controller)."""
        key = (decision.reason, decision.steps)
        child = self._decision_children.get(key)
        if child is None:
            child = self._decision_children[key] = self.decisions.labels(self.rank, decision.reason, str(decision.steps))
        child.inc(count)
        if decision.steps != self._last_steps:  # gauges are file writes: only on a change
            if self._last_steps is not None:
                self.switches.inc()
            self.drafting.set(1 if decision.steps > 0 else 0)
            self.steps.set(decision.steps)
            self._last_steps = decision.steps
        if self.ctl.decision_count >= self._next_slow:
            self._next_slow = self.ctl.decision_count + SLOW_EVERY
            self._slow_update(snap)

    def on_result(self, steps: int, seconds) -> None:
        if seconds is not None:
            child = self._step_children.get(steps)
            if child is None:
                child = self._step_children[steps] = self.step_seconds.labels(self.rank, str(steps))
            child.observe(seconds)

    def on_wall(self, batch_size: int, steps: int, seconds, mode) -> None:
        """Every decode result's wall time, sampled or not (the controller's wall listeners)."""
        if slow_results.is_slow(seconds):
            self.slow_decode_results.inc()

    def _slow_update(self, snap) -> None:
        ctl = self.ctl
        self.fallback.set(1 if ctl.fallback_reason else 0)
        if ctl.decide_seconds < self._last_decide_s:  # counters were reset (benchmark modes)
            self._last_decide_s = 0.0
        self.hook_seconds.inc(ctl.decide_seconds - self._last_decide_s)
        self._last_decide_s = ctl.decide_seconds
        for j, p in enumerate(ctl.acceptance.per_position()):
            if p is not None:
                self.accept_pos.labels(self.rank, str(j + 1)).set(p)
        step_time = getattr(ctl.policy, "step_time", None)
        if step_time is not None:
            from ..policy.step_table import bucket_of

            bucket = bucket_of(snap.running)
            for k in range(ctl.cfg.max_steps + 1):
                self.predicted.labels(self.rank, str(k)).set(step_time(bucket, k))
            for k, ratio in enumerate(ctl.policy.delivered_ratio(bucket)):
                self.realized.labels(self.rank, str(k)).set(ratio)


def install_metrics(controller, rank: int, registry=None) -> Metrics:
    m = Metrics(controller, rank, registry)
    controller.listeners.append(m.on_decisions)
    controller.result_listeners.append(m.on_result)
    controller.wall_listeners.append(m.on_wall)
    return m
