"""CPU cost of one decision (Controller.decide with a policy), per policy.

    python -m adaptive_spec.bench.decision_cost --out benchmarks/results/DATE-decision-cost.json

The decision runs once per decode step on the scheduler's CPU thread; the budget is 20 us.
No GPU is touched: the inputs are the CPU values the scheduler already holds.
"""

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.signals import LoadSnapshot


def time_policy(cfg: AdaptiveSpecConfig, calls: int, seed: int = 0, metrics: bool = False) -> dict:
    """`metrics`: with our Prometheus listener installed, as a server with --enable-metrics runs
    it (prometheus_client in multiprocess mode when PROMETHEUS_MULTIPROC_DIR is set first)."""
    rng = random.Random(seed)
    ctl = Controller(cfg)
    if metrics:
        from prometheus_client import CollectorRegistry

        from adaptive_spec.sglang_plugin.metrics import install_metrics

        install_metrics(ctl, 0, CollectorRegistry())
    batch_sizes = [rng.choice([1, 4, 16, 64, 128, 256]) for _ in range(calls)]
    samples = []
    for i, bs in enumerate(batch_sizes):
        ctl.on_snapshot(LoadSnapshot(running=bs, waiting=rng.randint(0, 3)))
        t0 = time.perf_counter_ns()
        k = ctl.decide(bs).steps
        samples.append(time.perf_counter_ns() - t0)
        # feed a result like the server does (acceptance + a step time)
        ctl.acceptance.observe(k, [rng.randint(0, k) for _ in range(min(bs, 8))])
        if hasattr(ctl.policy, "observe_step_time"):
            ctl.policy.observe_step_time(bs, k, 0.008 + 0.0001 * k)
    samples.sort()
    return {
        "policy": cfg.policy,
        "calls": calls,
        "us_median": round(statistics.median(samples) / 1000, 2),
        "us_p99": round(samples[int(0.99 * len(samples))] / 1000, 2),
        "us_mean": round(sum(samples) / len(samples) / 1000, 2),
    }


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
            row = time_policy(AdaptiveSpecConfig(policy="goodput", max_steps=3, log_decisions=True),
                              a.calls, metrics=True)
        finally:
            if before == prom_dir:
                del os.environ["PROMETHEUS_MULTIPROC_DIR"]
    row["with"] = "metrics listener (prometheus_client multiprocess files) and decision log"
    rows.append(row)
    result = {
        "schema": "adaptive-spec-decision-cost/1",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_implementation()} {platform.python_version()} (the development/CI machine, 2 cores)",
        "command": "python -m adaptive_spec.bench.decision_cost --out " + (a.out or "-"),
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
