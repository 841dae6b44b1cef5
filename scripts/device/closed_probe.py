#!/usr/bin/env python3
"""Closed-batch probe of one local SGLang server, with an optional torch-profiler summary.

For each N: one /generate call carrying N prompts (random ids, greedy, ignore_eos), timed at
the client (prefill included), the same prompts for every server so outputs can be compared.
`--profile-n N`: profile `--profile-steps` forward steps in the middle of an N-batch and
summarise GPU kernel time by name (top kernels) and by category.
Loopback only, every loop bounded. Appends one JSON record to --out.
"""

import argparse
import hashlib
import json
import os
import random
import sys
import threading
import time

import requests

from adaptive_spec.bench.trace_summary import wait_and_summarize

S = requests.Session()
S.trust_env = False


def wait_ready(base, pid, limit_s):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        try:
            os.kill(pid, 0)
        except OSError:
            return None
        try:
            if S.get(base + "/health", timeout=5).status_code == 200:
                return round(time.time() - t0, 1)
        except requests.RequestException:
            pass
        time.sleep(1)
    return None


def prompts_for(n, vocab, seed=0):
    rng = random.Random(seed * 100003 + n)
    return [[rng.randrange(100, vocab - 100) for _ in range(rng.randint(40, 128))] for _ in range(n)]


def generate(base, prompts, new_tokens, temperature=0.0, timeout=600):
    body = {
        "input_ids": prompts,
        "sampling_params": {"max_new_tokens": new_tokens, "temperature": temperature, "ignore_eos": True},
    }
    t = time.time()
    r = S.post(base + "/generate", json=body, timeout=timeout)
    r.raise_for_status()
    return r.json(), time.time() - t


def warm_up(base, batches, vocab):
    """Every batch size once, short: first-use costs (kernel JIT for new prefill shapes, first
    graph replays) otherwise land in whichever system is measured first."""
    for n in sorted(set(batches)):
        generate(base, prompts_for(n, vocab, seed=99), 16)


def summarize_outputs(outs, dt):
    ntok = sum(len(o.get("output_ids", [])) for o in outs)
    verify = sum(o.get("meta_info", {}).get("spec_verify_ct", 0) or 0 for o in outs)
    digest = hashlib.sha256(json.dumps([o.get("output_ids") for o in outs]).encode()).hexdigest()[:16]
    return {
        "wall_s": round(dt, 3),
        "new_tokens": ntok,
        "tok_per_s": round(ntok / dt, 1),
        "mean_accept_len": round(ntok / verify, 3) if verify else None,
        "outputs_sha": digest,
    }


def profile_trace_after(base, steps, out_dir):
    """Profile the server's next `steps` forward steps (CPU and GPU) and summarise the trace."""
    os.makedirs(out_dir, exist_ok=True)
    before = set(os.listdir(out_dir))
    S.post(base + "/start_profile", json={"output_dir": out_dir, "num_steps": steps, "activities": ["CPU", "GPU"]}, timeout=120)
    prof = wait_and_summarize(out_dir, before, steps)
    if "error" in prof:
        return {"profile_error": prof["error"]}
    prof["trace_file"] = os.path.basename(prof.pop("trace"))
    return {"profile": prof}


def profile_during_batch(base, prompts, new_tokens, steps, out_dir, delay_s=3.0):
    result = {}

    def run():
        outs, dt = generate(base, prompts, new_tokens)
        result["batch"] = summarize_outputs(outs, dt)

    th = threading.Thread(target=run)
    th.start()
    time.sleep(delay_s)  # past the prefill, in steady decode
    result.update(profile_trace_after(base, steps, out_dir))
    th.join(timeout=600)
    return result


def probe_parser() -> argparse.ArgumentParser:
    """The arguments every probe of one local server takes: its record name, port and pid."""
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    return p


def main():
    p = probe_parser()
    p.add_argument("--wait", type=float, default=300)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64, 128, 256])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--new", type=int, default=256)
    p.add_argument("--profile-n", type=int, default=0)
    p.add_argument("--profile-steps", type=int, default=12)
    p.add_argument("--profile-delay", type=float, default=1.0, help="seconds into the batch (past its prefill)")
    p.add_argument("--profile-dir", default="/tmp/as-prof")
    p.add_argument("--status-route", action="store_true", help="also GET /adaptive_spec/status")
    p.add_argument("--temps", type=float, nargs="*", default=[], help="acceptance vs temperature at N=64")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    base = f"http://127.0.0.1:{a.port}"
    rec = {"name": a.name}
    ready = wait_ready(base, a.pid, a.wait)
    rec["ready_after_s"] = ready
    if ready is None:
        rec["error"] = "server not ready (exited or timed out)"
    else:
        try:
            warm_up(base, a.batches, a.vocab)
            rec["batches"] = {}
            for n in a.batches:
                runs = []
                for rep in range(a.reps):
                    outs, dt = generate(base, prompts_for(n, a.vocab, seed=rep), a.new)
                    runs.append(summarize_outputs(outs if isinstance(outs, list) else [outs], dt))
                rec["batches"][str(n)] = runs
                print(f"[probe {a.name}] N={n}: {[r['tok_per_s'] for r in runs]} tok/s, accept {runs[0]['mean_accept_len']}", flush=True)
            if a.temps:
                rec["temperature_sweep"] = {}
                for temp in a.temps:
                    outs, dt = generate(base, prompts_for(64, a.vocab, seed=5), 128, temperature=temp)
                    rec["temperature_sweep"][str(temp)] = summarize_outputs(outs, dt)
                    print(f"[probe {a.name}] T={temp}: accept len {rec['temperature_sweep'][str(temp)]['mean_accept_len']}", flush=True)
            if a.profile_n:
                rec["profiled"] = profile_during_batch(
                    base, prompts_for(a.profile_n, a.vocab, seed=7), a.new, a.profile_steps, os.path.join(a.profile_dir, a.name),
                    delay_s=a.profile_delay,
                )
            si = S.get(base + "/server_info", timeout=30).json()
            rec["server_info"] = {k: si.get(k) for k in ("speculative_algorithm", "speculative_num_steps",
                                                       "speculative_adaptive", "max_running_requests", "version")}  # fmt: skip
            states = si.get("internal_states") or [{}]
            rec["server_info"]["avg_spec_accept_length"] = states[0].get("avg_spec_accept_length")
            rec["server_info"]["adaptive_spec"] = states[0].get("adaptive_spec")
            if a.status_route:
                r = S.get(base + "/adaptive_spec/status", timeout=30)
                rec["status_route"] = r.json() if r.status_code == 200 else {"http_status": r.status_code}
        except Exception as exc:  # noqa: BLE001
            rec["error"] = repr(exc)
    with open(a.out, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    print(json.dumps(rec)[:3000], flush=True)
    return 0 if "error" not in rec else 1


if __name__ == "__main__":
    sys.exit(main())
