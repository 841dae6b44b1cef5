"""Host time of the chain-verify wrappers' own Python, per call, on this machine's CPU.

At small batches a verify call on the H200 costs what the host spends on it (greedy: 70-79 us
at B = 1 and at B = 64 alike, session 10), so the wrappers' Python matters. The kernels are
replaced by no-ops and the tensors live on the CPU: this times the wrapper (argument checks,
launch planning, buffers), not Triton's launch or the GPU.

    python benchmarks/wrapper_cost.py [--baseline GIT_REV]

`--baseline` also times `kernels/chain_verify.py` as of that commit (e.g. fa16ade, session 9),
in the same process.
"""

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("_greedy_rows_kernel", "_greedy_chain_kernel", "_sample_stats_kernel",
           "_sample_chain_kernel")


class _NoLaunch:
    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


class _NoDirectLaunch:
    """Stands in for a DirectLauncher: called (up to session 24) or `planned` (session 25 on)."""

    def __call__(self, grid, args, meta):
        return None

    def planned(self, key, device_index, aligned, grid, args, meta):
        return None


_no_launch = _NoDirectLaunch()


def _load(path: Path, name: str):
    # inside our package, so that the file's relative imports (kernels/launch.py) resolve
    spec = importlib.util.spec_from_file_location(f"adaptive_spec.kernels.{name}", path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "adaptive_spec.kernels"
    spec.loader.exec_module(module)
    for kernel in KERNELS:
        setattr(module, kernel, _NoLaunch())
    for attr in dir(module):  # the direct launchers (since session 11)
        if attr.startswith("_launch_"):
            setattr(module, attr, _no_launch)
    return module


def _per_call_us(fn, calls=2000, rounds=5, sync=lambda: None, warmup=200) -> float:
    """Best per-call time over ``rounds`` of ``calls`` back-to-back calls (after ``warmup``
    calls); ``sync`` (a GPU's synchronize) ends each round, so a round counts the calls' GPU
    work too."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(rounds):
        sync()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / calls * 1e6)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="git revision whose kernels/chain_verify.py is also timed")
    ap.add_argument("--bs", type=int, default=64)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=128256)
    args = ap.parse_args(argv)
    import torch

    bsz, d, v = args.bs, args.k + 1, args.vocab
    logits = torch.empty(1, v, dtype=torch.bfloat16).expand(bsz * d, v)
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    outs = (torch.empty(bsz * d, dtype=torch.int32), torch.empty(bsz, d, dtype=torch.int32),
            torch.empty(bsz, dtype=torch.int32), torch.empty(bsz, dtype=torch.int32))
    coins, coins_final = torch.rand(bsz, d), torch.rand(bsz)
    temps, top_ps = torch.full((bsz,), 0.7), torch.full((bsz,), 0.9)
    versions = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            old = Path(tmp) / "chain_verify_baseline.py"
            try:
                old.write_bytes(subprocess.run(
                    ["git", "show", f"{args.baseline}:kernels/chain_verify.py"], cwd=ROOT,
                    check=True, capture_output=True).stdout)
            except (subprocess.CalledProcessError, OSError) as exc:
                print(f"wrapper_cost: cannot read kernels/chain_verify.py at {args.baseline}: {exc}",
                      file=sys.stderr)
                return 2
            versions.append((args.baseline, _load(old, "chain_verify_baseline")))
        versions.append(("working tree", _load(ROOT / "kernels" / "chain_verify.py", "chain_verify_now")))
        print(f"wrapper host time per call, B = {bsz}, k = {args.k}, V = {v}, kernels not launched")
        for label, cv in versions:
            cases = (
                ("greedy, outputs allocated", lambda: cv.chain_verify_greedy(logits, cand)),
                ("greedy, outputs passed in", lambda: cv.chain_verify_greedy(logits, cand, *outs)),
                ("sampling top-p, outputs passed in", lambda: cv.chain_verify_sampling(
                    logits, cand, coins, coins_final, temperatures=temps, top_ps=top_ps,
                    predicts=outs[0], accept_index=outs[1], accept_token_num=outs[2],
                    accept_lens=outs[3])),
            )
            for name, fn in cases:
                print(f"  {label:14s} {name:36s} {_per_call_us(fn):6.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
