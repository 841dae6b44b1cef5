"""Where the scheduler thread's time goes, by Python function: a diagnostic (any server).

`ADAPTIVE_SPEC_STACK_SAMPLER=1` in a server's environment (it turns the phase clocks on too:
`phase_timing.py`) starts, at the first decode step, a daemon thread that reads the scheduler
thread's Python stack every ADAPTIVE_SPEC_STACK_SAMPLER_MS (default 2 ms) and counts each
function on it. When a phase-clock window ends (a sweep level) it logs one line:

  adaptive_spec stacks rank=0 decode_steps=612 mean_running=61.3 samples=4903 interval_ms=2.04
    incl_ms_per_step={"sglang/srt/managers/scheduler.py:Scheduler.run_batch": 5.1, ...}
    self_ms_per_step={...}

`incl`: wall ms per decode step with the function anywhere on the stack; `self`: with it
innermost (its own Python, or a C call it made: a kernel launch, a copy, a wait).
`python -m adaptive_spec.bench.stack_summary` lines servers up function by function.

Reading it: the sampling thread needs the GIL, which it gets when the scheduler thread lets
go of it, mostly inside torch calls (their bindings release it) and otherwise within the
interpreter's switch interval (5 ms). A sample can therefore land a little later than it was
due, at the next such point: inclusive times by function are the reliable reading; self times
lean towards the Python lines that call torch.

Why: the phase clocks put our off step's extra against plain at 1.15-1.37 ms per step inside
SGLang's spec-v2 step outside the target forward, and the direct off step (which skips SGLang's
verify) is no faster (session 8); which functions hold that time needs a profile of the host
path, and the torch profiler inflates host time several-fold. Sampling costs the scheduler one
stack walk per interval with the GIL held (estimated, not measured: ~1% at 2 ms); it stops after
ADAPTIVE_SPEC_STACK_SAMPLER_S seconds (default 1,200).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from typing import Dict, List, Optional

from .plugin import RESULT_PROCESSOR
from .sync_probe import short_path

logger = logging.getLogger("adaptive_spec")

ENV = "ADAPTIVE_SPEC_STACK_SAMPLER"
INTERVAL_ENV = "ADAPTIVE_SPEC_STACK_SAMPLER_MS"
LIMIT_ENV = "ADAPTIVE_SPEC_STACK_SAMPLER_S"
MAX_DEPTH = 96  # frames walked per sample (the scheduler's stacks are ~40 deep)
TOP_INCL = 40
TOP_SELF = 25
PATH_MARKERS = ("sglang/", "adaptive_spec/", "flashinfer/", "torch/", "triton/", "zmq/")


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


class StackSampler:
    """Function counts over the stacks of one thread, per busy window."""

    def __init__(self, interval_s: float = 0.002, limit_s: float = 1200.0, clock=time.monotonic):
        self.interval_s = interval_s
        self.limit_s = limit_s
        self.clock = clock
        self._keys: Dict[object, str] = {}  # code object -> "file:qualname" (formatted once)
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.incl: Dict[str, int] = {}
            self.self_: Dict[str, int] = {}
            self.samples = 0
            self.first = None  # clock at the window's first and last sample
            self.last = None

    def _key(self, code) -> str:
        key = self._keys.get(code)
        if key is None:
            key = self._keys[code] = f"{short_path(code.co_filename, PATH_MARKERS)}:{getattr(code, 'co_qualname', code.co_name)}"
        return key

    def add_stack(self, frame) -> None:
        """Count one sample of the stack whose innermost frame is `frame`."""
        seen = set()
        inner = None
        depth = 0
        while frame is not None and depth < MAX_DEPTH:
            key = self._key(frame.f_code)
            if inner is None:
                inner = key
            seen.add(key)  # recursion counts once per sample
            frame = frame.f_back
            depth += 1
        if inner is None:
            return
        now = self.clock()
        with self._lock:
            for key in seen:
                self.incl[key] = self.incl.get(key, 0) + 1
            self.self_[inner] = self.self_.get(inner, 0) + 1
            self.samples += 1
            self.first = now if self.first is None else self.first
            self.last = now

    def window_line(self, rank: int, decode_steps: int, mean_running: float) -> Optional[str]:
        """The log line for the samples since the last reset (None without two samples), then
        a fresh window. ms per step = share of samples x the sampled span / decode steps."""
        with self._lock:
            n = self.samples
            span = (self.last - self.first) if n > 1 else 0.0
            incl, self_ = self.incl, self.self_
        self.reset()
        if n < 2 or decode_steps <= 0 or span <= 0:
            return None
        per_sample_ms = 1000.0 * span / (n - 1)

        def top(counts: Dict[str, int], k: int) -> str:
            best = sorted(counts.items(), key=lambda kv: -kv[1])[:k]
            return json.dumps({name: round(c * per_sample_ms / decode_steps, 3) for name, c in best})

        return (f"adaptive_spec stacks rank={rank} decode_steps={decode_steps} "
                f"mean_running={mean_running:.1f} samples={n} interval_ms={per_sample_ms:.2f} "
                f"incl_ms_per_step={top(incl, TOP_INCL)} self_ms_per_step={top(self_, TOP_SELF)}")

    def start(self, thread_id: int) -> None:
        """Sample `thread_id` from a daemon thread until the limit (bounded in time)."""
        if self._thread is not None:
            return

        def run():
            deadline = self.clock() + self.limit_s
            while not self._stop.is_set() and self.clock() < deadline:
                time.sleep(self.interval_s)
                frame = sys._current_frames().get(thread_id)
                if frame is not None:
                    try:
                        self.add_stack(frame)
                    except Exception as exc:  # a diagnostic must never break serving
                        logger.debug("adaptive_spec stacks: %r", exc)
                del frame
            logger.info("adaptive_spec stacks: sampler stopped")

        self._thread = threading.Thread(target=run, name="adaptive-spec-stack-sampler", daemon=True)
        self._thread.start()
        logger.info("adaptive_spec stacks: sampling thread %d every %.1f ms for up to %.0f s",
                    thread_id, 1000 * self.interval_s, self.limit_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)


_sampler = StackSampler(_env_float(INTERVAL_ENV, 2.0) / 1000.0, _env_float(LIMIT_ENV, 1200.0))


class _WindowListener:
    """What the phase clocks call: a window's line when they log theirs, a reset with theirs."""

    def on_window(self, rank: int, decode_steps: int, mean_running: float) -> None:
        line = _sampler.window_line(rank, decode_steps, mean_running)
        if line is not None:
            logger.info(line)

    def on_reset(self) -> None:
        _sampler.reset()


_listener = _WindowListener()


def after_process_decode(ret, processor, *args, **kwargs):
    """AFTER hook on process_batch_result_decode (runs on the scheduler thread): start once."""
    try:
        _sampler.start(threading.get_ident())
    except Exception as exc:
        logger.debug("adaptive_spec stacks: %r", exc)
    return None


def hooks() -> List[tuple]:
    from . import phase_timing

    phase_timing.add_window_listener(_listener)
    return [(f"{RESULT_PROCESSOR}.process_batch_result_decode", after_process_decode, "AFTER")]
