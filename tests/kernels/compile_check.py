"""Compile the chain-verify kernels for sm_90 and sm_120 without a GPU (Triton's own ptxas).

Run as a script (TRITON_INTERPRET must be unset); prints one JSON line per kernel variant:
{"arch", "kernel", "dtype", "shared", "forbidden"} where ``forbidden`` lists architecture-
specific PTX found (tensor-memory, wgmma, TMA bulk copies, register reconfiguration).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

os.environ.pop("TRITON_INTERPRET", None)

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from adaptive_spec.kernels import chain_verify as cv  # noqa: E402

FORBIDDEN = ("tcgen05", "wgmma", "cp.async.bulk", "setmaxnreg", "elect.sync", "multimem")


def _sig(fn, types, consts):
    return {n: ("constexpr" if n in consts else types.get(n, "i32")) for n in fn.arg_names}


PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


def _ptxas_info(ptx: str, arch: int):
    """(registers, spill stores + loads in bytes) that ptxas -v reports (Nones if it cannot say)."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    try:
        r = subprocess.run([PTXAS, "-v", f"-arch=sm_{arch}a" if arch == 90 else f"-arch=sm_{arch}",
                            f.name, "-o", os.devnull], capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(f.name)
    m = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    regs = re.findall(r"Used (\d+) registers", r.stderr)
    return (max(map(int, regs)) if regs else None,
            sum(int(a) + int(b) for a, b in m) if m else None)


def _compile(fn, types, consts, arch, num_warps):
    src = ASTSource(fn=fn, signature=_sig(fn, types, consts), constexprs=consts)
    k = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
    ptx = k.asm["ptx"]
    return (k.metadata.shared, [w for w in FORBIDDEN if w in ptx]) + _ptxas_info(ptx, arch)


# The greedy launches chain_verify_greedy picks (2 vectors per thread since session 8; D_P2 and
# NS_P2 as the wrapper passes them): (logits dtype, U vectors per thread, S lanes, warps)
GREEDY_LAUNCHES = (("*bf16", 2, 1024, 4), ("*fp32", 2, 512, 4))
# The sampling launches chain_verify_sampling picks: 4 warps, and 8 warps when there are fewer
# rows than SMs (the "-few-rows" variant), both 2 vectors per thread.
# (name, logits dtype, classic rejection, U vectors per thread, S lanes, warps)
SAMPLING_LAUNCHES = (("sampling", "*bf16", False, 2, 1024, 4),
                     ("sampling-classic", "*fp16", True, 2, 1024, 4),
                     ("sampling-few-rows", "*bf16", False, 2, 2048, 8))
# the 4-vectors-per-thread launches chain_verify_sampling picked until session 7 (--old-launches:
# the register and spill counts behind the change)
OLD_SAMPLING_LAUNCHES = (("sampling-4vec", "*bf16", False, 4, 1024, 4),
                         ("sampling-few-rows-4vec", "*bf16", False, 4, 2048, 8))


def main(archs, old=False):
    i32p = "*i32"
    greedy = {n: i32p for n in ("predicts_ptr", "accept_index_ptr", "accept_num_ptr",
                                 "accept_lens_ptr", "part_key_ptr", "part_idx_ptr",
                                 "counter_ptr", "stop_ptr")}
    greedy.update(cand_ptr="*i64", stride_lr="i64", stride_cb="i64", stride_cs="i64")
    samp = {n: i32p for n in ("predicts_ptr", "accept_index_ptr", "accept_num_ptr",
                               "accept_lens_ptr", "row_tok_ptr", "buf_k_ptr", "counter_ptr",
                               "stop_ptr", "topk_ptr")}
    samp.update({n: "*fp32" for n in ("coins_ptr", "coins_final_ptr", "temp_ptr", "topp_ptr",
                                      "minp_ptr", "dprob_ptr", "buf_v_ptr", "stats_ptr")})
    samp.update(cand_ptr="*i64", stride_lr="i64", stride_cb="i64", stride_cs="i64",
                stride_ub="i64", stride_us="i64", stride_qb="i64", stride_qs="i64",
                thr_single="fp32", thr_acc="fp32")
    for arch in archs:
        for dt, u, lanes, nw in GREEDY_LAUNCHES:
            # schedule "rows" (the default since session 9) and "chain"
            for name, fn in (("greedy", cv._greedy_rows_kernel), ("greedy-chain", cv._greedy_chain_kernel)):
                shared, bad, regs, spills = _compile(
                    fn, dict(greedy, logits_ptr=dt),
                    dict(D_P2=8, NS_P2=64, U=u, S=lanes, WRITE_LENS=True), arch, nw)
                print(json.dumps(dict(arch=arch, kernel=name, dtype=dt, shared=shared,
                                      forbidden=bad, registers=regs, spill_bytes=spills)))
        for name, dt, classic, u, lanes, nw in SAMPLING_LAUNCHES + (OLD_SAMPLING_LAUNCHES if old else ()):
            # the first pass split into its own launch (the default since session 9) or inline
            for stats, suffix in ((True, ""), (False, "-inline")):
                consts = dict(D_P2=8, HAS_TEMP=True, HAS_TOPK=True, HAS_TOPP=True,
                              HAS_MINP=True, CLASSIC=classic, WRITE_LENS=True, U=u, S=lanes,
                              CAP=128, CI=32, STATS=stats, NS_P2=64,
                              TOPP_REJECT=not classic)
                shared, bad, regs, spills = _compile(cv._sample_chain_kernel,
                                                     dict(samp, logits_ptr=dt), consts, arch, nw)
                print(json.dumps(dict(arch=arch, kernel=name + suffix, dtype=dt, shared=shared,
                                      forbidden=bad, registers=regs, spill_bytes=spills)))
        # the split first pass: 4 warps, 2 vectors per thread
        for dt, u, lanes in (("*bf16", 2, 1024), ("*fp32", 2, 512)):
            stats_types = dict(logits_ptr=dt, cand_ptr="*i64", temp_ptr="*fp32", stats_ptr="*fp32",
                               stride_lr="i64", stride_cb="i64", stride_cs="i64")
            shared, bad, regs, spills = _compile(
                cv._sample_stats_kernel, stats_types,
                dict(HAS_TEMP=True, WANT_A=True, WANT_N=True, U=u, S=lanes), arch, 4)
            print(json.dumps(dict(arch=arch, kernel="sampling-stats", dtype=dt, shared=shared,
                                  forbidden=bad, registers=regs, spill_bytes=spills)))


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(a) for a in args if a != "--old-launches"] or [90, 120], old="--old-launches" in args)
