"""``adaptive-spec-bench soak``: a long mixed run against running servers (reliability).

  adaptive-spec-bench soak --plain URL --sut URL [--sut-pid PID] --duration-s 660 --out F.json

1. A fixed set of greedy probe prompts runs on the plain server (the reference) and on the
   system under test (SUT) before the load.
   Then each unusual request (below) runs once, timed: first-use costs such as a JIT
   compile of a sampling kernel are start-up, reported as ``odd_first_use``.
2. For ``--duration-s`` the SUT gets closed-loop load in patterns that make drafting switch
   (step, bursty, sawtooth, round-robin), plus, every ``--odd-every-s``, one request with
   unusual parameters (temperature 0 and high, top-k 1, tiny top-p, min-p, a stop token,
   ``n`` = 2, logprobs, one new token, a very long prompt) or a client that disconnects
   mid-stream. Each must complete or get a proper HTTP error; the server must stay up.
3. KV tokens in use and the resident memory of the SUT's processes (its session, when
   ``--sut-pid`` is given) are sampled; at the idle start and end they must match.
   During every sawtooth pattern the probes also run on the SUT, mixed into the load while
   drafting switches (``probes_under_load``): issue 8's lossless check under a sawtooth.
4. The probes run again on the SUT: identical to the plain server's, token for token, here
   and in every pass under load.

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
from . import stats as st
from .sweep import machine_string

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
    vocab: int                # the target's vocabulary (prompts are random ids below it)
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
    _, obj = await client.get_json("/v1/loads?include=core", timeout=5.0)
    return lg.loads_sum(obj, "num_used_tokens")


async def server_facts(client: lg.Client) -> tuple:
    """(KV pool size in tokens, SGLang version, tensor-parallel size or None) as the server
    reports them."""
    _, obj = await client.get_json("/server_info", timeout=10.0)
    obj = obj if isinstance(obj, dict) else {}
    v = obj.get("max_total_num_tokens")
    if v is None:
        states = obj.get("internal_states") or [{}]
        v = states[0].get("max_total_num_tokens") if isinstance(states[0], dict) else None
    kv = int(v) if isinstance(v, (int, float)) else None
    tp = obj.get("tp_size")
    return kv, str(obj.get("version") or "unknown"), int(tp) if isinstance(tp, int) else None


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


async def first_use_of_odd_requests(client: lg.Client, cfg: SoakConfig) -> Dict[str, dict]:
    """Each unusual request once, one after another, before the clock starts. On 2026-11-29
    the server stalled ~100 s right after the soak's first sampling request (most likely a
    first-use JIT compile of a sampling kernel: the session's RSS rose and fell by ~12 GB)
    and 128 requests of the run timed out. A first-use cost is start-up: reported here, not
    counted against the run."""
    out = {}
    for name in ODD_REQUESTS:
        t = time.time()
        r = await odd_request(client, name, -1, cfg)
        out[name] = {"seconds": round(time.time() - t, 2), "result": r}
    return out


def same(reference: List[Optional[List[int]]], outputs: List[Optional[List[int]]]) -> bool:
    """Every probe completed on both sides with the same tokens."""
    return len(reference) == len(outputs) and all(
        x is not None and x == y for x, y in zip(reference, outputs))


async def soak(cfg: SoakConfig) -> dict:
    mk = dict(new_tokens=cfg.new_tokens, temperature=0.0, request_timeout_s=120.0,
              max_connections=cfg.high + 64)
    t_start = time.time()
    async with lg.Client(cfg.plain, **mk) as plain, lg.Client(cfg.sut, **mk) as sut:
        ref = await run_probes(plain, cfg)
        before = await run_probes(sut, cfg)
        first_use = await first_use_of_odd_requests(sut, cfg)
        await lg.wait_idle(sut, 60.0)
        kv_max, sglang_version, tp_reported = await server_facts(sut)
        kv0, rss0 = await kv_tokens(sut), session_rss_mb(cfg.sut_pid)
        samples: List[dict] = []
        odd: Dict[str, OddCount] = {n: OddCount() for n in ODD_REQUESTS}
        requests = failed = 0
        first_error = None
        patterns_run: List[str] = []
        under_load: List[dict] = []
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
            sched = lg.pattern_schedule(name, cfg.low, cfg.high, cfg.pattern_s,
                                        period=cfg.pattern_s / (3 if name == "sawtooth" else 4),
                                        burst=3.0)
            t_probe = round(time.time() - t_start, 1)
            probes = asyncio.ensure_future(run_probes(sut, cfg)) if name == "sawtooth" else None
            res = await lg.run_closed(sut, lambda i, n=name, k=k: lg.make_prompt(
                cfg.seed, f"soak-{n}-{k}", i, cfg.prompt_len, cfg.vocab), sched,
                max_requests=10 ** 7, time_budget_s=max(t_load_end - time.time(), 0.1),
                drain_s=30.0)
            patterns_run.append(name)
            requests += len(res.records)
            # an error, or still running 30 s after issuing stopped (cut off): both failures
            failed += sum(1 for r in res.records if r.error is not None) + res.cut_off
            first_error = first_error or st.first_error(res.records) or (
                "cut off: still running 30 s after issuing stopped" if res.cut_off else None)
            if probes is not None:
                outs = await probes  # each request bounded by the client's timeout
                lost = sum(1 for o in outs if o is None)
                requests += len(outs)
                failed += lost
                under_load.append({"pattern": name, "t_s": t_probe, "prompts": len(outs),
                                   "failed": lost, "identical": same(ref, outs)})
        stop.set()
        await asyncio.wait(tasks, timeout=180.0)
        idle = await lg.wait_idle(sut, 120.0)
        kv1, rss1 = await kv_tokens(sut), session_rss_mb(cfg.sut_pid)
        after = await run_probes(sut, cfg)
        health, _ = await sut.get_json("/health", timeout=10.0)
        _, status = await sut.get_json(lg.STATUS_PATH, timeout=10.0)

    same_start, same_end = same(ref, before), same(ref, after)
    same_under_load = all(p["identical"] for p in under_load)
    odd_failed = sum(c.failed for c in odd.values())
    return {
        "schema": "adaptive-spec-soak/1", "date": time.strftime("%Y-%m-%d"),
        "machine": machine_string(), "sglang_version": sglang_version, "command": cfg.command,
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
        "probe_identical_to_plain": same_start and same_end and same_under_load,
        "probe_identical_at_start": same_start, "probe_identical_at_end": same_end,
        "probes_under_load": under_load,
        "odd_requests": {n: vars(c) for n, c in odd.items()},
        "odd_first_use": first_use,
        "health_at_end": health, "samples": samples, "tp_size": tp_reported or cfg.tp_size,
        # ours: the fallback (a fault drill sets ADAPTIVE_SPEC_INJECT_FAULT) and the decisions
        "status_at_end": lg.status_ranks(status, ("fallback", "steps_histogram", "step_modes",
                                                  "reentry")),
    }

