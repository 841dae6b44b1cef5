"""A host-stall drill for a real server (`ADAPTIVE_SPEC_INJECT_STALL`).

The goodput policy leaves a chosen step count whose steps suddenly read dearer and rechecks it
once the stall is over (`ProbeSchedule._recheck`, session 54). That path was only simulated: no
GPU run met a stall on its own. This drill makes one on demand: "K@N+M:MS" sleeps MS
milliseconds after each decision among the N-th to the (N+M-1)-th that chose K draft steps: a
stall of M decisions that only K's steps meet, as a host hiccup would if K ran alone through it.
The sleep delays the next launch in the scheduler loop; under the overlap scheduler it lands in
the measured interval of the result before (GPU, session 58: stalled k = 3 results read 9.2-9.3
ms against 5.8 with MS = 6, and the k = 2 result before a k = 3 decision 10.0).
Session 58's GPU run took M as a count (the first M decisions with K from N on stalled): the
policy, leaving K, then met the rest of the stall whenever it came back to K.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
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
    seconds: float  # the sleep after each of them that chose `steps`
    sleep: Callable[[float], None] = time.sleep
    done: int = 0

    def after_decision(self, decision_count: int, steps: int) -> bool:
        """Sleep if this decision (1-based `decision_count`, `steps` chosen) is one the drill
        stalls; True when it did."""
        last = self.first_decision + self.decisions - 1
        if steps != self.steps or not self.first_decision <= decision_count <= last:
            return False
        self.done += 1
        if self.done == 1:
            logger.info("adaptive_spec: %s: stalling decisions %d-%d that choose %d steps",
                        STALL_ENV, self.first_decision, last, steps)
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
