#!/usr/bin/env python
"""Chain-verify kernels vs SGLang 0.5.16's verify path, on one GPU.

    python benchmarks/kernel_bench.py --out benchmarks/results/YYYY-MM-DD-kernels.json

Needs CUDA, torch, triton and SGLang 0.5.16 (``sgl_kernel``) importable; our kernels are
loaded from ``kernels/`` of this checkout (installed package or not).  Writes the
``adaptive-spec-kernels/1`` schema (``../shared/design/results-schema.md``).

Both sides go from the same bf16 target logits [B*(k+1), V] to the same outputs (predicts,
accept_index, accept_token_num), each the way it would run inside ``eagle_sample``:

- greedy, ``impl: sglang``: output allocation (zeros / full -1 / empty), ``torch.argmax``,
  ``sgl_kernel.verify_tree_greedy``;  ``impl: triton``: ``chain_verify_greedy``.
- sampling (temperature 0.7 + top-p 0.9 per request; a few points also with top-k 50 or
  temperature only), ``impl: sglang``: allocation, ``softmax(logits / T)``,
  ``sgl_kernel.top_k_renorm_prob`` / ``top_p_renorm_prob``, ``zeros_like`` draft probs, the
  two ``torch.rand`` coin draws, ``sgl_kernel.tree_speculative_sampling_target_only``;
  ``impl: triton``: the same coin draws + ``chain_verify_sampling``.

Inputs: "LLM-like" rows (N(0, 1.5^2) logits plus one head token at ln(V) + U(1, 4), so the top
token holds roughly 40-95% of the mass).  Greedy scenarios: ``accept=0.7`` (each draft is the
target argmax with probability 0.7, else the second-best token: a near miss, the hardest
mismatch for a sliced early exit) and ``accept=1.0`` (every draft accepted: every row is read,
the worst case for the chain early exit).  Sampling scenarios: ``draft~target`` (drafts sampled
from the target distribution: realistic acceptance) and ``flat`` (N(0, 1) logits, no head,
random drafts: a nucleus of tens of thousands of tokens, the worst case of the top-p search).
Each row records the mean accepted drafts of its scenario.

Timing: CUDA events around each call, calls back to back (no sync in between) after warm-up;
median and p90 over the repetitions.  Checks recorded in ``checks`` and on the rows: greedy
outputs bit-identical to SGLang's at every point (and on rows with tied maxima); sampling
per-coin agreement with SGLang given the same coins; a chi-square of both implementations'
(accepted drafts, bonus token) distributions against the exact distribution with 200k samples.
One failing point never stops the run: it is recorded in ``errors`` (the rows stay valid for
the schema) and the run goes on.  A time budget (default 170 s) skips what is left.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib
import importlib.util
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_kernels():
    try:
        from adaptive_spec.kernels import chain_verify as cv
        from adaptive_spec.kernels import reference as ref
        return cv, ref
    except ImportError:
        pass
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    name = "adaptive_spec.kernels"
    try:
        importlib.import_module("adaptive_spec")
    except ImportError:
        pass
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "kernels" / "__init__.py", submodule_search_locations=[str(ROOT / "kernels")])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return importlib.import_module(name + ".chain_verify"), importlib.import_module(name + ".reference")


# ----------------------------------------------------------------------------------- timing

def _time_us(fn, reps, warmup=3):
    import torch

    if _SMOKE:
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t) * 1e6)
        ts.sort()
        return ts[len(ts) // 2], ts[-1]
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    ts = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))
    p90 = ts[min(len(ts) - 1, int(math.ceil(0.9 * len(ts))) - 1)]
    return ts[len(ts) // 2], p90


def _stream_us(fn, calls, rounds=2):
    """Per-call time of `calls` back-to-back calls between two synchronizes, best of `rounds`:
    max(host, GPU) per call when calls follow each other (a server's steady state), where
    `_time_us`'s event pair around each call also counts a call's host work before its first
    launch in series with its kernels."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from wrapper_cost import _per_call_us  # beside this file
    finally:
        sys.path.pop(0)
    if _SMOKE:  # the CPU smoke run: the row's shape only
        return _per_call_us(fn, calls=3, rounds=1, warmup=0)
    return _per_call_us(fn, calls=calls, rounds=rounds, sync=torch.cuda.synchronize, warmup=0)


def _graph_us(fn, calls=20):
    """Per-call GPU time of ``calls`` back-to-back calls replayed from one CUDA graph: the
    kernels' own time, without the host's launch cost that `_time_us` also sees when a call's
    host work outlasts its kernels (both paths at small batches)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()  # warm-up outside the capture (lazy inits, allocator)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        ts.append(start.elapsed_time(end) * 1000.0 / calls)
    del graph
    return sorted(ts)[len(ts) // 2]


@contextlib.contextmanager
def _launch_mode(impl):
    """``triton-direct`` / ``triton-jit``: our kernels launched directly (kernels/launch.py) /
    through Triton's JIT while inside; any other impl: the process's mode."""
    mode = {"triton-direct": "direct", "triton-jit": "jit"}.get(impl)
    if mode is None:
        yield
        return
    old = os.environ.get("ADAPTIVE_SPEC_TRITON_LAUNCH")
    os.environ["ADAPTIVE_SPEC_TRITON_LAUNCH"] = mode
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("ADAPTIVE_SPEC_TRITON_LAUNCH", None)
        else:
            os.environ["ADAPTIVE_SPEC_TRITON_LAUNCH"] = old


def _reps_for(fn, budget_s=0.12, lo=5, hi=60):
    import torch

    if _SMOKE:
        return 2
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    dt = max(time.perf_counter() - t, 1e-6)
    return int(min(hi, max(lo, budget_s / dt)))


# ----------------------------------------------------------------------------------- inputs

def _chain_tree(bsz, d, device):
    import torch

    idx = torch.arange(bsz * d, dtype=torch.int64, device=device).reshape(bsz, d)
    nxt = torch.arange(1, d + 1, dtype=torch.int64, device=device).repeat(bsz, 1)
    nxt[:, -1] = -1
    sib = torch.full((bsz, d), -1, dtype=torch.int64, device=device)
    return idx, nxt, sib


def _llm_like_logits(rows, v, device, gen):
    import torch

    x = torch.randn(rows, v, device=device, generator=gen).mul_(1.5)
    head = torch.randint(0, v, (rows,), device=device, generator=gen)
    boost = math.log(v) + 1.0 + 3.0 * torch.rand(rows, device=device, generator=gen)
    x[torch.arange(rows, device=device), head] += boost
    return x.to(torch.bfloat16)


def _greedy_drafts(logits, bsz, d, accept, gen):
    import torch

    top2 = torch.topk(logits, 2, dim=-1).indices.reshape(bsz, d, 2)
    take = torch.rand(bsz, d, device=logits.device, generator=gen) < accept
    nxt = torch.where(take, top2[..., 0], top2[..., 1])
    cand = torch.zeros(bsz, d, dtype=torch.int64, device=logits.device)
    cand[:, 1:] = nxt[:, :-1]
    return cand


def _sampled_drafts(logits, bsz, d, temp, gen):
    import torch

    cand = torch.zeros(bsz, d, dtype=torch.int64, device=logits.device)
    if d > 1:
        rows = logits.reshape(bsz, d, -1)[:, :-1].reshape(bsz * (d - 1), -1)
        p = torch.softmax(rows.float() / temp, dim=-1)
        cand[:, 1:] = torch.multinomial(p, 1, generator=gen).reshape(bsz, d - 1)
    return cand


# ----------------------------------------------------------------------------------- paths

class Paths:
    def __init__(self, cv, ref=None):
        import torch
        import torch.nn.functional as F

        self.sk_error = None
        if _SMOKE:
            sgl_kernel = _SmokeSglKernel(ref)
        else:
            try:
                import sgl_kernel
            except Exception as exc:  # noqa: BLE001 - our rows are still measured
                sgl_kernel, self.sk_error = None, f"{type(exc).__name__}: {exc}"
        self.cv, self.sk, self.torch, self.F = cv, sgl_kernel, torch, F

    def _need_sk(self):
        if self.sk is None:
            raise RuntimeError(f"sgl_kernel unavailable ({self.sk_error})")

    def sglang_greedy(self, logits, cand, tree):
        self._need_sk()
        torch = self.torch
        bsz, d = cand.shape
        dev = logits.device
        predict = torch.zeros(bsz * d, dtype=torch.int32, device=dev)
        accept_index = torch.full((bsz, d), -1, dtype=torch.int32, device=dev)
        num = torch.empty((bsz,), dtype=torch.int32, device=dev)
        target_predict = torch.argmax(logits, dim=-1).reshape(bsz, d)
        self.sk.verify_tree_greedy(
            predicts=predict, accept_index=accept_index, accept_token_num=num, candidates=cand,
            retrive_index=tree[0], retrive_next_token=tree[1], retrive_next_sibling=tree[2],
            target_predict=target_predict)
        return predict, accept_index, num

    def triton_greedy(self, logits, cand, tree=None):
        return self.cv.chain_verify_greedy(logits, cand)

    def sglang_sampling(self, logits, cand, tree, temps, top_ks, top_ps, coins=None, coins_final=None):
        self._need_sk()
        torch, F = self.torch, self.F
        bsz, d = cand.shape
        dev = logits.device
        predict = torch.zeros(bsz * d, dtype=torch.int32, device=dev)
        accept_index = torch.full((bsz, d), -1, dtype=torch.int32, device=dev)
        num = torch.empty((bsz,), dtype=torch.int32, device=dev)
        expanded_t = torch.repeat_interleave(temps, d, dim=0)
        probs = F.softmax(logits / expanded_t, dim=-1)
        if top_ks is not None:
            probs = self.sk.top_k_renorm_prob(probs, torch.repeat_interleave(top_ks, d, dim=0))
        if top_ps is not None:
            probs = self.sk.top_p_renorm_prob(probs, torch.repeat_interleave(top_ps, d, dim=0))
        probs = probs.reshape(bsz, d, -1)
        draft_probs = torch.zeros_like(probs)
        if coins is None:
            coins = torch.rand_like(cand, dtype=torch.float32, device=dev)
            coins_final = torch.rand((bsz,), dtype=torch.float32, device=dev)
        self.sk.tree_speculative_sampling_target_only(
            predicts=predict, accept_index=accept_index, accept_token_num=num, candidates=cand,
            retrive_index=tree[0], retrive_next_token=tree[1], retrive_next_sibling=tree[2],
            uniform_samples=coins, uniform_samples_for_final_sampling=coins_final,
            target_probs=probs, draft_probs=draft_probs, threshold_single=1.0, threshold_acc=1.0,
            deterministic=True)
        return predict, accept_index, num

    def triton_sampling(self, logits, cand, tree, temps, top_ks, top_ps, coins=None, coins_final=None):
        torch = self.torch
        bsz, _ = cand.shape
        if coins is None:
            coins = torch.rand_like(cand, dtype=torch.float32, device=logits.device)
            coins_final = torch.rand((bsz,), dtype=torch.float32, device=logits.device)
        return self.cv.chain_verify_sampling(logits, cand, coins, coins_final, temperatures=temps,
                                             top_ks=top_ks, top_ps=top_ps)


class _SmokeSglKernel:
    """CPU stand-in for sgl_kernel (--smoke-cpu only): plain torch with SGLang's semantics."""

    def __init__(self, ref):
        self.ref = ref

    def verify_tree_greedy(self, predicts, accept_index, accept_token_num, candidates,
                           retrive_index, retrive_next_token, retrive_next_sibling, target_predict):
        bsz, d = candidates.shape
        for b in range(bsz):
            j = 0
            accept_index[b, 0] = b * d
            while j < d - 1 and int(candidates[b, j + 1]) == int(target_predict[b, j]):
                predicts[b * d + j] = int(target_predict[b, j])
                j += 1
                accept_index[b, j] = b * d + j
            predicts[b * d + j] = int(target_predict[b, j])
            accept_token_num[b] = j

    def top_k_renorm_prob(self, probs, top_ks):
        return self.ref.renorm_probs_ref(probs.log(), top_ks=top_ks).to(probs.dtype)

    def top_p_renorm_prob(self, probs, top_ps):
        return self.ref.renorm_probs_ref(probs.log(), top_ps=top_ps).to(probs.dtype)

    def tree_speculative_sampling_target_only(self, predicts, accept_index, accept_token_num,
                                              candidates, retrive_index, retrive_next_token,
                                              retrive_next_sibling, uniform_samples,
                                              uniform_samples_for_final_sampling, target_probs,
                                              draft_probs, threshold_single, threshold_acc,
                                              deterministic):
        out = self.ref.chain_verify_sampling_ref(target_probs, candidates, uniform_samples,
                                                 uniform_samples_for_final_sampling,
                                                 threshold_single=threshold_single,
                                                 threshold_acc=threshold_acc)
        predicts.copy_(out[0]); accept_index.copy_(out[1]); accept_token_num.copy_(out[2])


_SMOKE = False


def _same(a, b):
    return all(bool((x == y).all()) for x, y in zip(a, b))


def _agree_frac(a, b, bsz, d):
    same = (a[0].reshape(bsz, d) == b[0].reshape(bsz, d)).all(1) & (a[1] == b[1]).all(1) & (a[2] == b[2])
    return float(same.float().mean())


# ----------------------------------------------------------------------------------- checks

def _chi2_sf(stat, dof):
    import torch

    return float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64),
                                         torch.tensor(stat / 2.0, dtype=torch.float64)))


def _chi2(counts, probs, n):
    exp = probs * n
    big = exp >= 5
    obs = list(counts[big].tolist()) + [float(counts[~big].sum())]
    ex = list(exp[big].tolist()) + [float(exp[~big].sum())]
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, ex) if e > 0)
    dof = sum(1 for e in ex if e > 0) - 1
    return stat, dof


def _distribution_check(paths, ref, device, n=200_000, v=128, d=4):
    """Chi-square of (accepted drafts, bonus token) of both implementations vs the exact law."""
    import torch

    gen = torch.Generator(device=device).manual_seed(7)
    base = _llm_like_logits(d, v, device, gen).float() * 0.5
    base = base.to(torch.bfloat16)
    temp, top_p = 0.7, 0.9
    p = ref.renorm_probs_ref(base.cpu(), temperatures=temp, top_ps=top_p)
    drafts = [int(torch.argmax(p[j])) for j in range(d - 1)]  # acceptance ~0.4-0.8 per step
    _, joint = ref.chain_outcome_distribution(p, drafts)
    logits = base.repeat(n, 1)
    cand = torch.zeros(n, d, dtype=torch.int64, device=device)
    cand[:, 1:] = torch.tensor(drafts, device=device)
    temps = torch.full((n, 1), temp, device=device)
    tps = torch.full((n,), top_p, device=device)
    tree = _chain_tree(n, d, device)
    out = {}
    counts_all = {}
    for impl in ("triton", "sglang"):
        fn = getattr(paths, impl + "_sampling")
        pr, _, num = fn(logits, cand, tree, temps, None, tps)
        num = num.long()
        bonus = pr.reshape(n, d).gather(1, num[:, None]).squeeze(1).long()
        counts = torch.zeros(d * v, dtype=torch.float64, device=device)
        counts.index_add_(0, num * v + bonus, torch.ones(n, dtype=torch.float64, device=device))
        counts = counts.cpu()
        counts_all[impl] = counts
        stat, dof = _chi2(counts, joint.flatten(), n)
        emp = counts.reshape(d, v) / n
        out[impl] = dict(chi2=round(stat, 2), dof=dof, p_value=_chi2_sf(stat, dof),
                         impossible_outcomes=int(counts[joint.flatten() == 0].sum()),
                         max_abs_cell_error=float((emp - joint).abs().max()),
                         accept_len_freq=[round(float(x), 5) for x in emp.sum(1)],
                         accept_len_exact=[round(float(x), 5) for x in joint.sum(1)])
    out.update(n=n, vocab=v, steps=d - 1, temperature=temp, top_p=top_p,
               note="200k samples: a 1% shift of any accept-length probability is > 6 sigma")
    return out


def _greedy_tie_check(paths, device):
    import torch

    gen = torch.Generator(device=device).manual_seed(3)
    bsz, d, v = (4, 3, 200) if _SMOKE else (64, 4, 32000)
    logits = _llm_like_logits(bsz * d, v, device, gen)
    am = logits.float().argmax(-1)
    rows = torch.arange(bsz * d, device=device)
    later = (am + 1 + torch.randint(0, min(1000, v - 1), (bsz * d,), device=device, generator=gen)) % v
    earlier = torch.randint(0, v, (bsz * d,), device=device, generator=gen)
    logits[rows, later] = logits[rows, am]
    logits[rows[::3], earlier[::3]] = logits[rows[::3], am[::3]]
    tgt = logits.argmax(-1).reshape(bsz, d)
    cand = torch.zeros(bsz, d, dtype=torch.int64, device=device)
    cand[:, 1:] = tgt[:, :-1]
    flip = torch.rand(bsz, d - 1, device=device, generator=gen) < 0.3
    cand[:, 1:] = torch.where(flip, later.reshape(bsz, d)[:, :-1], cand[:, 1:])
    tree = _chain_tree(bsz, d, device)
    a = paths.triton_greedy(logits, cand)
    b = paths.sglang_greedy(logits, cand, tree)
    return dict(identical=_same(a, b), bsz=bsz, k=d - 1, vocab=v, rows_with_ties=bsz * d)


# ----------------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--bs", default="1,16,64,256")
    ap.add_argument("--k", default="1,3,7")
    ap.add_argument("--vocab", default="32000,128256,163840")
    ap.add_argument("--budget-s", type=float, default=170.0,
                    help="stop starting new points after this many seconds")
    ap.add_argument("--no-checks", action="store_true", help="skip the distribution check")
    ap.add_argument("--graph-timing", action="store_true",
                    help="also time each point's calls replayed from a CUDA graph (row field "
                         "us_graph: GPU time without the host's launch cost)")
    ap.add_argument("--no-tune", dest="tune", action="store_false",
                    help="skip the block-size / warps sweep of our kernels")
    ap.add_argument("--ops", default="greedy,sampling",
                    help="which verify kinds to time (comma list of greedy, sampling); for bisecting "
                         "a fault that needs earlier calls (session 8)")
    ap.add_argument("--scenarios", default="draft~target,flat",
                    help="sampling inputs to run (comma list of draft~target, flat)")
    ap.add_argument("--direct", action="store_true",
                    help="also time our kernels launched directly (impl triton-direct: "
                         "ADAPTIVE_SPEC_TRITON_LAUNCH=direct for its calls), in the same process; "
                         "impl triton uses the process's mode (direct by default since session "
                         "25: run with ADAPTIVE_SPEC_TRITON_LAUNCH=jit to set the JIT beside it)")
    ap.add_argument("--smoke-cpu", action="store_true",
                    help="exercise this script on CPU (Triton interpreter, torch stand-in for "
                         "sgl_kernel, tiny grid); timings are meaningless")
    args = ap.parse_args(argv)
    ops, scenarios = set(args.ops.split(",")), set(args.scenarios.split(","))
    if not ops <= {"greedy", "sampling"} or not scenarios <= {"draft~target", "flat"}:
        print("kernel_bench: --ops takes greedy,sampling and --scenarios draft~target,flat", file=sys.stderr)
        return 2

    global _SMOKE
    _SMOKE = args.smoke_cpu
    if _SMOKE:
        os.environ["TRITON_INTERPRET"] = "1"
        args.bs, args.k, args.vocab = "1,3", "1,3", "64,200"
    t_start = time.perf_counter()
    import torch
    import triton

    if _SMOKE:
        device = torch.device("cpu")
        torch.cuda.get_device_properties = lambda dev: type(
            "P", (), dict(major=0, minor=0, multi_processor_count=4))()
        torch.cuda.get_device_name = lambda dev: "cpu (smoke test)"
        torch.cuda.synchronize = lambda *a, **k: None
        torch.cuda.empty_cache = lambda: None
    elif not torch.cuda.is_available():
        print("kernel_bench: CUDA is required", file=sys.stderr)
        return 2
    else:
        device = torch.device("cuda")
    cv, ref = _load_kernels()
    paths = Paths(cv, ref)
    try:
        import sglang

        sglang_version = getattr(sglang, "__version__", "?")
    except Exception:
        sglang_version = "?"
    props = torch.cuda.get_device_properties(device)
    result = {
        "schema": "adaptive-spec-kernels/1",
        "date": _dt.date.today().isoformat(),
        "machine": (f"{torch.cuda.get_device_name(device)} (sm_{props.major}{props.minor}, "
                    f"{props.multi_processor_count} SMs), torch {torch.__version__}, "
                    f"triton {triton.__version__}, {platform.node()}"),
        "sglang_version": sglang_version,
        "command": "python benchmarks/kernel_bench.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "launch": (f"Triton kernels launched {cv.launch_mode()} (ADAPTIVE_SPEC_TRITON_LAUNCH); "
                   f"top-p alone: {cv.DEFAULT_TOP_P_METHOD}"),
        "timing": ("CUDA events per call, calls back to back after warm-up; median / p90"
                   "; us_stream: per call, `reps` calls back to back between two synchronizes "
                   "(best of 2: max(host, GPU) per call, a steady stream of calls)"
                   + ("; us_graph: per call, 20 calls replayed from one CUDA graph (median of 5)"
                      if args.graph_timing else "")),
        "inputs": ("bf16 logits; LLM-like rows N(0,1.5^2) + one head token at ln(V)+U(1,4); "
                   "greedy drafts: argmax w.p. `accept`, else the 2nd-best token; sampling: "
                   "T=0.7, top_p=0.9 (per-request tensors), drafts sampled from the target; "
                   "'flat' = N(0,1) logits, random drafts"),
        "rows": [],
        "errors": [],
        "checks": {},
    }
    rows, errors, checks = result["rows"], result["errors"], result["checks"]

    def record_error(point, exc):
        msg = f"{type(exc).__name__}: {exc}".strip()[:500]
        errors.append(dict(point, error=msg, trace=traceback.format_exc()[-1500:]))
        print("  ERROR", point, msg, file=sys.stderr)
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception:
            pass

    # first calls JIT-compile (flashinfer's sampling module behind sgl_kernel's renorm ops, our
    # Triton kernels): do it once up front so it is visible here and not inside a timing
    t0 = time.perf_counter()
    try:
        wl = torch.randn(8, 1000, device=device).to(torch.bfloat16)
        wc = torch.randint(0, 1000, (2, 4), device=device)
        wt = torch.ones(2, 1, device=device)
        wtree = _chain_tree(2, 4, device)
        for impl in ("sglang", "triton"):
            try:
                getattr(paths, impl + "_greedy")(wl, wc, wtree)
                getattr(paths, impl + "_sampling")(
                    wl, wc, wtree, wt, torch.full((2,), 5, dtype=torch.int32, device=device),
                    torch.full((2,), 0.9, device=device))
            except Exception as exc:  # noqa: BLE001
                record_error(dict(op="warmup", impl=impl), exc)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        record_error(dict(op="warmup"), exc)
    result["warmup_s"] = round(time.perf_counter() - t0, 1)
    print(f"warm-up (JIT) {result['warmup_s']} s", flush=True)

    def out_of_time(reserve=0.0):
        # the grid leaves time for the tuning sweep and the checks, the sweep for the checks
        return time.perf_counter() - t_start > args.budget_s - reserve

    bss = [int(x) for x in args.bs.split(",")]
    ks = [int(x) for x in args.k.split(",")]
    vocabs = [int(x) for x in args.vocab.split(",")]
    grid = [(v, k, bsz) for v in vocabs for k in ks for bsz in bss]
    first = (128256, 3, 64)  # the point the acceptance criteria name goes first
    if first in grid:
        grid.remove(first)
        grid.insert(0, first)
    extra_point = (vocabs[len(vocabs) // 2], 3)
    greedy_identical = []
    gen = torch.Generator(device=device).manual_seed(0)

    impls = ("sglang", "triton") + (("triton-direct",) if args.direct else ())

    def measure(point, calls, compare):
        """Time each implementation on its own; ``calls[impl] = (checked_call, timed_call)``.
        ``compare(outs)`` -> dict of fields for the triton row (needs both outputs).
        ``triton-direct`` (--direct): our calls again, launched directly."""
        res, outs, triton_row = {}, {}, None
        for impl in impls:
            fns = calls["triton" if impl == "triton-direct" else impl]
            try:
                with _launch_mode(impl):
                    outs[impl] = fns[0]()
                    reps = _reps_for(fns[1])
                    res[impl] = _time_us(fns[1], reps)
                    stream_us = _stream_us(fns[1], calls=reps)
                rows.append(dict(point, impl=impl, us_median=round(res[impl][0], 2),
                                 us_p90=round(res[impl][1], 2), reps=reps,
                                 us_stream=round(stream_us, 2),
                                 mean_accepted=round(float(outs[impl][2].float().mean()), 3)))
            except Exception as exc:  # noqa: BLE001
                record_error(dict(point, impl=impl), exc)
                continue
            if impl == "triton":
                triton_row = rows[-1]
            if args.graph_timing and not _SMOKE:
                try:
                    with _launch_mode(impl):
                        rows[-1]["us_graph"] = round(_graph_us(fns[1]), 2)
                except Exception as exc:  # noqa: BLE001
                    record_error(dict(point, impl=impl, op=point["op"] + ":graph"), exc)
            if impl == "triton-direct":
                if "sglang" in res:
                    rows[-1]["speedup"] = round(res["sglang"][0] / res[impl][0], 3)
                if "triton" in outs:  # the same kernel on the same inputs and coins
                    rows[-1]["identical_to_triton"] = _same(outs[impl], outs["triton"])
        if triton_row is not None:
            extra = {}
            if "sglang" in outs:
                try:
                    extra.update(compare(outs))
                except Exception as exc:  # noqa: BLE001
                    record_error(dict(point, impl="compare"), exc)
            if "sglang" in res:
                extra["speedup"] = round(res["sglang"][0] / res["triton"][0], 3)
            triton_row.update(extra)

    for v, k, bsz in grid:
        d = k + 1
        base = dict(bs=bsz, k=k, vocab=v, dtype="bfloat16")
        if out_of_time(reserve=40):
            errors.append(dict(base, error="skipped: time budget"))
            continue
        try:
            logits = _llm_like_logits(bsz * d, v, device, gen)
            tree = _chain_tree(bsz, d, device)
        except Exception as exc:  # noqa: BLE001
            record_error(dict(base, op="inputs"), exc)
            continue
        # ---- greedy
        for accept in ((0.7, 1.0) if "greedy" in ops else ()):
            point = dict(base, op="chain_verify_greedy", scenario=f"accept={accept}")
            try:
                cand = _greedy_drafts(logits, bsz, d, accept, gen)
            except Exception as exc:  # noqa: BLE001
                record_error(point, exc)
                continue

            def g_compare(outs):
                same = _same(outs["triton"], outs["sglang"])
                greedy_identical.append(same)
                return dict(identical_to_sglang=same)

            calls = {impl: ((lambda f=getattr(paths, impl + "_greedy"): f(logits, cand, tree)),) * 2
                     for impl in ("sglang", "triton")}
            measure(point, calls, g_compare)
        # ---- sampling
        temps = torch.full((bsz, 1), 0.7, device=device)
        tps = torch.full((bsz,), 0.9, device=device)
        tks = torch.full((bsz,), 50, dtype=torch.int32, device=device)
        variants = [("draft~target", "temperature+top_p", None, tps)]
        if (v, k) == extra_point and bsz in (16, 64):
            variants += [("draft~target", "temperature", None, None),
                         ("draft~target", "temperature+top_k+top_p", tks, tps)]
        variants.append(("flat", "temperature+top_p", None, tps))
        variants = [v_ for v_ in variants if "sampling" in ops and v_[0] in scenarios]
        for scenario, params, top_ks, top_ps in variants:
            point = dict(base, op="chain_verify_sampling", scenario=scenario, sampling=params)
            if out_of_time(reserve=40):
                errors.append(dict(point, error="skipped: time budget"))
                continue
            try:
                if scenario == "flat":
                    lg = torch.randn(bsz * d, v, device=device, generator=gen).to(torch.bfloat16)
                    cand = torch.randint(0, v, (bsz, d), device=device, generator=gen)
                else:
                    lg = logits
                    cand = _sampled_drafts(logits, bsz, d, 0.7, gen)
                coins = torch.rand(bsz, d, device=device, generator=gen)
                coins_f = torch.rand(bsz, device=device, generator=gen)
            except Exception as exc:  # noqa: BLE001
                record_error(point, exc)
                continue

            def s_compare(outs):
                # top-p alone draws its residual token by rejection (the same distribution, a
                # different token for the same coin): compare the decisions on their own too
                same_n = (outs["triton"][2].cpu() == outs["sglang"][2].cpu()).float().mean()
                return dict(agree_with_sglang_same_coins=round(
                    _agree_frac(outs["triton"], outs["sglang"], bsz, d), 4),
                    same_accepted_count_as_sglang=round(float(same_n), 4))

            calls = {}
            for impl in ("sglang", "triton"):
                f = getattr(paths, impl + "_sampling")
                calls[impl] = (
                    (lambda f=f: f(lg, cand, tree, temps, top_ks, top_ps, coins, coins_f)),
                    (lambda f=f: f(lg, cand, tree, temps, top_ks, top_ps)))
            measure(point, calls, s_compare)
        del logits
        print(f"[{time.perf_counter() - t_start:6.1f}s] V={v} k={k} B={bsz} done", flush=True)

    greedy_identical_all = bool(greedy_identical) and all(greedy_identical)

    # ---- block size / warps sweep of our kernels (data for the launch heuristics)
    if args.tune:
        tune_points = ([(200, 1, 3)] if _SMOKE else
                       [(128256, 3, 1), (128256, 3, 64), (163840, 7, 256)])
        for v, k, bsz in tune_points:
            if out_of_time(reserve=12):
                errors.append(dict(op="tune", bs=bsz, k=k, vocab=v, error="skipped: time budget"))
                continue
            d = k + 1
            try:
                logits = _llm_like_logits(bsz * d, v, device, gen)
                cand_g = _greedy_drafts(logits, bsz, d, 0.7, gen)
                cand_s = _sampled_drafts(logits, bsz, d, 0.7, gen)
                flat = torch.randn(bsz * d, v, device=device, generator=gen).to(torch.bfloat16)
                cand_f = torch.randint(0, v, (bsz, d), device=device, generator=gen)
            except Exception as exc:  # noqa: BLE001
                record_error(dict(op="tune", bs=bsz, k=k, vocab=v), exc)
                continue
            temps = torch.full((bsz, 1), 0.7, device=device)
            tps = torch.full((bsz,), 0.9, device=device)
            base = dict(bs=bsz, k=k, vocab=v, dtype="bfloat16")
            # schedules: "rows" (default since session 9, every row at once) and "chain" (rows
            # in order per slice, sessions 3-8: at B = 64 its launches took 88-162 us in
            # session 9 vs SGLang's 78, 2026-11-30-s9-kernels-bs64.json)
            for sched, blk, nw, pps in (("rows", 2048, 4, 8.0), ("rows", 2048, 4, 4.0),
                                        ("rows", 4096, 4, 2.0), ("rows", 8192, 8, 2.0),
                                        ("rows", 1024, 4, 16.0), ("chain", 2048, 4, 8.0),
                                        ("chain", 8192, 8, 2.0), ("chain", 4096, 4, 1.0)):
                point = dict(base, op="chain_verify_greedy:tune", scenario="accept=0.7",
                             impl=f"triton[{sched},block={blk},warps={nw},programs_per_sm={pps}]")
                try:
                    call = (lambda blk=blk, nw=nw, pps=pps, sched=sched: cv.chain_verify_greedy(
                        logits, cand_g, block_size=blk, num_warps=nw, programs_per_sm=pps,
                        schedule=sched))
                    reps = _reps_for(call, budget_s=0.06)
                    med, p90 = _time_us(call, reps)
                    rows.append(dict(point, us_median=round(med, 2), us_p90=round(p90, 2), reps=reps))
                except Exception as exc:  # noqa: BLE001
                    record_error(point, exc)
            # (8192, 8), 4 vectors per thread with register spills, faulted on the H200 in
            # session 7 and took the rest of the run with it: not swept again
            # split: the first pass in its own launch (default since session 9; None picks the
            # slices) or inside the per-row kernel (0, sessions 3-8)
            for blk, nw, split in ((2048, 4, None), (2048, 4, 0), (4096, 8, None), (4096, 8, 0),
                                   (4096, 4, None), (1024, 4, None)):
                for scenario, lg, cd in (("draft~target", logits, cand_s), ("flat", flat, cand_f)):
                    point = dict(base, op="chain_verify_sampling:tune", scenario=scenario,
                                 sampling="temperature+top_p",
                                 impl=f"triton[block={blk},warps={nw},split_stats={split}]")
                    try:
                        def call(blk=blk, nw=nw, split=split, lg=lg, cd=cd):
                            coins = torch.rand_like(cd, dtype=torch.float32)
                            coins_f = torch.rand((bsz,), dtype=torch.float32, device=device)
                            return cv.chain_verify_sampling(lg, cd, coins, coins_f, temperatures=temps,
                                                            top_ps=tps, block_size=blk, num_warps=nw,
                                                            split_stats=split)
                        reps = _reps_for(call, budget_s=0.06)
                        med, p90 = _time_us(call, reps)
                        rows.append(dict(point, us_median=round(med, 2), us_p90=round(p90, 2),
                                         reps=reps))
                    except Exception as exc:  # noqa: BLE001
                        record_error(point, exc)
            del logits, flat
        print(f"[{time.perf_counter() - t_start:6.1f}s] tuning sweep done", flush=True)
    checks["greedy_identical_all_points"] = greedy_identical_all
    checks["greedy_points_compared"] = len(greedy_identical)
    if paths.sk_error:
        checks["sgl_kernel_error"] = paths.sk_error
    try:
        checks["greedy_ties"] = _greedy_tie_check(paths, device)
    except Exception as exc:  # noqa: BLE001
        record_error(dict(op="check", check="greedy_ties"), exc)
    if not args.no_checks:
        try:
            checks["sampling_distribution"] = (
                _distribution_check(paths, ref, device, n=400, v=16) if _SMOKE
                else _distribution_check(paths, ref, device))
        except Exception as exc:  # noqa: BLE001
            record_error(dict(op="check", check="sampling_distribution"), exc)
    result["wall_s"] = round(time.perf_counter() - t_start, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}: {len(rows)} rows, {len(errors)} errors, {result['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
