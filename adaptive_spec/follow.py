"""How fast the chosen step count follows the load: issue 5 asks that on a 1 -> 128 -> 1 step
load the choice moves within 5 decode steps each way. A switch line of the decision log carries
no step index, and the sweep's 0.2-s status samples span 10-40 decode steps, so neither can
tell 2 steps from 20; the controller counts them itself."""

from __future__ import annotations

from collections import deque
from typing import Optional

from .policy.step_table import bucket_of

# a short look at another k (goodput's probes and refreshes, the threshold policy's re-probes):
# not a change of the choice, and the return from it is none either
PROBING = frozenset({"probe", "refresh", "reprobe"})


class FollowLog:
    """The latest switches of the policy's choice, each with how many decisions the batch had
    been in its size class (log2 bucket, as the goodput table's) when the new step count started
    to run: 0 means on the first decision at the new size. A probe that already ran the new step
    count counts as running it (GPU, session 26's step load: a k = 0 probe begun at 2 requests
    ran on as the batch grew to 125, and the switch to plain read 6 decisions although every
    step at 125 had been plain)."""

    KEEP = 32

    def __init__(self):
        self.events: deque = deque(maxlen=self.KEEP)
        self._bucket: Optional[int] = None
        self._since = 0  # decision number at which the batch entered its current size class
        self._choice: Optional[int] = None  # steps of the last decision that was not a probe
        self._run_steps: Optional[int] = None  # steps of the latest decision, probes included
        self._run_from = 0  # decision number since which every decision ran `_run_steps`

    def on_decision(self, n: int, running: int, steps: int, reason: str) -> None:
        bucket = bucket_of(running)
        if bucket != self._bucket:
            self._bucket, self._since = bucket, n
        if steps != self._run_steps:
            self._run_steps, self._run_from = steps, n
        if reason in PROBING:
            return
        if self._choice is not None and steps != self._choice:
            lag = max(0, self._run_from - self._since)
            self.events.append((n, running, self._choice, steps, reason, lag))
        self._choice = steps

    def status(self) -> list:
        return [{"decision": n, "running": running, "from": a, "to": b, "reason": reason,
                 "decisions_at_size": lag}
                for n, running, a, b, reason, lag in self.events]
