"""Where a server's scheduler process waits for the GPU: a diagnostic (any server, plain too).

`ADAPTIVE_SPEC_SYNC_PROBE=1` in a server's environment turns on torch's CUDA sync debug mode
("warn") at the first decode step, catches each "synchronizing CUDA operation" warning, and
counts it by where it came from (the innermost SGLang / adaptive-spec frames) and by the
scheduler phase it happened in. Every PROBE_LOG_EVERY_S it logs one line:

  adaptive_spec syncs rank=0 decode_steps=5120 syncs=10240 per_step=2.00
    sites={"run_batch|eagle_worker_v2.py:412 f <- ...": 5120, ...}

Why: the phase clocks (session 7) showed our off step at 52 requests spending +1.9 ms in
`run_batch` and -1.0 ms in `process_decode` against plain, which could have been a host-device
sync inside the forward (the CPU waits early, the overlap scheduler's GPU queue runs dry). On
the H200 (session 7) it counted zero syncs in plain, eagle3 and our off steps, so that gap is
host time, not a stall. Torch's sync debug mode sees .item(), .tolist(), .cpu(), nonzero,
blocking copies and stream syncs, not event waits (SGLang's `copy_done`). Costs a Python stack
walk per sync found; nothing where there are none.
"""

from __future__ import annotations

import json
import logging
import os
import time
import traceback
import warnings
from typing import Dict, List

from .plugin import RESULT_PROCESSOR, SCHEDULER

logger = logging.getLogger("adaptive_spec")

ENV = "ADAPTIVE_SPEC_SYNC_PROBE"
SYNC_MESSAGE = "called a synchronizing CUDA operation"
PROBE_LOG_EVERY_S = 10.0
TOP_SITES = 12
FRAMES_PER_SITE = 3
# the scheduler's phases; the innermost one on the stack names the sync's phase
PHASE_FUNCS = ("process_input_requests", "get_next_batch_to_run", "run_batch",
               "process_batch_result_decode", "process_batch_result_prefill", "process_batch_result")
OUR_FILES = ("sglang/", "adaptive_spec/", "flashinfer/")


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def short_path(filename: str, markers=OUR_FILES) -> str:
    """The path from the first of `markers` found in it ("sglang/srt/..."), else the file name."""
    for marker in markers:
        i = filename.rfind(marker)
        if i >= 0:
            return filename[i:]
    return os.path.basename(filename)


def site_of(stack: List[traceback.FrameSummary]) -> str:
    """'phase|innermost frames' of the code that synced: the innermost frames of SGLang, ours
    or FlashInfer (torch's own frames and the warnings machinery skipped)."""
    phase = next((f.name for f in reversed(stack) if f.name in PHASE_FUNCS), "other")
    ours = [f for f in stack if any(m in f.filename for m in OUR_FILES)
            and "sync_probe.py" not in f.filename]
    inner = ours[-FRAMES_PER_SITE:][::-1]
    where = " <- ".join(f"{short_path(f.filename)}:{f.lineno} {f.name}" for f in inner) or "?"
    return f"{phase}|{where}"


class SyncCounter:
    """Syncs by site and decode steps since the probe was armed."""

    def __init__(self, rank: int = 0, clock=time.monotonic):
        self.rank = rank
        self.clock = clock
        self.sites: Dict[str, int] = {}
        self.decode_steps = 0
        self.last_log = clock()

    def add(self, site: str) -> None:
        self.sites[site] = self.sites.get(site, 0) + 1

    def line(self) -> str:
        total = sum(self.sites.values())
        top = dict(sorted(self.sites.items(), key=lambda kv: -kv[1])[:TOP_SITES])
        per_step = total / self.decode_steps if self.decode_steps else 0.0
        return (f"adaptive_spec syncs rank={self.rank} decode_steps={self.decode_steps} syncs={total} "
                f"per_step={per_step:.2f} sites={json.dumps(top)}")

    def maybe_log(self) -> str | None:
        now = self.clock()
        if now - self.last_log < PROBE_LOG_EVERY_S or not self.decode_steps:
            return None
        self.last_log = now
        line = self.line()
        logger.info(line)
        return line


_counter = SyncCounter()
_armed = False


def _showwarning(original):
    def show(message, category, filename, lineno, file=None, line=None):
        if SYNC_MESSAGE in str(message):
            try:
                _counter.add(site_of(traceback.extract_stack()[:-1]))
            except Exception as exc:  # a diagnostic must never break serving
                logger.debug("adaptive_spec syncs: %r", exc)
            return None
        return original(message, category, filename, lineno, file, line)

    return show


def arm() -> None:
    """Sync debug mode on, every sync warning to our counter (called at the first decode)."""
    global _armed
    if _armed:
        return
    import torch

    warnings.filterwarnings("always", message=f".*{SYNC_MESSAGE}.*")
    warnings.showwarning = _showwarning(warnings.showwarning)
    torch.cuda.set_sync_debug_mode("warn")
    _armed = True
    logger.info("adaptive_spec syncs: probe armed (CUDA sync debug mode: warn)")


def after_process_decode(ret, processor, *args, **kwargs):
    """AFTER hook on process_batch_result_decode: arm at the first decode, count, log."""
    try:
        if not _armed:
            arm()
            return None
        _counter.decode_steps += 1
        _counter.maybe_log()
    except Exception as exc:
        logger.debug("adaptive_spec syncs: %r", exc)
    return None


def after_get_next_batch_rank(plan, sched, *args, **kwargs):
    try:
        _counter.rank = int(getattr(sched, "tp_rank", 0) or 0)
    except Exception:
        pass
    return None


def hooks() -> List[tuple]:
    return [(f"{RESULT_PROCESSOR}.process_batch_result_decode", after_process_decode, "AFTER"),
            (f"{SCHEDULER}.get_next_batch_to_run", after_get_next_batch_rank, "AFTER")]
