"""``adaptive-spec-bench soak``: a long mixed run against running servers (reliability).

  adaptive-spec-bench soak --plain URL --sut URL [--sut-pid PID] --duration-s 660 --out F.json

1. A fixed set of greedy probe prompts runs on the plain server (the reference) and on the
   system under test (SUT) before the load.
2. For ``--duration-s`` the SUT gets closed-loop load in patterns that make drafting switch
   (step, bursty, sawtooth, round-robin), plus, every ``--odd-every-s``, one request with
   unusual parameters (temperature 0 and high, top-k 1, tiny top-p, min-p, a stop token,
   ``n`` = 2, logprobs, one new token, a very long prompt) or a client that disconnects
   mid-stream. Each must complete or get a proper HTTP error; the server must stay up.
3. KV tokens in use and the resident memory of the SUT's processes (its session, when
   ``--sut-pid`` is given) are sampled; at the idle start and end they must match.
4. The probes run again on the SUT: identical to the plain server's, token for token.

Writes ``adaptive-spec-soak/1`` (``../shared/design/results-schema.md``). Every loop is
bounded in time; loopback URLs only.
"""
from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import loadgen as lg
from .loadgen import BenchError

PATTERNS = ("step", "bursty", "sawtooth")

# name -> (sampling-parameter overrides, extra body fields, prompt length or None)
ODD_REQUESTS = {
    "temperature-0": ({"temperature": 0.0}, {}, None),
    "temperature-high": ({"temperature": 5.0}, {}, None),
    "top-k-1": ({"temperature": 1.0, "top_k": 1}, {}, None),
    "top-p-tiny": ({"temperature": 1.0, "top_p": 1e-4}, {}, None),
    "min-p": ({"temperature": 1.0, "min_p": 0.3}, {}, None),
    "stop-token": ({"temperature": 1.0, "stop_token_ids": [150, 151, 152]}, {}, None),
    "n-2": ({"temperature": 1.0, "n": 2}, {}, None),
    "logprobs": ({}, {"return_logprob": True, "top_logprobs_num": 2}, None),
    "max-new-tokens-1": ({"max_new_tokens": 1}, {}, None),
    "long-prompt": ({}, {}, 3000),
    "disconnect": ({}, {}, None),  # the client goes away after the first tokens
}


@dataclass
class SoakConfig:
    plain: str
    sut: str
    out: str
    sut_pid: Optional[int] = None
    duration_s: float = 660.0
    pattern_s: float = 60.0
    low: int = 1
    high: int = 128
    new_tokens: int = 128
    prompt_len: List[int] = field(default_factory=lambda: [40, 128])
    probes: int = 200
    probe_tokens: int = 64
    odd_every_s: float = 2.0
    sample_every_s: float = 10.0
    vocab: Optional[int] = None
    seed: int = 0
    tp_size: int = 1
    command: str = ""


@dataclass
class OddCount:
    sent: int = 0
    completed: int = 0
    http_errors: int = 0   # a proper refusal (4xx with a message)
    failed: int = 0        # anything else: 5xx, a broken stream, no answer
    first_failure: Optional[str] = None


def session_rss_mb(pid: Optional[int]) -> Optional[float]:
    """Resident memory of every process in `pid`'s session (the server and its children)."""
    if not pid:
        return None
    try:
        sid = os.getsid(pid)
    except OSError:
        return None
    total_kb = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.getsid(int(d)) != sid:
                continue
            with open(f"/proc/{d}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
    return round(total_kb / 1024.0, 1)


async def kv_tokens(client: lg.Client) -> Optional[int]:
    code, obj = await client.get_json("/v1/loads?include=core", timeout=5.0)
    if code != 200 or not isinstance(obj, dict) or not isinstance(obj.get("loads"), list):
        return None
    return sum(int(r.get("num_used_tokens", 0) or 0) for r in obj["loads"])


async def max_kv_tokens(client: lg.Client) -> Optional[int]:
    code, obj = await client.get_json("/server_info", timeout=10.0)
    if code != 200 or not isinstance(obj, dict):
        return None
    v = obj.get("max_total_num_tokens")
    if v is None:
        states = obj.get("internal_states") or [{}]
        v = states[0].get("max_total_num_tokens") if isinstance(states[0], dict) else None
    return int(v) if isinstance(v, (int, float)) else None


async def run_probes(client: lg.Client, cfg: SoakConfig) -> List[Optional[List[int]]]:
    """Greedy outputs of the probe prompts (None where a request failed), 32 at a time."""
    sem = asyncio.Semaphore(32)

    async def one(i):
        async with sem:
            rec = lg.RequestRecord(idx=i)
            await client.request(rec, lg.make_prompt(cfg.seed, "probe", i, cfg.prompt_len,
                                                     cfg.vocab), new_tokens=cfg.probe_tokens)
            return list(rec.output_ids) if rec.error is None and rec.output_ids else None

    return await asyncio.gather(*(one(i) for i in range(cfg.probes)))


def pattern_schedule(name: str, cfg: SoakConfig) -> lg.Schedule:
    if name == "step":
        return lg.step_pattern(cfg.low, cfg.high, cfg.pattern_s)
    if name == "sawtooth":
        return lg.sawtooth_pattern(cfg.low, cfg.high, cfg.pattern_s / 3, cfg.pattern_s)
    return lg.bursty_pattern(cfg.low, cfg.high, cfg.pattern_s / 4, 3.0, cfg.pattern_s)


async def odd_request(client: lg.Client, name: str, i: int, cfg: SoakConfig) -> str:
    """'completed', 'http_error' or 'failed: why'."""
    sp, extra, plen = ODD_REQUESTS[name]
    ids = lg.make_prompt(cfg.seed, f"odd-{name}", i, [plen] if plen else cfg.prompt_len,
                         cfg.vocab)
    rec = lg.RequestRecord(idx=i)
    if name == "disconnect":
        try:  # stream, then go away mid-way: the server must free the request
            await asyncio.wait_for(client.request(rec, ids), timeout=0.3)
        except asyncio.TimeoutError:
            return "completed"
    else:
        await client.request(rec, ids, sampling=sp, extra=extra, stream=False)
    if rec.error is None:
        return "completed"
    if rec.error.startswith("HTTP 4"):
        return "http_error"
    return f"failed: {rec.error[:160]}"


async def soak(cfg: SoakConfig) -> dict:
    mk = dict(new_tokens=cfg.new_tokens, temperature=0.0, request_timeout_s=120.0,
              max_connections=cfg.high + 64)
    t_start = time.time()
    async with lg.Client(cfg.plain, **mk) as plain, lg.Client(cfg.sut, **mk) as sut:
        if cfg.vocab is None:
            raise BenchError("--vocab is needed (the target's vocabulary size)")
        ref = await run_probes(plain, cfg)
        before = await run_probes(sut, cfg)
        await lg.wait_idle(sut, 60.0)
        kv_max = await max_kv_tokens(sut)
        _, info = await sut.get_json("/server_info", timeout=10.0)
        sglang_version = str((info or {}).get("version") or "unknown")
        kv0, rss0 = await kv_tokens(sut), session_rss_mb(cfg.sut_pid)
        samples: List[dict] = []
        odd: Dict[str, OddCount] = {n: OddCount() for n in ODD_REQUESTS}
        requests = failed = 0
        first_error = None
        patterns_run: List[str] = []
        stop = asyncio.Event()

        async def sampler():
            while not stop.is_set():
                samples.append({"t_s": round(time.time() - t_start, 1), "kv_used": await kv_tokens(sut),
                                "rss_mb": session_rss_mb(cfg.sut_pid)})
                try:
                    await asyncio.wait_for(stop.wait(), cfg.sample_every_s)
                except asyncio.TimeoutError:
                    pass

        async def odd_sender():
            names, i = list(ODD_REQUESTS), 0
            pending = set()
            while not stop.is_set():
                name = names[i % len(names)]
                c = odd[name]
                c.sent += 1

                async def go(name=name, c=c, i=i):
                    r = await odd_request(sut, name, i, cfg)
                    if r == "completed":
                        c.completed += 1
                    elif r == "http_error":
                        c.http_errors += 1
                    else:
                        c.failed += 1
                        c.first_failure = c.first_failure or r
                pending.add(asyncio.ensure_future(go()))
                pending = {t for t in pending if not t.done()}
                i += 1
                try:
                    await asyncio.wait_for(stop.wait(), cfg.odd_every_s)
                except asyncio.TimeoutError:
                    pass
            if pending:
                await asyncio.wait(pending, timeout=150.0)

        tasks = [asyncio.ensure_future(sampler()), asyncio.ensure_future(odd_sender())]
        t_load_end = time.time() + cfg.duration_s
        k = 0
        while time.time() < t_load_end:
            name = PATTERNS[k % len(PATTERNS)]
            k += 1
            sched = pattern_schedule(name, cfg)
            budget = min(sched.duration, t_load_end - time.time())
            res = await lg.run_closed(sut, lambda i, n=name, k=k: lg.make_prompt(
                cfg.seed, f"soak-{n}-{k}", i, cfg.prompt_len, cfg.vocab), sched,
                max_requests=10 ** 7, time_budget_s=max(budget, 0.1), drain_s=30.0)
            patterns_run.append(name)
            requests += len(res.records)
            bad = [r for r in res.records if r.error is not None]
            # an error, or still running 30 s after issuing stopped (cut off): both failures
            failed += len(bad) + res.cut_off
            first_error = first_error or (bad[0].error if bad else None) or (
                "cut off: still running 30 s after issuing stopped" if res.cut_off else None)
        stop.set()
        await asyncio.wait(tasks, timeout=180.0)
        idle = await lg.wait_idle(sut, 120.0)
        kv1, rss1 = await kv_tokens(sut), session_rss_mb(cfg.sut_pid)
        after = await run_probes(sut, cfg)
        health, _ = await sut.get_json("/health", timeout=10.0)
        _, status = await sut.get_json(lg.STATUS_PATH, timeout=10.0)

    def same(a, b):
        return all(x is not None and x == y for x, y in zip(a, b))

    odd_failed = sum(c.failed for c in odd.values())
    return {
        "schema": "adaptive-spec-soak/1", "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(), "sglang_version": sglang_version, "command": cfg.command,
        "duration_s": round(time.time() - t_start, 1), "load_s": cfg.duration_s,
        "requests": requests + sum(c.sent for c in odd.values()),
        "failed": failed + odd_failed, "first_error": first_error,
        "patterns": patterns_run,
        "kv_free_start": None if kv_max is None or kv0 is None else kv_max - kv0,
        "kv_free_end": None if kv_max is None or kv1 is None else kv_max - kv1,
        "kv_used_start": kv0, "kv_used_end": kv1, "idle_at_end": idle,
        "rss_mb_start": rss0, "rss_mb_end": rss1,
        "rss_mb_max": max((s["rss_mb"] for s in samples if s["rss_mb"] is not None), default=None),
        "probe_prompts": cfg.probes,
        "probe_identical_to_plain": same(ref, before) and same(ref, after),
        "probe_identical_at_start": same(ref, before), "probe_identical_at_end": same(ref, after),
        "odd_requests": {n: vars(c) for n, c in odd.items()},
        "health_at_end": health, "samples": samples, "tp_size": cfg.tp_size,
        # ours: the fallback (a fault drill sets ADAPTIVE_SPEC_INJECT_FAULT) and the decisions
        "status_at_end": [{k: r.get(k) for k in ("fallback", "steps_histogram", "step_modes")}
                          for r in (status or {}).get("ranks") or [] if isinstance(r, dict)],
    }


def _machine() -> str:
    from .sweep import machine_string

    return machine_string()

