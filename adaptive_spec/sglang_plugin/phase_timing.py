"""Wall time per scheduler phase, in any server (plain included): a diagnostic.

`ADAPTIVE_SPEC_PHASE_TIMING=1` in a server's environment wraps a few SGLang methods with a
wall clock (no GPU sync of ours) and logs, each time the scheduler has been idle for half a
second, one line for the busy window that just ended:

  adaptive_spec phases rank=0 window_s=9.8 decode_steps=612 prefills=201 mean_running=61.3
    ms_per_decode_step={"run_batch": 4.1, ...} calls_per_decode_step={...}

`ADAPTIVE_SPEC_PHASE_WINDOW_S=S` also ends a window after S busy seconds, so a sweep level
gives several lines and its steady middle can be told from its ramp-up and drain. Each line
ends with `drafting_steps=N`: the decode steps of the window that drafted (on, catch-up,
re-entry; 0 in a plain server), so windows where ours ran plain on every step can be compared
with plain's (`phase_summary --bands`), then, since session 28, `mean_waiting=W` (requests
waiting for admission, averaged over the window's scheduling calls) and `new_token_ratio=R`
(SGLang's ratio for the KV it reserves per running request when admitting, last seen), then,
since session 33, `gc_ms_per_decode_step=G gc_collections=a/b/c` (time in Python's cyclic
garbage collector, any thread of the scheduler process, and its collections by generation) and
`thread_cpu_s={...}` (CPU seconds of the process's main thread and of all its other threads
over the window, and the busiest other thread, from /proc: what competes for the GIL). Since
session 60 `run_batch`, `spec_forward` and `target_forward` also appear as `<phase>@prefill`
(time and calls of their prefill calls alone; `phase_summary --per-call`).

Why: with drafting off our server runs the plain server's GPU work, yet under continuous
arrivals it made 0.83-0.86x of plain at 64 requests in session 6 with all three off paths.
The torch profiler inflates host time several-fold and its 40-step windows caught different
prefill/decode mixes per server; wall clocks around the same phases, over whole sweep levels
(a level is one busy window: the sweep drains between levels), compare like with like.
Phases nest (the target forward runs inside the spec forward, result processing inside the
decode result), so each figure is inclusive. `process_decode` includes SGLang's wait for the
step's GPU results (`copy_done.synchronize()`): it is where a GPU-bound loop spends its time.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Dict, List, Optional

from .plugin import EAGLE_WORKER, RESULT_PROCESSOR, SCHEDULER, TP_WORKER

logger = logging.getLogger("adaptive_spec")

ENV = "ADAPTIVE_SPEC_PHASE_TIMING"
SCHEDULE_BATCH = "sglang.srt.managers.schedule_batch.ScheduleBatch"

# (label, SGLang 0.5.16 method)
PHASES = (
    ("process_input", f"{SCHEDULER}.process_input_requests"),
    ("get_next_batch", f"{SCHEDULER}.get_next_batch_to_run"),
    ("prepare_for_decode", f"{SCHEDULE_BATCH}.prepare_for_decode"),
    ("merge_batch", f"{SCHEDULE_BATCH}.merge_batch"),
    ("filter_batch", f"{SCHEDULE_BATCH}.filter_batch"),
    ("run_batch", f"{SCHEDULER}.run_batch"),
    ("spec_forward", f"{EAGLE_WORKER}.forward_batch_generation"),
    ("target_forward", f"{TP_WORKER}.forward_batch_generation"),
    ("process_decode", f"{RESULT_PROCESSOR}.process_batch_result_decode"),
    ("process_prefill", f"{RESULT_PROCESSOR}.process_batch_result_prefill"),
)
# phases whose prefill calls are also summed apart, under "<label>@prefill": the decode calls'
# share is the label's time less that (GPU, session 59: at 128 requests goodput's spec_forward
# took 1.16 ms a decode step more than EAGLE-3's, prefills and decodes mixed in one figure)
PREFILL_SPLIT = ("run_batch", "spec_forward", "target_forward")
PREFILL_SUFFIX = "@prefill"
# the argument names that carry the batch in those methods (0.5.16: run_batch(batch),
# forward_batch_generation(batch, forward_batch=...))
BATCH_KWARGS = ("batch", "forward_batch")
# a window shorter than this many decode steps is start-up or a lone request: not logged
MIN_DECODE_STEPS = 20
# idle for this long ends a window (between sweep levels); shorter gaps (one request replacing
# another at one stream) do not
IDLE_GAP_S = 0.5
WINDOW_ENV = "ADAPTIVE_SPEC_PHASE_WINDOW_S"
# the controller's step modes that drafted (hooks_offpath); "off" did not
DRAFTING_MODES = ("on", "catchup", "reentry")


def max_window_s() -> float | None:
    """The busy seconds after which a window ends (None: only an idle gap ends one)."""
    try:
        value = float(os.environ.get(WINDOW_ENV, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def drafting_steps_so_far() -> int:
    """Decode steps that drafted since the controller started (0 without a controller)."""
    from .state import get_controller

    ctl = get_controller()
    return 0 if ctl is None else sum(ctl.modes.get(m, 0) for m in DRAFTING_MODES)


def enabled() -> bool:
    """On by its own variable, or for the stack sampler (which reports per window of ours)."""
    from .stack_sampler import ENV as STACK_SAMPLER_ENV

    return any(os.environ.get(name, "") not in ("", "0") for name in (ENV, STACK_SAMPLER_ENV))


# diagnostics reporting per busy window (the stack sampler): told when a window is logged
# (on_window(rank, decode_steps, mean_running)) and whenever the clock resets (on_reset())
_window_listeners: list = []


def add_window_listener(listener) -> None:
    if listener not in _window_listeners:
        _window_listeners.append(listener)


class GcClock:
    """Time spent in Python's cyclic garbage collector, by generation (a gc.callbacks entry).

    Why: session 32's stack sampler found every kernel-launch site of the spec server's eager
    prefills 20-65% dearer than the plain server's, same model and kernels. A collection runs
    inside whichever call allocated last, so it would read exactly so; a spec server holds more
    long-lived objects (draft model, more CUDA graphs), and a full collection walks all of them.
    GPU, session 33, 128 requests: 0.00-0.01 ms a decode step, no full collection in any window."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self._started: Optional[float] = None
        self.reset()

    def reset(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]

    def callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = self.clock()
        elif self._started is not None:
            self.seconds += self.clock() - self._started
            self._started = None
            gen = info.get("generation")
            if gen in (0, 1, 2):
                self.collections[gen] += 1


def thread_cpu_seconds(task_dir: str = "/proc/self/task") -> Dict[int, tuple]:
    """{thread id: (name, user + system CPU seconds)} of this process's threads ({} off Linux)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = {}
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended
        name = stat[stat.find("(") + 1: stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2:].split()  # from field 3 (state) on
        out[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / tick)  # utime, stime
    return out


def thread_cpu_delta(before: Dict[int, tuple], after: Dict[int, tuple], main_tid: int) -> dict:
    """CPU seconds between two snapshots: the main thread's, all others' together, the busiest other."""
    used = {tid: (name, cpu - before.get(tid, (name, 0.0))[1]) for tid, (name, cpu) in after.items()}
    others = {tid: v for tid, v in used.items() if tid != main_tid}
    busiest = max(others.values(), key=lambda v: v[1], default=None)
    return {"main": round(used.get(main_tid, ("", 0.0))[1], 2),
            "others": round(sum(v[1] for v in others.values()), 2),
            "busiest_other": f"{busiest[0]}:{busiest[1]:.2f}" if busiest else "-"}


class PhaseClock:
    """Per-phase wall time and call counts over one busy window of one scheduler; with a
    GcClock and a thread reader, also the garbage collector's time and the threads' CPU."""

    def __init__(self, rank: int = 0, clock=time.perf_counter, max_window_s: float | None = None,
                 drafting_count=lambda: 0, gc_clock: Optional[GcClock] = None, thread_cpu=None,
                 main_tid: Optional[int] = None):
        self.rank = rank
        self.clock = clock
        self.max_window_s = max_window_s
        self.drafting_count = drafting_count
        self.gc_clock = gc_clock
        self.thread_cpu = thread_cpu
        self.main_tid = main_tid  # None: the process's main thread, looked up when needed
        self.idle_since = None
        self.reset()

    def reset(self) -> None:
        for listener in _window_listeners:
            listener.on_reset()
        self.seconds: Dict[str, float] = {}
        self.calls: Dict[str, int] = {}
        self.decode_steps = 0
        self.prefills = 0
        self.running_sum = 0
        # the waiting queue at each scheduling call and SGLang's admission ratio last seen:
        # GPU, session 28, 256 requests: plain's TTFT p50 read 0.38-1.13 s in 2 of 4 levels,
        # goodput's 0.38-0.88 s in all 4 (while off), EAGLE-3's 161-205 ms; which of the
        # queue or the ratio holds requests back was not recorded
        self.waiting_sum = 0
        self.queue_calls = 0
        self.new_token_ratio = None
        self.started = None
        self.drafting_at_start = self.drafting_count()
        if self.gc_clock is not None:
            self.gc_clock.reset()
        self.threads_at_start = None  # read at the window's first call (an idle loop resets often)

    def add(self, label: str, seconds: float) -> None:
        if self.started is None:
            self.started = self.clock() - seconds
            if self.thread_cpu is not None:
                self.threads_at_start = self.thread_cpu()
        self.seconds[label] = self.seconds.get(label, 0.0) + seconds
        self.calls[label] = self.calls.get(label, 0) + 1

    def on_decode_result(self, batch_size: int) -> None:
        self.decode_steps += 1
        self.running_sum += batch_size

    def on_prefill_result(self) -> None:
        self.prefills += 1

    def on_queue(self, waiting: int, new_token_ratio: float | None) -> None:
        """At each scheduling call of a busy window: the requests waiting for admission, and
        the new-token ratio by which SGLang reserves KV for the running requests' remaining
        tokens when it admits more (reset to its initial value when the server idles)."""
        self.waiting_sum += waiting
        self.queue_calls += 1
        if new_token_ratio is not None:
            self.new_token_ratio = new_token_ratio

    def window_line(self, end: float | None = None) -> str | None:
        """The log line for the window from its first call to `end` (default: now); None when
        too short to mean anything."""
        n = self.decode_steps
        if n < MIN_DECODE_STEPS or self.started is None:
            return None
        end = self.clock() if end is None else end
        ms = {k: round(1000.0 * v / n, 3) for k, v in sorted(self.seconds.items())}
        calls = {k: round(v / n, 2) for k, v in sorted(self.calls.items())}
        return (f"adaptive_spec phases rank={self.rank} window_s={end - self.started:.2f} "
                f"decode_steps={n} prefills={self.prefills} mean_running={self.running_sum / n:.1f} "
                f"ms_per_decode_step={json.dumps(ms)} calls_per_decode_step={json.dumps(calls)} "
                f"drafting_steps={self.drafting_steps()}{self._queue_fields()}{self._process_fields()}")

    def _process_fields(self) -> str:
        out = ""
        if self.gc_clock is not None:
            g = self.gc_clock
            out += (f" gc_ms_per_decode_step={1000.0 * g.seconds / self.decode_steps:.3f}"
                    f" gc_collections={'/'.join(str(c) for c in g.collections)}")
        if self.threads_at_start is not None:
            main = self.main_tid if self.main_tid is not None else threading.main_thread().native_id
            delta = thread_cpu_delta(self.threads_at_start, self.thread_cpu(), main)
            out += f" thread_cpu_s={json.dumps(delta)}"
        return out

    def _queue_fields(self) -> str:
        if not self.queue_calls:
            return ""
        ratio = "" if self.new_token_ratio is None else f" new_token_ratio={self.new_token_ratio:.3f}"
        return f" mean_waiting={self.waiting_sum / self.queue_calls:.1f}{ratio}"

    def drafting_steps(self) -> int:
        """Drafting decode steps in this window (the counters may have been reset within it:
        then those since the reset)."""
        now = self.drafting_count()
        return now - self.drafting_at_start if now >= self.drafting_at_start else now

    def flush(self, end: float | None = None) -> str | None:
        line = self.window_line(end)
        if line is not None:
            logger.info(line)
            for listener in _window_listeners:
                listener.on_window(self.rank, self.decode_steps, self.running_sum / self.decode_steps)
        self.reset()
        return line

    def on_schedule(self, idle: bool) -> None:
        """After each scheduling decision: a window ends once the scheduler has been idle for
        IDLE_GAP_S, seen either while still idle or at the first batch after the gap (a
        server that sleeps when idle makes no idle calls)."""
        now = self.clock()
        if idle:
            if self.idle_since is None:
                self.idle_since = now
            if not self.decode_steps and not self.prefills:
                self.reset()  # the idle loop's own calls belong to no window
            elif now - self.idle_since >= IDLE_GAP_S:
                self.flush(end=self.idle_since)  # the window ended when the idling began
        else:
            if self.idle_since is not None and now - self.idle_since >= IDLE_GAP_S and self.decode_steps:
                # this batch's own scheduling calls went to the old window (~0.1 ms)
                self.flush(end=self.idle_since)
            elif (self.max_window_s is not None and self.started is not None
                  and now - self.started >= self.max_window_s):
                self.flush(end=now)
            self.idle_since = None


_gc_clock = GcClock()
_clock = PhaseClock(max_window_s=max_window_s(), drafting_count=drafting_steps_so_far,
                    gc_clock=_gc_clock, thread_cpu=thread_cpu_seconds)
_gc_watched = False


def _watch_gc() -> None:
    """Register the GC clock once, from the scheduler process (hooks() may run elsewhere)."""
    global _gc_watched
    if not _gc_watched:
        import gc

        gc.callbacks.append(_gc_clock.callback)
        _gc_watched = True


def _is_idle(plan, sched) -> bool:
    """After get_next_batch_to_run: nothing to run now and nothing running."""
    if getattr(plan, "batch_to_run", None) is not None:
        return False
    running = getattr(plan, "running_batch", None)
    if running is None:
        running = getattr(sched, "running_batch", None)
    return running is None or running.is_empty()


def make_timed(label: str):
    """An AROUND hook that adds the wall time of each call to `label`."""

    def timed(orig, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            took = time.perf_counter() - t0
            _clock.add(label, took)
            try:
                if label in PREFILL_SPLIT and is_prefill_call(args, kwargs):
                    _clock.add(label + PREFILL_SUFFIX, took)
                _after(label, args, kwargs)
            except Exception as exc:  # a diagnostic must never break serving
                logger.debug("adaptive_spec phases: %r", exc)

    timed.__name__ = f"timed_{label}"
    return timed


def is_prefill_call(args, kwargs) -> bool:
    """Whether a clocked call ran a prefill: its batch's forward mode is EXTEND or MIXED (a
    spec server's verify forward is TARGET_VERIFY, which SGLang also counts as an extend)."""
    batch = next((kwargs[k] for k in BATCH_KWARGS if kwargs.get(k) is not None), None)
    if batch is None and len(args) > 1:
        batch = args[1]
    mode = getattr(batch, "forward_mode", None)
    return getattr(mode, "name", None) in ("EXTEND", "MIXED")


def _after(label: str, args, kwargs) -> None:
    if label == "process_decode":
        batch = kwargs.get("batch", args[1] if len(args) > 1 else None)
        _clock.on_decode_result(batch.batch_size() if batch is not None else 0)
    elif label == "process_prefill":
        _clock.on_prefill_result()


def after_get_next_batch_for_windows(plan, sched, *args, **kwargs):
    """AFTER hook on Scheduler.get_next_batch_to_run: an idle scheduler ends the window."""
    try:
        _watch_gc()
        _clock.rank = int(getattr(sched, "tp_rank", 0) or 0)
        idle = _is_idle(plan, sched)
        _clock.on_schedule(idle)
        if not idle:
            tracker = getattr(sched, "new_token_ratio_tracker", None)  # 0.5.16 and 0.5.23
            _clock.on_queue(len(getattr(sched, "waiting_queue", None) or ()),
                            getattr(tracker, "current", None))
    except Exception as exc:
        logger.debug("adaptive_spec phases: %r", exc)
    return None


def hooks() -> List[tuple]:
    """(target, hook function, hook type name) for the HookRegistry; registered after ours so
    each clock is the outermost wrapper and includes our hooks' own cost."""
    out = [(target, make_timed(label), "AROUND") for label, target in PHASES]
    out.append((f"{SCHEDULER}.get_next_batch_to_run", after_get_next_batch_for_windows, "AFTER"))
    return out
