"""A decode result that took far longer than any step should is logged, with the Triton
kernels built while it ran (`kernel_builds.py`): a kernel built on first use runs on the
scheduler's thread, and every request in flight waits for it.

GPU, session 58 (H100, MoE layout, 4 requests): in the level's first seconds the first result
at a step count not yet run at that batch size took 87-143 ms, seven times, against 2.7-6 ms
steady; the sample log showed them, nothing said what held them. Session 59: a full catch-up
held the host 1.72 s once in three runs, cause unread; its other results at 65-128 running
read 15 ms at the median, 20-35 ms at the 99th percentile, 89 ms at most. SLOW_RESULT_S sits
below session 58's stalls and above nearly every steady result. At most one line a second (a
burst of first uses is one story); each line counts the slow results so far.

Since session 64 the controller also asks `KernelBuildStall` of every decode result: one that
held a kernel build is no sample of a step count or of a switch's price (controller.py
`stall_judge`). That session's one-request run (H100, Qwen3-MoE layout) priced a switch on at 73
ms from two catch-ups that built SGLang's kernels, and ran plain through the level.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Callable, Optional

from . import kernel_builds

logger = logging.getLogger("adaptive_spec")

SLOW_RESULT_S = 0.08
MIN_LOG_GAP_S = 1.0


def is_slow(seconds: Optional[float]) -> bool:
    """A decode result's wall time at or over the threshold (the log line's and the metric's)."""
    return seconds is not None and seconds >= SLOW_RESULT_S


class SlowResults:
    """A controller wall listener: (batch size, steps, the result's wall seconds, mode)."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 built_since: Callable[[float], Optional[int]] = kernel_builds.built_since,
                 names_since: Callable[[float], list] = kernel_builds.names_since):
        self.clock = clock
        self.built_since = built_since
        self.names_since = names_since
        self.count = 0
        self.last_logged: Optional[dict] = None  # the latest slow result a line was logged for
        self._last_line = -math.inf

    def __call__(self, batch_size: int, steps: int, seconds: Optional[float],
                 mode: Optional[str]) -> None:
        if not is_slow(seconds):
            return
        self.count += 1
        now = self.clock()
        if now - self._last_line < MIN_LOG_GAP_S:
            return
        self._last_line = now
        builds = self.built_since(now - seconds)
        self.last_logged = {"ms": round(seconds * 1000, 1), "running": batch_size, "steps": steps,
                            "mode": mode, "kernels_built": builds}
        logger.warning("adaptive_spec: a decode result took %.0f ms (%d running, k = %d, mode %s; "
                       "slow result %d since start; Triton kernels built meanwhile, any process: "
                       "%s)", seconds * 1000, batch_size, steps, mode or "-", self.count,
                       "no cache to read" if builds is None else builds)
        if builds:  # which kernels: a second line, so the first keeps its form
            names = self.names_since(now - seconds)
            logger.warning("adaptive_spec: Triton kernels built in that %.0f-ms result: %s",
                           seconds * 1000, ", ".join(names) or "-")

    def status(self) -> dict:
        return {"count": self.count, "threshold_ms": round(SLOW_RESULT_S * 1000, 1),
                "last_logged": self.last_logged}


class KernelBuildStall:
    """The controller's `stall_judge`: a decode result of `seconds` held a kernel build when it
    was slow (`is_slow`) and Triton wrote a kernel to its cache while it ran. Only slow results
    read the cache: one stat of its directory, and the walk of its entries only where that moved
    (busy batches can take 80 ms a result, every result). Only a build counts: a slow full
    catch-up of many stale positions is what a switch costs, and must stay in its price."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 built_since: Callable[[float], Optional[int]] = kernel_builds.built_since,
                 dir_written_since: Callable[[float], bool] = kernel_builds.dir_written_since):
        self.clock = clock
        self.built_since = built_since
        self.dir_written_since = dir_written_since

    def __call__(self, seconds: float) -> bool:
        if not is_slow(seconds):
            return False
        since = self.clock() - seconds
        return self.dir_written_since(since) and bool(self.built_since(since))


def installed(controller) -> Optional[SlowResults]:
    return next((listener for listener in controller.wall_listeners
                 if isinstance(listener, SlowResults)), None)


def install_slow_results(controller) -> SlowResults:
    """Listen to every decode result's wall time (once per controller), and judge which held a
    kernel build (`KernelBuildStall`)."""
    listener = installed(controller)
    if listener is None:
        listener = SlowResults()
        controller.wall_listeners.append(listener)
    if getattr(controller, "stall_judge", None) is None:
        controller.stall_judge = KernelBuildStall()
    return listener
