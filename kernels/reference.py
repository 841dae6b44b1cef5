"""Plain-torch references for the chain-verify kernels (same contracts as ``chain_verify``).

They are written for clarity, not speed (Python loops over requests and chain positions).

- ``chain_verify_greedy_ref``: ``torch.argmax`` + SGLang's greedy chain walk.
- ``renorm_probs_ref``: softmax(logits / T) restricted by top-k, then top-p on the top-k
  renormalised distribution, then min-p, renormalised -- flashinfer's renorm semantics (ties
  at a threshold are kept), computed in float64 by default.
- ``chain_verify_sampling_ref``: SGLang's ``tree_speculative_sampling_target_only`` (target-only
  acceptance with threshold_single / threshold_acc) or ``chain_speculative_sampling_triton``
  (classic rejection sampling) restricted to a topk=1 chain, from given probabilities and coins.
- ``chain_outcome_distribution``: the exact joint distribution of (accepted drafts, bonus
  token) of target-only verification with thresholds (1, 1), for statistical tests.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch


def _empty_outputs(bsz: int, d: int, device):
    predicts = torch.zeros(bsz * d, dtype=torch.int32, device=device)
    accept_index = torch.full((bsz, d), -1, dtype=torch.int32, device=device)
    accept_num = torch.zeros(bsz, dtype=torch.int32, device=device)
    return predicts, accept_index, accept_num


def chain_verify_greedy_ref(logits: torch.Tensor, candidates: torch.Tensor):
    """``logits`` [B*D, V], ``candidates`` [B, D] -> (predicts, accept_index, accept_token_num)."""
    bsz, d = candidates.shape
    target = torch.argmax(logits, dim=-1).reshape(bsz, d).cpu()
    cand = candidates.cpu()
    predicts, accept_index, accept_num = _empty_outputs(bsz, d, "cpu")
    for b in range(bsz):
        j = 0
        accept_index[b, 0] = b * d
        while j < d - 1 and int(cand[b, j + 1]) == int(target[b, j]):
            predicts[b * d + j] = int(target[b, j])
            j += 1
            accept_index[b, j] = b * d + j
        predicts[b * d + j] = int(target[b, j])
        accept_num[b] = j
    dev = logits.device
    return predicts.to(dev), accept_index.to(dev), accept_num.to(dev)


def _per_row(x, rows: int, reps: int, dtype):
    if x is None:
        return None
    if not torch.is_tensor(x):
        return torch.full((rows,), x, dtype=dtype)
    x = x.reshape(-1).to(dtype).cpu()
    return x.repeat_interleave(reps) if x.numel() * reps == rows else x


def renorm_probs_ref(
    logits: torch.Tensor,
    temperatures=None,
    top_ks=None,
    top_ps=None,
    min_ps=None,
    rows_per_request: int = 1,
    dtype=torch.float64,
) -> torch.Tensor:
    """[R, V] logits -> [R, V] target probabilities after temperature/top-k/top-p/min-p.

    Per-request parameters (one per ``rows_per_request`` rows) or per-row ones are accepted.
    A token is kept by top-k when fewer than k tokens are strictly more probable, by top-p when
    the mass strictly above it (in the top-k renormalised distribution) is below top_p, by
    min-p when p >= min_p * p_max.  k <= 0 or >= V, top_p >= 1 and min_p <= 0 mean off.
    """
    rows, v = logits.shape
    x = logits.detach().cpu().to(torch.float32)
    temps = _per_row(temperatures, rows, rows_per_request, torch.float32)
    if temps is not None:
        x = x * (1.0 / temps)[:, None]  # the kernel multiplies by the reciprocal too
    x = x.to(dtype)
    m = x.max(dim=-1, keepdim=True).values
    e = torch.exp(x - m)
    keep = torch.ones_like(e, dtype=torch.bool)
    tks = _per_row(top_ks, rows, rows_per_request, torch.int64)
    tps = _per_row(top_ps, rows, rows_per_request, torch.float64)
    mps = _per_row(min_ps, rows, rows_per_request, torch.float64)
    for r in range(rows):
        xr, er = x[r], e[r]
        if tks is not None and 0 < int(tks[r]) < v:
            # number of strictly larger values < k   <=>   x >= k-th largest value
            kth = torch.topk(xr, int(tks[r])).values[-1]
            keep[r] &= xr >= kth
        if tps is not None and float(tps[r]) < 1.0:
            ek = torch.where(keep[r], er, torch.zeros_like(er))
            total = ek.sum()
            # mass strictly above each value: sort descending, group ties
            vals, order = torch.sort(xr, descending=True)
            w = ek[order]
            incl = torch.cumsum(w, 0)
            excl = incl - w
            # first position of each value's tie group in the sorted order
            first = torch.searchsorted(-vals, -vals, right=False)
            above_sorted = excl[first]
            above = torch.empty_like(above_sorted)
            above[order] = above_sorted
            keep[r] &= above < float(tps[r]) * total
        if mps is not None and float(mps[r]) > 0.0:
            keep[r] &= er >= float(mps[r])
    p = torch.where(keep, e, torch.zeros_like(e))
    return p / p.sum(dim=-1, keepdim=True)


def _inverse_cdf(w: torch.Tensor, u: float) -> int:
    """First index whose running sum exceeds u * sum(w) (last positive index as fallback)."""
    total = w.sum()
    cs = torch.cumsum(w, 0)
    hit = torch.nonzero(cs > u * total)
    if hit.numel():
        return int(hit[0])
    pos = torch.nonzero(w > 0)
    return int(pos[-1]) if pos.numel() else w.numel() - 1


def chain_verify_sampling_ref(
    target_probs: torch.Tensor,
    candidates: torch.Tensor,
    coins: torch.Tensor,
    coins_final: torch.Tensor,
    draft_probs: Optional[torch.Tensor] = None,
    threshold_single: float = 1.0,
    threshold_acc: float = 1.0,
):
    """``target_probs`` [B, D, V] (or [B*D, V]), ``candidates`` [B, D], ``coins`` [B, D],
    ``coins_final`` [B]; ``draft_probs`` [B, D-1 (or D), V] selects classic rejection sampling.
    Returns (predicts, accept_index, accept_token_num) like the kernels."""
    bsz, d = candidates.shape
    p = target_probs.detach().reshape(bsz, d, -1).cpu()
    cand = candidates.cpu()
    u = coins.reshape(bsz, -1).cpu()
    uf = coins_final.reshape(-1).cpu()
    q = None if draft_probs is None else draft_probs.detach().cpu().to(p.dtype)
    thr_acc = max(float(threshold_acc), 1e-9)
    predicts, accept_index, accept_num = _empty_outputs(bsz, d, "cpu")
    for b in range(bsz):
        accept_index[b, 0] = b * d
        j = 0
        rejected = False
        while j < d - 1:
            tok = int(cand[b, j + 1])
            pj = float(p[b, j, tok])
            coin = float(u[b, j])
            if q is None:
                ok = coin <= pj / thr_acc or pj >= threshold_single
            else:
                ok = coin * float(q[b, j, tok]) < pj
            if not ok:
                rejected = True
                break
            predicts[b * d + j] = tok
            j += 1
            accept_index[b, j] = b * d + j
        accept_num[b] = j
        w = p[b, j].clone()
        if rejected:
            if q is None:
                w[int(cand[b, j + 1])] = 0.0
            else:
                w = torch.clamp(w - q[b, j], min=0.0)
        predicts[b * d + j] = _inverse_cdf(w, float(uf[b]))
    dev = target_probs.device
    return predicts.to(dev), accept_index.to(dev), accept_num.to(dev)


def chain_outcome_distribution(target_probs: torch.Tensor, drafts) -> Tuple[torch.Tensor, torch.Tensor]:
    """Exact distribution of target-only verification (thresholds 1, 1) of one chain.

    ``target_probs`` [D, V], ``drafts`` the D-1 drafted tokens.  Returns ``(accept, joint)``:
    ``accept[a]`` = P(a drafts accepted) and ``joint[a, t]`` = P(a accepted, bonus token t).
    """
    p = target_probs.detach().cpu().to(torch.float64)
    d, v = p.shape
    joint = torch.zeros(d, v, dtype=torch.float64)
    reach = 1.0
    for j in range(d):
        if j < d - 1:
            t = int(drafts[j])
            alpha = float(p[j, t])
            resid = p[j].clone()
            resid[t] = 0.0
            s = float(resid.sum())
            if s > 0:
                joint[j] = reach * (1.0 - alpha) * resid / s
            reach *= alpha
        else:
            joint[j] = reach * p[j]
    return joint.sum(dim=1), joint
