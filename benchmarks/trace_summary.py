"""Summary of a torch-profiler trace of an SGLang server (its /start_profile output).

    python -m adaptive_spec.bench.trace_summary TRACE.json[.gz] [--steps N]

GPU side: busy time (kernels, copies, memsets) against the span they cover, by kernel name and
by category. Host side, for the thread that launched the most GPU work (the scheduler's): its
CUDA runtime calls by name (launches, graph launches, copies, and the synchronisations that stop
the CPU from running ahead) and its Python functions by self time and by inclusive time. That
is what tells two servers apart when they run the same kernels for the same GPU time but one
spans twice as long (session 4: our off step against plain at one request on the MoE pair).
Pure Python, no third-party imports.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time
from typing import Dict, List, Optional

CATEGORIES = [
    ("attention", re.compile(r"attn|attention|fwd_kernel|decode_kernel|extend|flash", re.I)),
    ("gemm", re.compile(r"gemm|matmul|cutlass|sm90|nvjet|cublas|xmma", re.I)),
    ("moe", re.compile(r"moe|expert|topk_softmax|align_block", re.I)),
    ("norm/rope/act", re.compile(r"norm|rope|rotary|silu|act_and_mul|activation", re.I)),
    ("sampling/verify", re.compile(r"verify|tree|sampl|argmax|topk|softmax|bonus|accept", re.I)),
    ("copy/elementwise", re.compile(r"copy|elementwise|fill|index|cat|memcpy|memset|reduce", re.I)),
]
# Scheduler and spec-worker phases (SGLang 0.5.16 function names) reported by inclusive time
# whether or not they make the top list: under continuous arrivals a spec server pays for
# admissions (the draft's prefill, merging new requests into the spec batch, filtering finished
# ones) besides its decode step, and these tell the two apart.
PHASES = ("get_next_batch_to_run", "get_new_batch_prefill", "update_running_batch", "run_batch",
          "process_batch_result_decode", "process_batch_result_prefill", "_resolve_spec_v2_tokens",
          "merge_batch", "filter_batch", "prepare_for_decode", "eagle_prepare_for_decode",
          "forward_batch_generation", "_draft_extend_for_prefill", "_draft_extend_for_decode",
          "run_eagle_verify", "eagle_sample", "_execute_extend")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATS = ("python_function", "cpu_op", "user_annotation")
SYNC_CALLS = re.compile(r"Synchronize|cudaMemcpy$|cudaStreamWaitEvent", re.I)


def load(path: str) -> dict:
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as fh:
        return json.load(fh)


def _gpu(events: List[dict], top: int) -> dict:
    by_name: Dict[str, float] = {}
    by_cat: Dict[str, float] = {}
    total, t_min, t_max = 0.0, None, None
    for ev in events:
        if ev.get("cat") not in GPU_CATS:
            continue
        name, dur, ts = ev.get("name", "?")[:120], float(ev.get("dur", 0)), float(ev.get("ts", 0))
        by_name[name] = by_name.get(name, 0.0) + dur
        c = next((c for c, rx in CATEGORIES if rx.search(name)), "other")
        by_cat[c] = by_cat.get(c, 0.0) + dur
        total += dur
        t_min = ts if t_min is None else min(t_min, ts)
        t_max = ts + dur if t_max is None else max(t_max, ts + dur)
    return {
        "gpu_busy_ms": round(total / 1000, 3),
        "gpu_span_ms": round((t_max - t_min) / 1000, 3) if t_min is not None else None,
        "by_category_ms": _ms_sorted(by_cat),
        "top_kernels_ms": _ms_sorted(by_name, top, as_list=True),
    }


def _ms_sorted(d: Dict[str, float], top: Optional[int] = None, as_list: bool = False):
    items = sorted(d.items(), key=lambda kv: -kv[1])[:top]
    if as_list:
        return [[k, round(v / 1000, 3)] for k, v in items]
    return {k: round(v / 1000, 3) for k, v in items}


def self_times(events: List[dict]) -> Dict[str, List[float]]:
    """name -> [self us, inclusive us, calls] over properly nested host events of one thread
    (a child's time is taken out of its innermost enclosing event)."""
    out: Dict[str, List[float]] = {}
    stack: List[list] = []  # [end, name, time of its children, duration]
    for ev in sorted(events, key=lambda e: (float(e.get("ts", 0)), -float(e.get("dur", 0)))):
        ts, dur = float(ev.get("ts", 0)), float(ev.get("dur", 0))
        while stack and stack[-1][0] <= ts:
            _close(stack.pop(), out)
        if stack:
            stack[-1][2] += dur
        stack.append([ts + dur, ev.get("name", "?")[:100], 0.0, dur])
    while stack:
        _close(stack.pop(), out)
    return out


def _close(frame: list, out: Dict[str, List[float]]) -> None:
    _end, name, child, dur = frame
    row = out.setdefault(name, [0.0, 0.0, 0])
    row[0] += max(0.0, dur - child)
    row[1] += dur
    row[2] += 1


def _host(events: List[dict], top: int) -> dict:
    launches: Dict[tuple, int] = {}
    for ev in events:
        if ev.get("cat") == "cuda_runtime":
            key = (ev.get("pid"), ev.get("tid"))
            launches[key] = launches.get(key, 0) + 1
    if not launches:
        return {"host_thread": None}
    main = max(launches, key=launches.get)
    mine = [ev for ev in events if (ev.get("pid"), ev.get("tid")) == main and ev.get("ph") == "X"]
    runtime: Dict[str, List[float]] = {}
    for ev in mine:
        if ev.get("cat") == "cuda_runtime":
            r = runtime.setdefault(ev.get("name", "?"), [0, 0.0])
            r[0] += 1
            r[1] += float(ev.get("dur", 0))
    host = [ev for ev in mine if ev.get("cat") in HOST_CATS]
    st = self_times(host)
    ts = [float(e.get("ts", 0)) for e in mine]
    te = [float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in mine]
    syncs = {k: v for k, v in runtime.items() if SYNC_CALLS.search(k)}
    return {
        "host_thread": f"{main[0]}/{main[1]}",
        "host_span_ms": round((max(te) - min(ts)) / 1000, 3) if mine else None,
        "cuda_runtime_calls": {k: v[0] for k, v in sorted(runtime.items(), key=lambda kv: -kv[1][0])},
        "sync_calls_ms": {k: round(v[1] / 1000, 3) for k, v in syncs.items()},
        "top_self_ms": [[k, round(v[0] / 1000, 3), v[2]] for k, v in
                        sorted(st.items(), key=lambda kv: -kv[1][0])[:top]],
        "top_inclusive_ms": [[k, round(v[1] / 1000, 3), v[2]] for k, v in
                             sorted(st.items(), key=lambda kv: -kv[1][1])[:top]],
        "phases_ms": phases(st),
    }


def phases(st: Dict[str, List[float]]) -> Dict[str, list]:
    """PHASES by function name ("file.py(line): name" -> name): [inclusive ms, calls], summed
    over every file defining that name (several classes have a forward_batch_generation)."""
    out: Dict[str, List[float]] = {}
    for name, (_self, incl, calls) in st.items():
        func = name.rsplit("): ", 1)[-1]
        if func in PHASES:
            row = out.setdefault(func, [0.0, 0])
            row[0] += incl
            row[1] += calls
    return {k: [round(v[0] / 1000, 3), v[1]] for k, v in sorted(out.items(), key=lambda kv: -kv[1][0])}


def summarize(trace: dict, top: int = 25, steps: Optional[int] = None) -> dict:
    events = [ev for ev in trace.get("traceEvents", []) if ev.get("ph") == "X"]
    out = _gpu(events, top)
    out.update(_host(events, top))
    if steps:
        out["steps"] = steps
        for k in ("gpu_busy_ms", "gpu_span_ms", "host_span_ms"):
            if out.get(k) is not None:
                out[k.replace("_ms", "_ms_per_step")] = round(out[k] / steps, 3)
    return out


def summarize_trace(path: str, top: int = 25, steps: Optional[int] = None) -> dict:
    return summarize(load(path), top, steps)


def wait_and_summarize(out_dir: str, before: set, steps: int, limit_s: float = 120.0) -> dict:
    """The summary of the first trace the server writes into out_dir after `before` (the names
    there when the profile was asked for), or {"error": ...}. The server writes and gzips the
    trace after the last step: wait (bounded) until its size has held still for 3 s, and read
    again while it still reads as truncated (session 4 read one too early)."""
    t0, sizes, still, new = time.time(), None, 0, []
    while time.time() - t0 < limit_s and still < 3:
        time.sleep(1.0)
        new = sorted(f for f in os.listdir(out_dir) if f not in before)
        now = [os.path.getsize(os.path.join(out_dir, f)) for f in new]
        still = still + 1 if new and now == sizes and all(now) else 0
        sizes = now
    if still < 3:
        return {"error": f"no complete trace in {out_dir} after {limit_s:.0f} s"}
    path, err = os.path.join(out_dir, new[0]), None
    for _ in range(10):
        try:
            out = summarize_trace(path, steps=steps)
            out["trace"] = path
            return out
        except (EOFError, ValueError, OSError) as exc:
            err = exc
            time.sleep(2.0)
    return {"error": f"unreadable trace {path}: {err!r}"[:300]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m adaptive_spec.bench.trace_summary", description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--steps", type=int, default=None, help="forward steps the trace holds (per-step figures)")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    try:
        out = summarize_trace(a.trace, a.top, a.steps)
    except (OSError, ValueError, EOFError) as exc:
        print(f"trace-summary: cannot read {a.trace}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
