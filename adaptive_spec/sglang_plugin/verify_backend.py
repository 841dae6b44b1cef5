"""Chain-verify backend switch: SGLang's own verify path or our Triton chain kernels.

``install_verify_backend("triton")`` replaces SGLang 0.5.16's ``eagle_sample``
(``sglang.srt.speculative.eagle_utils``; also the copies bound by ``from ... import
eagle_sample`` in already-imported modules such as ``eagle_worker_common``) with a wrapper
that, for topk=1 chains on CUDA, runs the same logit preprocessing as SGLang (NaN sanitising,
penalties, logit bias, grammar mask) and then one fused kernel from the logits to
``(predict, accept_lens, accept_index)``:

- greedy batches: ``adaptive_spec.kernels.chain_verify_greedy`` (argmax + verify fused);
- sampling batches: ``adaptive_spec.kernels.chain_verify_sampling`` (temperature, top-k, top-p
  applied inside the kernel; target-only acceptance with SGLang's
  ``--speculative-accept-threshold-single/acc``, or classic rejection sampling with the
  draft proposal when ``--speculative-use-rejection-sampling`` is on).

Everything else falls through to SGLang's ``eagle_sample`` unchanged: trees (topk > 1), idle
batches, non-CUDA devices, ``SGLANG_SIMULATE_ACC_LEN``, and sampling with TP > 1 or DP
attention (where SGLang broadcasts the sampled result across ranks).
``install_verify_backend("triton-greedy")`` runs our greedy kernel only; sampling batches go to
SGLang's verify (kept from session 8, when our sampling kernel faulted on flat logits at 256
requests; the cause, a race on the stop flag, was fixed in session 9 and the fix held on the
H200 in session 10: 10 clean runs of the faulting case, and a greedy server on our kernels
served lossless). SGLang's verify stays the default: since session 25 (the direct launch,
kernels/launch.py) ours is never slower per call than SGLang's path at any point of the
kernel grid (greedy 1.73x per call and 2.02x by GPU time at 64 requests, k = 3; top-p 3.24x),
but a greedy server with it made SGLang's verify's throughput within noise (0.990x / 1.015x
at 1 / 64 requests, lossless): no end-to-end gain to show for a new default.
``install_verify_backend("sglang")`` restores SGLang's function.

Importable without a GPU: SGLang and the kernels are imported lazily.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Callable, Dict, Optional

logger = logging.getLogger("adaptive_spec")

BACKENDS = ("triton", "triton-greedy", "sglang")
_EAGLE_UTILS = "sglang.srt.speculative.eagle_utils"
_ALSO_PATCH = ("sglang.srt.speculative.eagle_worker_common",)

_lock = threading.Lock()
_original: Optional[Callable] = None
_backend = "sglang"
_patched: Dict[str, bool] = {}
_counts = {"triton_greedy": 0, "triton_sampling": 0, "fallback": 0}
# Tests flip this to exercise the wrapper on CPU tensors under TRITON_INTERPRET=1.
_allow_cpu = False


def install_verify_backend(backend: str) -> None:
    """Select the verify implementation for this process ("triton" or "sglang")."""
    global _original, _backend
    if backend not in BACKENDS:
        raise ValueError(f"unknown verify backend {backend!r} (choose from {', '.join(BACKENDS)})")
    import importlib

    eu = importlib.import_module(_EAGLE_UTILS)
    for name in _ALSO_PATCH:
        try:
            importlib.import_module(name)
        except Exception as exc:  # pragma: no cover - depends on the SGLang build
            logger.debug("adaptive_spec: could not import %s (%s)", name, exc)
    with _lock:
        if _original is None:
            # kept on SGLang's module so that a reload of this module still finds it
            _original = getattr(eu, "_adaptive_spec_original_eagle_sample", None) or eu.eagle_sample
            eu._adaptive_spec_original_eagle_sample = _original
        new = _original if backend == "sglang" else _triton_eagle_sample
        old_values = (_original, _triton_eagle_sample, eu.eagle_sample)
        _patched.clear()
        for mod_name, mod in list(sys.modules.items()):
            if mod is None or not mod_name.startswith("sglang"):
                continue
            fn = getattr(mod, "eagle_sample", None)
            if fn is not None and any(fn is v for v in old_values):
                setattr(mod, "eagle_sample", new)
                _patched[mod_name] = True
        _backend = backend
    logger.info("adaptive_spec: verify backend = %s (%s)", backend, ", ".join(sorted(_patched)))
    if backend != "sglang":
        # sessions 7-9 saw GPU faults from a race (fixed: kernels/chain_verify.py _uniform_read,
        # clean on the H200 in session 10); the kernels have fewer GPU hours than SGLang's
        logger.warning("adaptive_spec: the Triton verify kernels are experimental (correct and "
                       "lossless on the H200; sampling faster than SGLang's, greedy slower per "
                       "call at 16-64 requests); the default --adaptive-spec-verify-backend sglang "
                       "is SGLang's own verify")


def current_backend() -> str:
    return _backend


def describe() -> str:
    """One line for logs: the backend, the patched modules and how often each path ran."""
    mods = ", ".join(sorted(_patched)) or "nothing patched"
    if _backend == "sglang":
        return f"verify backend: sglang (SGLang's eagle_sample; {mods})"
    sampling = ("SGLang's" if _backend == "triton-greedy" else
                "fused temperature/top-k/top-p + target-only or rejection sampling")
    return (f"verify backend: {_backend} chain kernels for topk=1 (greedy: fused argmax+verify; "
            f"sampling: {sampling}); "
            f"trees and other cases fall through to SGLang; patched: {mods}; calls: "
            f"greedy={_counts['triton_greedy']} sampling={_counts['triton_sampling']} "
            f"fallback={_counts['fallback']}")


def _fallback(*args, **kwargs):
    _counts["fallback"] += 1
    return _original(*args, **kwargs)


def _triton_eagle_sample(verify_input, batch, logits_output, vocab_mask=None):
    import torch

    logits = getattr(logits_output, "next_token_logits", None)
    if (
        batch.forward_mode.is_idle()
        or logits is None
        or not (logits.is_cuda or _allow_cpu)
        or verify_input.tree_topk != 1
        or verify_input.draft_token_num != verify_input.max_tree_depth
        or logits.dtype not in (torch.float32, torch.float16, torch.bfloat16)
        or logits.dim() != 2
        or logits.stride(1) != 1
    ):
        return _fallback(verify_input, batch, logits_output, vocab_mask)

    from sglang.srt.speculative.spec_utils import SIMULATE_ACC_LEN

    if SIMULATE_ACC_LEN > 0:
        return _fallback(verify_input, batch, logits_output, vocab_mask)

    sampling_info = batch.sampling_info
    greedy = bool(sampling_info.is_all_greedy)
    if not greedy and (_backend == "triton-greedy" or _sampling_needs_broadcast()):
        return _fallback(verify_input, batch, logits_output, vocab_mask)

    from adaptive_spec.kernels import chain_verify_greedy, chain_verify_sampling

    _preprocess_logits(verify_input, batch, logits, vocab_mask)

    bs = len(batch.seq_lens)
    d = verify_input.draft_token_num
    device = logits.device
    candidates = verify_input.draft_token.reshape(bs, d)
    predict = torch.empty(bs * d, dtype=torch.int32, device=device)
    accept_index = torch.empty((bs, d), dtype=torch.int32, device=device)
    num_correct_drafts = torch.empty(bs, dtype=torch.int32, device=device)
    accept_lens = torch.empty(bs, dtype=torch.int32, device=device)

    if greedy:
        chain_verify_greedy(logits, candidates, predict, accept_index, num_correct_drafts,
                            accept_lens)
        _counts["triton_greedy"] += 1
        return predict, accept_lens, accept_index

    from sglang.srt.runtime_context import get_server_args

    server_args = get_server_args()
    draft_probs = None
    if server_args.speculative_use_rejection_sampling:
        draft_probs = verify_input.draft_probs
        if draft_probs is None or draft_probs.shape[-1] != logits.shape[-1]:
            raise ValueError(
                "Rejection sampling requires a target-vocab draft proposal distribution; the "
                "current speculative algorithm/draft worker does not produce one (draft_probs "
                "missing or vocab-mismatched).")
    # same random streams as SGLang's eagle_sample
    coins = torch.rand_like(candidates, dtype=torch.float32, device=device)
    coins_final = torch.rand((bs,), dtype=torch.float32, device=device)
    chain_verify_sampling(
        logits, candidates, coins, coins_final,
        temperatures=sampling_info.temperatures,
        top_ks=sampling_info.top_ks if sampling_info.need_top_k_sampling else None,
        top_ps=sampling_info.top_ps if sampling_info.need_top_p_sampling else None,
        draft_probs=draft_probs,
        threshold_single=server_args.speculative_accept_threshold_single,
        threshold_acc=server_args.speculative_accept_threshold_acc,
        predicts=predict, accept_index=accept_index, accept_token_num=num_correct_drafts,
        accept_lens=accept_lens,
    )
    _counts["triton_sampling"] += 1
    return predict, accept_lens, accept_index


def _sampling_needs_broadcast() -> bool:
    """SGLang broadcasts sampled verify results from rank 0 when TP/attention-TP > 1."""
    try:
        from sglang.srt.distributed import get_tp_group
        from sglang.srt.layers.dp_attention import is_dp_attention_enabled
        from sglang.srt.runtime_context import get_parallel

        group = get_parallel().attn_tp_group if is_dp_attention_enabled() else get_tp_group()
        return group.world_size > 1
    except Exception:
        return _allow_cpu is False  # unknown topology: stay on SGLang's path


def _preprocess_logits(verify_input, batch, next_token_logits, vocab_mask):
    """The in-place logit edits SGLang 0.5.16's eagle_sample makes before sampling."""
    import torch

    from sglang.srt.sampling.penaltylib.repetition_penalty import apply_scaling_penalties
    from sglang.srt.utils.async_probe import sanitize_nan_logits

    sampling_info = batch.sampling_info
    sanitize_nan_logits(next_token_logits, "verify: target model logits")
    n = verify_input.draft_token_num
    if sampling_info.acc_additive_penalties is not None:
        next_token_logits.add_(
            torch.repeat_interleave(sampling_info.acc_additive_penalties, n, dim=0))
    if sampling_info.acc_scaling_penalties is not None:
        apply_scaling_penalties(
            next_token_logits,
            torch.repeat_interleave(sampling_info.acc_scaling_penalties, n, dim=0))
    if sampling_info.logit_bias is not None:
        next_token_logits.add_(torch.repeat_interleave(sampling_info.logit_bias, n, dim=0))
    if vocab_mask is not None:
        assert verify_input.grammar is not None
        verify_input.grammar.apply_vocab_mask(logits=next_token_logits, vocab_mask=vocab_mask)

