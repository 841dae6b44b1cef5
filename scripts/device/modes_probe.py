#!/usr/bin/env python3
"""Measure one adaptive-spec server in several modes, switched at run time through
POST /adaptive_spec/config (no restart), with the same closed batches as closed_probe.py.

Plan items: label, settings, batch sizes. After each item: counters from
/adaptive_spec/status (steps histogram, step modes, on-step accept length) and KV tokens
in use from /v1/loads once the batch is done (must return to the idle level: no leak).
"""

import argparse
import json
import sys
import time

from closed_probe import S, generate, profile_during_batch, prompts_for, summarize_outputs, wait_ready, warm_up

# (label, settings, batch sizes, repetitions); the server starts with the goodput policy
# (runtime states for every step count 0..max), so every mode below can be switched to.
ALL_N = [1, 16, 64, 128, 256]
PLANS = {
    "aligned": [
        ("adaptive-spec:forced-off", {"force": "off", "policy": "threshold"}, [64, 128, 256], 3),
        ("adaptive-spec:forced-on", {"force": "on"}, [1, 16], 3),
        ("adaptive-spec:flapping-1", {"force": "flap:1"}, [256], 2),
        ("adaptive-spec:flapping-8", {"force": "flap:8"}, [256], 2),
        ("adaptive-spec:threshold", {"force": None, "policy": "threshold"}, ALL_N, 3),
        ("learn:goodput", {"policy": "goodput"}, ALL_N, 1),  # online learning pass, not a result
        ("adaptive-spec:goodput", {}, ALL_N, 3),
    ],
    "wrong": [
        ("adaptive-spec:threshold", {"force": None, "policy": "threshold"}, ALL_N, 2),
        ("learn:goodput", {"policy": "goodput"}, ALL_N, 1),
        ("adaptive-spec:goodput", {}, ALL_N, 2),
    ],
}


def post_config(base, body):
    r = S.post(base + "/adaptive_spec/config", json=body, timeout=60)
    return r.status_code, r.json()


def status(base):
    return S.get(base + "/adaptive_spec/status", timeout=60).json()


def kv_used(base):
    try:
        loads = S.get(base + "/v1/loads", timeout=30).json()
        rows = loads if isinstance(loads, list) else loads.get("loads", loads.get("data", []))
        return sum(int(r.get("num_used_tokens", 0)) for r in rows)
    except Exception as exc:  # noqa: BLE001
        return repr(exc)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--new", type=int, default=256)
    p.add_argument("--profile-n", type=int, default=128)
    p.add_argument("--plan", choices=sorted(PLANS), default="aligned")
    p.add_argument("--suffix", default="", help="appended to every record name, e.g. @always-wrong")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    base = f"http://127.0.0.1:{a.port}"
    ready = wait_ready(base, a.pid, 300)
    recs = []
    if ready is None:
        recs.append({"name": "adaptive-spec", "error": "server not ready"})
    else:
        warm_up(base, [1, 16, 64, 128, 256], a.vocab)
        # A bad run-time value is rejected and changes nothing.
        code, body = post_config(base, {"threshold": -1})
        recs.append({"name": "runtime-bad-value", "http_status": code, "body": body})
        kv_idle = kv_used(base)
        for label, settings, batches, reps in PLANS[a.plan]:
            rec = {"name": label + a.suffix, "settings": settings}
            try:
                code, body = post_config(base, dict(settings, reset_stats=True))
                rec["config_http_status"] = code
                if code != 200:
                    rec["config_error"] = body
                rec["batches"] = {}
                for n in batches:
                    runs = []
                    for rep in range(reps):
                        outs, dt = generate(base, prompts_for(n, a.vocab, seed=rep), a.new)
                        runs.append(summarize_outputs(outs, dt))
                    rec["batches"][str(n)] = runs
                    print(f"[modes {label}] N={n}: {[r['tok_per_s'] for r in runs]} tok/s", flush=True)
                if label == "adaptive-spec:forced-off" and a.profile_n:
                    rec["profiled"] = profile_during_batch(
                        base, prompts_for(a.profile_n, a.vocab, seed=7), a.new, 12, "/tmp/as-prof/forced-off", delay_s=1.0
                    )
                st = status(base)
                rank0 = (st.get("ranks") or [{}])[0] or {}
                rec["status"] = {k: rank0.get(k) for k in ("steps_histogram", "step_modes", "acceptance", "switches", "decide_us_mean", "fallback")}
                time.sleep(0.5)
                rec["kv_used_after"] = kv_used(base)
                rec["kv_used_idle_before"] = kv_idle
            except Exception as exc:  # noqa: BLE001
                rec["error"] = repr(exc)
            recs.append(rec)
            print(json.dumps(rec)[:1500], flush=True)
    with open(a.out, "a") as fh:
        for rec in recs:
            fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
