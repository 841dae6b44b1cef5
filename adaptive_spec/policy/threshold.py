"""Threshold policy: draft `max_steps` at light load, nothing at heavy load.

Off when the running batch reaches `threshold` or the waiting queue reaches
`queue_threshold`; back on only when both are below their level minus the hysteresis, so a
batch size oscillating at the boundary does not flap. Independently, drafting is off while
the recent accept length (per request-round, `AcceptanceStats.recent_accept_len`) is
confidently below `min_accept_len` (its upper bound, `recent_accept_len_upper`, is), with a
short re-probe `reprobe_interval` steps after it turned off, and after each re-probe that leaves
it off the gap to the next one doubles, up to `MAX_REPROBE_BACKOFF` x the interval. Why: with
the always-wrong draft (GPU, session 17) a re-probe every 256 steps, each 4 drafting steps and
a catch-up at re-entry, left the server at 0.94-0.97x of plain at 1-16 requests. Every input is
rank-identical (see signals.py), the step count included.
"""

from __future__ import annotations

from ..signals import AcceptanceStats, LoadSnapshot
from .base import Decision


class ThresholdPolicy:
    # the longest gap between re-probes, in `reprobe_interval`s (2,048 steps by default: ~10 s
    # at one request on the dense 8B pair, the longest a draft that became good again waits)
    MAX_REPROBE_BACKOFF = 8

    def __init__(self, cfg):
        self.cfg = cfg
        self.max_steps = cfg.max_steps
        self._load_off = False
        self._step = 0  # decode steps decided so far
        self._probe_until = -1  # steps < this are a re-probe window
        self._next_probe = None  # step of the next re-probe while off for low acceptance
        self._probe_gap = cfg.reprobe_interval  # gap after the next re-probe

    def _load_says_off(self, snap: LoadSnapshot) -> str | None:
        cfg = self.cfg
        qt = cfg.queue_threshold
        if not self._load_off:
            if snap.running >= cfg.threshold:
                return "threshold"
            if qt is not None and snap.waiting >= qt:
                return "queue"
            return None
        # Currently off: come back only clearly below both levels.
        if snap.running >= cfg.threshold - cfg.effective_hysteresis:
            return "threshold"
        if qt is not None and snap.waiting >= qt - cfg.queue_hysteresis:
            return "queue"
        return None

    def _acceptance_too_low(self, acc: AcceptanceStats) -> bool:
        floor = self.cfg.min_accept_len
        if floor is None:
            return False
        upper = acc.recent_accept_len_upper()  # confidently below, not below by chance
        return upper is not None and upper < floor

    def decide(self, snap: LoadSnapshot, acc: AcceptanceStats) -> Decision:
        step = self._step
        self._step += 1
        load_reason = self._load_says_off(snap)
        self._load_off = load_reason is not None
        if load_reason is not None:
            return Decision(0, load_reason)
        if self._acceptance_too_low(acc):
            return self._off_for_acceptance(step)
        self._probe_until = -1
        self._next_probe = None  # acceptance is fine: the next time it drops starts afresh
        self._probe_gap = self.cfg.reprobe_interval
        return Decision(self.max_steps, "idle")

    def forecast(self, snap: LoadSnapshot, acc: AcceptanceStats) -> int:
        """The steps `decide` would choose at this load, re-probes left out, changing nothing
        (a prefill asks whether the batch its requests join will draft, hooks_plain)."""
        off = self._load_says_off(snap) is not None or self._acceptance_too_low(acc)
        return 0 if off else self.max_steps

    def _off_for_acceptance(self, step: int) -> Decision:
        cfg = self.cfg
        if step < self._probe_until:
            return Decision(self.max_steps, "reprobe")
        if self._next_probe is None:  # just turned off
            self._next_probe = step + cfg.reprobe_interval
        elif step >= self._next_probe:
            self._probe_until = step + cfg.reprobe_steps
            self._next_probe = step + self._probe_gap
            self._probe_gap = min(2 * self._probe_gap,
                                  self.MAX_REPROBE_BACKOFF * cfg.reprobe_interval)
            return Decision(self.max_steps, "reprobe")
        return Decision(0, "acceptance")
