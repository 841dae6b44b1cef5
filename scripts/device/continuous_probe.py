#!/usr/bin/env python3
"""Continuous-arrival probe of one local server, with a torch-profiler summary (issue 3).

N client threads keep N requests in flight (random-id prompts of 40-128 tokens, greedy,
max_new_tokens spread 192 +-50% per request, the same sequence for every server), so prefills
run between decode steps as in the session-3 sweeps, where our server with drafting off made
only 0.76-0.96x of plain. After `--warm-s` seconds `--profile-steps` forward steps are profiled
(CPU and GPU); the load runs `--load-s` seconds in all. Records output tok/s over the load after
the warm-up, GPU busy vs span in the profiled window (gaps = the host), GPU time by kernel
category and the top CPU annotations: what the off path pays under arrivals that a closed batch
does not show. Loopback only, every loop bounded. Appends one JSON record to --out.
"""

import argparse
import json
import os
import random
import threading
import time

from closed_probe import S, profile_trace_after, wait_ready


def one_request(base, ids, new_tokens, timeout=120):
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0.0,
                                                  "ignore_eos": True}}
    r = S.post(base + "/generate", json=body, timeout=timeout)
    r.raise_for_status()
    return int(r.json()["meta_info"]["completion_tokens"])


def run_load(base, n, vocab, load_s, warm_s, counts, stop):
    """n threads, each issuing requests back to back until `stop`; tokens of requests that end
    after the warm-up count (a request spans ~1 s, so the window's edges matter little)."""
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
            if end - t0 >= warm_s:
                with lock:
                    counts["tokens"] = counts.get("tokens", 0) + tok
                    counts["last_end"] = max(counts.get("last_end", 0.0), end)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(n)]
    for t in threads:
        t.start()
    return threads, t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
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
        threads, t0 = run_load(base, a.n, a.vocab, a.load_s, a.warm_s, counts, stop)
        time.sleep(a.warm_s)
        if a.profile_steps > 0:
            rec["profiled"] = profile_trace_after(base, a.profile_steps, os.path.join(a.profile_dir, a.name))
        for t in threads:
            t.join(timeout=max(1.0, a.load_s - (time.time() - t0)) + 130)
        stop.set()
        span = counts.get("last_end", t0) - t0 - a.warm_s  # warm-up end .. last counted request
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
