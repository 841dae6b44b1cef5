"""CPU cost of one decision (Controller.decide with a policy), per policy, and of the per-step
bookkeeping around it that session 8 made cheaper (rows with `op`).

    python -m adaptive_spec.bench.decision_cost --out benchmarks/results/DATE-decision-cost.json

The decision runs once per decode step on the scheduler's CPU thread; the budget is 20 us.
No GPU is touched: the inputs are the CPU values the scheduler already holds.
Bookkeeping rows (each beside its baseline, same inputs):
- `acceptance.observe`: per-position acceptance from one drafting result, counted from a
  histogram (AcceptanceStats) vs per request (`PerRequestCounts`, the counting until session 8);
- `alloc_for_spec_decode`: SGLang 0.5.16's real function (nothing to allocate, its closing loop
  over the requests) given the lengths as a CPU tensor vs through our hook (hooks_alloc).
"""

import argparse
import itertools
import json
import os
import platform
import random
import statistics
import tempfile
import time

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.signals import AcceptanceStats, LoadSnapshot


class PerRequestCounts:
    """Per-position acceptance counted request by request: AcceptanceStats's counting until
    session 8, kept as the baseline of its row (and as the reference its test compares with)."""

    def __init__(self, decay: float = 0.995):
        self.decay = decay
        self.tries: list = []
        self.hits: list = []

    def observe(self, steps: int, results) -> None:
        if steps <= 0 or not results:
            return
        while len(self.tries) < steps:
            self.tries.append(0)
            self.hits.append(0)
        self.tries = [t * self.decay for t in self.tries]
        self.hits = [h * self.decay for h in self.hits]
        for correct in results:
            correct = min(max(int(correct), 0), steps)
            for j in range(min(correct + 1, steps)):
                self.tries[j] += 1
            for j in range(correct):
                self.hits[j] += 1


def _median_us(fn, calls: int) -> tuple:
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    samples.sort()
    return round(statistics.median(samples) / 1000, 2), round(samples[int(0.99 * len(samples))] / 1000, 2)


def time_acceptance(requests: int, steps: int, calls: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    results = [[rng.randint(0, steps) for _ in range(requests)] for _ in range(64)]
    rows = []
    for impl, obj in (("histogram (AcceptanceStats)", AcceptanceStats()),
                      ("per request (until session 8)", PerRequestCounts())):
        turn = itertools.count()
        med, p99 = _median_us(lambda: obj.observe(steps, results[next(turn) % 64]), calls)
        rows.append({"op": "acceptance.observe", "impl": impl, "requests": requests, "steps": steps,
                     "calls": calls, "us_median": med, "us_p99": p99})
    return rows


def time_spec_alloc(requests: int, calls: int) -> list:
    """SGLang's alloc_for_spec_decode with nothing to allocate: the closing per-request loop."""
    import types

    import torch
    from sglang.srt.mem_cache.allocation import alloc_for_spec_decode

    from adaptive_spec.sglang_plugin.hooks_alloc import around_alloc_for_spec_decode

    reqs = [types.SimpleNamespace(kv=types.SimpleNamespace(kv_allocated_len=5)) for _ in range(requests)]
    tree = types.SimpleNamespace(token_to_kv_pool_allocator=types.SimpleNamespace(page_size=1))
    kw = dict(reqs=reqs, req_pool_indices=None, cur_kv_lens=None, cur_kv_lens_cpu=None, nxt_kv_lens=None,
              nxt_kv_lens_cpu=torch.arange(requests, dtype=torch.int32) + 10, num_needed_tokens=0)
    rows = []
    for impl, fn in (("tensor indexed per request (SGLang 0.5.16)", lambda: alloc_for_spec_decode(tree, None, **kw)),
                     ("lengths as a list (hooks_alloc)",
                      lambda: around_alloc_for_spec_decode(alloc_for_spec_decode, tree, None, **kw))):
        med, p99 = _median_us(fn, calls)
        rows.append({"op": "alloc_for_spec_decode", "impl": impl, "requests": requests,
                     "calls": calls, "us_median": med, "us_p99": p99})
    return rows


def time_policy(cfg: AdaptiveSpecConfig, calls: int, seed: int = 0, metrics: bool = False,
                steady: bool = False) -> dict:
    """`metrics`: with our Prometheus listener installed, as a server with --enable-metrics runs
    it (prometheus_client in multiprocess mode when PROMETHEUS_MULTIPROC_DIR is set first).
    `steady`: every call at 64 requests (a load that holds; the default draws each call's batch
    size from 1..256, so decisions change often)."""
    rng = random.Random(seed)
    ctl = Controller(cfg)
    if metrics:
        from prometheus_client import CollectorRegistry

        from adaptive_spec.sglang_plugin.metrics import install_metrics

        install_metrics(ctl, 0, CollectorRegistry())
    batch_sizes = [64 if steady else rng.choice([1, 4, 16, 64, 128, 256]) for _ in range(calls)]
    table = getattr(ctl.policy, "table", None)  # goodput: its step-time table syncs every 32
    samples, sync_samples = [], []
    for i, bs in enumerate(batch_sizes):
        ctl.on_snapshot(LoadSnapshot(running=bs, waiting=rng.randint(0, 3)))
        syncs = table.syncs if table is not None else None
        t0 = time.perf_counter_ns()
        k = ctl.decide(bs).steps
        samples.append(time.perf_counter_ns() - t0)
        if table is not None and table.syncs != syncs:
            sync_samples.append(samples[-1])
        # feed a result like the server does (acceptance + a step time)
        ctl.acceptance.observe(k, [rng.randint(0, k) for _ in range(min(bs, 8))])
        if hasattr(ctl.policy, "observe_step_time"):
            ctl.policy.observe_step_time(bs, k, 0.008 + 0.0001 * k)
    samples.sort()
    row = {
        "policy": cfg.policy if cfg.force is None else f"forced {cfg.force}",
        "calls": calls,
        "batch_sizes": "64" if steady else "1..256, drawn per call",
        "us_median": round(statistics.median(samples) / 1000, 2),
        "us_p99": round(samples[int(0.99 * len(samples))] / 1000, 2),
        "us_mean": round(sum(samples) / len(samples) / 1000, 2),
    }
    if sync_samples:  # the decisions that also merged the step-time table (goodput)
        row["us_median_sync_decisions"] = round(statistics.median(sync_samples) / 1000, 2)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(prog="adaptive-spec-bench decision-cost")
    p.add_argument("--calls", type=int, default=50_000)
    p.add_argument("--out")
    a = p.parse_args(argv)
    rows = [
        time_policy(AdaptiveSpecConfig(policy="threshold", min_accept_len=1.5), a.calls),
        time_policy(AdaptiveSpecConfig(policy="goodput", max_steps=3), a.calls),
        time_policy(AdaptiveSpecConfig(policy="goodput", max_steps=7), a.calls),
    ]
    rows[-1]["max_steps"] = 7
    # as in a server with --enable-metrics and --adaptive-spec-log-decisions: the metrics
    # listener writes prometheus_client's multiprocess files (set up before its first import)
    with tempfile.TemporaryDirectory() as prom_dir:
        before = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", prom_dir)
        try:
            goodput = dict(policy="goodput", max_steps=3, log_decisions=True)
            served = ((goodput, False), (goodput, True), (dict(force="off"), True))  # + the forced-off servers' case
            for kwargs, steady in served:
                row = time_policy(AdaptiveSpecConfig(**kwargs), a.calls, metrics=True, steady=steady)
                row["with"] = "metrics listener (prometheus_client multiprocess files) and decision log"
                rows.append(row)
        finally:
            if before == prom_dir:
                del os.environ["PROMETHEUS_MULTIPROC_DIR"]
    rows += time_acceptance(64, 3, 5000) + time_acceptance(256, 7, 2000)
    rows += time_spec_alloc(64, 2000) + time_spec_alloc(256, 1000)
    result = {
        "schema": "adaptive-spec-decision-cost/1",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_implementation()} {platform.python_version()} (the development/CI machine, 2 cores)",
        "command": "python -m adaptive_spec.bench.decision_cost"
                   + (f" --calls {a.calls}" if a.calls != 50_000 else "") + " --out " + (a.out or "-"),
        "budget_us": 20,
        "rows": rows,
    }
    text = json.dumps(result, indent=1)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
