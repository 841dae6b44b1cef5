"""Threshold policy: draft `max_steps` at light load, nothing at heavy load.

Off when the running batch reaches `threshold` or the waiting queue reaches
`queue_threshold`; back on only when both are below their level minus the hysteresis, so a
batch size oscillating at the boundary does not flap. Independently, drafting is off while
the recent accept length (per request-round, `AcceptanceStats.recent_accept_len`) is
confidently below `min_accept_len` (its upper bound, `recent_accept_len_upper`, is), with a
short re-probe every `reprobe_interval` steps. Every input is rank-identical (see signals.py).
"""

from __future__ import annotations

from ..signals import AcceptanceStats, LoadSnapshot
from .base import Decision


class ThresholdPolicy:
    def __init__(self, cfg):
        self.cfg = cfg
        self.max_steps = cfg.max_steps
        self._load_off = False
        self._step = 0  # decode steps decided so far
        self._probe_until = -1  # steps < this are a re-probe window

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
            if step < self._probe_until:
                return Decision(self.max_steps, "reprobe")
            if step % self.cfg.reprobe_interval == 0:
                self._probe_until = step + self.cfg.reprobe_steps
                return Decision(self.max_steps, "reprobe")
            return Decision(0, "acceptance")
        self._probe_until = -1
        return Decision(self.max_steps, "idle")
