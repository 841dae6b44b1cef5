#!/usr/bin/env python3
"""Continuous-arrival probe of one local server, with a torch-profiler summary (issue 3).

N client threads keep N requests in flight (random-id prompts of 40-128 tokens, greedy,
max_new_tokens spread 192 +-50% per request, the same sequence for every server), so prefills
run between decode steps as in the session-3 sweeps, where our server with drafting off made
only 0.76-0.96x of plain. Output tok/s counts the requests that end between `--warm-s` and
`--load-s`; then, under the same load, `--profile-steps` forward steps are profiled (CPU and
GPU): GPU busy vs span in the profiled window (gaps = the host), GPU time by kernel category
and the top CPU annotations: what the off path pays under arrivals that a closed batch does
not show. Loopback only, every loop bounded. Appends one JSON record to --out.
"""

import json
import os
import random
import threading
import time

import requests

from closed_probe import probe_parser, profile_trace_after, wait_ready


_local = threading.local()


def one_request(base, ids, new_tokens, timeout=120):
    # one session per thread: a shared one pools 10 connections for N threads (session 4's
    # first run, which also profiled inside its measured window, read 1.4k tok/s at N = 128)
    if not hasattr(_local, "session"):
        _local.session = requests.Session()
        _local.session.trust_env = False
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0.0,
                                                  "ignore_eos": True}}
    r = _local.session.post(base + "/generate", json=body, timeout=timeout)
    r.raise_for_status()
    return int(r.json()["meta_info"]["completion_tokens"])


def run_load(base, n, vocab, load_s, warm_s, counts, stop, window_end_s):
    """n threads, each issuing requests back to back until `stop`; tokens of requests that end
    between the warm-up and `window_end_s` count (a request spans a few seconds at most; the
    profile runs after the window: tracing and writing the trace stall the server)."""
    t0 = time.time()
    lock = threading.Lock()  # counts is shared by n threads; += on a dict entry is not atomic

    def worker(w):
        rng = random.Random(w)
        while not stop.is_set() and time.time() - t0 < load_s:
            ids = [rng.randrange(100, vocab - 100) for _ in range(rng.randint(40, 128))]
            try:
                tok = one_request(base, ids, rng.randint(96, 288))
            except Exception as exc:  # noqa: BLE001 - counted, the load goes on
                with lock:
                    counts["errors"] = counts.get("errors", 0) + 1
                    counts["first_error"] = counts.get("first_error") or repr(exc)[:200]
                continue
            end = time.time()
            if warm_s <= end - t0 < window_end_s:
                with lock:
                    counts["tokens"] = counts.get("tokens", 0) + tok

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(n)]
    for t in threads:
        t.start()
    return threads, t0


def main():
    p = probe_parser()
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--load-s", type=float, default=30.0)
    p.add_argument("--warm-s", type=float, default=10.0)
    p.add_argument("--profile-steps", type=int, default=60, help="0: no profile")
    p.add_argument("--profile-dir", default="/tmp/as-prof-cont")
    p.add_argument("--wait", type=float, default=300)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    base = f"http://127.0.0.1:{a.port}"
    rec = {"name": a.name, "n": a.n, "ready_after_s": wait_ready(base, a.pid, a.wait)}
    if rec["ready_after_s"] is None:
        rec["error"] = "server not ready"
    else:
        counts, stop = {}, threading.Event()
        window_end = a.load_s  # measured: [warm_s, load_s); then, under the same load, the profile
        total_s = a.load_s + (15.0 if a.profile_steps > 0 else 0.0)
        threads, t0 = run_load(base, a.n, a.vocab, total_s, a.warm_s, counts, stop, window_end)
        time.sleep(max(0.0, window_end - (time.time() - t0)))
        if a.profile_steps > 0:
            rec["profiled"] = profile_trace_after(base, a.profile_steps, os.path.join(a.profile_dir, a.name))
        stop.set()
        for t in threads:
            t.join(timeout=130)
        span = window_end - a.warm_s
        rec.update(tokens=counts.get("tokens", 0), errors=counts.get("errors", 0),
                   first_error=counts.get("first_error"),
                   output_tok_s=round(counts.get("tokens", 0) / span, 1) if span > 0 else None)
    with open(a.out, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    print(json.dumps({k: v for k, v in rec.items() if k != "profiled"}))
    prof = (rec.get("profiled") or {}).get("profile") or {}
    print(a.name, "gpu busy/span ms:", prof.get("gpu_busy_ms"), prof.get("gpu_span_ms"))


if __name__ == "__main__":
    main()
