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
from typing import Callable, Optional

from . import loadgen as lg
from .trace_summary import wait_and_summarize

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
    return await asyncio.to_thread(wait_and_summarize, out_dir, before, steps, TRACE_WAIT_S)
