"""`--adaptive-spec-catchup {auto,full}` (session 15; auto is the default): at re-entry, the
draft KV of every position decoded while drafting was off (and of prompts prefilled plain,
`--adaptive-spec-off-prefill plain`) is rewritten before drafting resumes (SGLang 0.5.16,
plain off path). `auto` does it when the batch's requests have AUTO_MIN_MEAN_STALE stale
positions or more on average, else leaves the re-entry to SGLang's catch-up step.

Why: an off step writes no draft KV, and SGLang's catch-up step (0 steps with draft-extend)
rewrites only the newest position. The draft then attends over stale KV: on the always-right
synthetic pair it accepted 3.85-3.90 per round after re-entry vs 4.00 steady (H200, session 14,
NOTES-reentry-catchup.md "G0"), and a prompt prefilled plain has no draft KV at all.

How (the design and its reading of SGLang: NOTES-reentry-catchup.md): at the re-entry step,
before SGLang's step runs, two eager forwards shaped as SGLang's own prefill of a chunk with a
prefix:
1. the target over each request's stale positions [s, T), its hidden states kept (FULL), its
   K/V written to slot 0 (the allocator never hands it out; SGLang's graph padding writes there
   too), so the real target KV, and with it every output, stays the plain server's. The extend
   attention reads the prefix from the pool and the new tokens from its own K/V, so the scratch
   slot is never read back (Triton and torch-native backends; not in deterministic mode);
2. the draft's prefill (`_draft_extend_for_prefill`) over the same positions, fed those hidden
   states and each position's next token (the last one is the bonus token at T, on the GPU), its
   K/V written at the requests' own slots.
The draft's last row per request is position T - 1 fed the bonus token at T: the draft state a
prefill of length T leaves. Installed in the batch's draft input, it lets the re-entry step draft
at once (mode "reentry"), in place of SGLang's catch-up step (a 0-step verify, one token).

Host bookkeeping, no sync: after plain steps a request's committed length is exact on the host
(plain counts its token at preparation), its tokens up to T - 1 are in `output_ids` (the
overlap scheduler has processed every result but the last step's), and `_as_stale_from` marks
where its stale run starts (set at its first plain step or its plain prefill, cleared by a spec
prefill and at re-entry). So the full catch-up runs only for a batch whose last step was plain
(`FROM_PLAIN`); a request with nothing stale recomputes its newest position (harmless: the same
inputs) so that the forwards cover the whole batch in its order. At most `token_cap` positions
in all: past that, the newest positions of each request.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

from . import kernel_builds

logger = logging.getLogger("adaptive_spec")

STALE_FROM = "_as_stale_from"  # on a Req: the first position whose draft KV is stale (None: none)
FROM_PLAIN = "_as_from_plain"  # on a ScheduleBatch: its last decode step ran plain
DEFAULT_TOKEN_CAP = 8192  # when the server sets no chunked prefill size
# Debug runs: compare the host's lengths with the GPU's before each full catch-up (one host sync
# per re-entry); a mismatch skips it ("length mismatch") and is logged.
CHECK_ENV = "ADAPTIVE_SPEC_CATCHUP_CHECK"
# `auto`: a full catch-up costs about one eager prefill's host time whatever its size (H200,
# session 15, always-right pair: flapping every 8 steps, 8 stale positions per request, full made
# 0.90x / 0.97x / 0.97x of SGLang's catch-up at 1 / 16 / 64 requests although every round after
# re-entry then accepted 4.00 instead of 3.83-3.91), and what it restores grows with the stale
# positions (flapping every 64 steps with plain prefills while off: 1.02x / 1.03x / 1.01x, and
# 3.94-3.99 per round after re-entry instead of 3.48-3.62). Between the two measured points.
AUTO_MIN_MEAN_STALE = 32
# A full catch-up whose host time passes this is logged with its size, its target / draft split
# and the Triton kernels built meanwhile (`kernel_builds.py`). GPU, session 27 (MoE layout, empty
# kernel caches, one request): four runs of 62-214
# tokens took 0.75-1.43 s, all in the target's forward, while Triton built fused-MoE kernels for
# each new token count: the ~2-s re-entry stalls of sessions 16 and 26. The extend warm-up
# (`extend_warmup.py`, on by default since) builds them at start: 35-42 ms per run after it.
SLOW_CATCHUP_S = 0.25


def mark_stale(req, position: int) -> None:
    """The request's draft KV is stale from `position` on (kept if an earlier run is open)."""
    if getattr(req, STALE_FROM, None) is None:
        setattr(req, STALE_FROM, position)


def clear_stale(reqs) -> None:
    for req in reqs:
        setattr(req, STALE_FROM, None)


def stale_positions(reqs) -> int:
    """The positions a full catch-up would rewrite, before any cap."""
    total = 0
    for req in reqs:
        start = getattr(req, STALE_FROM, None)
        if start is not None:
            total += max(0, req.kv_committed_len - start)
    return total


class LengthMismatch(RuntimeError):
    """CHECK_ENV: the host's committed lengths are not the GPU's (the plan would be wrong)."""


@dataclass
class Plan:
    prefix_lens: List[int]  # s per request: the positions before it keep their draft KV
    extend_lens: List[int]  # T - s per request
    seq_lens: List[int]  # T per request: the committed length (the bonus token sits at T)
    tokens: List[int]  # the tokens at positions [s, T), request after request
    stale_positions: int  # positions that were stale and are rewritten (the rest: newest ones)


def _tokens(req, start: int, end: int) -> Optional[List[int]]:
    """The request's tokens at positions [start, end): prompt, then output (None: not all known)."""
    prompt = req.origin_input_ids
    n = len(prompt)
    out = prompt[start:end] if start < n else []
    if end > n:
        out = list(out) + list(req.output_ids[max(0, start - n):end - n])
    return list(out) if len(out) == end - start else None


def make_plan(reqs: Sequence, token_cap: int) -> Optional[Plan]:
    """The stale positions of every request, capped; None when a request's tokens or length do
    not add up (a bookkeeping gap: the step runs SGLang's catch-up alone)."""
    if not reqs:
        return None
    share = max(1, token_cap // len(reqs))
    starts, ends, stale = [], [], 0
    for req in reqs:
        end = req.kv_committed_len
        if end < 1:
            return None
        start = getattr(req, STALE_FROM, None)
        start = end - 1 if start is None or start >= end else max(0, start)
        start = max(start, end - share)  # over the cap: the newest positions
        if getattr(req, STALE_FROM, None) is not None:
            stale += end - start
        starts.append(start)
        ends.append(end)
    tokens: List[int] = []
    for req, s, e in zip(reqs, starts, ends):
        part = _tokens(req, s, e)
        if part is None:
            return None
        tokens += part
    return Plan(prefix_lens=starts, extend_lens=[e - s for s, e in zip(starts, ends)], seq_lens=ends,
                tokens=tokens, stale_positions=stale)


def extend_view(batch, plan: Plan):
    """A shallow copy of the decode batch prepared as SGLang prepares a prefill chunk with a
    prefix (ScheduleBatch.prepare_for_extend, 0.5.16): the batch itself is left as it was."""
    import copy

    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    device = batch.seq_lens.device
    view = copy.copy(batch)
    view.forward_mode = ForwardMode.EXTEND
    view.prefix_lens = list(plan.prefix_lens)
    view.extend_lens = list(plan.extend_lens)
    view.extend_num_tokens = len(plan.tokens)
    view.extend_logprob_start_lens = list(plan.extend_lens)
    view.seq_lens_cpu = torch.tensor(plan.seq_lens, dtype=torch.int64)
    view.seq_lens = view.seq_lens_cpu.to(device, non_blocking=True)
    view.orig_seq_lens = view.seq_lens_cpu.to(torch.int32).to(device, non_blocking=True)
    view.seq_lens_sum = sum(plan.seq_lens)
    view.input_ids = torch.tensor(plan.tokens, dtype=torch.int64).to(device, non_blocking=True)
    view.out_cache_loc = torch.zeros(len(plan.tokens), dtype=torch.int64, device=device)  # scratch: slot 0
    view.spec_info = None
    view.return_logprob = False
    view.return_hidden_states = False
    view.extend_input_logprob_token_ids = None
    view.input_embeds = view.replace_embeds = view.replace_positions = None
    view.multimodal_inputs = [None] * len(batch.reqs)
    view.chunked_req = None
    view.chunked_req_next_prompt_token = None
    view.is_extend_in_batch = True
    view.is_prefill_only = False
    return view


def draft_slots(req_to_token, pool_rows: Sequence[int], plan: Plan):
    """The KV slots of the positions [s, T) of each request: where its draft KV lives."""
    import torch

    rows, cols = [], []
    for row, s, n in zip(pool_rows, plan.prefix_lens, plan.extend_lens):
        rows += [row] * n
        cols += range(s, s + n)
    device = req_to_token.device
    rows_t = torch.tensor(rows, dtype=torch.int64).to(device, non_blocking=True)
    cols_t = torch.tensor(cols, dtype=torch.int64).to(device, non_blocking=True)
    return req_to_token[rows_t, cols_t].to(torch.int64)


def token_cap(server_args) -> int:
    """At most one chunked prefill's worth of tokens: what SGLang sizes a forward's activations for."""
    chunk = getattr(server_args, "chunked_prefill_size", None)
    return chunk if isinstance(chunk, int) and chunk > 0 else DEFAULT_TOKEN_CAP


def ineligible(server_args) -> Optional[str]:
    """Why the full catch-up cannot run on this server (None: it can)."""
    checks = (
        (getattr(server_args, "attention_backend", None) not in ("triton", "torch_native"),
         "an attention backend other than triton or torch_native"),
        (getattr(server_args, "enable_deterministic_inference", False), "deterministic inference"),
        ((getattr(server_args, "page_size", 1) or 1) != 1, "page size > 1"),
        (getattr(server_args, "enable_hierarchical_cache", False), "hierarchical cache"),
        (getattr(server_args, "enable_return_routed_experts", False), "routed-experts capture"),
    )
    return next((why for failed, why in checks if failed), None)


def run_full_catchup(worker, batch, clock: Optional[dict] = None) -> Optional[Plan]:
    """The two forwards, on the forward stream (stream order is all the ordering needed), then
    the draft state they leave installed in the batch's draft input. Returns the plan that ran
    (None: nothing ran). `clock`, when given, gets the host seconds of each part (`target`,
    `draft`: launches only, no sync), so a slow run says which forward held the host."""
    from sglang.srt.layers.moe.utils import speculative_moe_a2a_backend_context, speculative_moe_backend_context
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode

    plan = make_plan(batch.reqs, token_cap(worker.server_args))
    if plan is None:
        return None
    if os.environ.get(CHECK_ENV) == "1" and batch.seq_lens.tolist() != plan.seq_lens:
        raise LengthMismatch(f"host {plan.seq_lens[:8]} vs GPU {batch.seq_lens.tolist()[:8]}")
    view = extend_view(batch, plan)
    started = time.perf_counter()
    target = worker.target_worker.forward_batch_generation(
        view, is_verify=True, capture_hidden_mode=CaptureHiddenMode.FULL)  # is_verify: no sampling
    target_done = time.perf_counter()
    view.out_cache_loc = draft_slots(worker.req_to_token_pool.req_to_token,
                                     [req.req_pool_idx for req in batch.reqs], plan)
    draft = worker.draft_worker
    with contextlib.ExitStack() as stack:
        stack.enter_context(draft.draft_tp_context(draft.draft_runner.tp_group))
        stack.enter_context(speculative_moe_backend_context())
        stack.enter_context(speculative_moe_a2a_backend_context())
        # the last input of each request is the bonus token at T (the rotation's tail)
        fresh = draft._draft_extend_for_prefill(view, target.logits_output.hidden_states, batch.spec_info.bonus_tokens)
    install_draft_state(batch.spec_info, fresh)
    if clock is not None:
        clock["target"], clock["draft"] = target_done - started, time.perf_counter() - target_done
    return plan


def install_draft_state(spec_info, fresh) -> None:
    """Every request's last row is position T - 1 fed the bonus token at T: the draft state a
    prefill of length T leaves (the draft's guess for T + 1 and its hidden state), what the
    step at T drafts from. The future map's stale rows (a plain step stores no draft state) are
    replaced for this step; the step's own draft-extend stores fresh ones."""
    spec_info.topk_p = fresh.topk_p
    spec_info.topk_index = fresh.topk_index
    spec_info.hidden_states = fresh.hidden_states
    if fresh.draft_probs is not None:
        spec_info.draft_probs = fresh.draft_probs


def at_reentry(worker, batch, ctl, from_plain: bool) -> bool:
    """At a re-entry, the full catch-up when asked for (full, or auto and enough stale positions)
    and possible. True: it ran and the step drafts at once (the worker runs it as a drafting
    step, mode "reentry"); False: SGLang's catch-up step runs. Every outcome is counted in the status (`reentry.full_catchup`). A
    failure is logged and turns it off for the rest of the run: the draft KV is only advisory,
    the target's is untouched (under tensor parallelism a failure of our own bookkeeping is the
    same on every rank, so every rank turns it off alike). The batch's stale marks are cleared
    whatever happened."""
    ledger = ctl.staleness
    try:
        if ctl.cfg.catchup == "newest":
            return False
        why = _why_not(worker, batch, from_plain)
        if why is None and ctl.cfg.catchup == "auto" and \
                stale_positions(batch.reqs) < AUTO_MIN_MEAN_STALE * len(batch.reqs):
            why = "few stale positions"
        if why is not None:
            ledger.on_full_catchup_skipped(why)
            return False
        started, started_wall, clock = time.perf_counter(), time.time(), {}
        plan = run_full_catchup(worker, batch, clock)
        if plan is None:
            ledger.on_full_catchup_skipped("bookkeeping gap")
            return False
        host_s = time.perf_counter() - started  # launches only, no sync: a stall of the host
        ledger.on_full_catchup(plan.stale_positions, len(plan.tokens), host_s)
        if host_s > SLOW_CATCHUP_S:
            builds = kernel_builds.built_since(started_wall)
            builds = "no cache to read" if builds is None else builds
            logger.warning("adaptive_spec: full catch-up of %d tokens over %d requests took %.2f s "
                           "on the host (target forward %.2f s, draft forward %.2f s; Triton "
                           "kernels built meanwhile, any process: %s)", len(plan.tokens),
                           len(batch.reqs), host_s, clock.get("target", 0.0),
                           clock.get("draft", 0.0), builds)
        return True
    except LengthMismatch as exc:
        ledger.on_full_catchup_skipped("length mismatch")
        logger.error("adaptive_spec: full catch-up skipped, lengths differ: %s", exc)
        return False
    except Exception as exc:
        ctl.cfg = dataclasses.replace(ctl.cfg, catchup="newest")
        ledger.on_full_catchup_skipped("failed")
        logger.error("adaptive_spec: full catch-up failed (%r); re-entries catch up the newest position "
                     "only from now on", exc, exc_info=exc)
        return False
    finally:
        clear_stale(getattr(batch, "reqs", None) or ())


def _why_not(worker, batch, from_plain: bool) -> Optional[str]:
    if not from_plain:
        return "last step not plain"  # host lengths lag the GPU's after a spec or lean off step
    from . import hooks_plain  # here: hooks_plain imports this module

    if not hooks_plain.batch_eligible(batch):
        return "grammar, logprobs or hidden states"
    if any(getattr(req, "multimodal_inputs", None) is not None for req in batch.reqs):
        return "multimodal request"  # its prompt's embeddings are not its token ids
    return ineligible(worker.server_args)
