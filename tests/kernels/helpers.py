"""Shared helpers of the kernel tests (inputs, SGLang's own Triton kernels under the interpreter)."""
from __future__ import annotations

import torch


def interpreted(jitfn):
    """SGLang's Triton kernels are decorated at SGLang import; if that happened before
    TRITON_INTERPRET was set, wrap the same Python function in Triton's interpreter."""
    if type(jitfn).__name__ == "InterpretedFunction":
        return jitfn
    from triton.runtime.interpreter import InterpretedFunction

    return InterpretedFunction(jitfn.fn)


def chain_tree(bsz: int, d: int):
    """SGLang's retrieve_* tensors of a topk=1 chain (what build_tree_kernel_efficient makes)."""
    idx = torch.arange(bsz * d, dtype=torch.int64).reshape(bsz, d)
    nxt = torch.arange(1, d + 1, dtype=torch.int64).repeat(bsz, 1)
    nxt[:, -1] = -1
    sib = torch.full((bsz, d), -1, dtype=torch.int64)
    return idx, nxt, sib


def sglang_verify_greedy(logits: torch.Tensor, candidates: torch.Tensor):
    """SGLang 0.5.16's greedy path with its Triton verify kernel: argmax + verify_tree_greedy."""
    from sglang.kernels.ops.speculative.spec_tree import verify_tree_greedy_kernel_triton

    bsz, d = candidates.shape
    target_predict = torch.argmax(logits, dim=-1).reshape(bsz, d)
    predicts = torch.zeros(bsz * d, dtype=torch.int32)
    accept_index = torch.full((bsz, d), -1, dtype=torch.int32)
    accept_num = torch.empty(bsz, dtype=torch.int32)
    idx, nxt, sib = chain_tree(bsz, d)
    interpreted(verify_tree_greedy_kernel_triton)[(bsz,)](
        predicts, accept_index, accept_num, candidates, idx, nxt, sib, target_predict,
        batch_size=bsz, num_speculative_tokens=d, num_draft_tokens=d,
    )
    return predicts, accept_index, accept_num


def sglang_chain_sampling_classic(target_probs, candidates, coins, coins_final, draft_probs):
    """SGLang 0.5.16's rejection-sampling chain kernel (chain_speculative_sampling_triton)."""
    from sglang.kernels.ops.speculative.reject_sampling import speculative_sampling_classic_kernel

    bsz, d = candidates.shape
    v = target_probs.shape[-1]
    predicts = torch.zeros(bsz * d, dtype=torch.int32)
    accept_index = torch.full((bsz, d), -1, dtype=torch.int32)
    accept_num = torch.empty(bsz, dtype=torch.int32)
    idx, _, _ = chain_tree(bsz, d)
    interpreted(speculative_sampling_classic_kernel)[(bsz,)](
        predicts, accept_index, accept_num, candidates, idx, coins, coins_final,
        target_probs, draft_probs,
        candidates.stride(0), candidates.stride(1), idx.stride(0), idx.stride(1),
        coins.stride(0), coins.stride(1),
        target_probs.stride(0), target_probs.stride(1), target_probs.stride(2),
        draft_probs.stride(0), draft_probs.stride(1), draft_probs.stride(2),
        NUM_SLOTS=d, VOCAB_SIZE=v, BLOCK_V=4096,
    )
    return predicts, accept_index, accept_num


def ragged_greedy_case(bsz: int, d: int, v: int, dtype=torch.bfloat16, ties: bool = True,
                       gen: torch.Generator | None = None):
    """Random logits and drafts whose accepted length is uniform in [0, d-1] per request.

    With ``ties``, some rows get a second copy of their maximum (before or after the first
    one) and some mismatching drafts are exactly such a later tied index.
    """
    g = gen or torch.Generator().manual_seed(1234)
    logits = (torch.randn(bsz * d, v, generator=g) * 3).to(dtype)
    if ties:
        for r in range(bsz * d):
            u = torch.rand(1, generator=g).item()
            if u < 0.4:
                row = logits[r]
                am = int(row.float().argmax())
                other = int(torch.randint(0, v, (1,), generator=g))
                if other != am:
                    row[other] = row[am]
    target = torch.argmax(logits, dim=-1).reshape(bsz, d)
    cand = torch.randint(0, v, (bsz, d), generator=g, dtype=torch.int64)
    n_acc = torch.randint(0, d, (bsz,), generator=g)
    for b in range(bsz):
        a = int(n_acc[b])
        cand[b, 1:a + 1] = target[b, :a]
        if a < d - 1:
            # mismatch: a later index tied with the max if there is one, else a random token
            row = logits[b * d + a].float()
            tied = torch.nonzero(row == row.max()).flatten()
            later = tied[tied > target[b, a]]
            if len(later) and torch.rand(1, generator=g).item() < 0.7:
                cand[b, a + 1] = int(later[0])
            else:
                t = int(torch.randint(0, v, (1,), generator=g))
                cand[b, a + 1] = t if t != int(target[b, a]) else (t + 1) % v
    return logits, cand, n_acc
