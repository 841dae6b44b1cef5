"""Triton chain-verify kernels for topk=1 EAGLE draft chains.

Both kernels go from the target logits ``[B*D, V]`` (D = steps + 1, row ``b*D + j`` is the
target's distribution after the root and the first ``j`` drafts of request ``b``) straight to
SGLang's in-place verify outputs (``../shared/design/sglang-integration.md`` section 3):

- ``predicts`` [B*D] int32: at each accepted node the target's token for the next position;
  the last accepted node holds the bonus token; every other entry is 0.
- ``accept_index`` [B, D] int32: ``b*D + j`` for the accepted path (root first), -1 after it.
- ``accept_token_num`` [B] int32: accepted drafts (SGLang's ``num_correct_drafts``).
- optionally ``accept_lens`` [B] int32 = accept_token_num + 1 (what ``eagle_sample`` returns).

All outputs are fully written by the kernel (no zero/-1 pre-fill needed).

A chain allows what a tree does not: the first mismatch ends the request, so rows after it are
never needed.  Both kernels skip them (a per-request "stop" flag set with ``atomic_min`` and read
before a row is started), and a per-request arrival counter lets the last program of a request
write the outputs (one launch, no grid-wide barrier, no spin-waits, so the same code runs under
``TRITON_INTERPRET=1``).  The counter and the flag live in small per-(device, stream) buffers
that the last program resets, so a call costs no memset; the kernels' work buffers are kept per
stream too, and launch plans are cached per shape (at small batches a call costs its host time).

Greedy (``chain_verify_greedy``): grid (D*B*NS,), rows j-major.  Program (row, s) scans vocab
slice s of one row with a lane-wise running (max, first index) -- ties resolve to the first
maximal index and NaN counts as the maximum, exactly like ``torch.argmax`` -- unless a mismatch
in an earlier row of its request is already flagged; a slice holding a token that beats the
draft flags its row.  The bonus is the reduction of the slices' partials of the first
mismatching row.  NS (slices per row) is chosen so that the grid fills the GPU.  (The
``schedule="chain"`` variant walks a request's rows in order inside each slice's program.)

Sampling (``chain_verify_sampling``): by default (since session 9) the first pass below runs as
its own launch, split over vocab slices (``_sample_stats_kernel``: few registers, many
programs per SM), and the per-row kernel combines the slices' stats.  Then grid (D*B,),
row-major by draft position so that at large B later rows start after earlier ones have set
the stop flags.  Each program owns one row:

1. one pass (lane-wise online softmax): max m, Z = sum exp(x - m) with x = logit / temperature,
   plus (when top-k / top-p are on) the count and mass of tokens above the draft token;
2. fast accept: p(d) = exp(x_d - m)/Z is a lower bound of the top-k/top-p/min-p renormalised
   probability of an (provably kept) draft token, so ``coin <= p(d)`` accepts without the exact
   kept set -- one pass for most accepted rows;
3. otherwise the exact kept set: top-k / top-p thresholds found by bisection on an
   order-preserving int32 key of x (3 probes per pass, counts and masses of the in-bracket
   tokens only), finished by an exact pairwise rank of the at most CAP tokens left in the
   bracket; min-p is a per-token test ``exp(x - m) >= min_p``;
4. SGLang's decision (target-only: ``coin <= p'(d) / threshold_acc or p'(d) >= threshold_single``;
   classic rejection sampling: ``coin * q(d) < p'(d)``), and, on rejection or at the last row,
   inverse-CDF sampling (first index whose running sum exceeds ``u * total``, vocab order) from
   the residual: target-only -> p' without the rejected draft token, classic -> relu(p' - q),
   all drafts accepted -> p'.

Top-p alone (no top-k, no min-p, target-only; since session 11, ``top_p_method``) skips 3 and
the inverse CDF: the decision is certain from p'(d) in [p(d), p(d) / top_p] outside a narrow
band (which takes 3-4), and the residual token is drawn by rejection from the whole
distribution (`_top_p_by_rejection`): the same distribution, two passes instead of ~10-16.
Two shortcuts into 3 (since session 21, either method): a draft at the nucleus edge (the mass
above it below top_p, with it and its ties at least top_p: the usual case of a dominant
draft) has its nucleus, the tokens >= x_d, and the nucleus mass from pass 1 (which counts the
ties of the draft's value), so no search; and for any draft known to be kept the search stops
at the first probe whose mass above proves the nucleus mass small enough for acceptance.

Kept sets follow flashinfer's renorm semantics (what SGLang's ``top_k_renorm_prob`` /
``top_p_renorm_prob`` implement): top-k keeps tokens with fewer than k strictly larger
probabilities (ties at the k-th value are all kept); top-p, applied to the top-k renormalised
distribution, keeps tokens whose strictly-larger mass is below top_p; min-p keeps
``p >= min_p * p_max``.  ``reference.py`` spells the same semantics out in torch.

Streaming loops read [U, S] tiles (S lanes of one 16-byte vector per thread, U vectors per
thread, reduced inside the thread), issue the next tile's load before reducing the current one,
and contain no cross-warp reduction, so a program keeps several loads per thread in flight --
the sampler's rows are walked by one program each and are latency-bound otherwise.

Portable Triton only: no inline asm, no architecture-specific ops; blocks use registers and
Triton's own small reduction scratch (<= 512 bytes of shared memory), far within sm_120's
~100 KB.
"""

from __future__ import annotations

import functools
import threading
from typing import Dict, Optional, Tuple

import torch
import triton
import triton.language as tl

from .launch import DirectLauncher, _raw_stream, launch_mode  # noqa: F401 (launch_mode: kernel_bench)

_BIG_PY = 1 << 30
_BIG = tl.constexpr(_BIG_PY)  # "no index" / "no stop" sentinel (fits int32)
_INT_MAX = 2147483647
_INT_MIN = -2147483648
_NSTAT_PY = 5  # floats per (row, vocab slice) of the split first pass
_NSTAT = tl.constexpr(_NSTAT_PY)


# --------------------------------------------------------------------------------------------
# jit helpers
# --------------------------------------------------------------------------------------------


@triton.jit
def _uniform_read(ptr):
    """The value at ``ptr`` as one value for the whole program, while other programs may be
    changing it.  A scalar ``tl.load`` is issued by every thread: with the stop flag lowered by
    another program in between, warps could disagree, take different branches and meet
    different ``bar.sync``s (reductions, ``debug_barrier``), and then read each other's stale
    shared memory.  That is most likely how the sampling kernel faulted on the H200 at 256
    requests of flat logits (illegal address / invalid address space, random, gone under
    compute-sanitizer's serialisation; session 9).  A scalar atomic is issued by one thread
    and broadcast through shared memory, so every warp sees the same value."""
    return tl.atomic_add(ptr, 0, sem="relaxed")


@triton.jit
def _draft_logit(rowp, cand_ptr, stride_cb, stride_cs, b, j, D, V, invT):
    """(draft token d of row j, whether it is a valid token, its logit / temperature)."""
    has_draft = j < D - 1
    d = tl.load(cand_ptr + b * stride_cb + (j + 1) * stride_cs, mask=has_draft, other=-1)
    d = d.to(tl.int32)
    dval = has_draft & (d >= 0) & (d < V)
    xd = tl.load(rowp + tl.where(dval, d, 0)).to(tl.float32) * invT
    return d, dval, xd


@triton.jit
def _key_nan(x):
    """Order-preserving int32 key of fp32 values: -0.0 == +0.0, every NaN above +inf."""
    bits = x.to(tl.int32, bitcast=True)
    k = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    k = tl.where(x == 0.0, 0, k)
    k = tl.where(x != x, 2147483647, k)
    return k


@triton.jit
def _key(x):
    """Order-preserving int32 key of (non-NaN) fp32 values, -0.0 == +0.0."""
    bits = x.to(tl.int32, bitcast=True)
    k = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    return tl.where(x == 0.0, 0, k)


# --------------------------------------------------------------------------------------------
# greedy
# --------------------------------------------------------------------------------------------


@triton.jit
def _slice_argmax(row_ptr, v_lo, v_hi, U: tl.constexpr, S: tl.constexpr):
    """(max key, first index of it) over logits [v_lo, v_hi) of one row.  A tile is [U, S]
    logits: each thread issues U independent vector loads, the U axis is reduced inside the
    thread, and the next tile is loaded before the current one is reduced (register double
    buffering), so many loads are in flight per program."""
    T: tl.constexpr = U * S
    so = tl.arange(0, S)
    offs = tl.arange(0, U)[:, None] * S + so[None, :]
    idx = v_lo + offs
    x = tl.load(row_ptr + idx, mask=idx < v_hi, other=float("-inf"))
    best_k = tl.full([S], -2147483648, tl.int32)
    best_i = tl.full([S], _BIG, tl.int32)
    for start in range(v_lo, v_hi, T):
        idx_n = start + T + offs
        x_n = tl.load(row_ptr + idx_n, mask=idx_n < v_hi, other=float("-inf"))
        # masked elements read as -inf and have the largest indices of their lane,
        # so with ties resolved to the left they never hide a real element
        k = _key_nan(x.to(tl.float32))
        bk, bu = tl.max(k, axis=0, return_indices=True, return_indices_tie_break_left=True)
        upd = bk > best_k
        best_k = tl.where(upd, bk, best_k)
        best_i = tl.where(upd, start + bu * S + so, best_i)
        x = x_n
    kmax = tl.max(best_k, axis=0)
    kidx = tl.min(tl.where(best_k == kmax, best_i, _BIG), axis=0)
    return kmax, kidx


@triton.jit
def _draft_beaten(kmax, kidx, xd, d, dval):
    """The slice holds a token that torch.argmax would pick over draft token d (or d is no
    valid token): then the row is a mismatch, whatever the other slices hold."""
    kd = _key_nan(xd)
    return (~dval) | (kmax > kd) | ((kmax == kd) & (kidx < d))


@triton.jit
def _publish_slice(part_key_ptr, part_idx_ptr, stop_ptr, b, s, j, D, NS, kmax, kidx, xd, d,
                   dval):
    """Store slice s's (max key, first index) of row j; a row with a draft that the slice
    beats is flagged as the request's mismatch (``atomic_min``).  Returns whether it was."""
    pofs = (b * NS + s) * D + j
    tl.store(part_key_ptr + pofs, kmax)
    tl.store(part_idx_ptr + pofs, kidx)
    beaten = (j < D - 1) & _draft_beaten(kmax, kidx, xd, d, dval)
    if beaten:
        tl.atomic_min(stop_ptr + b, j)
    return beaten


@triton.jit
def _greedy_finish(cand_ptr, stride_cb, stride_cs, predicts_ptr, accept_index_ptr,
                   accept_num_ptr, accept_lens_ptr, part_key_ptr, part_idx_ptr, counter_ptr,
                   stop_ptr, b, D, NS, D_P2: tl.constexpr, NS_P2: tl.constexpr,
                   WRITE_LENS: tl.constexpr):
    """Run by the last program of request b to arrive: the bonus is the argmax of row J (the
    first mismatch, or the last row) from the slices' partials; then the request's flag and
    counter are reset for the next call."""
    stop = tl.load(stop_ptr + b, volatile=True)  # final: every program of b has arrived
    J = tl.minimum(stop, D - 1)
    sl = tl.arange(0, NS_P2)
    smask = sl < NS
    pk = tl.load(part_key_ptr + (b * NS + sl) * D + J, mask=smask, other=-2147483648,
                 volatile=True)
    pi = tl.load(part_idx_ptr + (b * NS + sl) * D + J, mask=smask, other=_BIG, volatile=True)
    kb = tl.max(pk, axis=0)
    bonus = tl.min(tl.where(pk == kb, pi, _BIG), axis=0)
    _write_outputs(cand_ptr, stride_cb, stride_cs, predicts_ptr, accept_index_ptr,
                   accept_num_ptr, accept_lens_ptr, b, J, bonus, D, D_P2, WRITE_LENS)
    tl.store(counter_ptr + b, 0)
    tl.store(stop_ptr + b, _BIG)


@triton.jit(do_not_specialize=["B", "D", "NS"])
def _greedy_rows_kernel(
    logits_ptr, stride_lr, cand_ptr, stride_cb, stride_cs,
    predicts_ptr, accept_index_ptr, accept_num_ptr, accept_lens_ptr,
    part_key_ptr, part_idx_ptr, counter_ptr, stop_ptr,
    V, SLICE, B, D, NS,
    D_P2: tl.constexpr, NS_P2: tl.constexpr, U: tl.constexpr, S: tl.constexpr,
    WRITE_LENS: tl.constexpr,
):
    """Grid (D*B*NS,), rows j-major, a row's slices together: every (row, slice) is its own
    program, so all rows of a request are read at once (no row waits for the one before); on
    a grid larger than one wave, the programs of later rows start after earlier rows may have
    flagged the mismatch, and skip their reads. One grid axis: CUDA caps the second at 65,535
    programs, fewer than D*B rows of a large batch."""
    pid = tl.program_id(0)
    rb = pid // NS
    s = pid - rb * NS
    j = rb // B
    b = rb - j * B
    if _uniform_read(stop_ptr + b) >= j:  # else a mismatch before row j: not needed
        row_ptr = logits_ptr + (b * D + j).to(tl.int64) * stride_lr
        d, dval, xd = _draft_logit(row_ptr, cand_ptr, stride_cb, stride_cs, b, j, D, V, 1.0)
        v_lo = s * SLICE
        kmax, kidx = _slice_argmax(row_ptr, v_lo, tl.minimum(v_lo + SLICE, V), U, S)
        _publish_slice(part_key_ptr, part_idx_ptr, stop_ptr, b, s, j, D, NS, kmax, kidx, xd, d,
                       dval)
    tl.debug_barrier()
    if tl.atomic_add(counter_ptr + b, 1) == D * NS - 1:
        _greedy_finish(cand_ptr, stride_cb, stride_cs, predicts_ptr, accept_index_ptr,
                       accept_num_ptr, accept_lens_ptr, part_key_ptr, part_idx_ptr, counter_ptr,
                       stop_ptr, b, D, NS, D_P2, NS_P2, WRITE_LENS)


@triton.jit(do_not_specialize=["D", "NS"])
def _greedy_chain_kernel(
    logits_ptr, stride_lr, cand_ptr, stride_cb, stride_cs,
    predicts_ptr, accept_index_ptr, accept_num_ptr, accept_lens_ptr,
    part_key_ptr, part_idx_ptr, counter_ptr, stop_ptr,
    V, SLICE, D, NS,
    D_P2: tl.constexpr, NS_P2: tl.constexpr, U: tl.constexpr, S: tl.constexpr,
    WRITE_LENS: tl.constexpr,
):
    """Grid (B, NS) (``schedule="chain"``, sessions 3-8): program (b, s) walks rows 0, 1, ...
    of request b one after the other and stops at the first mismatch it sees; reads the fewest
    bytes, but a row cannot start before the one before it has finished."""
    b = tl.program_id(0)
    s = tl.program_id(1)
    v_lo = s * SLICE
    v_hi = tl.minimum(v_lo + SLICE, V)
    jo = tl.arange(0, D_P2)
    cand_vec = tl.load(cand_ptr + b * stride_cb + jo * stride_cs, mask=jo < D, other=-1)
    cand_vec = cand_vec.to(tl.int32)

    go = tl.cast(1, tl.int32)
    for j in range(D):
        if go != 0:
            row_ptr = logits_ptr + (b * D + j).to(tl.int64) * stride_lr
            has_d = j < D - 1
            d = tl.sum(tl.where(jo == j + 1, cand_vec, 0), axis=0)
            dval = has_d & (d >= 0) & (d < V)
            xd = tl.load(row_ptr + tl.where(dval, d, 0)).to(tl.float32)
            flag = _uniform_read(stop_ptr + b)  # decides the next row (stale is fine)
            kmax, kidx = _slice_argmax(row_ptr, v_lo, v_hi, U, S)
            if _publish_slice(part_key_ptr, part_idx_ptr, stop_ptr, b, s, j, D, NS, kmax, kidx,
                              xd, d, dval):
                go = 0
            if flag <= j:
                go = 0

    # arrive; the last program of the request writes the outputs
    tl.debug_barrier()
    if tl.atomic_add(counter_ptr + b, 1) == NS - 1:
        _greedy_finish(cand_ptr, stride_cb, stride_cs, predicts_ptr, accept_index_ptr,
                       accept_num_ptr, accept_lens_ptr, part_key_ptr, part_idx_ptr, counter_ptr,
                       stop_ptr, b, D, NS, D_P2, NS_P2, WRITE_LENS)


@triton.jit
def _write_outputs(cand_ptr, stride_cb, stride_cs, predicts_ptr, accept_index_ptr,
                   accept_num_ptr, accept_lens_ptr, b, J, bonus, D,
                   D_P2: tl.constexpr, WRITE_LENS: tl.constexpr):
    jo = tl.arange(0, D_P2)
    jm = jo < D
    nxt = tl.load(cand_ptr + b * stride_cb + (jo + 1) * stride_cs, mask=jo < J, other=0)
    pred = tl.where(jo < J, nxt.to(tl.int32), tl.where(jo == J, bonus, 0))
    tl.store(predicts_ptr + b * D + jo, pred, mask=jm)
    tl.store(accept_index_ptr + b * D + jo, tl.where(jo <= J, b * D + jo, -1), mask=jm)
    tl.store(accept_num_ptr + b, J)
    if WRITE_LENS:
        tl.store(accept_lens_ptr + b, J + 1)


# --------------------------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------------------------


@triton.jit
def _search(rowp, invT, m, V, klo, khi, target, win, buf_k_ptr, buf_v_ptr,
            MASS: tl.constexpr, U: tl.constexpr, S: tl.constexpr, CAP: tl.constexpr,
            CI: tl.constexpr):
    """(tau, settled): tau is the smallest key of the row with  F(tau) < target, where F(k) is
    the count (MASS=False) or the mass sum exp(x - m) (MASS=True) of the tokens with key > k.

    Invariant: F(klo) >= target > F(khi), i.e. tau in (klo, khi]; ``base`` is F(khi).

    ``win`` (MASS only; -1: off): stop as soon as a probe p has target <= F(p) <= win and
    return settled = 1 (tau is then not found).  F(p) >= target puts tau above p, so the kept
    mass F(tau - 1) is at most F(p) <= win: for a draft token known to be kept, whose
    acceptance only asks "kept mass <= win", a few passes settle what the whole search would.
    """
    BLOCK: tl.constexpr = U * S
    offs = tl.arange(0, BLOCK)
    offs2 = tl.arange(0, U)[:, None] * S + tl.arange(0, S)[None, :]
    cnt = tl.cast(V, tl.int32)  # upper bound of the number of tokens in (klo, khi]
    base = tl.cast(0.0, tl.float32)
    nbase = tl.cast(0, tl.int32)
    settled = tl.cast(0, tl.int32)
    while (cnt > CAP) & ((khi.to(tl.int64) - klo.to(tl.int64)) > 1) & (settled == 0):
        w = khi.to(tl.int64) - klo.to(tl.int64)
        p1 = (klo.to(tl.int64) + w // 4).to(tl.int32)
        p2 = (klo.to(tl.int64) + w // 2).to(tl.int32)
        p3 = (klo.to(tl.int64) + (3 * w) // 4).to(tl.int32)
        c1 = tl.zeros([S], dtype=tl.int32)
        c2 = tl.zeros([S], dtype=tl.int32)
        c3 = tl.zeros([S], dtype=tl.int32)
        ct = tl.zeros([S], dtype=tl.int32)
        s1 = tl.zeros([S], dtype=tl.float32)
        s2 = tl.zeros([S], dtype=tl.float32)
        s3 = tl.zeros([S], dtype=tl.float32)
        x = tl.load(rowp + offs2, mask=offs2 < V, other=float("-inf"))
        for start in range(0, V, BLOCK):
            idx_n = start + BLOCK + offs2
            x_n = tl.load(rowp + idx_n, mask=idx_n < V, other=float("-inf"))
            xf = x.to(tl.float32) * invT
            k = _key(xf)
            inb = ((start + offs2) < V) & (k > klo) & (k <= khi)
            # (no per-tile "any token in the bracket?" test: a cross-warp reduction per tile
            # would serialise the loop; exp on every lane is cheaper)
            if MASS:
                e = tl.where(inb, tl.exp(xf - m), 0.0)
                s1 += tl.sum(tl.where(k > p1, e, 0.0), axis=0)
                s2 += tl.sum(tl.where(k > p2, e, 0.0), axis=0)
                s3 += tl.sum(tl.where(k > p3, e, 0.0), axis=0)
            c1 += tl.sum((inb & (k > p1)).to(tl.int32), axis=0)
            c2 += tl.sum((inb & (k > p2)).to(tl.int32), axis=0)
            c3 += tl.sum((inb & (k > p3)).to(tl.int32), axis=0)
            ct += tl.sum(inb.to(tl.int32), axis=0)
            x = x_n
        n1 = tl.sum(c1, axis=0)
        n2 = tl.sum(c2, axis=0)
        n3 = tl.sum(c3, axis=0)
        nt = tl.sum(ct, axis=0)
        if MASS:
            m1 = tl.sum(s1, axis=0)
            m2 = tl.sum(s2, axis=0)
            m3 = tl.sum(s3, axis=0)
            ok1 = (base + m1) < target
            ok2 = (base + m2) < target
            ok3 = (base + m3) < target
            in_win = (((~ok1) & (base + m1 <= win)) | ((~ok2) & (base + m2 <= win))
                      | ((~ok3) & (base + m3 <= win)))
            settled = in_win.to(tl.int32)
        else:
            m1 = 0.0
            m2 = 0.0
            m3 = 0.0
            ok1 = (nbase + n1) < target
            ok2 = (nbase + n2) < target
            ok3 = (nbase + n3) < target
        if ok1:
            khi = p1
            cnt = nt - n1
            base = base + m1
            nbase = nbase + n1
        elif ok2:
            klo = p1
            khi = p2
            cnt = n1 - n2
            base = base + m2
            nbase = nbase + n2
        elif ok3:
            klo = p2
            khi = p3
            cnt = n2 - n3
            base = base + m3
            nbase = nbase + n3
        else:
            klo = p3
            cnt = n3
    tau = khi
    if (settled == 0) & ((khi.to(tl.int64) - klo.to(tl.int64)) > 1):
        # at most CAP tokens left in (klo, khi]: compact them, then rank them pairwise
        tl.debug_barrier()  # the buffer may still be read by an earlier search of this row
        pos0 = tl.cast(0, tl.int32)
        for start in range(0, V, BLOCK):
            idx = start + offs
            msk = idx < V
            x = tl.load(rowp + idx, mask=msk, other=float("-inf")).to(tl.float32) * invT
            k = _key(x)
            inb = msk & (k > klo) & (k <= khi)
            ni = tl.sum(inb.to(tl.int32), axis=0)
            if ni > 0:
                pos = pos0 + tl.cumsum(inb.to(tl.int32), axis=0) - 1
                if MASS:
                    val = tl.exp(x - m)
                else:
                    val = tl.full([BLOCK], 1.0, tl.float32)
                tl.store(buf_k_ptr + pos, k, mask=inb)
                tl.store(buf_v_ptr + pos, val, mask=inb)
                pos0 += ni
        tl.debug_barrier()
        jj = tl.arange(0, CAP)
        vj = jj < pos0
        kj = tl.load(buf_k_ptr + jj, mask=vj, other=-2147483648, volatile=True)
        wj = tl.load(buf_v_ptr + jj, mask=vj, other=0.0, volatile=True)
        best = tl.cast(2147483647, tl.int32)
        for ci in range(0, CAP, CI):
            ii = ci + tl.arange(0, CI)
            vi = ii < pos0
            ki = tl.load(buf_k_ptr + ii, mask=vi, other=2147483647, volatile=True)
            above = tl.sum(tl.where(kj[None, :] > ki[:, None], wj[None, :], 0.0), axis=1)
            if MASS:
                okv = (base + above) < target
            else:
                okv = (nbase + above) < target
            best = tl.minimum(best, tl.min(tl.where(vi & okv, ki, 2147483647), axis=0))
        if best != 2147483647:
            tau = best
    return tau, settled


@triton.jit
def _kept_mass(rowp, invT, m, V, tau, minp, d_excl,
               USE_MINP: tl.constexpr, U: tl.constexpr, S: tl.constexpr):
    """(sum of exp(x - m) over the kept tokens, the same without token d_excl)."""
    BLOCK: tl.constexpr = U * S
    offs2 = tl.arange(0, U)[:, None] * S + tl.arange(0, S)[None, :]
    acc_all = tl.zeros([S], dtype=tl.float32)
    acc_ex = tl.zeros([S], dtype=tl.float32)
    x = tl.load(rowp + offs2, mask=offs2 < V, other=float("-inf"))
    for start in range(0, V, BLOCK):
        idx_n = start + BLOCK + offs2
        x_n = tl.load(rowp + idx_n, mask=idx_n < V, other=float("-inf"))
        idx = start + offs2
        xf = x.to(tl.float32) * invT
        kept = (idx < V) & (_key(xf) >= tau)
        e = tl.exp(xf - m)
        if USE_MINP:
            kept = kept & (e >= minp)
        e = tl.where(kept, e, 0.0)
        acc_all += tl.sum(e, axis=0)
        acc_ex += tl.sum(tl.where(idx == d_excl, 0.0, e), axis=0)
        x = x_n
    return tl.sum(acc_all, axis=0), tl.sum(acc_ex, axis=0)


@triton.jit
def _residual_weights(x, k, idx, msk, m, tau, minp, d_excl, inv_ek, qrow, USE_MINP: tl.constexpr,
                      RESID_Q: tl.constexpr):
    kept = msk & (k >= tau)
    e = tl.exp(x - m)
    if USE_MINP:
        kept = kept & (e >= minp)
    if RESID_Q:
        q = tl.load(qrow + idx, mask=kept, other=0.0).to(tl.float32)
        w = tl.where(kept, tl.maximum(e * inv_ek - q, 0.0), 0.0)
    else:
        w = tl.where(kept & (idx != d_excl), e, 0.0)
    return w, kept


@triton.jit
def _residual_sum(rowp, invT, m, V, tau, minp, inv_ek, qrow,
                  USE_MINP: tl.constexpr, U: tl.constexpr, S: tl.constexpr):
    BLOCK: tl.constexpr = U * S
    offs2 = tl.arange(0, U)[:, None] * S + tl.arange(0, S)[None, :]
    acc = tl.zeros([S], dtype=tl.float32)
    x = tl.load(rowp + offs2, mask=offs2 < V, other=float("-inf"))
    for start in range(0, V, BLOCK):
        idx_n = start + BLOCK + offs2
        x_n = tl.load(rowp + idx_n, mask=idx_n < V, other=float("-inf"))
        idx = start + offs2
        xf = x.to(tl.float32) * invT
        w, kept = _residual_weights(xf, _key(xf), idx, idx < V, m, tau, minp, -1, inv_ek, qrow,
                                    USE_MINP, True)
        acc += tl.sum(w, axis=0)
        x = x_n
    return tl.sum(acc, axis=0)


@triton.jit
def _scan(rowp, invT, m, V, tau, minp, d_excl, inv_ek, qrow, t, start0, carry0,
          USE_MINP: tl.constexpr, RESID_Q: tl.constexpr, BLOCK: tl.constexpr):
    """First index (vocab order) whose running residual weight exceeds t, walking from
    ``start0`` with ``carry0`` the weight before it (0, 0: the whole row)."""
    offs = tl.arange(0, BLOCK)
    carry = tl.cast(carry0, tl.float32)
    tok = tl.cast(-1, tl.int32)
    lastpos = tl.cast(-1, tl.int32)
    start = tl.cast(start0, tl.int32)
    while (tok < 0) & (start < V):
        idx = start + offs
        msk = idx < V
        x = tl.load(rowp + idx, mask=msk, other=float("-inf")).to(tl.float32) * invT
        k = _key(x)
        if tl.max((msk & (k >= tau)).to(tl.int32), axis=0) > 0:
            w, kept = _residual_weights(x, k, idx, msk, m, tau, minp, d_excl, inv_ek, qrow,
                                        USE_MINP, RESID_Q)
            cs = carry + tl.cumsum(w, axis=0)
            hit = (cs > t) & msk
            if tl.max(hit.to(tl.int32), axis=0) > 0:
                tok = tl.min(tl.where(hit, idx, _BIG), axis=0)
            lastpos = tl.maximum(lastpos, tl.max(tl.where(w > 0.0, idx, -1), axis=0))
            carry += tl.sum(w, axis=0)
        start += BLOCK
    if tok < 0:
        # u * total beyond the float running sum: take the last token with positive weight
        tok = tl.where(lastpos >= 0, lastpos, V - 1)
    return tok


@triton.jit
def _row_stats(rowp, invT, xd, v_lo, v_hi, WANT_A: tl.constexpr, WANT_N: tl.constexpr,
               U: tl.constexpr, S: tl.constexpr):
    """Over logits [v_lo, v_hi) of one row, x = logit / temperature: (max m, sum exp(x - m),
    the same over x > xd, the count of x > xd, the count of x == xd).  Lane-wise online
    softmax (a running max per lane): no cross-warp reduction inside the loop, so the loads of
    successive blocks overlap."""
    BLOCK: tl.constexpr = U * S
    m_l = tl.full([S], float("-inf"), tl.float32)
    z_l = tl.zeros([S], dtype=tl.float32)
    a_l = tl.zeros([S], dtype=tl.float32)
    n_l = tl.zeros([S], dtype=tl.int32)
    t_l = tl.zeros([S], dtype=tl.int32)
    offs2 = tl.arange(0, U)[:, None] * S + tl.arange(0, S)[None, :]
    x = tl.load(rowp + v_lo + offs2, mask=v_lo + offs2 < v_hi, other=float("-inf"))
    for start in range(v_lo, v_hi, BLOCK):
        idx_n = start + BLOCK + offs2
        x_n = tl.load(rowp + idx_n, mask=idx_n < v_hi, other=float("-inf"))
        xf = x.to(tl.float32) * invT
        nm = tl.maximum(m_l, tl.max(xf, axis=0))
        ms = tl.where(nm == float("-inf"), 0.0, nm)
        sc = tl.exp(m_l - ms)
        e = tl.exp(xf - ms[None, :])
        z_l = z_l * sc + tl.sum(e, axis=0)
        if WANT_A:
            a_l = a_l * sc + tl.sum(tl.where(xf > xd, e, 0.0), axis=0)
            # ties with the draft's value: the nucleus keeps all or none of them
            t_l += tl.sum(((xf == xd) & ((start + offs2) < v_hi)).to(tl.int32), axis=0)
        if WANT_N:
            n_l += tl.sum((xf > xd).to(tl.int32), axis=0)
        m_l = nm
        x = x_n
    m = tl.max(m_l, axis=0)
    w_l = tl.where(m_l == float("-inf"), 0.0, tl.exp(m_l - m))
    return (m, tl.sum(z_l * w_l, axis=0), tl.sum(a_l * w_l, axis=0), tl.sum(n_l, axis=0),
            tl.sum(t_l, axis=0))


@triton.jit(do_not_specialize=["B", "D", "NS"])
def _sample_stats_kernel(
    logits_ptr, stride_lr, cand_ptr, stride_cb, stride_cs, temp_ptr, stats_ptr,
    B, V, SLICE, D, NS,
    HAS_TEMP: tl.constexpr, WANT_A: tl.constexpr, WANT_N: tl.constexpr,
    U: tl.constexpr, S: tl.constexpr,
):
    """The sampler's first pass, split: grid (D*B*NS,) (one axis, as in the greedy rows
    kernel), program (row, s) writes the stats of vocab slice s of one row (max, normaliser,
    mass and count above the draft token, count equal to it, fp32 [row, s, _NSTAT]).  Few
    registers, so many programs per SM: the pass is bandwidth-bound instead of one
    latency-bound program per row walking the whole vocabulary."""
    pid = tl.program_id(0)
    rb = pid // NS
    s = pid - rb * NS
    j = rb // B
    b = rb - j * B
    row = b * D + j
    rowp = logits_ptr + row.to(tl.int64) * stride_lr
    invT = 1.0
    if HAS_TEMP:
        invT = 1.0 / tl.load(temp_ptr + b).to(tl.float32)
    d, dval, xd = _draft_logit(rowp, cand_ptr, stride_cb, stride_cs, b, j, D, V, invT)
    v_lo = s * SLICE
    m, z, a, n, t = _row_stats(rowp, invT, xd, v_lo, tl.minimum(v_lo + SLICE, V), WANT_A,
                               WANT_N, U, S)
    out = stats_ptr + (row.to(tl.int64) * NS + s) * _NSTAT
    tl.store(out, m)
    tl.store(out + 1, z)
    tl.store(out + 2, a)
    tl.store(out + 3, n.to(tl.float32))
    tl.store(out + 4, t.to(tl.float32))


@triton.jit
def _slice_max_and_sum(stats_ptr, row, NS, NS_P2: tl.constexpr):
    """(slice index, pointer to each slice's stats, max, sum exp(x - slice max)) of a row's
    vocab slices (split stats)."""
    sl = tl.arange(0, NS_P2)
    base = stats_ptr + (row.to(tl.int64) * NS + sl) * _NSTAT
    ms = tl.load(base, mask=sl < NS, other=float("-inf"))
    zs = tl.load(base + 1, mask=sl < NS, other=0.0)
    return sl, base, ms, zs


@triton.jit
def _combine_stats(stats_ptr, row, NS, NS_P2: tl.constexpr):
    """(m, z, mass above the draft, count above the draft, count equal to the draft) of a
    whole row from its slices."""
    sl, base, ms, zs = _slice_max_and_sum(stats_ptr, row, NS, NS_P2)
    smask = sl < NS
    as_ = tl.load(base + 2, mask=smask, other=0.0)
    ns = tl.load(base + 3, mask=smask, other=0.0)
    ts = tl.load(base + 4, mask=smask, other=0.0)
    m = tl.max(ms, axis=0)
    w = tl.where(ms == float("-inf"), 0.0, tl.exp(ms - m))
    return (m, tl.sum(zs * w, axis=0), tl.sum(as_ * w, axis=0), tl.sum(ns, axis=0).to(tl.int32),
            tl.sum(ts, axis=0).to(tl.int32))


@triton.jit
def _scan_start(stats_ptr, row, NS, SLICE, m, d_excl, ed, target, NS_P2: tl.constexpr):
    """(start, carry) for `_scan` from the split stats: the first vocab slice whose running
    mass (exp(x - m), token ``d_excl`` taken out of its slice) passes ``target``, and the
    mass before it; (0, 0) if rounding leaves no slice."""
    sl, _base, ms, zs = _slice_max_and_sum(stats_ptr, row, NS, NS_P2)
    w = tl.where(ms == float("-inf"), 0.0, zs * tl.exp(ms - m))
    w = tl.where((d_excl >= 0) & (sl == d_excl // SLICE), tl.maximum(w - ed, 0.0), w)
    cs = tl.cumsum(w, axis=0)
    first = tl.min(tl.where((sl < NS) & (cs > target), sl, NS_P2), axis=0)
    carry = tl.sum(tl.where(sl < first, w, 0.0), axis=0)
    found = first < NS
    return tl.where(found, first * SLICE, 0), tl.where(found, carry, 0.0)


@triton.jit
def _top_p_by_rejection(rowp, invT, m, z, V, topp, d, dval, ed, a_d, pd, coin, u0, seed,
                        thr_single, thr_acc, stats_ptr, row, NS, SLICE, STATS: tl.constexpr,
                        NS_P2: tl.constexpr, U: tl.constexpr, S: tl.constexpr,
                        MAXTRY: tl.constexpr):
    """Top-p (alone) without the nucleus threshold, for a row whose draft is not accepted on
    the fast path: (decided, token, fresh uniform).

    The nucleus is the set of tokens t whose mass above them, F(t) = sum exp(x - m) over the
    tokens with a larger key, is < top_p * z (the same set `_search` finds: t is kept iff its
    key >= tau).  A kept draft has p'(d) = p(d) z / e_kept in [p(d), p(d) / top_p], so the
    rejection is certain when the coin is above p(d) / top_p (and a draft outside the nucleus
    is always rejected); otherwise (a band of probability ~ p(d) (1 / top_p - 1)) decided is
    0 and the caller takes the exact path.  When decided, the residual token (kept tokens but
    the draft, weights exp(x - m)) is drawn by rejection: draw from all tokens but the draft
    (one scan, started in the right vocab slice from the split stats), keep the draw if it is
    in the nucleus (one pass for F), else draw again with a Philox uniform; the accepted draw
    is exactly distributed as the renormalised nucleus.  Each draw lands in the nucleus with
    probability >= (top_p z - e_d) / (z - e_d), ~top_p for the bonus row.  Two passes instead
    of the threshold search's ~10-16; the token differs from SGLang's for the same coin
    (inverse CDF of the renormalised nucleus) but has the same distribution.  token < 0: all
    MAXTRY draws missed; the caller then samples exactly with the fresh uniform (the first one
    is no longer uniform once its draw was rejected)."""
    BLOCK: tl.constexpr = U * S
    kept_d = dval & (a_d < topp * z)
    hi = tl.where(kept_d, pd / topp, 0.0)
    decided = (coin > hi / thr_acc) & (hi < thr_single)
    tok = tl.cast(-1, tl.int32)
    if decided:
        d_excl = tl.where(dval, d, -1)
        w_total = z - tl.where(dval, ed, 0.0)
        u = u0
        t = tl.cast(0, tl.int32)
        while (tok < 0) & (t < MAXTRY):
            if t > 0:
                u = tl.rand(seed, t)
            target = u * w_total
            start = tl.cast(0, tl.int32)
            carry = tl.cast(0.0, tl.float32)
            if STATS:
                start, carry = _scan_start(stats_ptr, row, NS, SLICE, m, d_excl, ed, target,
                                           NS_P2)
            c = _scan(rowp, invT, m, V, -2147483647, 0.0, d_excl, 1.0, rowp, target, start,
                      carry, False, False, BLOCK)
            xc = tl.load(rowp + c).to(tl.float32) * invT
            above, _unused = _kept_mass(rowp, invT, m, V, _key(xc) + 1, 0.0, -1, False, U, S)
            if above < topp * z:
                tok = c
            t += 1
    return decided, tok, tl.rand(seed, tl.cast(MAXTRY, tl.int32))


@triton.jit
def _sample_row(
    logits_ptr, stride_lr, cand_ptr, stride_cb, stride_cs, coins_ptr, stride_ub, stride_us,
    coins_final_ptr, temp_ptr, topk_ptr, topp_ptr, minp_ptr, dprob_ptr, stride_qb, stride_qs,
    buf_k_ptr, buf_v_ptr, stats_ptr, b, j, V, thr_single, thr_acc, D, NS, SLICE,
    HAS_TEMP: tl.constexpr, HAS_TOPK: tl.constexpr, HAS_TOPP: tl.constexpr,
    HAS_MINP: tl.constexpr, CLASSIC: tl.constexpr, U: tl.constexpr, S: tl.constexpr,
    CAP: tl.constexpr, CI: tl.constexpr, STATS: tl.constexpr, NS_P2: tl.constexpr,
    TOPP_REJECT: tl.constexpr,
):
    BLOCK: tl.constexpr = U * S
    row = b * D + j
    rowp = logits_ptr + row.to(tl.int64) * stride_lr
    invT = 1.0
    if HAS_TEMP:
        invT = 1.0 / tl.load(temp_ptr + b).to(tl.float32)
    has_draft = j < D - 1
    d, dval, xd = _draft_logit(rowp, cand_ptr, stride_cb, stride_cs, b, j, D, V, invT)
    dsafe = tl.where(dval, d, 0)

    # ---- pass 1: max, normaliser, count / mass above the draft token (from the split stats
    # kernel's slices when STATS, else read here)
    if STATS:
        m, z, a_d, n_d, t_d = _combine_stats(stats_ptr, row, NS, NS_P2)
    else:
        m, z, a_d, n_d, t_d = _row_stats(rowp, invT, xd, 0, V, HAS_TOPP, HAS_TOPK, U, S)
    ed = tl.exp(xd - m)
    pd = tl.where(dval, ed / z, 0.0)

    topk = V
    if HAS_TOPK:
        topk = tl.load(topk_ptr + b).to(tl.int32)
    use_k = (topk > 0) & (topk < V)
    topp = 1.0
    if HAS_TOPP:
        topp = tl.load(topp_ptr + b).to(tl.float32)
    use_p = topp < 1.0
    minp = 0.0
    if HAS_MINP:
        minp = tl.load(minp_ptr + b).to(tl.float32)
    use_mp = minp > 0.0

    # ---- is the draft token certainly kept?  (then p(d) <= p'(d))
    sure = dval
    if HAS_TOPK:
        sure = sure & ((~use_k) | (n_d < topk))
    if HAS_TOPP:
        e_base = tl.where(use_k, a_d + ed, z)
        sure = sure & ((~use_p) | (a_d < topp * e_base))
    if HAS_MINP:
        sure = sure & ((~use_mp) | (ed >= minp))

    coin = tl.load(coins_ptr + b * stride_ub + j * stride_us, mask=has_draft, other=2.0)
    q_d = 0.0
    if CLASSIC:
        q_d = tl.load(dprob_ptr + b.to(tl.int64) * stride_qb + j * stride_qs + dsafe, mask=dval,
                      other=0.0).to(tl.float32)
        fast = sure & (coin * q_d < pd)
    else:
        fast = sure & ((coin <= pd / thr_acc) | (pd >= thr_single))

    # ---- the draft at the nucleus edge (top-p alone): the tokens above it hold less than top_p
    # of the mass, with it and its ties at least top_p, so the nucleus is exactly the tokens
    # >= x_d; its threshold and mass are known from pass 1 (a dominant draft, p(d) >= top_p,
    # is the usual case: no threshold search and no redraws for it)
    edge = tl.full([], 0, tl.int1)
    if HAS_TOPP:
        edge = dval & use_p & (a_d < topp * z) & (a_d + t_d.to(tl.float32) * ed >= topp * z)
        if HAS_TOPK:
            edge = edge & (~use_k)
        if HAS_MINP:
            edge = edge & (~use_mp)

    acc = fast.to(tl.int32)
    tok = tl.cast(0, tl.int32)
    exact = acc == 0
    u = tl.load(coins_final_ptr + b).to(tl.float32)
    if TOPP_REJECT:
        go = exact & use_p & (~edge)
        if HAS_TOPK:
            go = go & (~use_k)
        if HAS_MINP:
            go = go & (~use_mp)
        if go:
            seed = u.to(tl.int32, bitcast=True) ^ (row * 1000003)
            decided, tok_r, u_fresh = _top_p_by_rejection(
                rowp, invT, m, z, V, topp, d, dval, ed, a_d, pd, coin, u, seed, thr_single,
                thr_acc, stats_ptr, row, NS, SLICE, STATS, NS_P2, U, S, 4)
            drawn = decided & (tok_r >= 0)
            tok = tl.where(drawn, tok_r, tok)
            exact = exact & (~drawn)
            u = tl.where(decided & (tok_r < 0), u_fresh, u)
    if exact:
        # ---- exact kept set
        tau = tl.cast(-2147483647, tl.int32)  # every finite key (and -inf's) is >= this
        e_k = z
        khi0 = _key(m)
        settled = tl.cast(0, tl.int32)
        if edge:
            tau = _key(xd)
        else:
            if HAS_TOPK:
                if use_k:
                    tau, _unused = _search(rowp, invT, m, V, tau - 1, khi0, topk, -1.0,
                                           buf_k_ptr, buf_v_ptr, False, U, S, CAP, CI)
                    e_k, _unused = _kept_mass(rowp, invT, m, V, tau, 0.0, -1, False, U, S)
            if HAS_TOPP:
                if use_p:
                    # a kept draft is accepted iff the kept mass <= win (SGLang's rule solved
                    # for it): let the search stop once a probe settles that
                    win = -1.0
                    if not CLASSIC:
                        win = tl.where(sure & has_draft,
                                       tl.maximum(ed / (coin * thr_acc), ed / thr_single), -1.0)
                    # tokens more than C below the max cannot be in the nucleus:
                    # V * exp(-C) < (1 - top_p) <= (1 - top_p) * e_k
                    cut = m - (tl.log(V / (1.0 - topp)) + 1.0)
                    klo = tl.maximum(tau, _key(cut)) - 1
                    tau, settled = _search(rowp, invT, m, V, klo, khi0, topp * e_k, win,
                                           buf_k_ptr, buf_v_ptr, True, U, S, CAP, CI)
        if settled != 0:
            acc = tl.cast(1, tl.int32)
        else:
            d_excl = -1
            if not CLASSIC:
                d_excl = tl.where(dval, d, -1)
            if edge:
                e_kept = a_d + t_d.to(tl.float32) * ed
                w_ex = tl.where(d_excl >= 0, a_d + (t_d - 1).to(tl.float32) * ed, e_kept)
                kept_d = dval
            elif HAS_MINP:
                e_kept, w_ex = _kept_mass(rowp, invT, m, V, tau, minp, d_excl, True, U, S)
                kept_d = dval & (_key(xd) >= tau) & ((~use_mp) | (ed >= minp))
            else:
                e_kept, w_ex = _kept_mass(rowp, invT, m, V, tau, minp, d_excl, False, U, S)
                kept_d = dval & (_key(xd) >= tau)
            ppd = tl.where(kept_d, ed / e_kept, 0.0)
            if has_draft:
                if CLASSIC:
                    acc = (coin * q_d < ppd).to(tl.int32)
                else:
                    acc = ((coin <= ppd / thr_acc) | (ppd >= thr_single)).to(tl.int32)
            if acc == 0:
                inv_ek = 1.0 / e_kept
                qrow = dprob_ptr + b.to(tl.int64) * stride_qb + j * stride_qs
                if CLASSIC:
                    if has_draft:
                        r = _residual_sum(rowp, invT, m, V, tau, minp, inv_ek, qrow, HAS_MINP,
                                          U, S)
                        tok = _scan(rowp, invT, m, V, tau, minp, -1, inv_ek, qrow, u * r, 0,
                                    0.0, HAS_MINP, True, BLOCK)
                    else:
                        tok = _scan(rowp, invT, m, V, tau, minp, -1, inv_ek, qrow, u * w_ex, 0,
                                    0.0, HAS_MINP, False, BLOCK)
                else:
                    tok = _scan(rowp, invT, m, V, tau, minp, d_excl, inv_ek, qrow, u * w_ex, 0,
                                0.0, HAS_MINP, False, BLOCK)
    return acc, tok


@triton.jit(do_not_specialize=["B", "D", "NS", "SLICE"])
def _sample_chain_kernel(
    logits_ptr, stride_lr, cand_ptr, stride_cb, stride_cs, coins_ptr, stride_ub, stride_us,
    coins_final_ptr, temp_ptr, topk_ptr, topp_ptr, minp_ptr, dprob_ptr, stride_qb, stride_qs,
    predicts_ptr, accept_index_ptr, accept_num_ptr, accept_lens_ptr,
    row_tok_ptr, buf_k_ptr, buf_v_ptr, counter_ptr, stop_ptr, stats_ptr,
    B, V, thr_single, thr_acc, D, NS, SLICE,
    D_P2: tl.constexpr, HAS_TEMP: tl.constexpr, HAS_TOPK: tl.constexpr,
    HAS_TOPP: tl.constexpr, HAS_MINP: tl.constexpr, CLASSIC: tl.constexpr,
    WRITE_LENS: tl.constexpr, U: tl.constexpr, S: tl.constexpr, CAP: tl.constexpr,
    CI: tl.constexpr, STATS: tl.constexpr, NS_P2: tl.constexpr, TOPP_REJECT: tl.constexpr,
):
    pid = tl.program_id(0)
    j = pid // B
    b = pid - j * B
    row = b * D + j
    go = tl.cast(1, tl.int32)
    if j > 0:
        flag = _uniform_read(stop_ptr + b)
        if flag < j:
            go = 0
    if go != 0:
        acc, tok = _sample_row(
            logits_ptr, stride_lr, cand_ptr, stride_cb, stride_cs, coins_ptr, stride_ub,
            stride_us, coins_final_ptr, temp_ptr, topk_ptr, topp_ptr, minp_ptr, dprob_ptr,
            stride_qb, stride_qs, buf_k_ptr + row.to(tl.int64) * CAP,
            buf_v_ptr + row.to(tl.int64) * CAP, stats_ptr, b, j, V, thr_single, thr_acc,
            D, NS, SLICE, HAS_TEMP, HAS_TOPK, HAS_TOPP, HAS_MINP, CLASSIC, U, S, CAP, CI, STATS,
            NS_P2, TOPP_REJECT)
        tl.store(row_tok_ptr + row, tok)
        if (acc == 0) & (j < D - 1):
            tl.atomic_min(stop_ptr + b, j)

    tl.debug_barrier()
    old = tl.atomic_add(counter_ptr + b, 1)
    if old == D - 1:
        stop = tl.load(stop_ptr + b, volatile=True)
        J = tl.minimum(stop, D - 1)
        bonus = tl.load(row_tok_ptr + b * D + J, volatile=True)
        _write_outputs(cand_ptr, stride_cb, stride_cs, predicts_ptr, accept_index_ptr,
                       accept_num_ptr, accept_lens_ptr, b, J, bonus, D, D_P2, WRITE_LENS)
        tl.store(counter_ptr + b, 0)
        tl.store(stop_ptr + b, _BIG)


# --------------------------------------------------------------------------------------------
# Python wrappers
# --------------------------------------------------------------------------------------------

_state_lock = threading.Lock()
_kept: Dict[Tuple, torch.Tensor] = {}  # (device, stream, name) -> buffer
_kept_generation = 0  # counts the buffers `_kept_buffers` replaced (`_plan_buffers`' memo)
_kept_memo: Dict[Tuple, Tuple] = {}  # (launch plan, stream) -> (generation, buffers)
_sm_count: Dict[Tuple, int] = {}


# The compiled kernel's own launcher after a plan's first (JIT) launch, or with
# ADAPTIVE_SPEC_TRITON_LAUNCH=jit Triton's JIT every call (kernels/launch.py; on the H200,
# session 25, B = 1, k = 3: a greedy call 27.6 us through the JIT, 16.7 us launched directly)
_launch_greedy_rows = DirectLauncher(_greedy_rows_kernel)
_launch_greedy_chain = DirectLauncher(_greedy_chain_kernel)
_launch_sample_stats = DirectLauncher(_sample_stats_kernel)
_launch_sample_chain = DirectLauncher(_sample_chain_kernel)


try:  # the C entry point behind torch.cuda.is_current_stream_capturing() (a flag; with the
    # stream lookup through the Python API ~7 us of a greedy call, session 12's host profile)
    _capturing = torch._C._cuda_isCurrentStreamCapturing
except AttributeError:  # pragma: no cover - a torch without CUDA entry points
    _capturing = torch.cuda.is_current_stream_capturing


def _stream_key(device: torch.device) -> Tuple:
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return (device.type, index, _raw_stream(index))
    return (device.type, device.index, 0)


def _kept_buffers(device: torch.device, *specs: Tuple[str, int, torch.dtype, Optional[int]]) -> list:
    """One buffer per (name, elements, dtype, fill), each at least that large (the kernels get
    pointers only), kept per (device, stream, name) between calls instead of allocated in each:
    at small batches a call costs its host time. `fill` None: uninitialised work space; else
    the value a new buffer starts with (the arrival counters' 0, the stop flags' BIG: the
    kernels reset the entries they use, so no call needs a memset). Safe because calls on one
    stream run in order: the next call's kernels start after the last one's finished. Under
    CUDA graph capture fresh tensors (the graph's pool keeps them, the capture records their
    fills), since a kept buffer could be replaced by a larger one after the capture."""
    global _kept_generation
    if device.type == "cuda" and _capturing():
        return [_new_buffer(numel, dtype, fill, device) for _, numel, dtype, fill in specs]
    stream = _stream_key(device)
    out = []
    for name, numel, dtype, fill in specs:
        key = (stream, name)
        buf = _kept.get(key)
        if buf is None or buf.numel() < numel or buf.dtype != dtype:
            with _state_lock:
                buf = _kept.get(key)
                if buf is None or buf.numel() < numel or buf.dtype != dtype:
                    grown = 0 if buf is None or buf.dtype != dtype else 2 * buf.numel()
                    buf = _kept[key] = _new_buffer(max(numel, grown), dtype, fill, device)
                    _kept_generation += 1
        out.append(buf)
    return out


def _plan_buffers(plan) -> list:
    """`_kept_buffers` of a launch plan's specs, remembered per (plan, stream) until a kept
    buffer is replaced (the generation count): one dict lookup a call instead of one per
    buffer and a stream-object lookup. (An older buffer a memo still holds would be as
    correct: each buffer's counters and flags are reset by the kernels that use it.)"""
    if plan.device_index < 0 or _capturing():  # the CPU interpreter; a capture's own buffers
        return _kept_buffers(plan.device, *plan.specs)
    memo_key = (plan, _raw_stream(plan.device_index))
    hit = _kept_memo.get(memo_key)
    if hit is not None and hit[0] == _kept_generation:
        return hit[1]
    bufs = _kept_buffers(plan.device, *plan.specs)
    with _state_lock:
        if len(_kept_memo) >= 4 * _MAX_PLANS:
            _kept_memo.clear()
        _kept_memo[memo_key] = (_kept_generation, bufs)
    return bufs


def _new_buffer(numel: int, dtype: torch.dtype, fill: Optional[int], device: torch.device):
    if fill is None:
        return torch.empty(numel, dtype=dtype, device=device)
    return torch.full((numel,), fill, dtype=dtype, device=device)


def _sync_specs(batch: int) -> Tuple:
    """Per-request arrival counters (0) and stop flags (BIG), for `_kept_buffers`."""
    n = max(batch, 256)
    return (("arrivals", n, torch.int32, 0), ("stop_flags", n, torch.int32, _BIG_PY))


def _num_sms(device: torch.device) -> int:
    key = (device.type, device.index)
    n = _sm_count.get(key)
    if n is None:
        if device.type == "cuda":
            n = torch.cuda.get_device_properties(device).multi_processor_count
        else:
            n = 4
        _sm_count[key] = n
    return n


# Plain integer helpers: triton.cdiv and triton.next_power_of_2 called from Python go through
# Triton's JIT-function call path, which took half of the greedy wrapper's host time (cProfile).
def _cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _p2(n: int, floor: int = 2) -> int:
    n = int(n)
    return max(floor, 1 << (n - 1).bit_length() if n > 1 else 1)


# Fixed lower bounds of the constexpr sizes keep the number of compiled variants small
# (D <= 8 and up to 64 vocab slices share one greedy kernel).
_D_P2_MIN = 8
_MAX_SLICES = 64

# "rejection" or "exact": see chain_verify_sampling's top_p_method
DEFAULT_TOP_P_METHOD = "rejection"


def _check_common(logits: torch.Tensor, candidates: torch.Tensor):
    if logits.dim() != 2:
        raise ValueError(f"logits must be [B*D, V], got {tuple(logits.shape)}")
    if candidates.dim() != 2:
        raise ValueError(f"candidates must be [B, D], got {tuple(candidates.shape)}")
    bsz, d = candidates.shape
    if logits.shape[0] != bsz * d:
        raise ValueError(f"logits rows {logits.shape[0]} != B*D = {bsz}*{d}")
    if logits.stride(1) != 1:
        raise ValueError("logits must be contiguous along the vocab dimension")
    if logits.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"unsupported logits dtype {logits.dtype}")
    return bsz, d


def _outputs(bsz, d, like, predicts, accept_index, accept_token_num):
    """The three outputs: allocated on `like`'s device where not passed in, checked where.
    (One allocation with three views is no cheaper: a view costs about what an allocation
    does, ~1.5-2.5 us of a host's Python.)"""
    if predicts is None:
        predicts = torch.empty(bsz * d, dtype=torch.int32, device=like.device)
    elif not _int32_output(predicts, bsz * d):
        raise ValueError(f"predicts must be a contiguous int32 tensor with {bsz * d} elements")
    if accept_index is None:
        accept_index = torch.empty((bsz, d), dtype=torch.int32, device=like.device)
    elif not _int32_output(accept_index, bsz * d):
        raise ValueError(f"accept_index must be a contiguous int32 tensor with {bsz * d} elements")
    if accept_token_num is None:
        accept_token_num = torch.empty(bsz, dtype=torch.int32, device=like.device)
    elif not _int32_output(accept_token_num, bsz):
        raise ValueError(f"accept_token_num must be a contiguous int32 tensor with {bsz} elements")
    return predicts, accept_index, accept_token_num


def _aligned16(*tensors: Optional[torch.Tensor]) -> bool:
    """Whether every tensor given (None: left out) starts at a 16-byte aligned address, what
    Triton specialises a pointer on: a planned direct launch needs all of them aligned."""
    addresses = 0
    for t in tensors:
        if t is not None:
            addresses |= t.data_ptr()
    return not addresses & 15


def _int32_output(t: torch.Tensor, numel: int) -> bool:
    return t.dtype == torch.int32 and t.numel() == numel and t.is_contiguous()


def _tile(block_size: Optional[int], num_warps: int, elem_size: int, lanes: Optional[int],
          v: int, vectors: int = 4):
    """(block_size, U, S) of a [U, S] tile: S lanes = one 16-byte vector per thread, U vectors
    per thread per tile; the default tile is `vectors` vectors per thread (at most the
    vocabulary)."""
    vector_lanes = num_warps * 32 * max(1, 16 // elem_size)
    if block_size is None:
        block_size = min(vectors * vector_lanes, _p2(v))
    if block_size & (block_size - 1):
        raise ValueError("block_size must be a power of two")
    lanes = min(vector_lanes if lanes is None else lanes, block_size)
    return block_size, block_size // lanes, lanes


def chain_verify_greedy(
    logits: torch.Tensor,
    candidates: torch.Tensor,
    predicts: Optional[torch.Tensor] = None,
    accept_index: Optional[torch.Tensor] = None,
    accept_token_num: Optional[torch.Tensor] = None,
    accept_lens: Optional[torch.Tensor] = None,
    *,
    block_size: Optional[int] = None,
    num_slices: Optional[int] = None,
    num_warps: Optional[int] = None,
    lanes: Optional[int] = None,
    programs_per_sm: Optional[float] = None,
    schedule: str = "rows",
):
    """Fused ``argmax`` + greedy chain verification (SGLang's ``verify_tree_greedy`` on a
    topk=1 chain).  ``logits`` [B*D, V] (fp32/fp16/bf16), ``candidates`` [B, D] integer (column 0
    the root, columns 1.. the drafts).  Returns ``(predicts, accept_index, accept_token_num)``;
    outputs passed in are written in place, ``accept_lens`` (optional) gets accept_token_num + 1.

    ``schedule``: "rows" (default since session 9) reads every (row, vocab slice) in its own
    program, all rows at once; "chain" (sessions 3-8) walks a request's rows one after the
    other in each slice's program. On the H200 "chain" took 79-115 us at B = 64, k = 3
    (SGLang's argmax + verify: 78 us, 2026-11-30-s9-kernels-bs64.json), latency-bound: a row
    waited for the previous one. "rows" has not run on a GPU yet (session 9 had no device
    time left); kernel_bench's tune sweep measures both.

    Launch knobs: ``block_size`` (elements per tile, default 2 x 16 bytes per thread),
    ``num_warps`` (4), ``num_slices`` (vocab slices per row; default: enough programs for
    ``programs_per_sm`` per SM, or with ``programs_per_sm`` None, `_greedy_slices`).
    """
    # Everything that depends on the shapes (checks, launch plan, work-buffer sizes, Triton's
    # specialisation) is worked out once per shape: at small batches a call costs its host time
    key = (logits.shape, logits.stride(), logits.dtype, candidates.shape, candidates.stride(),
           candidates.dtype, logits.get_device(), accept_lens is not None,
           (block_size, num_slices, num_warps, lanes, programs_per_sm, schedule))
    plan = _greedy_plans.get(key)
    if plan is None:
        plan = _new_greedy_plan(key, logits, candidates)
    predicts, accept_index, accept_token_num = _outputs(
        plan.bsz, plan.d, logits, predicts, accept_index, accept_token_num)
    if plan.bsz == 0:
        return predicts, accept_index, accept_token_num
    lens = accept_lens if accept_lens is not None else accept_token_num
    args = (logits, plan.stride_lr, candidates, plan.stride_cb, plan.stride_cs,
            predicts, accept_index, accept_token_num, lens, *_plan_buffers(plan), *plan.ints)
    # the work buffers come from torch's allocator (aligned); the caller's tensors may be views
    aligned = _aligned16(logits, candidates, predicts, accept_index, accept_token_num, lens)
    plan.launcher.planned(plan, plan.device_index, aligned, plan.grid, args, plan.meta)
    return predicts, accept_index, accept_token_num


class _LaunchPlan:
    """One wrapper's launch at one shape: what the per-call path only reads. Hashed by
    identity (the launcher's key for it): plans live in their cache for the process."""

    __slots__ = ("bsz", "d", "device", "device_index", "stride_lr", "stride_cb", "stride_cs",
                 "ints", "grid", "meta", "specs", "launcher")


_greedy_plans: Dict[Tuple, _LaunchPlan] = {}
_MAX_PLANS = 4096  # shapes a server sees: a few hundred; beyond this the cache starts again


def _new_greedy_plan(key: Tuple, logits: torch.Tensor, candidates: torch.Tensor) -> _LaunchPlan:
    block_size, num_slices, num_warps, lanes, programs_per_sm, schedule = key[-1]
    if schedule not in ("rows", "chain"):
        raise ValueError("schedule must be 'rows' or 'chain'")
    bsz, d = _check_common(logits, candidates)
    plan = _LaunchPlan()
    plan.bsz, plan.d, plan.device, plan.device_index = bsz, d, logits.device, logits.get_device()
    if bsz > 0:
        v = logits.shape[1]
        slice_len, ns, meta = _greedy_plan(bsz, d, v, logits.element_size(),
                                           _num_sms(logits.device), block_size, num_slices,
                                           num_warps or 4, lanes, programs_per_sm, schedule)
        plan.stride_lr, (plan.stride_cb, plan.stride_cs) = logits.stride(0), candidates.stride()
        plan.meta = dict(meta, WRITE_LENS=key[-2])
        # in the kernel's argument order: partial keys, partial indices, counters, stop flags
        plan.specs = (("greedy_part_key", bsz * ns * d, torch.int32, None),
                      ("greedy_part_idx", bsz * ns * d, torch.int32, None), *_sync_specs(bsz))
        if schedule == "rows":
            plan.ints, plan.grid, plan.launcher = (v, slice_len, bsz, d, ns), (ns * d * bsz,), \
                _launch_greedy_rows
        else:
            plan.ints, plan.grid, plan.launcher = (v, slice_len, d, ns), (bsz, ns), \
                _launch_greedy_chain
    with _state_lock:
        if len(_greedy_plans) >= _MAX_PLANS:
            _greedy_plans.clear()
        _greedy_plans[key] = plan
    return plan


@functools.lru_cache(maxsize=4096)
def _greedy_plan(bsz, d, v, elem_size, sms, block_size, num_slices, num_warps, lanes,
                 programs_per_sm, schedule):
    """(slice length, slices, launch meta) of one greedy launch shape; cached, since a server
    sees a few hundred shapes and the arithmetic was a fifth of the wrapper's host time."""
    block, u, lanes = _tile(block_size, num_warps, elem_size, lanes, v, vectors=2)
    rows = bsz * d if schedule == "rows" else bsz  # programs per vocab slice
    if num_slices is None and programs_per_sm is None:
        num_slices = _greedy_slices(rows, v, block, sms) if schedule == "rows" else None
    slice_len, ns = _slice_plan(num_slices, rows, v, block, sms, programs_per_sm or 8.0)
    return slice_len, ns, dict(D_P2=_p2(d, _D_P2_MIN), NS_P2=_MAX_SLICES, U=u, S=lanes,
                               num_warps=num_warps)


# Greedy "rows" launches of many rows: more programs than one wave, each slice at least
# GREEDY_MIN_SLICE elements; the programs of later rows then start after earlier rows may have
# flagged their request's mismatch and skip their reads. GPU time on the H200 (session 23,
# CUDA graphs of 20 calls, benchmarks/results/2026-12-01-s23-greedy-finalists.json, in the
# git history since session 39 (RESULTS-HISTORY.md says how to get it), drafts right w.p. 0.7): 25.9 us against 29.0 with 8 programs per SM at B = 64, k = 3, V = 128,256
# (SGLang's path 51.8), 100.8 against 151.3 at B = 256, k = 7; with every draft right, where
# every row is read, 29.3 against 29.1 (at most 4% slower, at B = 256, V = 32,000). Below
# GREEDY_MANY_ROWS rows 8 programs per SM stayed best (more, thinner slices cost up to 1.3x).
GREEDY_MANY_ROWS = 256
GREEDY_MANY_ROWS_PROGRAMS_PER_SM = 32
GREEDY_MIN_SLICE = 8192


def _greedy_slices(rows: int, v: int, block: int, sms: int) -> Optional[int]:
    """Vocab slices per row of a greedy "rows" launch (None: `_slice_plan`'s default)."""
    if rows < GREEDY_MANY_ROWS:
        return None
    return max(1, min(_cdiv(GREEDY_MANY_ROWS_PROGRAMS_PER_SM * sms, rows),
                      _cdiv(v, max(block, GREEDY_MIN_SLICE))))


def _per_request(x, bsz, dtype, device, name):
    if x is None:
        return None
    if not torch.is_tensor(x):
        return torch.full((bsz,), x, dtype=dtype, device=device)
    x = x.reshape(-1)
    if x.numel() != bsz:
        raise ValueError(f"{name} must have one value per request ({bsz}), got {x.numel()}")
    return x.to(dtype=dtype).contiguous()


def chain_verify_sampling(
    logits: torch.Tensor,
    candidates: torch.Tensor,
    coins: torch.Tensor,
    coins_final: torch.Tensor,
    temperatures=None,
    top_ks=None,
    top_ps=None,
    min_ps=None,
    draft_probs: Optional[torch.Tensor] = None,
    threshold_single: float = 1.0,
    threshold_acc: float = 1.0,
    predicts: Optional[torch.Tensor] = None,
    accept_index: Optional[torch.Tensor] = None,
    accept_token_num: Optional[torch.Tensor] = None,
    accept_lens: Optional[torch.Tensor] = None,
    *,
    block_size: Optional[int] = None,
    num_warps: Optional[int] = None,
    lanes: Optional[int] = None,
    cap: int = 128,
    split_stats: Optional[int] = None,
    top_p_method: Optional[str] = None,
):
    """Fused temperature / top-k / top-p / min-p + chain speculative sampling.

    ``coins`` [B, D] and ``coins_final`` [B] are uniforms in [0, 1) (SGLang's
    ``uniform_samples`` / ``uniform_samples_for_final_sampling``); the result is a deterministic
    function of them.  ``temperatures``/``top_ks``/``top_ps``/``min_ps``: per request tensors
    (or scalars, or None = off; top_k <= 0 or >= V and top_p >= 1 and min_p <= 0 mean off).
    Target-only acceptance (SGLang's default, with ``threshold_single``/``threshold_acc``) unless
    ``draft_probs`` [B, D-1 (or D), V] is given, which selects classic rejection sampling
    (SGLang's ``--speculative-use-rejection-sampling``).

    ``split_stats``: vocab slices per row of the first pass, run as its own launch
    (``_sample_stats_kernel``: few registers, many programs per SM) before the per-row kernel;
    0 reads the first pass inside the per-row kernel (sessions 3-8). Default (None): enough
    slices for ~8 programs per SM (since session 9).

    ``top_p_method`` (default ``DEFAULT_TOP_P_METHOD``, "rejection"): how a request with top-p
    alone (no top-k, no min-p; target-only acceptance) samples its residual token:
    "rejection" draws from the whole distribution and redraws until the draw is in the
    nucleus (`_top_p_by_rejection`: the same distribution, a different token for the same
    coin); "exact" finds the nucleus threshold first (~10-16 passes over the row; the token is
    a function of the coins, equal to SGLang's). The acceptance decisions are the same either
    way. On the H200 the threshold search was ~80% of the top-p time (759 us of GPU time at
    B = 64, k = 3 against 127 us with temperature only, 2026-11-30-s11-kernels-host-gpu1.json).
    """
    bsz, d = _check_common(logits, candidates)
    v = logits.shape[1]
    device = logits.device
    predicts, accept_index, accept_token_num = _outputs(bsz, d, logits, predicts, accept_index,
                                                        accept_token_num)
    if bsz == 0:
        return predicts, accept_index, accept_token_num
    coins = coins.reshape(bsz, -1)
    if coins.shape[1] < d - 1 or coins.dtype != torch.float32:
        raise ValueError("coins must be float32 [B, D] (column j decides draft j+1)")
    coins_final = coins_final.reshape(-1)
    if coins_final.numel() != bsz or coins_final.dtype != torch.float32:
        raise ValueError("coins_final must be float32 [B]")
    temps = _per_request(temperatures, bsz, torch.float32, device, "temperatures")
    tks = _per_request(top_ks, bsz, torch.int32, device, "top_ks")
    tps = _per_request(top_ps, bsz, torch.float32, device, "top_ps")
    mps = _per_request(min_ps, bsz, torch.float32, device, "min_ps")
    classic = draft_probs is not None
    if classic:
        if draft_probs.dim() != 3 or draft_probs.shape[0] != bsz or draft_probs.shape[2] != v \
                or draft_probs.shape[1] < d - 1 or draft_probs.stride(2) != 1:
            raise ValueError("draft_probs must be [B, >= D-1, V], contiguous along V")
        dprob, sqb, sqs = draft_probs, draft_probs.stride(0), draft_probs.stride(1)
    else:
        dprob, sqb, sqs = coins_final, 0, 0  # never read
    if cap & (cap - 1) or cap < 16:
        raise ValueError("cap must be a power of two >= 16")
    if split_stats is not None and split_stats < 0:
        raise ValueError("split_stats must be >= 0")
    top_p_method = DEFAULT_TOP_P_METHOD if top_p_method is None else top_p_method
    if top_p_method not in ("rejection", "exact"):
        raise ValueError("top_p_method must be 'rejection' or 'exact'")
    plan = _sampling_plan(bsz, d, v, logits.element_size(), _num_sms(device), block_size,
                          num_warps or 8, lanes, split_stats)
    u, lanes, num_warps, ns, s_len, s_u, s_lanes = plan
    counter, stop, row_tok, buf_k, buf_v, stats = _kept_buffers(
        device, *_sync_specs(bsz), ("sample_row_tok", bsz * d, torch.int32, None),
        ("sample_buf_k", bsz * d * cap, torch.int32, None),
        ("sample_buf_v", bsz * d * cap, torch.float32, None),
        ("sample_stats", max(1, bsz * d * ns * _NSTAT_PY), torch.float32, None))
    dummy_f = coins_final
    thr_acc = max(float(threshold_acc), 1e-9)
    # What Triton specialises these launches on, named once per call (not per argument): the
    # device (a compiled kernel's handle is per device), the integer arguments' values, the
    # dtypes that vary, the options; plus the tensors' alignment
    idx = logits.get_device()
    key = (idx, plan, bsz, d, v, logits.dtype, candidates.dtype, dprob.dtype, logits.stride(0),
           candidates.stride(), coins.stride(), sqb, sqs, temps is None, tks is None,
           tps is None, mps is None, classic, accept_lens is not None, cap, top_p_method)
    aligned = _aligned16(logits, candidates, coins, coins_final, dprob, predicts, accept_index,
                         accept_token_num, accept_lens, temps, tks, tps, mps)
    if ns > 0:
        _launch_sample_stats.planned(
            key, idx, aligned, (ns * d * bsz,),
            (logits, logits.stride(0), candidates, candidates.stride(0), candidates.stride(1),
             temps if temps is not None else dummy_f, stats, bsz, v, s_len, d, ns),
            dict(HAS_TEMP=temps is not None, WANT_A=tps is not None, WANT_N=tks is not None,
                 U=s_u, S=s_lanes, num_warps=4))
    _launch_sample_chain.planned(key, idx, aligned, (d * bsz,), (
        logits, logits.stride(0), candidates, candidates.stride(0), candidates.stride(1),
        coins, coins.stride(0), coins.stride(1), coins_final,
        temps if temps is not None else dummy_f,
        tks if tks is not None else counter,
        tps if tps is not None else dummy_f,
        mps if mps is not None else dummy_f,
        dprob, sqb, sqs,
        predicts, accept_index, accept_token_num,
        accept_lens if accept_lens is not None else accept_token_num,
        row_tok, buf_k, buf_v, counter, stop, stats,
        bsz, v, float(threshold_single), thr_acc, d, max(ns, 1), s_len), dict(
        D_P2=_p2(d, _D_P2_MIN), HAS_TEMP=temps is not None, HAS_TOPK=tks is not None,
        HAS_TOPP=tps is not None, HAS_MINP=mps is not None, CLASSIC=classic,
        WRITE_LENS=accept_lens is not None, U=u, S=lanes, CAP=cap, CI=min(32, cap),
        STATS=ns > 0, NS_P2=_MAX_SLICES,
        TOPP_REJECT=top_p_method == "rejection" and tps is not None and not classic,
        num_warps=num_warps))
    return predicts, accept_index, accept_token_num


@functools.lru_cache(maxsize=4096)
def _sampling_plan(bsz, d, v, elem_size, sms, block_size, num_warps, lanes, split_stats):
    """(U, S, warps, stats slices (0: first pass inline), stats slice length, stats U, stats S)
    of one sampling launch shape; cached like `_greedy_plan`.

    One program per row, 8 warps by default: faster than 4 at every point of the H200 launch
    sweeps (2026-11-30-s10-kernels-bs64.json: 127 vs 185 us at B = 1, k = 3; 724 vs 1,201 us
    at B = 64, k = 3; 1,314 vs 2,017 us at B = 256, k = 7, where session 9 still used 4).
    2 vectors per thread: no register spills on sm_90 with every option on (4 vectors: 255
    registers and spills; with 8 warps that launch failed on the H200, session 7,
    cudaErrorInvalidAddressSpace on 256 rows of N(0,1) logits), and the faster tile in the
    H200 launch sweep: 133 vs 145 us at one request (8 warps), 1,186 vs 1,340 us at 64 (4
    warps). The split first pass tiles as asked, with 4 warps."""
    _, u, s = _tile(block_size, num_warps, elem_size, lanes, v, vectors=2)
    ns, s_len, s_u, s_lanes = 0, 0, 1, 1
    if split_stats != 0:
        s_block, s_u, s_lanes = _tile(block_size, 4, elem_size, lanes, v, vectors=2)
        s_len, ns = _slice_plan(split_stats, bsz * d, v, s_block, sms)
    return u, s, num_warps, ns, s_len, s_u, s_lanes


def _slice_plan(num_slices: Optional[int], rows: int, v: int, block: int, sms: int,
                programs_per_sm: float = 8.0) -> Tuple[int, int]:
    """(slice length, slices) of a row's vocabulary: whole tiles, at most ``_MAX_SLICES``;
    ``num_slices`` None: enough for ``programs_per_sm`` programs per SM (``sms``) over
    ``rows`` rows."""
    if num_slices is None:
        target = int(programs_per_sm * sms)
        num_slices = max(1, min(_cdiv(target, rows), _cdiv(v, block)))
    num_slices = min(int(num_slices), _MAX_SLICES)
    slice_len = _cdiv(_cdiv(v, num_slices), block) * block
    return slice_len, _cdiv(v, slice_len)


def describe() -> str:
    return ("adaptive_spec.kernels.chain_verify: Triton greedy (fused argmax, sliced vocab, "
            "chain early exit) and sampling (fused temperature/top-k/top-p/min-p, target-only "
            "or classic rejection) chain verification")
