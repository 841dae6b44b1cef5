"""GPU time of the greedy chain-verify kernel's launch knobs (issue 6: greedy >= 2x SGLang's
path at B = 64, k = 3, V = 128,256).

Session 22's grid put our greedy kernel at 28.7 us of GPU time there against SGLang's 50.3
(1.75x): 65.7 MB of bf16 logits read at 2.3 TB/s, half of what the H200 streams. The tune
sweeps of sessions 7-10 timed whole calls, which the Triton launcher's host time bounds
(~75 us whatever the knobs), so they could not tell the launch shapes apart. Here every
configuration is timed from a CUDA graph of 20 calls (the kernels' own time, as kernel_bench's
us_graph), its outputs compared with SGLang's for the same inputs, beside SGLang's path and
a bandwidth reference (torch's amax over the same logits).

  python benchmarks/greedy_tune.py --out tune.json [--budget-s 200] [--accept 0.7,1.0]
      [--finalists]   the whole kernel grid (B 1/16/64/256, k 1/3/7, V 32,000/128,256/163,840)
                      for the few configurations the first sweep found best, not all of them
                      at the 8 shapes below

Writes an adaptive-spec-kernels/1 JSON: us_median is the graph time per call.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import json
import platform
import sys
import time
from pathlib import Path

try:
    from . import kernel_bench as kb
except ImportError:  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import kernel_bench as kb

SHAPES = ((64, 3, 128256), (256, 3, 128256), (16, 3, 128256), (1, 3, 128256), (64, 7, 128256),
          (64, 3, 32000), (64, 3, 163840), (256, 7, 163840))
# (block elements, warps): tiles of 1-8 16-byte vectors per thread (bf16: 8 lanes a vector)
TILES = ((1024, 4), (2048, 4), (4096, 4), (8192, 4), (2048, 8), (4096, 8), (8192, 8),
         (16384, 8), (4096, 16), (8192, 16))
PROGRAMS_PER_SM = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
GRID = tuple(itertools.product((1, 16, 64, 256), (1, 3, 7), (32000, 128256, 163840)))
# the first sweep's best on the H200 (session 23, greedy-tune.json): more programs than one
# wave, so later rows start after earlier rows may have flagged their request's mismatch
FINALISTS = ((2048, 4, 32.0), (4096, 8, 32.0), (4096, 8, 16.0), (2048, 4, 64.0),
             (4096, 8, 64.0), (2048, 4, 128.0), (4096, 8, 128.0))


def configs(finalists: bool = False):
    """(block, warps, programs per SM): the current default (all None) first, then the default
    of sessions 9-22 (8 programs per SM), then the sweep."""
    yield None, None, None
    yield None, None, 8.0
    yield from (FINALISTS if finalists else
                ((blk, nw, pps) for (blk, nw), pps in itertools.product(TILES, PROGRAMS_PER_SM)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--accept", default="0.7", help="draft acceptance(s), comma-separated")
    ap.add_argument("--finalists", action="store_true",
                    help="the finalist configurations over the whole kernel grid")
    args = ap.parse_args(argv)
    try:
        accepts = [float(a) for a in args.accept.split(",")]
        if not all(0.0 <= a <= 1.0 for a in accepts):
            raise ValueError
    except ValueError:
        print(f"greedy_tune: --accept takes numbers in [0, 1], got {args.accept!r}", file=sys.stderr)
        return 2
    import torch
    import triton

    if not torch.cuda.is_available():
        print("greedy_tune: CUDA is required", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    device = torch.device("cuda")
    cv, _ = kb._load_kernels()
    paths = kb.Paths(cv)
    if paths.sk is None:
        print(f"greedy_tune: sgl_kernel unavailable ({paths.sk_error})", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(device)
    rows, errors = [], []
    result = {
        "schema": "adaptive-spec-kernels/1",
        "date": _dt.date.today().isoformat(),
        "machine": (f"{torch.cuda.get_device_name(device)} (sm_{props.major}{props.minor}, "
                    f"{props.multi_processor_count} SMs), torch {torch.__version__}, "
                    f"triton {triton.__version__}, {platform.node()}"),
        "command": "python benchmarks/greedy_tune.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "timing": "us_median: GPU time per call, 20 calls replayed from one CUDA graph (median of 5)",
        "inputs": ("bf16 LLM-like logits (kernel_bench); greedy drafts: argmax w.p. `accept` "
                   "(the scenario), else the 2nd-best token; every configuration's outputs "
                   "compared with SGLang's"),
        "rows": rows,
        "errors": errors,
    }
    gen = torch.Generator(device=device)
    gen.manual_seed(0)
    for (bsz, k, v), accept in itertools.product(GRID if args.finalists else SHAPES, accepts):
        if time.perf_counter() - t_start > args.budget_s:
            errors.append(dict(bs=bsz, k=k, vocab=v, error="skipped: time budget"))
            continue
        d = k + 1
        logits = kb._llm_like_logits(bsz * d, v, device, gen)
        cand = kb._greedy_drafts(logits, bsz, d, accept, gen)
        tree = kb._chain_tree(bsz, d, device)
        base = dict(bs=bsz, k=k, vocab=v, dtype="bfloat16", scenario=f"accept={accept}")
        want = paths.sglang_greedy(logits, cand, tree)
        rows.append(dict(base, op="chain_verify_greedy", impl="sglang",
                         us_median=round(kb._graph_us(lambda: paths.sglang_greedy(logits, cand, tree)), 2)))
        rows.append(dict(base, op="amax (bandwidth reference)", impl="torch",
                         us_median=round(kb._graph_us(lambda: torch.amax(logits, dim=-1)), 2),
                         mbytes=round(logits.numel() * logits.element_size() / 1e6, 1)))
        for blk, nw, pps in configs(args.finalists):
            impl = ("triton[default]" if pps is None else
                    f"triton[programs_per_sm={pps:g}]" if blk is None else
                    f"triton[block={blk},warps={nw},programs_per_sm={pps:g}]")

            def call(blk=blk, nw=nw, pps=pps):
                return cv.chain_verify_greedy(logits, cand, block_size=blk, num_warps=nw,
                                              programs_per_sm=pps)
            try:
                got = call()
                same = kb._same(got, want)
                rows.append(dict(base, op="chain_verify_greedy", impl=impl,
                                 us_median=round(kb._graph_us(call), 2), identical_to_sglang=same))
            except Exception as exc:  # noqa: BLE001 - one bad shape must not end the sweep
                errors.append(dict(base, impl=impl, error=f"{type(exc).__name__}: {exc}"[:300]))
                torch.cuda.synchronize()
        del logits
        print(f"[{time.perf_counter() - t_start:6.1f}s] B={bsz} k={k} V={v} accept={accept} done",
              flush=True)
    result["wall_s"] = round(time.perf_counter() - t_start, 1)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}: {len(rows)} rows, {len(errors)} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
