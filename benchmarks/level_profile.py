"""A torch profile of a server under one sweep level's load (``sweep --profile-at N``).

After the level is measured, the same N streams run again for ``LOAD_S`` seconds (their
records are dropped: profiling slows the server, so it never touches a measured row), and in
the middle of that run SGLang's ``/start_profile`` records ``steps`` forward steps (CPU and GPU)
into the sweep's log folder. The trace is summarised with :mod:`trace_summary` into the level's
row: GPU busy vs span, and for the scheduler's thread the CUDA runtime calls, syncs and Python
self time. That answers "where does this system's time go at N" for every system of one run
(issue 3: our server with drafting off against plain under continuous arrivals).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Callable, Optional

from . import loadgen as lg
from .trace_summary import summarize_trace

LOAD_S = 8.0
TRACE_WAIT_S = 120.0  # writing a CPU+GPU trace of a busy server takes a while


async def profile_under_load(cl: lg.Client, prompt_fn: Callable, n: int, steps: int,
                             out_dir: str, new_tokens_fn=None, drain_s: float = 4.0,
                             load_s: Optional[float] = None) -> dict:
    load_s = LOAD_S if load_s is None else load_s
    os.makedirs(out_dir, exist_ok=True)
    before = set(os.listdir(out_dir))
    load = asyncio.ensure_future(lg.run_closed(
        cl, prompt_fn, lg.steady(n, load_s), max_requests=100000, time_budget_s=load_s,
        drain_s=drain_s, new_tokens_fn=new_tokens_fn))
    await asyncio.sleep(load_s / 3)  # past the ramp: N streams in flight
    code, _ = await cl.post_json("/start_profile", {"output_dir": out_dir, "num_steps": steps,
                                                    "activities": ["CPU", "GPU"]}, timeout=60.0)
    await load
    if code != 200:
        return {"error": f"/start_profile answered {code}"}
    path = await wait_for_trace(out_dir, before, TRACE_WAIT_S)
    if path is None:
        return {"error": f"no trace in {out_dir} after {TRACE_WAIT_S:.0f} s"}
    err = None
    for _ in range(10):  # a gzip still being written reads as truncated
        try:
            out = summarize_trace(path, steps=steps)
            out["trace"] = path
            return out
        except (EOFError, ValueError, OSError) as exc:
            err = exc
            await asyncio.sleep(2.0)
    return {"error": f"unreadable trace {path}: {err!r}"[:300]}


async def wait_for_trace(out_dir: str, before: set, limit_s: float) -> Optional[str]:
    """The first new file in out_dir once its size has held still for 3 s (bounded)."""
    t0, sizes, still = time.time(), None, 0
    while time.time() - t0 < limit_s:
        new = sorted(f for f in os.listdir(out_dir) if f not in before)
        now = [os.path.getsize(os.path.join(out_dir, f)) for f in new]
        still = still + 1 if new and now == sizes and all(now) else 0
        sizes = now
        if still >= 3:
            return os.path.join(out_dir, new[0])
        await asyncio.sleep(1.0)
    return None
