"""Scheduler-side hooks: load snapshot per iteration, acceptance per decode result.

Both read CPU state the scheduler already holds: no IPC, no GPU->CPU sync.
"""

from __future__ import annotations

import time
from typing import Optional

from ..signals import LoadSnapshot
from .state import get_controller

# Counting the waiting prompt tokens is O(queue) on every step, and only the status and the
# decision log read it (no policy does): the first this-many requests are counted and a longer
# queue's count is extrapolated from them (~15 us at most on the scheduler thread).
MAX_WAITING_SCANNED = 256


def snapshot_from_scheduler(sched) -> LoadSnapshot:
    """LoadSnapshot from a `Scheduler` (or anything with the same attributes)."""
    running_batch = getattr(sched, "running_batch", None)
    running = running_batch.batch_size() if running_batch is not None else 0
    queue = sched.waiting_queue
    waiting_tokens = 0
    for i, req in enumerate(queue):
        if i >= MAX_WAITING_SCANNED:
            waiting_tokens = round(waiting_tokens * len(queue) / MAX_WAITING_SCANNED)
            break
        waiting_tokens += len(req.origin_input_ids)
    total = int(getattr(sched, "max_total_num_tokens", 0) or 0)
    used = 0
    if total:
        free = sched.token_to_kv_pool_allocator.available_size() + sched.tree_cache.evictable_size()
        used = max(0, total - int(free))
    return LoadSnapshot(
        running=running,
        waiting=len(queue),
        waiting_tokens=waiting_tokens,
        kv_used=used,
        kv_total=total,
        forward_ct=int(getattr(sched, "forward_ct", 0) or 0),
        taken_at=time.monotonic(),
    )


def after_get_next_batch_to_run(result, sched, *args, **kwargs):
    """AFTER hook on Scheduler.get_next_batch_to_run: the batch for this iteration is built."""
    ctl = get_controller()
    if ctl is not None:
        try:
            ctl.on_snapshot(snapshot_from_scheduler(sched))
        except Exception as exc:
            ctl.fail(f"scheduler snapshot hook: {exc!r}")
    return None


def after_process_batch_result_prefill(ret, processor, *args, **kwargs):
    """AFTER hook on SchedulerBatchResultProcessor.process_batch_result_prefill(batch, result):
    the next decode result's step time starts here, and the time since the last result was
    this prefill's, with len(batch.reqs) new requests (see Controller.on_prefill_result), of
    which those not finished by their prefill's token go on to decode. SGLang has set each
    request's finish state by now (`update_finish_state` in the method hooked)."""
    ctl = get_controller()
    if ctl is not None:
        try:
            batch = args[0] if args else kwargs.get("batch")
            reqs = getattr(batch, "reqs", None) or ()
            ctl.on_prefill_result(len(reqs), decoding=unfinished(reqs))
        except Exception as exc:
            ctl.fail(f"prefill result hook: {exc!r}")
    return None


def unfinished(reqs) -> Optional[int]:
    """How many of `reqs` have not finished (SGLang's `Req.finished()`); None where a request
    cannot tell. After a prefill's result: those going on to decode (the caller then counts every
    one, as before session 62: bookkeeping is never a reason for the fallback); in the running
    batch: those staying in it (`hooks_plain.still_running`)."""
    try:
        return sum(1 for req in reqs if not req.finished())
    except Exception:  # noqa: BLE001 - a request type without finished()
        return None


def after_resolve_spec_v2_tokens(ret, processor, result, batch, *args, **kwargs):
    """AFTER hook on SchedulerBatchResultProcessor._resolve_spec_v2_tokens.

    accept lengths are on the CPU here; `result.speculative_num_draft_tokens` is the draft
    token count that batch ran with (steps + 1), so each sample is attributed correctly
    even though the decision for the next batch was already made (overlap scheduler).
    """
    ctl = get_controller()
    if ctl is not None:
        try:
            steps = int(result.speculative_num_draft_tokens) - 1
            ctl.on_result(steps, result.num_correct_drafts_per_req_cpu, getattr(result, "adaptive_spec_mode", None))
        except Exception as exc:
            ctl.fail(f"result hook: {exc!r}")
    return None
