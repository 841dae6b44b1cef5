"""`--adaptive-spec-off-path plain` (session 12; the default since session 13): with drafting
off, the step is the plain server's decode step, in the scheduler too (SGLang 0.5.16, overlap
scheduler).

Why: our other off paths run the target's plain decode graph but inside SGLang's spec-v2 step,
and the scheduler still treats the batch as a speculative one: a snapshot of every batch field
around the forward, the future map's publish/gather of lengths and draft state, four relay
buffers instead of one, the spec result path (NOTES-spec-v2-host-path.md, rows R1-R7, W1-W8,
P1). With this path an off step's batch has `spec_algorithm = NONE` from its preparation to
its result, so SGLang takes its plain branches everywhere.

The batch moves between two regimes at preparation time (`prepare_for_decode`), where the
decision for the step is made (its batch size is final there):

spec -> plain  SGLang's own spec preparation runs first (it tops the request's KV slots up to
               committed + reserve, so the slot this step writes is allocated). Spec-v2 keeps
               the true lengths on the GPU only: they are gathered from the future map (as the
               scheduler does before a spec forward; ordered by its publish event, no host
               sync). Then what plain's preparation does: the slot at the length is the
               step's output slot (a GPU gather of the reserved slot, never a second
               allocation: that would leak the reserved one), committed + 1, lengths + 1.
plain -> plain The same, with lengths already exact on the batch; with `--adaptive-spec-
               plain-kv lazy` (the default since session 14) SGLang's spec preparation runs
               only when a request has used its reserve up (`_prepare_from_reserve`); with
               `release` the reserve goes back to the pool and SGLang's plain preparation
               runs verbatim (`_prepare_as_plain_server`).
plain -> spec  The batch gets a draft input keyed on its request slots, so the scheduler's
               forward gathers the lengths, the bonus token and the draft state from the
               future map as after any spec step. A plain step publishes its KV length there
               (the scheduler publishes a plain step's `seq_lens + 1`, `publish_as_length`),
               and stores only the bonus token (a plain result has no draft state,
               `around_stash`). The first drafting step is the catch-up step (hooks_offpath).

Between steps a plain batch keeps `spec_algorithm = NONE` (its copy for the result processor
must say plain) and is marked `PLAIN_MARK`; just before the scheduler sizes the next step's KV
(`update_running_batch`) it says EAGLE again, so the size check and a retraction count the
spec reserve. Requests prefilled while the batch is plain merge in with exact lengths (a
prefill's length is its KV length in both conventions) and their bonus token in the future map.
With `--adaptive-spec-off-prefill plain` a prefill after a sustained off period is itself a plain
batch (`after_prepare_for_extend`, `before_merge_batch`; hooks_offpath.plain_prefill_step).

The decision is made here, before this iteration's load snapshot (the scheduler hook runs
after the batch is built): it sees the current batch size and the previous iteration's queue.

Where this path does not apply (no overlap scheduler, page size > 1, tree drafts, DP
attention, mixed chunks; batches with grammar, logprobs or hidden states) the off step runs
as `decode-lean`. A failure here turns the path off for the rest of the run (logged, status).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import weakref
from types import SimpleNamespace

import torch

from . import catchup
from .hooks_scheduler import unfinished
from .state import get_controller

logger = logging.getLogger("adaptive_spec")

PLAIN_MARK = "_as_plain"  # on a ScheduleBatch: its current step runs (or last ran) as plain
STEPS_ATTR = "_as_steps"  # on a ScheduleBatch: the step count decided at its preparation

# future_map: the scheduler's FutureMap while the path is on (None: off); spec_algorithm: the
# server's; publish_as_length: the request slots of the plain step whose publish is next;
# scheduler: a weak reference to the Scheduler (its running batch, read by a prefill's check)
_state = SimpleNamespace(future_map=None, spec_algorithm=None, publish_as_length=None, scheduler=None)


@functools.lru_cache(maxsize=None)
def sglang_names() -> SimpleNamespace:
    """The SGLang values a plain step uses, imported once, on first use (not at plugin load,
    before SGLang's modules are ready) rather than on every step."""
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    return SimpleNamespace(no_spec=SpeculativeAlgorithm.NONE, capture_nothing=CaptureHiddenMode.NULL,
                           decode=ForwardMode.DECODE)


def active() -> bool:
    return _state.future_map is not None


def scheduler_ineligible(sched) -> str | None:
    """Why the plain regime cannot run on this scheduler (None: it can)."""
    args = sched.server_args
    checks = (
        (not getattr(sched, "enable_overlap", False), "the overlap scheduler is off"),
        ((getattr(args, "page_size", 1) or 1) != 1, "page size > 1"),
        ((getattr(args, "speculative_eagle_topk", 1) or 1) != 1, "tree drafts (topk > 1)"),
        (getattr(args, "enable_mixed_chunk", False), "mixed chunked prefill"),
        (getattr(args, "enable_dp_attention", False), "DP attention"),
        ((getattr(args, "pp_size", 1) or 1) != 1, "pipeline parallelism"),
        (getattr(sched, "hisparse_coordinator", None) is not None, "hierarchical sparse attention"),
        (getattr(getattr(sched, "tree_cache", None), "supports_mamba", lambda: False)(), "mamba state"),
        (getattr(getattr(sched, "model_worker", None), "_as_decode_path", None) is None, "no decode path"),
        (getattr(sched, "future_map", None) is None, "no future map"),
        # a plain step keeps no CPU lengths across a merge with a prefill (as a spec step)
        (getattr(getattr(sched, "future_map", None), "needs_cpu_seq_lens", False), "an attention backend that reads CPU lengths"),
    )
    return next((why for failed, why in checks if failed), None)


def after_init_overlap(ret, sched, *args, **kwargs):
    """AFTER hook on Scheduler.init_overlap: the future map exists; turn the path on if it can run."""
    ctl = get_controller()
    if ctl is None or ctl.cfg.off_path != "plain":
        return None
    try:
        why = scheduler_ineligible(sched)
    except Exception as exc:  # never in the way of the scheduler's start
        why = f"eligibility check failed: {exc!r}"
    if why is not None:  # the default path on a server it cannot serve: expected, not an error
        turn_off(ctl, f"not available here ({why})", level=logging.WARNING)
        return None
    _state.future_map = sched.future_map
    _state.scheduler = weakref.ref(sched)
    _state.spec_algorithm = sched.spec_algorithm
    logger.info("adaptive_spec: plain off path ready: off steps run as plain decode batches")
    return None


def turn_off(ctl, why: str, level: int = logging.ERROR) -> None:
    """Off steps run as decode-lean from now on (a batch already plain goes back to spec at its
    next preparation)."""
    _state.future_map = None
    if ctl is not None and ctl.cfg.off_path == "plain":
        ctl.cfg = dataclasses.replace(ctl.cfg, off_path="decode-lean")
    logger.log(level, "adaptive_spec: plain off path %s; off steps run as decode-lean", why)


def batch_eligible(batch) -> bool:
    """What a plain decode serves without SGLang's verify step: no grammar masks, no spec-v2
    logprobs, no hidden states (the direct off path serves the same, hooks_offpath)."""
    return not (batch.has_grammar or batch.return_logprob or batch.return_hidden_states)


def before_update_running_batch(sched, batch, *args, **kwargs):
    """BEFORE hook on Scheduler.update_running_batch: a plain batch says EAGLE again while the
    scheduler checks the next step's KV need (and retracts), so the spec reserve is counted."""
    if batch is not None and getattr(batch, PLAIN_MARK, False) and _state.spec_algorithm is not None:
        batch.spec_algorithm = _state.spec_algorithm


def around_prepare_for_decode(orig, batch, *args, **kwargs):
    """AROUND hook on ScheduleBatch.prepare_for_decode: decide the step; prepare it as plain
    (drafting off) or as SGLang's spec step."""
    plain_before = getattr(batch, PLAIN_MARK, False)
    ctl = get_controller()
    if not active() or ctl is None or ctl.cfg.off_path != "plain":  # also: changed at run time
        setattr(batch, STEPS_ATTR, None)  # the worker decides
        if plain_before:
            _back_to_spec(batch)
        return orig(batch, *args, **kwargs)
    try:
        steps = ctl.decide(batch.batch_size()).steps
    except Exception as exc:
        ctl.fail(f"plain off path decision: {exc!r}")
        steps = None
    setattr(batch, STEPS_ATTR, steps)
    if steps != 0 or not batch_eligible(batch):
        if plain_before:
            _back_to_spec(batch)
        return orig(batch, *args, **kwargs)
    if plain_before and ctl.cfg.plain_kv == "release":
        return _prepare_as_plain_server(orig, batch, *args, **kwargs)
    if plain_before and ctl.cfg.plain_kv == "lazy" and _reserve_holds_the_step(batch):
        return _prepare_from_reserve(batch)
    if plain_before:
        batch.spec_algorithm = _state.spec_algorithm  # SGLang's spec preparation: the KV top-up
    ret = orig(batch, *args, **kwargs)
    try:
        _to_plain_step(batch, lengths_on_batch=plain_before)
    except Exception as exc:
        # the batch is still a prepared spec batch (see _to_plain_step): run it as decode-lean
        turn_off(ctl, f"failed preparing a step ({exc!r})")
        if plain_before:
            _back_to_spec(batch)
    return ret


# A prefill runs plain only once drafting has been off this many decode steps in a row: a
# sustained off period (a busy server), not the crossover band's switching, where its requests
# would soon draft from a prompt the draft never saw. A policy's probes pause the count, and
# a prefill while one drafts is a spec prefill (Controller.prefill_may_run_plain, follow.PROBING).
PLAIN_PREFILL_AFTER_OFF_STEPS = 32
# ... and only a batch of short prompts: what a plain prefill saves is the draft's prefill, mostly
# a fixed host cost per batch (on the H200 forced off made 0.96-0.97x of plain with spec
# prefills and 1.00-1.06x with plain ones, prompts of 40-128 tokens, sessions 14-15), and what
# it costs is a re-run of the target over the prompt at re-entry (the full catch-up, capped at
# one chunked prefill), which a long prompt makes dear and may not cover.
PLAIN_PREFILL_MAX_TOKENS_PER_REQUEST = 256


def after_prepare_for_extend(ret, batch, *args, **kwargs):
    """AFTER hook on ScheduleBatch.prepare_for_extend: with `--adaptive-spec-off-prefill plain`
    (the default since session 15), a prefill of short prompts while drafting is off runs as the
    plain server's (SGLang prepares a prefill the same way for both; the spec step differs in the
    worker: the target keeps every token's hidden states and the draft prefills the prompt,
    eager). Off means the last PLAIN_PREFILL_AFTER_OFF_STEPS decisions were 0 steps, or the batch
    grows into a size where the policy runs plain (Controller.prefill_may_run_plain), the same on
    every TP rank. Its requests' stale marks cover the prompt past its cached prefix: the full
    catch-up at re-entry writes their draft KV (catchup.py). The batch
    stays plain until it merges (before_merge_batch) or, as the running batch, until its first
    decode preparation (a plain batch's)."""
    ctl = get_controller()
    if not active() or ctl is None or ctl.cfg.off_path != "plain" or ctl.cfg.off_prefill != "plain":
        return None
    if not batch.forward_mode.is_extend() or not batch_eligible(batch):
        return None
    if getattr(batch, "chunked_req", None) is not None:  # a prompt in chunks: left to SGLang
        return None
    if (batch.extend_num_tokens or 0) > PLAIN_PREFILL_MAX_TOKENS_PER_REQUEST * len(batch.reqs):
        return None
    if any(getattr(req, "multimodal_inputs", None) is not None for req in batch.reqs):
        return None  # the catch-up re-runs prompts from their token ids: not an image's
    if not ctl.prefill_may_run_plain(len(batch.reqs), PLAIN_PREFILL_AFTER_OFF_STEPS, still_running):
        return None
    batch.spec_algorithm = sglang_names().no_spec
    setattr(batch, PLAIN_MARK, True)
    cached = batch.prefix_lens or [0] * len(batch.reqs)  # a cached prefix keeps its draft KV
    for req, start in zip(batch.reqs, cached):
        setattr(req, catchup.STALE_FROM, start)
    return None


def still_running() -> int | None:
    """The scheduler's running requests that have not finished (None: unknown). SGLang drops
    finished requests from its running batch only when it prepares the next decode step, and a
    prefill comes first: the batch a closed-loop client's replacements are prefilled beside
    still holds the requests they replace. Counted, those put a full batch into the next size
    class: GPU, session 34 (32 requests), 86 of 279 prefill batches at the level read running +
    new above 32 (`log_throughput`'s prefills_past_level on SGLang's batch lines), and 9-16 a
    6-s window ran plain (the forecast there: no drafts) into a drafting batch, each request
    then drafting over a prompt the draft never saw. O(running batch), once per prefill batch
    that asks; the same on every TP rank (each holds the same batch and finishes the same
    requests at the same result)."""
    try:
        reqs = _state.scheduler().running_batch.reqs
    except Exception:  # no scheduler or batch (tests, another SGLang): the snapshot's count
        return None
    return unfinished(reqs)


def before_merge_batch(batch, other, *args, **kwargs):
    """BEFORE hook on ScheduleBatch.merge_batch: a plain prefill merging into a spec batch takes
    the spec regime's draft input, keyed on its request slots (its length and first token are
    in the future map; its draft state is not: the first drafting step after it is a catch-up
    step, see hooks_offpath.plain_prefill_step)."""
    if getattr(other, PLAIN_MARK, False) and other.spec_algorithm.is_none() and batch.spec_info is not None:
        _back_to_spec(other)


def _to_plain_step(batch, lengths_on_batch: bool) -> None:
    """After SGLang's spec preparation: make the batch the plain server's prepared decode batch."""
    if not lengths_on_batch:
        # spec-v2: the true lengths are the last step's, on the GPU only
        _state.future_map.resolve_seq_lens_cpu(batch)
    seq_lens = batch.seq_lens
    # the reserved slot at the KV length; writing a new allocation there would leak it
    out_cache_loc = batch.req_to_token_pool.req_to_token[batch.req_pool_indices, seq_lens].to(torch.int64)
    # nothing above changed what a spec step reads (the lengths gathered are the ones the
    # scheduler gathers before a spec forward); from here on the batch is plain
    batch.spec_info = None
    batch.spec_algorithm = sglang_names().no_spec
    setattr(batch, PLAIN_MARK, True)
    batch.out_cache_loc = out_cache_loc
    for req in batch.reqs:  # plain counts the step's token at preparation (spec at its result)
        catchup.mark_stale(req, req.kv_committed_len)  # this step writes no draft KV there
        req.kv_committed_len += 1
    batch.seq_lens = seq_lens + 1
    if batch.seq_lens_cpu is not None:
        batch.seq_lens_cpu = batch.seq_lens_cpu + 1
    batch.seq_lens_sum = None


def _reserve_holds_the_step(batch) -> bool:
    """Whether every request already holds the slot a plain step writes (the one at its KV
    length). After a plain step the host's committed lengths are exact (plain counts its token
    at preparation); a request merged in since (a prefill) holds no reserve yet: False."""
    return all(req.kv.kv_allocated_len > req.kv_committed_len for req in batch.reqs)


def _prepare_from_reserve(batch) -> None:
    """`--adaptive-spec-plain-kv lazy`: a plain step after a plain step that writes a slot the
    request already holds. What SGLang's spec preparation does besides topping the reserve up
    (ScheduleBatch.prepare_for_decode's head and eagle_prepare_for_decode, 0.5.16), then the
    plain step's own bookkeeping; the top-up (a per-request loop, two host tensors copied to the
    GPU, the slot-assignment kernel) runs only at the step where some request has used up its
    reserve (SGLang fills it to twice the draft tokens: one top-up per ~7 steps at 3 steps)."""
    batch.forward_mode = sglang_names().decode
    batch.input_embeds = None
    if getattr(batch, "attn_cp_metadata", None) is not None:
        batch.attn_cp_metadata = None
    batch.maybe_evict_swa()
    if batch.sampling_info.penalizer_orchestrator.is_required:
        batch.cumulate_penalty_output_tokens()
    for req in batch.reqs:
        req.decode_batch_idx += 1
    _to_plain_step(batch, lengths_on_batch=True)


def _prepare_as_plain_server(orig, batch, *args, **kwargs):
    """`--adaptive-spec-plain-kv release` (lossless on the H200, session 13): a plain step after
    a plain step as the plain server prepares it (one new slot per request, where SGLang's spec
    preparation tops the reserve up: a loop, two host tensors copied to the GPU, a Triton launch,
    and our gather of the reserved slot). Every spec result has been processed by
    now (the scheduler processes a step's result in the next iteration), so the host's committed
    lengths are exact: what plain's preparation needs. Its allocation writes the step's slot at
    the KV length, so a reserved slot there goes back to the pool first (else it would leak)."""
    _release_reserve(batch)
    for req in batch.reqs:  # a request merged in since the last step starts its stale run here
        catchup.mark_stale(req, req.kv_committed_len)
    if batch.seq_lens_cpu is None:  # spec-v2 keeps none (Triton attention); plain advances it
        batch.seq_lens_cpu = torch.tensor([req.kv_committed_len for req in batch.reqs], dtype=torch.int64)
    batch.spec_algorithm = sglang_names().no_spec
    return orig(batch, *args, **kwargs)


def _release_reserve(batch) -> None:
    """The KV slots a request holds past its committed length back to the pool, as SGLang
    releases a finished request's over-allocation (mem_cache/common.py, 0.5.16). Their contents
    are rejected drafts; the slots go to a new owner only in a later forward on the same stream."""
    allocator = batch.token_to_kv_pool_allocator
    rows = batch.req_to_token_pool.req_to_token
    held = [req for req in batch.reqs if req.kv.kv_allocated_len > req.kv_committed_len]
    if not held:
        return
    allocator.free_group_begin()
    try:
        for req in held:
            allocator.free(rows[req.req_pool_idx, req.kv_committed_len:req.kv.kv_allocated_len])
            req.kv.kv_allocated_len = req.kv_committed_len
    finally:
        allocator.free_group_end()


def _back_to_spec(batch) -> None:
    """A plain batch's next step is a spec step: the scheduler's forward gathers its lengths,
    bonus token and draft state from the future map (`future_indices`), as after a spec step."""
    from sglang.srt.speculative.eagle_info import EagleDraftInput

    batch.spec_algorithm = _state.spec_algorithm or batch.spec_algorithm
    batch.spec_info = EagleDraftInput(future_indices=batch.req_pool_indices)
    setattr(batch, PLAIN_MARK, False)
    setattr(batch, catchup.FROM_PLAIN, True)  # host lengths exact: a full catch-up may run


def planned_steps(batch):
    """The step count decided at this batch's preparation (None: not decided there); read once."""
    steps = getattr(batch, STEPS_ATTR, None)
    if steps is not None:
        setattr(batch, STEPS_ATTR, None)
    return steps


def around_resolve_forward_inputs(orig, batch, future_map, *args, **kwargs):
    """AROUND hook on overlap_utils.resolve_forward_inputs: a plain batch's input token is the
    last step's bonus token in the future map (SGLang gathers it only on a plain server)."""
    ret = orig(batch, future_map, *args, **kwargs)
    if batch.input_ids is None and getattr(batch, PLAIN_MARK, False) and batch.spec_algorithm.is_none():
        batch.input_ids = future_map.output_tokens_buf[batch.req_pool_indices]
    return ret


def publish_next_as_length(batch) -> None:
    """Called by the worker after a plain step: the scheduler's publish for this batch's
    request slots (the same tensor object) is that step's."""
    _state.publish_as_length = batch.req_pool_indices


def around_publish(orig, future_map, future_indices, new_seq_lens, *args, **kwargs):
    """AROUND hook on FutureMap.publish: after a plain step the scheduler publishes the step's
    `seq_lens + 1`; spec-v2 reads the KV length (the next step's length before its tokens)."""
    if _state.publish_as_length is not None and future_indices is _state.publish_as_length:
        new_seq_lens = new_seq_lens - 1
    _state.publish_as_length = None
    return orig(future_map, future_indices, new_seq_lens, *args, **kwargs)


def around_stash(orig, future_map, future_indices, payload, *args, **kwargs):
    """AROUND hook on FutureMap.stash: a plain result has a bonus token and no draft state; store
    the token only (SGLang's spec map would read the draft fields). The draft rows keep their old
    values; the catch-up step rewrites them before any drafting step reads them."""
    if payload.topk_p is None and payload.hidden_states is None and future_map.spec_algo.is_some():
        if future_indices.shape[0]:
            future_map.output_tokens_buf[future_indices] = payload.bonus_tokens.to(future_map.output_tokens_buf.dtype)
        return None
    return orig(future_map, future_indices, payload, *args, **kwargs)


def around_process_batch_result_decode(orig, processor, batch, result, *args, **kwargs):
    """AROUND hook on SchedulerBatchResultProcessor.process_batch_result_decode: a plain step's
    result counts in SGLang's spec metrics as what it is, one token per request (as our other
    off paths' 0-step verify does; a spec server's decode log divides by that count, and with
    none in an interval it raised ZeroDivisionError on the H200, session 12), and feeds the
    controller (spec results do through `_resolve_spec_v2_tokens`). Every decode result's
    step time is read when SGLang has processed it (`Controller.close_result`)."""
    plain = getattr(result, "adaptive_spec_mode", None) == "off" and batch.spec_algorithm.is_none()
    if plain:
        processor.metrics_reporter.update_spec_metrics(len(batch.reqs), 0)
    ctl = get_controller()
    if ctl is not None:
        ctl.open_result()
    try:
        ret = orig(processor, batch, result, *args, **kwargs)
    finally:
        if ctl is not None:
            ctl.close_result()
    if plain and ctl is not None:
        ctl.on_result(0, [0] * len(batch.reqs), "off")
    return ret
