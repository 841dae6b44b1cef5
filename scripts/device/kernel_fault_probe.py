"""Session 8: which launch/input makes the Triton sampling verify fault on the H200?
kernel_bench's grid faulted (cudaErrorInvalidAddressSpace / illegal address) on 'flat' N(0,1)
bf16 logits at B = 256 (k = 3 and 7), temperature 0.7 + top-p 0.9; 'draft~target' logits of the
same size ran. One variant per process (a fault poisons the CUDA context); prints one JSON line.
Usage: python kernel_fault_probe.py --bs 256 --k 3 [--dtype float32] [--cap 1024] [--warps 8]
       [--top-p 0.9|1] [--temp 0.7] [--reps 5]"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from kernel_bench import Paths, _chain_tree, _load_kernels  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bs", type=int, default=256)
ap.add_argument("--k", type=int, default=3)
ap.add_argument("--vocab", type=int, default=128256)
ap.add_argument("--dtype", default="bfloat16")
ap.add_argument("--cap", type=int, default=128)
ap.add_argument("--warps", type=int, default=None)
ap.add_argument("--top-p", type=float, default=0.9)
ap.add_argument("--temp", type=float, default=0.7)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--sglang", choices=["no", "first", "only"], default="no",
                help="run SGLang's sampling verify (sgl_kernel top-p renorm + tree sampling) before ours")
a = ap.parse_args()
cv, _ref = _load_kernels()
gen = torch.Generator(device="cuda").manual_seed(0)
d = a.k + 1
logits = torch.randn(a.bs * d, a.vocab, device="cuda", generator=gen).to(getattr(torch, a.dtype))
cand = torch.randint(0, a.vocab, (a.bs, d), device="cuda", generator=gen)
temps = torch.full((a.bs,), a.temp, device="cuda")
tps = torch.full((a.bs,), a.top_p, device="cuda") if a.top_p < 1 else None
out = dict(vars(a))
try:
    for rep in range(a.reps):
        coins = torch.rand((a.bs, d), device="cuda", generator=gen)
        coins_f = torch.rand((a.bs,), device="cuda", generator=gen)
        if a.sglang != "no":
            out["stage"] = "sglang"
            Paths(cv).sglang_sampling(logits, cand, _chain_tree(a.bs, d, "cuda"), temps[:, None], None,
                                      tps, coins, coins_f)
            torch.cuda.synchronize()
            if a.sglang == "only":
                continue
        out["stage"] = "ours"
        _p, _ai, num = cv.chain_verify_sampling(logits, cand, coins, coins_f, temperatures=temps,
                                                top_ps=tps, num_warps=a.warps, cap=a.cap)
        torch.cuda.synchronize()
        out["accept_num_max"] = int(num.max())
    out["ok"] = True
except Exception as exc:  # noqa: BLE001
    out.update(ok=False, rep=rep, error=f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
print(json.dumps(out), flush=True)
