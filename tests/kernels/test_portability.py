"""The kernels compile for sm_90 (H200) and sm_120 (RTX PRO 6000 Blackwell) with Triton's own
toolchain -- no GPU needed -- use no architecture-specific instructions, and need far less
shared memory than sm_120's ~100 KB per SM."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

PTXAS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


@pytest.mark.skipif(not PTXAS.exists(), reason="Triton's bundled ptxas not available")
def test_kernels_compile_for_sm90_and_sm120():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = Path(__file__).with_name("compile_check.py")
    out = subprocess.run([sys.executable, str(script), "90", "120"], env=env, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-4000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert {(r["arch"], r["kernel"]) for r in rows} == {
        (a, k) for a in (90, 120)
        for k in ("greedy", "greedy-chain", "sampling", "sampling-classic", "sampling-few-rows",
                  "sampling-inline", "sampling-classic-inline", "sampling-few-rows-inline",
                  "sampling-stats")}
    for r in rows:
        assert r["forbidden"] == [], r
        assert r["shared"] <= 16 * 1024, r
    # no register spills at the launches the wrappers pick, on the GPU we can run (sm_90): the
    # one spilling launch of session 7 (8 warps x 4 vectors, 255 registers) faulted on the H200
    for r in rows:
        if r["arch"] == 90:
            assert r["spill_bytes"] == 0, r


def test_stop_flag_is_read_once_per_program_while_other_programs_write_it():
    """Session 9: the stop flag is lowered by other programs while a program runs. A scalar
    ``tl.load`` of it is issued by every thread, so warps could disagree and meet different
    ``bar.sync``s (the H200 faults of sessions 7-9). Before a program's arrival on the counter
    the flag is read only through ``_uniform_read`` (one thread's atomic, broadcast); after the
    last arrival nobody writes it and a load is safe."""
    import ast

    src = (Path(__file__).parents[2] / "kernels" / "chain_verify.py").read_text()
    tree = ast.parse(src)
    kernels = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    uniform = ast.unparse(kernels["_uniform_read"])
    assert "tl.atomic_add(ptr, 0" in uniform
    for name in ("_greedy_rows_kernel", "_greedy_chain_kernel", "_sample_chain_kernel"):
        body = ast.unparse(kernels[name])
        arrival = body.index("tl.atomic_add(counter_ptr")
        before = body[:arrival]
        assert "_uniform_read(stop_ptr" in before, name
        assert "tl.load(stop_ptr" not in before, name


@pytest.mark.parametrize("bsz", [1, 64, 20_000])
def test_launch_grids_fit_cuda_axis_limits(cv, monkeypatch, bsz):
    """CUDA allows 2^31-1 programs on grid axis 0 but 65,535 on axes 1 and 2. Session 9's
    (slices, rows) grids put D*B rows on axis 1: kernel_bench's sampling distribution check
    (200,000 requests x 4 rows) failed on the H200 with "invalid argument" (session 10)."""
    import torch

    grids = []

    class RecordGrid:  # stands in for the DirectLauncher: records the grid, runs nothing
        def planned(self, key, device_index, aligned, grid, args, meta):
            grids.append(tuple(grid))

    for name in ("_launch_greedy_rows", "_launch_greedy_chain", "_launch_sample_stats",
                 "_launch_sample_chain"):
        monkeypatch.setattr(cv, name, RecordGrid())
    monkeypatch.setattr(cv, "_greedy_plans", {})  # plans hold their launcher: none made before
    d, v = 4, 128256
    logits = torch.empty(1, v, dtype=torch.bfloat16).expand(bsz * d, v)  # no memory: only shapes
    cand = torch.zeros(bsz, d, dtype=torch.int64)
    coins, coins_final = torch.rand(bsz, d), torch.rand(bsz)
    cv.chain_verify_greedy(logits, cand)
    cv.chain_verify_greedy(logits, cand, schedule="chain")
    cv.chain_verify_sampling(logits, cand, coins, coins_final, temperatures=0.7, top_ps=0.9)
    assert len(grids) == 4
    for grid in grids:
        assert grid[0] <= 2**31 - 1 and all(g <= 65_535 for g in grid[1:]), grid


def test_wrapper_cost_benchmark_runs_against_a_baseline(capsys):
    """benchmarks/wrapper_cost.py (the README's host-time numbers) times the wrappers of a past
    commit and of the working tree side by side; a bad revision is one line and exit 2."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    try:
        import wrapper_cost
    finally:
        sys.path.pop(0)
    assert wrapper_cost.main(["--bs", "2", "--baseline", "HEAD"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().endswith(" us")]
    assert len(lines) == 6 and all(float(ln.split()[-2]) > 0 for ln in lines)
    assert wrapper_cost.main(["--baseline", "no-such-revision"]) == 2
