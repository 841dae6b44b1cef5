"""The fast "off" path and lossless re-entry, inside EAGLEWorkerV2 (SGLang 0.5.16).

Why (profiled on the H200, N = 128, synthetic 8B pair, see benchmarks/results/): SGLang's
0-step state runs the target as a TARGET_VERIFY forward over one token per request. With
the Triton attention backend that goes through the *extend* attention kernel
(`_fwd_kernel`), 78% of the GPU time of such a step, 27 ms vs 8 ms for a plain decode step;
draft-extend adds another extend-kernel pass. So:

off step    SGLang's 0-step bookkeeping (trivial one-node verify, sampling, result/future
            plumbing: unchanged, so greedy and sampling semantics are SGLang's), but the
            target forward runs as an ordinary DECODE through its own decode CUDA graph
            (decode attention kernel), and draft-extend is skipped (SGLang's
            SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND stubs).
catch-up    the first step after off steps whose decision is "draft": one step of SGLang's
            own 0-step path *with* draft-extend, which writes the draft KV of the newest
            position and fresh draft logits/hidden state. The next step drafts from a warm
            state, so its acceptance is steady-state acceptance (drafts from the stubbed
            state would all be rejected). Draft KV of the older off positions is not
            rewritten, unless the full catch-up (catchup.py, `--adaptive-spec-catchup`) ran
            first: then this step drafts at once instead (mode "reentry").
on step     SGLang's step with k draft steps, untouched.

`--adaptive-spec-off-path decode-lean` (the default since session 7; lossless on the GPU in
sessions 5-7, flapping every step included): an off step also hides the spec state's verify
graph runner from SGLang's verify preparation, which then skips planning a graph the step never
replays (the decode graph plans its own). The MoE
probe of session 4 showed our off step running plain's GPU work in twice plain's host time at
one request; this removes one of the host costs that plain does not pay.

`--adaptive-spec-off-path direct` (experimental; lossless on the GPU in session 6, no faster than
`decode` under continuous arrivals, so the gap there is outside the off step): an off step does not enter
SGLang's verify step at all (session 5's profile: `run_eagle_verify` took 5.6 ms of a 6.7-ms
off step at one MoE request, the target forward 2.4 of it). It decodes the last step's bonus
token as the plain server does (the target worker's own forward and sampler, through the
decode graph), and hands the scheduler the 1-token spec-v2 result SGLang's 0-step step would
have: accept length 1, the sampled token as the next bonus token, the draft stubs. The
scheduler snapshots every batch field around a spec-v2 forward and restores them afterwards
(`Scheduler._forward_isolation`), so the step may rewrite the batch for the decode forward.
Batches with grammar, logprobs or hidden-state requests take the `decode` path; every off step
after a direct step fails takes the default `decode-lean` (logged once, visible as `off_path` in
the status).

Mixed batches need nothing special: every request in the batch gets the same treatment,
requests admitted while off were prefilled with draft-extend as usual.

Also here (session 8): off and catch-up steps hand SGLang int64 bonus tokens (its 0-step verify
needs them; without the overlap scheduler they were int32); `--adaptive-spec-off-barrier fast`
hands the scheduler the target decode graph's read-done event (`_read_done_to_scheduler`); a
failure inside SGLang's step during our off or catch-up step re-runs the step on SGLang's own
path (`_rerun_as_sglang`); SGLang's record of each runtime-state switch is kept bounded
(`bound_switch_records`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os

import torch

from . import catchup, hooks_plain
from .state import get_controller

logger = logging.getLogger("adaptive_spec")

SKIP_ENV = "SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND"
DECODE_PATHS = ("decode", "decode-lean", "direct", "plain")  # off paths that run the target's decode graph
LEAN_PATHS = ("decode-lean", "plain")  # plain: a batch the plain regime does not serve runs lean
DRAFTING = ("on", "reentry")  # step modes that draft (reentry: the first after a full catch-up)
_decode_forward_active = False  # set for the duration of one off step's target forward
_decode_forward_graph = None  # whether that forward replayed a CUDA graph (decode-lean)


class _NoVerifyGraph:
    """Stands in for the verify graph runner during a decode-lean off step: SGLang's
    `eagle_prepare_for_verify` asks it, gets "no graph", and plans nothing."""

    bs = None

    def can_run_graph(self, forward_batch):
        return False


_NO_VERIFY_GRAPH = _NoVerifyGraph()


class DecodePath:
    """A target attention backend + DECODE-mode CUDA graph runner, built once at start."""

    def __init__(self, worker):
        from sglang.srt.model_executor.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        mr = worker._target_worker.model_runner
        self.model_runner = mr
        backup_init = mr.init_new_workspace
        try:
            self.attn_backend = mr._get_attention_backend(init_new_workspace=True)
        finally:
            mr.init_new_workspace = backup_init
        self.graph_runner = None
        if mr.decode_cuda_graph_runner is not None:
            # The graph runner picks TARGET_VERIFY whenever the runner is speculative;
            # capture the target as the plain server would, then restore.
            saved = mr.spec_algorithm
            mr.spec_algorithm = SpeculativeAlgorithm.NONE
            try:
                self.graph_runner = DecodeCudaGraphRunner(mr, attn_backend=self.attn_backend)
            finally:
                mr.spec_algorithm = saved

    @contextlib.contextmanager
    def installed(self):
        mr = self.model_runner
        saved = (mr.attn_backend, mr.decode_cuda_graph_runner)
        mr.attn_backend, mr.decode_cuda_graph_runner = self.attn_backend, self.graph_runner
        try:
            yield
        finally:
            mr.attn_backend, mr.decode_cuda_graph_runner = saved


def after_init_cuda_graphs(ret, worker, *args, **kwargs):
    """AFTER hook on EAGLEWorkerV2.init_cuda_graphs: build the decode path once."""
    ctl = get_controller()
    if ctl is None or ctl.cfg.off_path not in DECODE_PATHS or getattr(worker, "adaptive_controller", None) is None:
        return None
    try:
        worker._as_decode_path = DecodePath(worker)
        worker._as_draft_stale = False
        logger.info(
            "adaptive_spec: decode off-path ready (CUDA graphs: %s)",
            worker._as_decode_path.graph_runner is not None,
        )
        if ctl.cfg.catchup != "newest":
            why = catchup.ineligible(worker.server_args)
            logger.log(logging.WARNING if why else logging.INFO, "adaptive_spec: full catch-up %s",
                       f"unavailable here ({why}): re-entries catch up the newest position" if why else
                       f"ready (at most {catchup.token_cap(worker.server_args)} tokens per re-entry)")
    except Exception as exc:
        worker._as_decode_path = None
        logger.error("adaptive_spec: decode off-path unavailable (%r); using SGLang's 0-step path", exc)
    return None


def around_forward_batch_generation(orig, worker, batch, *args, **kwargs):
    """AROUND hook on EAGLEWorkerV2.forward_batch_generation: off / catch-up / on per step."""
    path = getattr(worker, "_as_decode_path", None)
    ctl = get_controller()
    bound_switch_records(getattr(worker, "server_args", None))
    if ctl is not None and batch.forward_mode.is_extend():
        # the next decode results' wall times include this prefill (and its new requests)
        ctl.on_extend(len(getattr(batch, "reqs", None) or ()))
    if getattr(batch, hooks_plain.PLAIN_MARK, False) and batch.spec_algorithm.is_none():
        if batch.forward_mode.is_extend():
            return plain_prefill_step(worker, batch, ctl)
        return plain_step(worker, batch, path, ctl)
    if batch.forward_mode.is_extend():  # SGLang's prefill writes the draft KV of its tokens
        catchup.clear_stale(getattr(batch, "reqs", None) or ())
        if ctl is not None:  # beside prefill-plain: how many prefills still ran the draft
            ctl.note_mode("prefill-spec")
    if path is None or ctl is None or ctl.cfg.off_path not in DECODE_PATHS or batch.forward_mode.is_extend() or batch.is_extend_in_batch or batch.forward_mode.is_idle():
        return orig(worker, batch, *args, **kwargs)
    try:
        steps = hooks_plain.planned_steps(batch)
        if steps is None:
            steps = ctl.decide(batch.seq_lens.shape[0]).steps
        mode = "off" if steps == 0 else ("catchup" if worker._as_draft_stale else "on")
        from_plain = getattr(batch, catchup.FROM_PLAIN, False)
        setattr(batch, catchup.FROM_PLAIN, False)
        if mode == "catchup" and catchup.at_reentry(worker, batch, ctl, from_plain):
            mode = "reentry"  # the draft KV is whole again: this step drafts (SGLang's own step)
        ctl.note_mode(mode)
        _note_staleness(ctl, mode, batch)
        worker.adaptive_controller._activate(steps if mode in DRAFTING else 0)
        if mode not in DRAFTING:
            _bonus_tokens_as_int64(batch)
    except Exception as exc:
        ctl.fail(f"off-path decision: {exc!r}")
        return orig(worker, batch, *args, **kwargs)

    fast_barrier = mode == "off" and ctl.cfg.off_barrier == "fast"
    if mode == "off" and ctl.cfg.off_path == "direct" and direct_eligible(batch):
        on_publish = kwargs.get("on_publish", args[0] if args else None)
        try:
            with _read_done_to_scheduler(worker, fast_barrier):
                result = direct_off_step(worker, batch, path, on_publish)
        except Exception as exc:
            # experimental path: the default off path takes over (this step included: the
            # batch is as it was), the policy keeps deciding
            logger.error("adaptive_spec: direct off step failed (%r); off path is now decode-lean", exc)
            ctl.cfg = dataclasses.replace(ctl.cfg, off_path="decode-lean")
        else:
            worker._as_draft_stale = True
            result.adaptive_spec_mode = mode
            return result

    global _decode_forward_active, _decode_forward_graph
    worker.activate_step_by_batch = _already_decided  # SGLang's own call inside orig: no-op
    env_before = os.environ.get(SKIP_ENV)
    lean = mode == "off" and ctl.cfg.off_path in LEAN_PATHS
    mr = worker._target_worker.model_runner if lean else None
    verify_graph = mr.decode_cuda_graph_runner if lean else None
    ours = mode not in DRAFTING  # a step SGLang runs the way we set it up (drafting steps are SGLang's own)
    saved = batch.__dict__.copy() if ours else None
    published = []
    failure = None
    try:
        if mode == "off":
            os.environ[SKIP_ENV] = "1"
            _decode_forward_active = True
            _decode_forward_graph = None
        else:
            os.environ.pop(SKIP_ENV, None)
        if lean:
            mr.decode_cuda_graph_runner = _NO_VERIFY_GRAPH
        call_args, call_kwargs = _watch_publish(args, kwargs, published) if ours else (args, kwargs)
        with _read_done_to_scheduler(worker, fast_barrier):
            result = orig(worker, batch, *call_args, **call_kwargs)
    except Exception as exc:
        if not ours or published or ctl.reducer is not None:
            # SGLang's own step; or the scheduler already has this step's lengths; or tensor
            # parallel, where this rank alone falling back would leave the ranks running
            # different steps (a hang instead of an error)
            raise
        failure = exc
    finally:
        _decode_forward_active = False
        if lean:
            mr.decode_cuda_graph_runner = verify_graph
        del worker.activate_step_by_batch
        if env_before is None:
            os.environ.pop(SKIP_ENV, None)
        else:
            os.environ[SKIP_ENV] = env_before
    if failure is not None:
        return _rerun_as_sglang(orig, worker, batch, saved, ctl, mode, failure, args, kwargs)
    if lean and _decode_forward_graph is not None:
        # SGLang reports the (skipped) verify plan; the step did replay the decode graph
        result.can_run_cuda_graph = _decode_forward_graph
    worker._as_draft_stale = mode == "off"
    result.adaptive_spec_mode = mode  # read back when this result is processed (one step later)
    return result


def _note_staleness(ctl, mode: str, batch) -> None:
    """Feed the stale-draft ledger (a diagnostic: a failure here is logged, never a fallback)."""
    try:
        ledger = ctl.staleness
        if mode == "off":
            ledger.on_off_step()
        elif mode == "on":
            ledger.on_drafting_step(req.rid for req in batch.reqs)
        else:  # catch-up or reentry: the status keeps the last re-entries (no log line: flapping makes many)
            ledger.on_reentry((req.rid, len(req.output_ids)) for req in batch.reqs)
    except Exception as exc:
        logger.debug("adaptive_spec: staleness ledger: %r", exc)


@contextlib.contextmanager
def _read_done_to_scheduler(worker, enabled: bool):
    """`--adaptive-spec-off-barrier fast`: hand the scheduler the event the target's decode
    graph records once it has read the shared KV pool (decode_cuda_graph_runner.py, 0.5.16).

    Why: after each launch SGLang's scheduler orders its next GPU work behind the forward's
    reads of the shared pool (scheduler.py `_apply_war_barrier`). It looks for the read-done
    event on `worker.war_fastpath_runner`, the draft runner, whose draft-extend records it; an
    off step runs no draft-extend, so the scheduler falls back to waiting for the whole forward,
    where a plain server waits only for its decode graph's event. An off step's GPU work after
    the target's decode graph reads no shared-pool state (sampling, the 1-token result, the
    zeroed draft stubs), so that event covers the step. The target runner's event is cleared
    first: a step that ran no decode graph (eager) leaves the coarse wait, never an old event."""
    runner = getattr(worker, "war_fastpath_runner", None)
    target = worker._target_worker.model_runner
    if not enabled or runner is None or not hasattr(target, "war_fastpath_read_done_event"):
        yield
        return
    target.war_fastpath_read_done_event = None
    yield
    event, target.war_fastpath_read_done_event = target.war_fastpath_read_done_event, None
    if event is not None:
        runner.war_fastpath_read_done_event = event


# SGLang's source name for the server_args update of each runtime-state switch (0.5.16:
# EAGLEWorkerV2.apply_runtime_state -> ServerArgs.override)
SWITCH_SOURCE = "adaptive_spec.restore"
MAX_SWITCH_RECORDS = 64


def bound_switch_records(server_args) -> None:
    """SGLang records every runtime-state switch in server_args (`override`, appended to
    `_runtime_mutations` or `_resolved_overrides`): one entry per switch, kept for ever, so a
    policy switching a few times a second grows it without bound (found reading 0.5.16 in
    session 8). Each entry sets the same two fields; only the latest matters. Past
    MAX_SWITCH_RECORDS entries the older switch records are dropped (O(1) per step until then)."""
    try:
        for name in ("_runtime_mutations", "_resolved_overrides"):
            records = getattr(server_args, name, None)
            if records is None or len(records) <= MAX_SWITCH_RECORDS or _trimmed_to.get(id(records)) == len(records):
                continue
            last = max((i for i, rec in enumerate(records) if rec[0] == SWITCH_SOURCE), default=None)
            records[:] = [rec for i, rec in enumerate(records) if rec[0] != SWITCH_SOURCE or i == last]
            _trimmed_to[id(records)] = len(records)  # others' records alone: not rescanned each step
    except Exception as exc:  # housekeeping: never in the way of a step
        logger.debug("adaptive_spec: switch records: %r", exc)


_trimmed_to: dict = {}


def _watch_publish(args, kwargs, published: list):
    """SGLang's `on_publish` callback (new lengths to the scheduler), wrapped to note that it ran."""
    def watched(callback):
        def on_publish(*a, **k):
            published.append(True)
            return callback(*a, **k)
        return on_publish

    if kwargs.get("on_publish") is not None:
        return args, dict(kwargs, on_publish=watched(kwargs["on_publish"]))
    if args and args[0] is not None:
        return (watched(args[0]),) + tuple(args[1:]), kwargs
    return args, kwargs


def _rerun_as_sglang(orig, worker, batch, saved: dict, ctl, mode: str, exc, args, kwargs):
    """SGLang's step failed while running our off or catch-up step, before the scheduler heard
    of its lengths (the first run without the overlap scheduler died this way, session 8). Undo
    the step's batch edits, stop using our off path, fall back (logged once, in the status) and
    run the step again as SGLang runs it, with the fallback's step count. Lossless by our
    reading (not exercised on a GPU): the failed attempt can only have written target KV slots
    that the re-run writes again with the same tokens at the same positions. A second failure
    is SGLang's own and propagates."""
    batch.__dict__.clear()
    batch.__dict__.update(saved)
    worker._as_decode_path = None
    if hooks_plain.active():  # a plain step runs on the decode path too
        hooks_plain.turn_off(ctl, "has no decode path any more")
    ctl.fail(f"{mode} step inside SGLang's forward: {exc!r}")
    logger.error("adaptive_spec: our %s step failed inside SGLang (%r); SGLang's own path re-runs it "
                 "and every later step", mode, exc, exc_info=exc)
    return orig(worker, batch, *args, **kwargs)


def _bonus_tokens_as_int64(batch) -> None:
    """SGLang's 0-step verify takes the last bonus tokens as its int64 `candidates`. Under the
    overlap scheduler they come from its int64 future buffers; with --disable-overlap-schedule
    they are the sampler's int32 and the first off step crashed the scheduler (H200, session 8).
    A cast on the GPU stream: no host sync."""
    spec = getattr(batch, "spec_info", None)
    tokens = getattr(spec, "bonus_tokens", None)
    if tokens is not None and tokens.dtype != torch.int64:
        spec.bonus_tokens = tokens.to(torch.int64)


def _already_decided(batch_size):
    return None


# the batch fields a direct off step rewrites for its decode forward (restored by SGLang after
# the forward; by us when the step fails before that)
_DIRECT_FIELDS = ("input_ids", "out_cache_loc", "forward_mode", "seq_lens", "seq_lens_cpu",
                  "seq_lens_sum", "spec_info")


def _count_the_decoded_token(b) -> None:
    """Spec-v2 to DECODE lengths on a ForwardBatch or ScheduleBatch: DECODE counts the token
    being decoded in seq_lens (same position, same KV slot)."""
    n = b.seq_lens.shape[0]
    b.seq_lens = b.seq_lens + 1
    if b.seq_lens_cpu is not None:
        b.seq_lens_cpu = b.seq_lens_cpu + 1
    if b.seq_lens_sum is not None:
        b.seq_lens_sum = b.seq_lens_sum + n


def direct_eligible(batch) -> bool:
    """What a direct off step serves: a decode batch whose requests need nothing SGLang's
    verify step adds to a plain decode (grammar masks, spec-v2 logprobs, hidden states), with
    the last step's bonus tokens at hand."""
    return getattr(batch.spec_info, "bonus_tokens", None) is not None and hooks_plain.batch_eligible(batch)


def direct_off_step(worker, batch, path, on_publish):
    """One off step as the plain server decodes, returned as SGLang's 0-step spec-v2 result.

    Spec-v2 convention: batch.seq_lens is the committed length, the last step's bonus token
    sits at that position, and SGLang reserved its KV slot (req_to_token at seq_lens) when it
    prepared the batch. A DECODE forward counts the token being decoded in seq_lens."""
    import torch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode
    from sglang.srt.speculative.eagle_info import EagleDraftInput

    committed = batch.seq_lens
    bs = committed.shape[0]
    saved = {name: getattr(batch, name) for name in _DIRECT_FIELDS}
    try:
        batch.input_ids = batch.spec_info.bonus_tokens
        batch.out_cache_loc = worker.req_to_token_pool.req_to_token[batch.req_pool_indices, committed].to(torch.int64)
        batch.forward_mode = ForwardMode.DECODE
        _count_the_decoded_token(batch)
        batch.spec_info = None
        with path.installed():
            out = worker.target_worker.forward_batch_generation(batch, capture_hidden_mode=CaptureHiddenMode.NULL)
    except Exception:
        for name, value in saved.items():
            setattr(batch, name, value)
        raise
    predict = out.next_token_ids.to(torch.int32)
    result = GenerationBatchResult(
        logits_output=out.logits_output,
        next_token_ids=predict,
        can_run_cuda_graph=out.can_run_cuda_graph,
        speculative_num_draft_tokens=1,
        next_draft_input=EagleDraftInput(bonus_tokens=predict),
        accept_lens=torch.ones(bs, dtype=torch.int32, device=predict.device),
        new_seq_lens=batch.seq_lens,
        routed_experts_output=out.routed_experts_output,
        indexer_topk_output=out.indexer_topk_output,
        # this step's own tensors, used on the forward stream: kept as SGLang keeps its verify batch
        extra_keep_alive_refs=[batch.out_cache_loc, batch.seq_lens],
    )
    if on_publish is not None:
        on_publish(result.new_seq_lens)
    worker._stub_skipped_draft_extend(batch, result)  # shape-valid draft state for the future map
    return result


def plain_step(worker, batch, path, ctl):
    """An off step of the plain regime (hooks_plain): the scheduler prepared the batch as the
    plain server prepares a decode batch; the target decodes it as the plain server does (its
    decode graph and sampler), and the scheduler takes the result as a plain result."""
    ctl.note_mode("off")
    _note_staleness(ctl, "off", batch)
    capture_nothing = hooks_plain.sglang_names().capture_nothing
    with _read_done_to_scheduler(worker, True), path.installed():  # the plain server's barrier too
        result = worker.target_worker.forward_batch_generation(batch, capture_hidden_mode=capture_nothing)
    worker._as_draft_stale = True
    hooks_plain.publish_next_as_length(batch)
    result.adaptive_spec_mode = "off"
    return result


def plain_prefill_step(worker, batch, ctl):
    """A prefill while drafting is off, as the plain server runs it (`--adaptive-spec-off-prefill
    plain`, hooks_plain.after_prepare_for_extend): the target alone (through its prefill CUDA
    graph where it has one: prefill_graph_capture_mode), no draft prefill. Its requests have no
    draft state in the future map and no draft KV for the prompt, so the next drafting step is a
    catch-up step (it writes the newest position's draft KV and a fresh draft state); their
    earlier positions stay unwritten (lossless: only acceptance can suffer). The status counts these prefills (`step_modes["prefill-plain"]`)."""
    if ctl is not None:
        ctl.note_mode("prefill-plain")
    capture = prefill_graph_capture_mode(worker, hooks_plain.sglang_names().capture_nothing)
    result = worker.target_worker.forward_batch_generation(batch, capture_hidden_mode=capture)
    worker._as_draft_stale = True
    hooks_plain.publish_next_as_length(batch)  # the spec map keeps the KV length (the prompt's)
    return result


def prefill_graph_capture_mode(worker, default):
    """The hidden-state capture the target's prefill CUDA graph was captured with, else `default`
    (no hidden states). SGLang 0.5.16 replays a prefill graph only for a batch asking for the
    capture it was captured with (prefill_cuda_graph_runner.can_run_graph), FULL on an EAGLE
    server's target, so a plain prefill asking for none runs eager. GPU, session 33, breakable
    prefill graphs at 128 requests: 450 of forced off's 451 plain prefills ran eager against 779
    of plain's 784 graphed, and forced off made 0.60-0.71x of plain. In the graph the hidden
    states cost no host time; nothing reads them (the draft's prefill is skipped)."""
    target = getattr(worker, "target_worker", None)
    runner = getattr(getattr(target, "model_runner", None), "prefill_cuda_graph_runner", None)
    mode = getattr(runner, "capture_hidden_mode", None)
    return default if mode is None else mode


def around_target_forward(orig, tp_worker, batch=None, forward_batch=None, *args, **kwargs):
    """AROUND hook on TpModelWorker.forward_batch_generation: an off step's one-token
    TARGET_VERIFY forward runs as an ordinary DECODE forward through the decode graph."""
    if not _decode_forward_active or forward_batch is None or not kwargs.get("is_verify", False):
        return orig(tp_worker, batch, forward_batch, *args, **kwargs)
    spec_info = forward_batch.spec_info
    if getattr(spec_info, "draft_token_num", None) != 1 or not forward_batch.forward_mode.is_target_verify():
        return orig(tp_worker, batch, forward_batch, *args, **kwargs)
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode

    worker = _current_spec_worker(tp_worker)
    path = getattr(worker, "_as_decode_path", None) if worker is not None else None
    if path is None:
        return orig(tp_worker, batch, forward_batch, *args, **kwargs)
    # TARGET_VERIFY: seq_lens = committed KV, the token is appended at position seq_lens.
    forward_batch.forward_mode = ForwardMode.DECODE
    forward_batch.spec_info = None
    forward_batch.capture_hidden_mode = CaptureHiddenMode.NULL
    _count_the_decoded_token(forward_batch)
    forward_batch.forward_metadata_ready = False  # planned for the verify graph; re-plan
    global _decode_forward_graph
    with path.installed():
        out = orig(tp_worker, batch, forward_batch, *args, **kwargs)
    _decode_forward_graph = getattr(out, "can_run_cuda_graph", None)
    return out


_spec_workers = []


def register_spec_worker(worker) -> None:
    """Remember the spec worker so the target-forward hook can find its decode path."""
    _spec_workers.append(worker)


def _current_spec_worker(tp_worker):
    for w in _spec_workers:
        if getattr(w, "_target_worker", None) is tp_worker:
            return w
    return None
