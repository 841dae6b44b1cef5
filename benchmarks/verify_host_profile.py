"""Where a verify call's host time goes (GPU machine): greedy, or with --op sampling the
top-p verify (temperature 0.7 + top-p 0.9, drafts sampled from the target).

On the H200 our greedy verify runs 1.73x faster than SGLang's on the GPU at B = 64, k = 3 but
takes 0.72x of its time per call back to back (2026-11-30-s11-kernels-*.json): the call is
host-bound. This times, per call over many back-to-back calls (a synchronize ends each of 3
rounds, the best is kept, so each figure is max(host, GPU) per call), SGLang's path, ours with
outputs allocated and passed in, and pieces on their own (the three output allocations, the
stream and capture lookups, SGLang's argmax); then cProfile's top entries for ours. Since
session 25 (a launch plan per shape, `_plan_buffers`, `DirectLauncher.planned`) also ours
launched directly, the lookups through torch._C, and the floor: the compiled kernel's launcher
with its arguments built once.

    python benchmarks/verify_host_profile.py [--op greedy|sampling] [--bs 64] [--k 3]
        [--vocab 128256] [--calls 2000]

Sampling (session 21: at B = 64, k = 3 our top-p call took 292 us back to back against 146 us
of GPU time, 2026-12-01-s21-kernels-sampling.json): SGLang's path, ours as the kernel bench
calls it (uniforms drawn per call), ours with uniforms and outputs passed in, the same with
the first pass inline (one launch instead of two), the same launched directly
(ADAPTIVE_SPEC_TRITON_LAUNCH=direct), and the pieces: the two uniform draws.
"""

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_bench as kb  # noqa: E402  (same inputs and SGLang path as the kernel benchmark)
from wrapper_cost import _per_call_us  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bs", type=int, default=64)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--op", choices=("greedy", "sampling"), default="greedy")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("verify_host_profile: CUDA is required", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    cv, ref = kb._load_kernels()
    paths = kb.Paths(cv, ref)
    bsz, d = args.bs, args.k + 1
    gen = torch.Generator(device=dev).manual_seed(0)
    logits = kb._llm_like_logits(bsz * d, args.vocab, dev, gen)
    tree = kb._chain_tree(bsz, d, dev)
    if args.op == "sampling":
        return _sampling(args, torch, dev, cv, paths, logits, tree, gen)
    cand = kb._greedy_drafts(logits, bsz, d, 0.7, gen)
    outs = (torch.empty(bsz * d, dtype=torch.int32, device=dev),
            torch.empty((bsz, d), dtype=torch.int32, device=dev),
            torch.empty(bsz, dtype=torch.int32, device=dev))
    sync = torch.cuda.synchronize

    def allocations():
        torch.empty(bsz * d, dtype=torch.int32, device=dev)
        torch.empty((bsz, d), dtype=torch.int32, device=dev)
        torch.empty(bsz, dtype=torch.int32, device=dev)

    def stream_lookups():
        torch.cuda.is_current_stream_capturing()
        torch.cuda.current_stream(dev).cuda_stream

    def raw_lookups():
        torch._C._cuda_isCurrentStreamCapturing()
        torch._C._cuda_getCurrentRawStream(dev.index or 0)

    passed_in = lambda: cv.chain_verify_greedy(logits, cand, *outs)  # noqa: E731
    with kb._launch_mode("triton-jit"):
        passed_in()
    with kb._launch_mode("triton-direct"):
        passed_in()  # the direct launcher's entry for this shape's plan
    sync()
    jit, direct = "triton-jit", "triton-direct"  # the launch mode each case is timed in
    cases = [
        ("SGLang: argmax + verify_tree_greedy (3 allocations)",
         lambda: paths.sglang_greedy(logits, cand, tree), jit),
        ("ours, outputs allocated, through the JIT", lambda: cv.chain_verify_greedy(logits, cand), jit),
        ("ours, outputs passed in, through the JIT", passed_in, jit),
        ("ours, outputs allocated, launched directly",
         lambda: cv.chain_verify_greedy(logits, cand), direct),
        ("ours, outputs passed in, launched directly", passed_in, direct),
        ("piece: 3 torch.empty on the GPU", allocations, jit),
        ("piece: is_current_stream_capturing + current_stream", stream_lookups, jit),
        ("piece: the same through torch._C", raw_lookups, jit),
        ("piece: torch.argmax alone", lambda: torch.argmax(logits, dim=-1), jit),
    ]
    floor = _launcher_alone(cv, logits, cand, outs)
    if floor is not None:
        cases.append(("floor: the compiled kernel's launcher, arguments ready", floor, jit))
    print(f"per call, {args.calls} calls back to back, B = {bsz}, k = {args.k}, V = {args.vocab}, "
          f"{torch.cuda.get_device_name(dev)}, torch {torch.__version__}")
    for name, fn, mode in cases:
        with kb._launch_mode(mode):
            us = _per_call_us(fn, args.calls, rounds=3, sync=sync)
        print(f"  {name:55s} {us:8.1f} us")
    if floor is None:
        print("  (no direct launcher entry for this shape: the direct path did not run)")
    prof = cProfile.Profile()
    with kb._launch_mode("triton-direct"):
        prof.enable()
        for _ in range(args.calls):
            passed_in()
        sync()
        prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    print(f"cProfile of ours (outputs passed in, launched directly), {args.calls} calls, by own time:")
    print(text.getvalue())
    return 0


def _launcher_alone(cv, logits, cand, outs):
    """The direct launcher's stored call for this shape with its arguments built once: what a
    call costs below the wrapper (None if the direct path kept no entry)."""
    key = next((k for k, p in cv._greedy_plans.items() if k[0] == logits.shape and k[3] == cand.shape
                and k[-2] is False), None)
    plan = cv._greedy_plans.get(key)
    entry = plan and plan.launcher._planned.get(plan)
    if entry is None:
        return None
    call, function, middle, consts = entry
    g = (plan.grid + (1, 1))[:3]
    args = (*g, cv._raw_stream(logits.get_device()), function, *middle, logits, plan.stride_lr,
            cand, plan.stride_cb, plan.stride_cs, *outs, outs[2], *cv._plan_buffers(plan),
            *plan.ints, *consts)
    return lambda: call(*args)


def _sampling(args, torch, dev, cv, paths, logits, tree, gen) -> int:
    bsz, d = args.bs, args.k + 1
    cand = kb._sampled_drafts(logits, bsz, d, 0.7, gen)
    temps = torch.full((bsz, 1), 0.7, device=dev)
    tps = torch.full((bsz,), 0.9, device=dev)
    coins = torch.rand(bsz, d, device=dev, generator=gen)
    coins_f = torch.rand(bsz, device=dev, generator=gen)
    outs = (torch.empty(bsz * d, dtype=torch.int32, device=dev),
            torch.empty((bsz, d), dtype=torch.int32, device=dev),
            torch.empty(bsz, dtype=torch.int32, device=dev))
    sync = torch.cuda.synchronize

    def ours(split=None):
        return lambda: cv.chain_verify_sampling(logits, cand, coins, coins_f, temps, None, tps,
                                                None, None, 1.0, 1.0, *outs, split_stats=split)

    passed_in = ours()

    def uniforms():
        torch.rand_like(cand, dtype=torch.float32, device=dev)
        torch.rand((bsz,), dtype=torch.float32, device=dev)

    jit, direct = "triton-jit", "triton-direct"  # the launch mode each case is timed in
    cases = (
        ("ours as the kernel bench calls it", lambda: paths.triton_sampling(logits, cand, tree, temps, None, tps), jit),
        ("ours, uniforms and outputs passed in, through the JIT", passed_in, jit),
        ("ours, the same, first pass inline (one launch)", ours(0), jit),
        ("ours, the same, launched directly", passed_in, direct),
        ("piece: the two uniform draws", uniforms, jit),
    )
    print(f"sampling (temperature 0.7, top-p 0.9) per call, {args.calls} calls back to back, "
          f"B = {bsz}, k = {args.k}, V = {args.vocab}, {torch.cuda.get_device_name(dev)}", flush=True)
    t0 = time.perf_counter()
    passed_in()
    ours(0)()
    sync()
    print(f"  (first calls, JIT compile: {time.perf_counter() - t0:.1f} s)", flush=True)
    for name, fn, mode in cases:
        with kb._launch_mode(mode):
            us = _per_call_us(fn, args.calls, rounds=3, sync=sync)
        print(f"  {name:55s} {us:8.1f} us", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        passed_in()
    sync()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    print(f"cProfile of ours (uniforms and outputs passed in), {args.calls} calls, by own time:")
    print(text.getvalue(), flush=True)
    # last: its first call builds FlashInfer's sampling module (~1-2 min on a fresh machine)
    sglang = lambda: paths.sglang_sampling(logits, cand, tree, temps, None, tps)  # noqa: E731
    print(f"  {'SGLang: softmax + top_p_renorm + sampling kernel':55s} "
          f"{_per_call_us(sglang, args.calls, rounds=3, sync=sync):8.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
