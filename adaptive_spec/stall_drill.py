"""A host-stall drill for a real server (`ADAPTIVE_SPEC_INJECT_STALL`).

The goodput policy leaves a chosen step count whose steps suddenly read dearer and rechecks it
once the stall is over (`ProbeSchedule._recheck`, session 54). That path was only simulated: no
GPU run met a stall on its own. This drill makes one on demand: "K@N+M:MS" sleeps MS
milliseconds after each of the first M decisions, from the N-th on, that chose K draft steps. The
sleep delays that step's launch in the scheduler loop, so the step's measured wall time (the
interval between results) grows by about MS, as in a host hiccup, and only K's cell sees it.
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
    first_decision: int  # the 1-based decision from which stalls may start
    stalls: int  # how many decisions with `steps` stall, counted from `first_decision`
    seconds: float  # the sleep after each
    sleep: Callable[[float], None] = time.sleep
    done: int = 0

    def after_decision(self, decision_count: int, steps: int) -> bool:
        """Sleep if this decision (1-based `decision_count`, `steps` chosen) is one the drill
        stalls; True when it did."""
        if (steps != self.steps or decision_count < self.first_decision
                or self.done >= self.stalls):
            return False
        self.done += 1
        if self.done == 1 or self.done == self.stalls:
            logger.info("adaptive_spec: %s stall %d of %d (%d steps, decision %d)", STALL_ENV,
                        self.done, self.stalls, steps, decision_count)
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
