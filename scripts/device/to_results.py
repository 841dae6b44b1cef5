#!/usr/bin/env python3
"""Raw probe records (probes.jsonl from the device scripts) -> result files in the schema of
results-schema.md (`adaptive-spec-bench/1`), one row per (system, N) with the median of the
repetitions, plus the lossless comparison against the plain server's outputs.

  python scripts/device/to_results.py RUN_DIR --name offpath --command "..." [--date 2026-11-29]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

MACHINE = "nvidia-h200: 1x H200, torch 2.11.0+cu130, sglang 0.5.16, triton attention, CUDA graphs on"
MODEL = "synthetic llama 8B shape (hidden 4096, 32 layers, 32/8 heads, inter 14336, vocab 128256), random weights, repeat target"
SYSTEM_NAMES = {"adaptive-spec:flapping-1": "adaptive-spec:flapping", "adaptive-spec:flapping-8": "adaptive-spec:flapping"}


def load(run_dir):
    recs = []
    for line in Path(run_dir, "probes.jsonl").read_text().splitlines():
        if line.strip():
            recs.append(json.loads(line))
    return recs


def rows_from(recs):
    plain_sha = {}
    for rec in recs:
        if rec.get("name") == "plain":
            for n, runs in rec.get("batches", {}).items():
                plain_sha[n] = [r["outputs_sha"] for r in runs]
    rows = []
    for rec in recs:
        name = rec.get("name", "")
        if "batches" not in rec or name.startswith("learn:"):
            continue
        st = rec.get("status") or {}
        for n, runs in rec["batches"].items():
            tps = [r["tok_per_s"] for r in runs]
            row = {
                "system": SYSTEM_NAMES.get(name, name.split("@")[0]),
                "concurrency": int(n),
                "output_tok_s": round(statistics.median(tps), 1),
                "output_tok_s_reps": tps,
                "mean_accept_len": runs[0].get("mean_accept_len"),
                "requests": int(n) * len(runs),
            }
            if name != SYSTEM_NAMES.get(name, name) or "@" in name:
                row["variant"] = name
            row["draft"] = "always-wrong" if name.endswith("@always-wrong") else ("always-right" if name != "plain" else None)
            if n in plain_sha and name != "plain":
                shas = [r["outputs_sha"] for r in runs]
                k = min(len(shas), len(plain_sha[n]))
                row["greedy_identical_to_plain"] = shas[:k] == plain_sha[n][:k]
            if st.get("steps_histogram") is not None:
                row["steps_histogram"] = st["steps_histogram"]  # counted over the whole mode
                row["step_modes"] = st.get("step_modes")
                acc = st.get("acceptance") or {}
                row["on_step_mean_accept_len"] = acc.get("mean_accept_len")
                row["kv_used_after"] = rec.get("kv_used_after")
                row["kv_used_idle_before"] = rec.get("kv_used_idle_before")
            rows.append(row)
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("run_dir")
    p.add_argument("--name", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--date", default="2026-11-29")
    p.add_argument("--draft", default="synthetic EAGLE-3: aligned (always right) and random (always wrong), 3 steps, topk 1")
    p.add_argument("--out-dir", default="benchmarks/results")
    p.add_argument("--draft-filter", choices=["always-right", "always-wrong"], help="keep plain + rows measured with this draft")
    a = p.parse_args()
    recs = load(a.run_dir)
    result = {
        "schema": "adaptive-spec-bench/1",
        "date": a.date,
        "machine": MACHINE,
        "sglang_version": "0.5.16",
        "model": MODEL,
        "draft": a.draft,
        "acceptance": "real",
        "workload": {"kind": "closed", "new_tokens": 256, "prompt_tokens": [40, 128], "temperature": 0.0,
                     "note": "one /generate call carrying N prompts per repetition; client wall clock, prefill included; median of repetitions"},
        "command": a.command,
        "rows": [r for r in rows_from(recs) if not a.draft_filter or r["system"] == "plain" or r.get("draft") == a.draft_filter],
        "extra": {r["name"]: {k: v for k, v in r.items() if k in ("profiled", "temperature_sweep", "http_status", "body", "ready_after_s", "status_route", "error")}
                  for r in recs if any(k in r for k in ("profiled", "temperature_sweep", "http_status", "error", "status_route"))},
    }
    out = Path(a.out_dir, f"{a.date}-{a.name}.json")
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
