"""A host-stall drill for a real server (`ADAPTIVE_SPEC_INJECT_STALL`).

The goodput policy leaves a chosen step count whose steps suddenly read dearer and rechecks it
once the stall is over (`ProbeSchedule._recheck`, session 54). That path was only simulated: no
GPU run met a stall on its own. This drill makes one on demand: "K@N+M:MS" sleeps MS
milliseconds for each step among decisions N to N+M-1 that chose K draft steps: a stall of M
decisions that only K's steps meet, as a host hiccup would if K ran alone through it. The sleep
comes at the decision after that step: under the overlap scheduler a sleep there lands in the
result interval of the step before (GPU, session 58: stalled k = 3 results read a median 9.26 ms
against 5.78 with MS = 6), so every stalled result is one of K, the last before a switch included.
Session 58's GPU run used a first form, which slept at K's own decisions and counted M in
stalls: the k = 3 result in flight when the policy left k = 3 then read no stall, and that lone
sample settled the jump at once; the policy, back on k = 3, met the rest of the stall.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

logger = logging.getLogger("adaptive_spec")

STALL_ENV = "ADAPTIVE_SPEC_INJECT_STALL"
_SPEC = re.compile(r"(\d+)@(\d+)\+(\d+):(\d+(?:\.\d+)?)")
MAX_STALL_MS = 1000.0  # a drill, not an outage: longer sleeps would trip request timeouts


@dataclass
class StallDrill:
    steps: int  # the step count whose decisions stall
    first_decision: int  # the 1-based decision at which the stall begins
    decisions: int  # how many decisions it lasts
    seconds: float  # the sleep for each of them that chose `steps`
    sleep: Callable[[float], None] = time.sleep
    done: int = 0
    _previous: Optional[int] = field(default=None, init=False)  # the decision before's steps

    def after_decision(self, decision_count: int, steps: int) -> bool:
        """Sleep if the decision before this one (`decision_count` is 1-based) chose the drill's
        step count within the stall; True when it did. Under the overlap scheduler a sleep
        here lands in the previous step's result interval: so each stalled step is one that
        ran with the drill's k, the last one before a switch included."""
        previous, self._previous = self._previous, steps
        last = self.first_decision + self.decisions - 1
        if previous != self.steps or not self.first_decision <= decision_count - 1 <= last:
            return False
        self.done += 1
        if self.done == 1:
            logger.info("adaptive_spec: %s: stalling the steps of decisions %d-%d that choose "
                        "%d steps", STALL_ENV, self.first_decision, last, previous)
        self.sleep(self.seconds)
        return True


def stall_drill(text: Optional[str]) -> Optional[StallDrill]:
    """'K@N+M:MS' -> a StallDrill; None when unset or malformed (logged, the server serves on
    without it)."""
    if not text:
        return None
    match = _SPEC.fullmatch(text.strip())
    if match is not None:
        k, first, count, ms = match.groups()
        if int(first) >= 1 and int(count) >= 1 and 0.0 < float(ms) <= MAX_STALL_MS:
            return StallDrill(int(k), int(first), int(count), float(ms) / 1000.0)
    logger.error("adaptive_spec: ignoring %s=%r (expected K@N+M:MS, e.g. 3@2000+64:10, with "
                 "N, M >= 1 and 0 < MS <= %g)", STALL_ENV, text, MAX_STALL_MS)
    return None
