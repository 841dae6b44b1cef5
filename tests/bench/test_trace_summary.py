"""trace_summary on a hand-made torch-profiler trace; every expected value worked out here."""
import gzip
import json

import pytest

from adaptive_spec.bench import trace_summary as ts


def ev(cat, name, ts_us, dur, tid=1, pid=7):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts_us, "dur": dur, "pid": pid, "tid": tid}


def trace():
    return {"traceEvents": [
        # the scheduler thread (tid 1): run_batch 0-100 us holding forward 10-60 (a launch and
        # a sync inside) and sample 70-90 (a launch inside)
        ev("python_function", "run_batch", 0, 100),
        ev("python_function", "forward", 10, 50),
        ev("cuda_runtime", "cudaGraphLaunch", 20, 5),
        ev("cuda_runtime", "cudaStreamSynchronize", 30, 20),
        ev("cpu_op", "aten::argmax", 70, 20),
        ev("cuda_runtime", "cudaLaunchKernel", 75, 3),
        # another thread with one launch and a long wait: not the scheduler
        ev("python_function", "wait", 0, 500, tid=2),
        ev("cuda_runtime", "cudaLaunchKernel", 5, 1, tid=2),
        # GPU: two kernels, 40 us busy over a 100-us span
        ev("kernel", "fused_moe_kernel", 30, 30, tid=9),
        ev("kernel", "nvjet_sm90_gemm", 120, 10, tid=9),
        {"ph": "i", "cat": "kernel", "name": "instant", "ts": 0},  # not a complete event
    ]}


def test_gpu_busy_span_and_categories():
    s = ts.summarize(trace())
    assert s["gpu_busy_ms"] == pytest.approx(0.040)
    assert s["gpu_span_ms"] == pytest.approx(0.100)
    assert s["by_category_ms"] == {"moe": 0.03, "gemm": 0.01}


def test_host_thread_self_times_and_syncs():
    s = ts.summarize(trace(), steps=2)
    assert s["host_thread"] == "7/1"  # three runtime calls beat one
    assert s["cuda_runtime_calls"] == {"cudaGraphLaunch": 1, "cudaStreamSynchronize": 1, "cudaLaunchKernel": 1}
    assert s["sync_calls_ms"] == {"cudaStreamSynchronize": 0.02}
    self_ms = {name: ms for name, ms, _calls in s["top_self_ms"]}
    # run_batch 100 - forward 50 - argmax 20 = 30; forward 50 (runtime calls are not host frames)
    assert self_ms == {"forward": 0.05, "run_batch": 0.03, "aten::argmax": 0.02}
    assert s["top_inclusive_ms"][0] == ["run_batch", 0.1, 1]
    assert s["host_span_ms"] == pytest.approx(0.1)
    assert s["gpu_busy_ms_per_step"] == pytest.approx(0.02)


def test_reads_gzip_and_the_cli(tmp_path, capsys):
    p = tmp_path / "t.pt.trace.json.gz"
    with gzip.open(p, "wt") as fh:
        json.dump(trace(), fh)
    assert ts.main([str(p), "--steps", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["host_thread"] == "7/1"
    assert ts.main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_named_phases_are_reported_whatever_their_rank():
    t = trace()
    t["traceEvents"] += [
        ev("python_function", "sglang/srt/managers/schedule_batch.py(1700): merge_batch", 200, 4),
        ev("python_function", "sglang/srt/managers/schedule_batch.py(1700): merge_batch", 300, 6),
        ev("python_function", "sglang/srt/managers/tp_worker.py(529): forward_batch_generation", 400, 8),
        ev("python_function", "sglang/srt/speculative/eagle_worker_v2.py(1122): forward_batch_generation", 500, 2),
        ev("python_function", "somewhere.py(1): not_a_phase", 600, 50),
    ]
    s = ts.summarize(t, top=1)
    assert [row[0] for row in s["top_inclusive_ms"]] == ["run_batch"]  # the top list is cut at 1
    assert s["phases_ms"] == {"run_batch": [0.1, 1], "merge_batch": [0.01, 2], "forward_batch_generation": [0.01, 2]}
