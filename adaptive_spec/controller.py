"""The per-process decision loop, independent of SGLang.

One `Controller` lives in each scheduler process. The scheduler hook hands it a
`LoadSnapshot` when a batch is built; the worker hook asks it for the draft steps of each
decode batch; the result hook feeds back acceptance with the step count that batch really
ran with. If the policy raises, the controller logs once and falls back for the rest of
the run (static speculation or drafting off, per config) and the server keeps serving.
"""

from __future__ import annotations

import logging
import os
import time
import zlib
from collections import Counter, deque
from typing import Callable, Optional, Sequence

from . import sample_log
from .config import AdaptiveSpecConfig
from .follow import PROBING, FollowLog
from .policy import Decision, make_policy
from .policy.base import configured_policy
from .policy.prefill_load import PrefillLoad
from .policy.step_table import bucket_of
from .signals import AcceptanceStats, LoadSnapshot, StepTimer
from .staleness import StalenessLedger
from .stall_drill import STALL_ENV, stall_drill

logger = logging.getLogger("adaptive_spec")

# Every this many decisions each rank logs a digest of all its decisions so far; under tensor
# parallelism the lines of all ranks must agree (count-based, so no rank skips one).
_every = os.environ.get("ADAPTIVE_SPEC_RANK_CHECK_EVERY", "")
RANK_CHECK_EVERY = int(_every) if _every.isdigit() and int(_every) > 0 else 4096

# Testing aid for fault drills on a real server: "policy@N" makes the N-th decision raise
# inside the policy, "result@N" the N-th result; the controller must fall back and go on.
FAULT_ENV = "ADAPTIVE_SPEC_INJECT_FAULT"


def injected_fault(text: Optional[str]) -> Optional[tuple[str, int]]:
    """'policy@N' / 'result@N' -> (where, N); None when unset or malformed (logged)."""
    if not text:
        return None
    where, _, n = text.partition("@")
    if where in ("policy", "result") and n.isdigit() and int(n) >= 1:
        return where, int(n)
    logger.error("adaptive_spec: ignoring %s=%r (expected policy@N or result@N)", FAULT_ENV, text)
    return None


def _notify(listeners: list, *args) -> None:
    """Call each listener (metrics, diagnostics); one that raises is dropped with a warning.
    They must never change a decision or put the controller into fallback."""
    for listener in list(listeners):
        try:
            listener(*args)
        except Exception as exc:
            listeners.remove(listener)
            logger.warning("adaptive_spec: listener %r disabled after error: %r", listener, exc)


class DecisionLog:
    """One structured line per change of decision, at most `per_second` lines a second."""

    def __init__(self, enabled: bool, per_second: float = 20.0, clock=time.monotonic):
        self.enabled = enabled
        self.min_gap = 1.0 / per_second
        self.clock = clock
        self._last_emit = -1e9
        self._suppressed = 0
        self.lines: list[str] = []  # kept for tests and the status route (bounded)

    def change(self, before: Optional[Decision], after: Decision, snap: LoadSnapshot,
               acc: AcceptanceStats, rank: int, basis: Callable[[], str] = lambda: ""):
        """`basis`: the policy's reasons in a field or two (`decision_basis`), asked only for a
        line that is written."""
        if not self.enabled:
            return
        now = self.clock()
        if now - self._last_emit < self.min_gap:
            self._suppressed += 1
            return
        ema, recent = acc.ema_accept_len, acc.recent_accept_len
        line = (
            f"adaptive_spec decision rank={rank} steps={before.steps if before else None}->{after.steps} "
            f"reason={after.reason} running={snap.running} waiting={snap.waiting} "
            f"waiting_tokens={snap.waiting_tokens} kv_usage={snap.kv_usage:.3f} "
            f"accept_len_ema={'%.3f' % ema if ema is not None else None} "
            f"accept_len_recent={'%.3f' % recent if recent is not None else None} suppressed={self._suppressed}"
        )
        try:
            extra = basis()
        except Exception as exc:  # a diagnostic: its failure must not stop the decision
            extra = f"basis_error={type(exc).__name__}"
        if extra:
            line += " " + extra
        self._suppressed = 0
        self._last_emit = now
        self.lines.append(line)
        del self.lines[:-100]
        logger.info(line)


def _decide_percentiles(seconds, name: str = "decide_us") -> dict:
    """{NAME_p50, NAME_p99} in us over the recent decision times; empty when none."""
    if not seconds:
        return {}
    v = sorted(seconds)
    return {f"{name}_p50": round(1e6 * v[len(v) // 2], 1),
            f"{name}_p99": round(1e6 * v[int(0.99 * len(v))], 1)}


def decide_selftest(cfg: AdaptiveSpecConfig, calls: int = 256) -> dict:
    """The policy's own decide, timed in this process before it serves (a throwaway policy,
    so no state changes; identity reducer, so no collective call under tensor parallelism),
    and the cost of one clock read. The GPU servers read 29-55 us of wall time per decision
    where this CPU reads 3-11 us (session 9): beside the served decisions' wall and CPU
    times, this says whether the host is slower or the scheduler thread waits."""
    policy = make_policy(cfg, reducer=lambda v: v)
    acc = AcceptanceStats()
    snaps = [LoadSnapshot(running=bs) for bs in (1, 16, 64, 256)]
    clock = time.perf_counter_ns
    samples = []
    for i in range(calls):
        t0 = clock()
        policy.decide(snaps[i % len(snaps)], acc)
        samples.append(clock() - t0)
    samples.sort()
    t0 = clock()
    for _ in range(100):
        clock()
    return {"policy_decide_us_p50": round(samples[len(samples) // 2] / 1000, 2),
            "clock_read_us": round((clock() - t0) / 100 / 1000, 3)}


# Every Nth decision also reads the thread's CPU clock (a syscall, ~0.5 us): wall time minus CPU
# time is time the scheduler thread waited (the GIL, preemption). The GPU sweeps read 35-45 us
# wall per goodput decision on the server vs 7-10 us on the CPU machine (session 8).
CPU_SAMPLE_EVERY = 16

# A decision equal to the one before (the common case: a load holds its decision for many
# steps) extends a run that is booked in one go (counts, digest, listeners): when the decision
# changes, every FLUSH_EVERY decisions, and before anything reads the counts. Booking every
# decision (two Counter updates, a crc32, the Prometheus counter's file write) was most of the
# GPU servers' 30-45 us of CPU per decision, where the policy itself took ~5 (session 12).
FLUSH_EVERY = 64


# Step modes that end an off period (hooks_offpath): SGLang's catch-up step, or the drafting step
# right after a full catch-up. Neither is a sample of its step count's cost.
REENTRY_MODES = ("catchup", "reentry")
# Results whose time a switch from off to drafting lands in (overlap scheduler): the last off
# step's (processed after the switching step's launch, where the catch-up's host work runs), the
# switching step's and the next one's (policy/switch_cost.py)
SWITCH_ON_RESULTS = 3
MAX_PREFILL_S = 0.5  # a longer wait since the last result holds idle time, not only a prefill
# The first results after a change between plain and drafting that the realized goodput leaves
# out (`_observe_realized`): besides the switch's catch-up, they carry the prefills of requests
# admitted under the other mode (a drafting server admits ~2x as many a step; session 40's phase
# clocks at 60-64 running: 0.443 prefills a step drafting, 0.218 plain), which would bill a plain
# probe of 7 steps for drafting's admissions
REALIZED_SETTLE_RESULTS = 2
# A decode result timed from a prefill's result at a batch this small is no step-time sample:
# its step ran mostly before the prefill's result was processed, so the interval holds a part of
# it. GPU, session 62 (H100, Qwen3-MoE layout): at 1 running such results read 0.38 ms for a
# plain step against 1.64 for the others, 0.45-0.46 for k = 1, 2 against 4.6-5.3 (0.09-0.23x),
# and at 1 request goodput ran k = 2 for the level's first second on that cell (0.942x of
# plain); at 129-256 running they read 1.02x of the others (1.05x at 65-128, session 61). Small
# batches meet a prefill once a request, so leaving these out costs a cell few samples; busy
# ones meet one every 1-3 steps and keep them (session 5: dropping those starved the cells).
AFTER_PREFILL_UNTIMED_MAX = 4


def _priced(steps: int, seconds: Optional[float], launched: bool) -> tuple:
    """A result around a switch on, for `observe_switch_on`: (step count it is priced at,
    seconds), and True third when a prefill's launch landed in it."""
    return (steps, seconds, True) if launched else (steps, seconds)


# Settings no policy reads (policy/*.py read the threshold, queue, acceptance-floor, re-probe,
# max-steps, model and TPOT keys): changing only these keeps the configured policy's state
POLICY_BLIND_KEYS = frozenset({"force", "log_decisions", "fallback", "off_path", "off_barrier",
                               "plain_kv", "off_prefill", "catchup"})


class Controller:
    def __init__(self, cfg: AdaptiveSpecConfig, rank: int = 0, reducer=None):
        self.cfg = cfg
        self.rank = rank
        self.reducer = reducer
        self.built_steps = cfg.candidate_steps()  # SGLang built runtime states for these
        self.policy = make_policy(cfg, reducer)
        self.acceptance = AcceptanceStats(ema_alpha=cfg.accept_ema_alpha)
        self.timer = StepTimer()
        self.snapshot = LoadSnapshot()
        self.last: Optional[Decision] = None
        self._decisions = Counter()  # (steps, reason) -> count (read `decisions`)
        self._steps_histogram = Counter()  # steps -> decode batches launched with it
        self._pending = 0  # decisions equal to `last` not yet booked (see FLUSH_EVERY)
        # decisions of 0 steps since the last drafting one that was not a probe (`off_run`)
        self._off_streak = 0
        self.decided_running = 0  # the batch size of the last decision
        self.switches = 0
        self.follow = FollowLog()  # how many decisions after a load change the choice moved
        self.modes = Counter()  # worker step modes: off / catchup / on / reentry; prefill-plain / -spec batches
        self.staleness = StalenessLedger()  # stale draft positions at each re-entry
        self.fallback_reason: Optional[str] = None
        self.decide_seconds = 0.0
        # the latest decisions' wall times: the mean alone cannot tell a slow decision from
        # a rare wait for the GIL (the GPU sweeps' servers read a 77-84 us mean)
        self.recent_decide_s: deque = deque(maxlen=1024)
        self.recent_decide_cpu_s: deque = deque(maxlen=256)  # sampled: CPU_SAMPLE_EVERY
        # ... and of the policy's own decide inside it: the GPU servers read 41 us of CPU per
        # decision (session 10) where the policy's start-up selftest reads 3.7 us
        self.recent_policy_cpu_s: deque = deque(maxlen=256)
        self.decision_count = 0
        self._digest = 0  # crc32 of every chosen step count, in order; never reset
        self.log = DecisionLog(cfg.log_decisions)
        self.fault = injected_fault(os.environ.get(FAULT_ENV))
        self.stall = stall_drill(os.environ.get(STALL_ENV))  # the host-stall drill, if set
        self.results_seen = 0
        self._unsampled = 0  # decode results whose wall time includes a prefill (see on_extend)
        self._prefill_results_reported = False
        # (steps, wall seconds or None, a prefill launched before it) of the last decode result
        self._last_result: Optional[tuple] = None
        self._switch_on: Optional[tuple] = None  # (batch size, [(priced steps, seconds)]) being gathered
        # (batch size, seconds, launched): see _clock_result
        self._held_off_sample: Optional[tuple] = None
        # the realized goodput's inputs (`_observe_realized`): prefill wall time since the last
        # decode result, an off result waiting for the next one's mode, whether the last drafted
        self._prefill_since_decode = 0.0
        self._after_prefill = False  # the step timer restarted at a prefill's result since
        self._realized_held: Optional[tuple] = None
        self._realized_drafting: Optional[bool] = None
        self._realized_run = 0  # results of that kind (plain or drafting) in a row
        self._prefill_plain = False  # the last prefill launched ran plain (the sample log's)
        # a prefill batch was launched since the last result (overlap scheduler: the next decode
        # result's wall time holds that launch's host work, `_clock_result`)
        self._extend_launched = False
        self._extend_wave = False  # that launch was a wave of arrivals (`on_extend`)
        # while SGLang processes a decode result (`open_result` .. `close_result`), a spec
        # result's clock waits for the end of that processing, where a plain result's is read
        self._result_open = False
        self._clock_pending: Optional[tuple] = None  # (steps, batch size, mode)
        self.sample_log = sample_log.SampleLog(rank) if sample_log.enabled() else None  # a diagnostic
        self.listeners = []  # callables(decision, snapshot): metrics
        self.result_listeners = []  # callables(steps, step_seconds or None): metrics
        # callables(batch size, steps, the result's wall seconds or None, mode): diagnostics,
        # every decode result, sampled or not (sglang_plugin/slow_results.py)
        self.wall_listeners = []
        # seconds -> whether a decode result that took them held a one-off stall: a Triton
        # kernel built on first use (sglang_plugin/slow_results.py installs it). Such a result
        # is no sample of a step count, of the tokens a second a k delivers or of a switch's
        # price. GPU, session 64 (H100, Qwen3-MoE layout, one request): goodput's first two
        # switches on took 99 and 92 ms while SGLang's catch-up kernels were built (5.6-11.3
        # ms in the session's other calls); the price read 73 ms and kept every later probe of
        # a drafting k away (k = 3's 4 samples, under the 6 that make a cell choosable): plain
        # ran all 3,034 decisions of the level, 0.92x of forced-on's rate
        self.stall_judge: Optional[Callable[[float], bool]] = None
        self.stalled_results = 0  # decode results the judge found stalled (the status')
        try:
            self.selftest: Optional[dict] = decide_selftest(cfg)
        except Exception as exc:  # a diagnostic: never a reason not to serve
            self.selftest = {"error": repr(exc)[:200]}

    # ---- inputs -------------------------------------------------------------------
    def on_snapshot(self, snap: LoadSnapshot) -> None:
        self.snapshot = snap

    def on_extend(self, admitted: int = 0) -> None:
        """A prefill (extend) batch of `admitted` new requests (0: not told) was launched. Its
        GPU time lands in the wall time of the next decode result, which is then not a sample
        of a decode step's cost (left in, prefills biased exactly the rarely sampled cells:
        probes of a new batch size run while its requests are prefilled; 2026-11-29 GPU runs
        learned k=1 at 10x its cost). Once the server reports prefill results
        (`on_prefill_result`) nothing needs to be dropped: the timer restarts there instead.
        A wave of arrivals' launch (prefill_load.py, "Waves") is priced nowhere: the decode
        result beside it is dropped (session 47: 5 such launches set plain's launch extra at 64
        requests to 1.6-1.8 ms a batch)."""
        self._extend_launched = True
        self._extend_wave |= PrefillLoad.is_wave(admitted, self._decode_batch_beside())
        if not self._prefill_results_reported:
            self._unsampled = 2

    def on_prefill_result(self, admitted: int = 0, decoding: Optional[int] = None) -> None:
        """A prefill's result was processed: the next decode result's wall time is measured
        from here, so it is that decode step's own cost. Dropping the decode results around
        each prefill instead starved the busy batches of samples (GPU, session 5: at 128-256
        requests a prefill every 1-3 decode steps, so almost every sample of a drafting cell
        was dropped, its probes never filled it, and the server kept probing it every 16
        steps, 0.64x of EAGLE-3 at 128 requests on dial 0.9). `decoding`: how many of the
        `admitted` go on to decode (None: all); only those count in the request length."""
        self._prefill_results_reported = True
        self._after_prefill = True
        self._unsampled = 0
        self._extend_launched = False  # its launch went into this interval, not a decode one
        self._extend_wave = False
        if self.sample_log is not None:
            self.sample_log.on_prefill_result(plain=self._prefill_plain)
        admit = getattr(self.policy, "observe_admitted", None)
        if admit is not None:  # every admission, also where its time is not priced below
            try:
                admit(admitted if decoding is None else min(admitted, decoding))
            except Exception as exc:  # bookkeeping: never a reason to stop serving
                self.fail(f"prefill hook: {exc!r}")
        # the wall time since the last result is this prefill's, taken from the decode batch
        # beside it: the goodput policy counts it (policy/prefill_load.py); not across idle gaps
        since = self.timer.elapsed()
        self.timer.restart()
        if since is None or self.snapshot.running <= 0 or not 0.0 < since < MAX_PREFILL_S:
            return
        self._prefill_since_decode += since  # for the next decode result's realized time
        observe = getattr(self.policy, "observe_prefill", None)
        if observe is not None:
            try:
                observe(self._decode_batch_beside(), since, admitted, plain=self._prefill_plain)
            except Exception as exc:  # bookkeeping: never a reason to stop serving
                self.fail(f"prefill hook: {exc!r}")

    def _decode_batch_beside(self) -> int:
        """The decode batch a prefill runs beside: the last decision's (the worker's batch, as
        the decode results' samples are bucketed), the scheduler's snapshot only before any
        decision. The snapshot also counts requests that finished but SGLang has not dropped yet
        and those just merged in: at a sweep level of 2^n requests, a bucket's top, it put
        prefills one bucket up. GPU, session 51 (H100, dense pair, 32 and 64 requests): the
        status's 65-128 bucket held 26 prefill batches (decayed) in a sweep of at most 64, and
        64's prefill term read 3.48 ms a step where the run's own samples, put through the term
        by their decode batch, read 4.22: drafting, which brings more prefills a step, priced
        ~3% cheap where plain won by 3-4%."""
        return self.decided_running or self.snapshot.running

    def on_result(self, steps: int, correct_drafts_per_req: Sequence[int], mode: Optional[str] = None) -> None:
        """A decode result reached the CPU; `steps` is what that batch ran with, `mode` how
        the worker ran it (off / catchup / on / reentry). A catch-up step runs SGLang's slower
        0-step path once to warm the draft: it is not a sample of the 0-step cost. A reentry
        step drafts right after a full catch-up (sglang_plugin/catchup.py): the first drafting
        round since re-entry, and not a sample of its step count's cost either.

        The acceptance is read here; the step's wall time at the end of SGLang's processing
        of the result when it is still open (`open_result`), see `close_result`."""
        try:
            self.results_seen += 1
            if self.fault == ("result", self.results_seen):
                raise RuntimeError(f"injected fault ({FAULT_ENV})")
            accepted = self.acceptance.observe(steps, correct_drafts_per_req)
            if mode in REENTRY_MODES:
                self.staleness.on_reentry_result()
            if mode != "catchup" and accepted is not None:
                self.staleness.on_drafting_result(steps, accepted, len(correct_drafts_per_req))
            n = len(correct_drafts_per_req)
            tokens = 1.0 + (accepted or 0) / n if n else 1.0  # `accepted` is None for a plain step
            on_decode = getattr(self.policy, "observe_decode", None)
            if on_decode is not None and n:
                on_decode(n, tokens)
        except Exception as exc:  # never let bookkeeping take the server down
            self.fail(f"result hook: {exc!r}")
            return
        if self._result_open:
            self._clock_pending = (steps, n, mode, tokens)
        else:
            self._clock_result(steps, n, mode, tokens)

    def open_result(self) -> None:
        """SGLang starts processing a decode result (its per-request loop and output follow)."""
        self._result_open = True
        self._clock_pending = None

    def close_result(self) -> None:
        """SGLang has processed the decode result: a spec result's wall time is read here.

        Why here: every step time is the wall time between two such points, and the policy
        compares step counts by them. A plain result is read at the end of its processing
        (after `process_batch_result_decode`), and so is a prefill's (the timer restarts
        there, `on_prefill_result`). A spec result used to be read where its accept lengths
        reach the CPU, before the per-request loop: the interval of a drafting step that
        followed a prefill then lacked its own result processing, which went to the prefill's
        time instead, and a switch between plain and drafting moved one result's processing
        from the drafting cell to the plain one (the plain step after drafting carried it,
        the drafting step after plain lost it): both made drafting look cheaper."""
        self._result_open = False
        pending, self._clock_pending = self._clock_pending, None
        if pending is not None:
            self._clock_result(*pending)

    def _clock_result(self, steps: int, batch_size: int, mode: Optional[str],
                      tokens: float = 1.0) -> None:
        """Time a decode result. An off step's sample waits for the next result: when that one
        ends the off run (REENTRY_MODES), the off step's time holds the switch's host work
        (the catch-up is launched before the off result is processed) and goes to the switch
        cost alone. GPU, session 36 (dense pair, 64 requests): the full catch-up's host work,
        44 ms, in the last off step before each switch, a lone sample in its sync, put the
        plain cell at 9.1 ms where its 96 other samples read 5.7; the policy drafted where
        EAGLE-3 made 0.86x of plain.

        A decode result processed after a prefill batch's launch (and before its result) holds
        the launch's host work: its time goes to the policy as a launch's, which prices the
        extra in the prefill term (`_take_sample`; GPU, session 36: 8.4 ms over a 5.8-ms plain
        step at 64 requests). One timed from a prefill's result at a small batch holds only a
        part of its step and is no sample (AFTER_PREFILL_UNTIMED_MAX)."""
        try:
            launched, self._extend_launched = self._extend_launched, False
            wave, self._extend_wave = self._extend_wave, False
            after_prefill, self._after_prefill = self._after_prefill, False
            dt = measured = self.timer.tick(steps)
            stalled = self._stalled(measured)
            if stalled:
                dt = None
            self._gather_switch_on(batch_size, steps, mode, dt, launched)
            prefill_s = self._prefill_since_decode
            self._observe_realized(batch_size, steps, mode, None if stalled else measured, tokens)
            if (mode in REENTRY_MODES or self._unsampled > 0 or (launched and wave)
                    or (after_prefill and batch_size <= AFTER_PREFILL_UNTIMED_MAX)):
                dt = None
            self._unsampled = max(0, self._unsampled - 1)
            if self._held_off_sample is not None:  # the previous off step's verdict
                self._release_held_off_sample(keep=mode not in REENTRY_MODES)
            hold = steps == 0 and dt is not None
            if self.sample_log is not None:  # a held sample's row waits for the same verdict
                self.sample_log.on_sample(batch_size, steps, measured,
                                          used=None if hold else (dt is not None and not launched),
                                          prefill_s=prefill_s, tokens=tokens)
            if hold:
                self._held_off_sample = (batch_size, dt, launched)
            elif dt is not None:
                self._take_sample(batch_size, steps, dt, launched)
        except Exception as exc:  # never let bookkeeping take the server down
            self.fail(f"result hook: {exc!r}")
            return
        _notify(self.result_listeners, steps, dt)
        _notify(self.wall_listeners, batch_size, steps, measured, mode)

    def _stalled(self, seconds: Optional[float]) -> bool:
        """Whether `stall_judge` finds a result of `seconds` stalled (counted when it does). A
        judge that fails is dropped: it is a filter on the samples, never a reason to fall back."""
        judge = self.stall_judge
        if judge is None or seconds is None:
            return False
        try:
            stalled = judge(seconds)
        except Exception as exc:  # noqa: BLE001 - the file system it reads, say
            logger.warning("adaptive_spec: stall judge dropped: %r", exc)
            self.stall_judge = None
            return False
        self.stalled_results += bool(stalled)
        return bool(stalled)

    def _observe_realized(self, batch_size: int, steps: int, mode: Optional[str],
                          seconds: Optional[float], tokens: float) -> None:
        """A decode result's wall time with the prefills since the last one, and the tokens it
        gave each request, to the policy's realized goodput (policy/realized.py). Left out: the
        results a switch's catch-up lands in, which switch_cost.py prices (a catch-up or re-entry
        result, and the off result before it, which waits here for that verdict), the first
        REALIZED_SETTLE_RESULTS results after any change between plain and drafting, and, asked
        at the result itself, those whose interval the policy's prefill term did not count whole
        (`result_priced`: a wave's prefill, or one beside an unsteady step)."""
        observe = getattr(self.policy, "observe_realized", None)
        wall = None if seconds is None else seconds + self._prefill_since_decode
        self._prefill_since_decode = 0.0
        if observe is None:
            return
        held, self._realized_held = self._realized_held, None
        drafting = steps > 0
        run = self._realized_run + 1 if drafting == self._realized_drafting else 1
        self._realized_drafting, self._realized_run = drafting, run
        if mode in REENTRY_MODES or batch_size <= 0:
            return  # and the held off result with it
        if held is not None:
            observe(*held)
        priced = getattr(self.policy, "result_priced", None)
        if wall is None or run <= REALIZED_SETTLE_RESULTS or (priced is not None and not priced()):
            return  # an unpriced interval: its wall holds what the model leaves out on purpose
        if drafting:
            observe(batch_size, steps, wall, tokens)
        else:
            self._realized_held = (batch_size, steps, wall, tokens)

    def _release_held_off_sample(self, keep: bool) -> None:
        (batch_size, seconds, launched), self._held_off_sample = self._held_off_sample, None
        if keep:
            self._take_sample(batch_size, 0, seconds, launched)
        if self.sample_log is not None:
            self.sample_log.settle(keep and not launched)

    def _take_sample(self, batch_size: int, steps: int, seconds: float, launched: bool) -> None:
        """A decode step's time: to the step-time table, or, when a prefill batch was launched
        before its result was processed, to the policy as a launch's (which splits it between
        the prefill term and the table, `GoodputPolicy.observe_prefill_launch`)."""
        if not launched:
            self._observe_step_time(batch_size, steps, seconds)
            return
        observe = getattr(self.policy, "observe_prefill_launch", None)
        if observe is not None:
            observe(batch_size, steps, seconds)

    def _observe_step_time(self, batch_size: int, steps: int, seconds: float) -> None:
        observe = getattr(self.policy, "observe_step_time", None)
        if observe is not None:
            observe(batch_size, steps, seconds)

    def _gather_switch_on(self, batch_size: int, steps: int, mode: Optional[str],
                          dt: Optional[float], launched: bool = False) -> None:
        """The wall times of the SWITCH_ON_RESULTS results around a switch from an off step to
        drafting, each with the step count the table prices it at (0 for the off step and for
        SGLang's catch-up step, which outputs one token a request), to the policy once all are
        in (`observe_switch_on`); a result that also held a prefill's launch carries a third
        element, True (that launch is priced in the prefill term). Rank-identical but for the
        times, as every input."""
        last, self._last_result = self._last_result, (steps, dt, launched)
        if self._switch_on is not None:
            size, results = self._switch_on
            results.append(_priced(steps, dt, launched))
            if len(results) < SWITCH_ON_RESULTS:
                return
            self._switch_on = None
            observe = getattr(self.policy, "observe_switch_on", None)
            if observe is not None and all(r[1] is not None for r in results):
                observe(size, results)
        elif mode in REENTRY_MODES and last is not None and last[0] == 0:
            priced_at = 0 if mode == "catchup" else steps
            self._switch_on = (batch_size, [_priced(0, last[1], last[2]),
                                            _priced(priced_at, dt, launched)])

    @property
    def off_run(self) -> int:
        """Decisions of 0 steps since the last drafting one that was not a probe
        (follow.PROBING), 0 while the last decision drafts: what the plain prefill waits for. A
        probe pauses the run instead of ending it: GPU, session 21, the prefills of a busy server
        ran with the draft for PLAIN_PREFILL_AFTER_OFF_STEPS decisions after every probe."""
        return self._off_streak if self.last is not None and self.last.steps == 0 else 0

    def prefill_may_run_plain(self, new_requests: int, min_off_run: int, still_running=None) -> bool:
        """Whether a prefill of `new_requests` may skip the draft (hooks_plain): drafting has
        been off for `min_off_run` decisions (a probe pausing the count), or the batch grows
        out of the size class of the last decision into one where the policy would run no
        drafts, by its model (`forecast`, probes left out).

        Why the second: in a busy closed loop a whole batch of requests finishes at once, the
        few left draft while they drain, and the wave of new requests that refills the batch
        was prefilled with the draft, decode steps (and so decisions) being scarce while it
        lasts (GPU, session 21, dial 0.9 at 256 requests: no plain prefill in a level where
        the policy chose plain on every steady step). Within the size class of the last
        decision the off run alone decides: there the forecast is that decision, and a choice
        switching in the crossover band would let requests draft soon from a prompt the
        draft never saw. `still_running()`: the running batch's requests that stay in it (the
        snapshot counts finished ones SGLang has not dropped yet, hooks_plain.still_running);
        called only when the forecast is asked."""
        if self.off_run >= min_off_run:
            return True
        forecast = getattr(self.policy, "forecast", None)
        if forecast is None or self.fallback_reason is not None or self.last is None:
            return False  # no forecast; or no decision yet: a new server's first requests
        running = still_running() if still_running is not None else None
        after = (self.snapshot.running if running is None else running) + new_requests
        if bucket_of(after) == bucket_of(self.decided_running):
            return False
        try:
            return forecast(self.snapshot.with_running(after), self.acceptance) == 0
        except Exception as exc:  # never a reason to stop serving: a spec prefill is safe
            self.fail(f"policy forecast: {exc!r}")
            return False

    # ---- the decision -------------------------------------------------------------
    def decide(self, batch_size: int) -> Decision:
        """Draft steps for the decode batch about to launch (batch_size requests)."""
        cpu0 = time.thread_time() if self.decision_count % CPU_SAMPLE_EVERY == 0 else None
        t0 = time.perf_counter()
        if self.fallback_reason is not None:
            decision = self._fallback_decision()
        else:
            self.decided_running = batch_size
            snap = self.snapshot
            if snap.running != batch_size:
                snap = snap.with_running(batch_size)  # the worker's batch is authoritative
                self.snapshot = snap  # what the decision (and its log line) saw
            try:
                if self.fault == ("policy", self.decision_count + 1):
                    raise RuntimeError(f"injected fault ({FAULT_ENV})")
                policy0 = time.thread_time() if cpu0 is not None else None
                decision = self.policy.decide(snap, self.acceptance)
                if policy0 is not None:
                    self.recent_policy_cpu_s.append(time.thread_time() - policy0)
                if not 0 <= decision.steps <= self.cfg.max_steps:
                    raise ValueError(f"policy chose {decision.steps} steps (allowed 0..{self.cfg.max_steps})")
            except Exception as exc:
                self.fail(f"policy: {exc!r}")
                decision = self._fallback_decision()
        self._record(decision)
        dt = time.perf_counter() - t0
        if cpu0 is not None:
            self.recent_decide_cpu_s.append(time.thread_time() - cpu0)
        self.decide_seconds += dt
        self.recent_decide_s.append(dt)
        if self.stall is not None:  # after the clock: the drill's sleep is no decision cost
            self.stall.after_decision(self.decision_count, decision.steps)
        return decision

    def _decision_basis(self) -> str:
        """The policy's reasons for the decision log's line: `decision_basis` (each k's goodput
        over plain's, what held a better one) and `decision_parts` (the model's terms), where it
        has them."""
        fields = (getattr(self.policy, name, lambda: "")()
                  for name in ("decision_basis", "decision_parts"))
        return " ".join(f for f in fields if f)

    def _record(self, decision: Decision) -> None:
        self.decision_count += 1
        self.follow.on_decision(self.decision_count, self.snapshot.running, decision.steps, decision.reason)
        if decision.steps == 0:
            self._off_streak += 1
        elif decision.reason not in PROBING:
            self._off_streak = 0
        last = self.last
        if last is None or decision.steps != last.steps or decision.reason != last.reason:
            self._flush()
            if last is not None and decision.steps != last.steps:
                self.switches += 1
            self.log.change(last, decision, self.snapshot, self.acceptance, self.rank,
                            self._decision_basis)
            self.last = decision
            self._pending = 1
            if self.listeners:
                self._flush()  # a new decision reaches the gauges at once
        else:
            self._pending += 1
            if self._pending >= FLUSH_EVERY:
                self._flush()
        if self.decision_count % RANK_CHECK_EVERY == 0:
            logger.info("adaptive_spec rank_check rank=%d decisions=%d digest=%08x",
                        self.rank, self.decision_count, self.decision_digest)

    def _flush(self) -> None:
        """Book the pending run of decisions equal to `last`."""
        n = self._pending
        if not n:
            return
        self._pending = 0
        d = self.last
        self._decisions[(d.steps, d.reason)] += n
        self._steps_histogram[d.steps] += n
        self._digest = zlib.crc32(bytes((d.steps,)) * n, self._digest)  # = n one-byte updates
        _notify(self.listeners, d, n, self.snapshot)

    @property
    def decisions(self) -> Counter:
        """(steps, reason) -> decisions made with it."""
        self._flush()
        return self._decisions

    @property
    def steps_histogram(self) -> Counter:
        """steps -> decode batches launched with it."""
        self._flush()
        return self._steps_histogram

    @property
    def decision_digest(self) -> int:
        """crc32 of every chosen step count, in order; equal on every rank (tensor parallel)."""
        self._flush()
        return self._digest

    def update_settings(self, new_cfg: AdaptiveSpecConfig) -> None:
        """Run-time change (validated by the caller). The policy restarts from the new settings
        when one it reads changed; a change of only the keys no policy reads (forcing drafting
        off or on and lifting it, the off path, logging) keeps the configured policy with what
        it learned (a goodput policy's cost model: minutes of samples)."""
        if not set(new_cfg.candidate_steps()) <= set(self.built_steps):
            raise ValueError(f"step counts {new_cfg.candidate_steps()} were not all built at start ({self.built_steps})")
        logger.info("adaptive_spec: settings changed on rank %d: %s", self.rank, new_cfg.to_json())
        changed = {k for k in new_cfg.keys() if getattr(new_cfg, k) != getattr(self.cfg, k)}
        keep = configured_policy(self.policy) if changed <= POLICY_BLIND_KEYS else None
        self.cfg = new_cfg
        self.log.enabled = new_cfg.log_decisions
        self._install_policy(make_policy(new_cfg, self.reducer, keep=keep))

    def _install_policy(self, policy) -> None:
        """`policy` decides from the next decision on: the decisions still pending are booked
        under `last` first, and the off streak starts again."""
        self.policy = policy
        self._flush()
        self.last = None
        self._off_streak = 0

    def relearn(self) -> None:
        """The configured policy afresh and the acceptance zeroed, the settings and counters
        kept: what they learned from a start-up warm-up (short random prompts decoded with
        drafting forced to flap) is not the load the server will serve. GPU, session 65: the
        switch warm-up left step cells of 34-56 ms and switch prices of 71-146 ms at 4 and 16
        requests, read from its first-use results, for the first requests there to start from."""
        self._install_policy(make_policy(self.cfg, self.reducer))
        self.acceptance = AcceptanceStats(ema_alpha=self.cfg.accept_ema_alpha)
        # samples still held for the old policy (a switch's price being gathered, a result
        # waiting for the next one's mode): the warm-up's too, and as they began at start
        self._switch_on = self._held_off_sample = self._realized_held = None
        self._realized_drafting, self._realized_run = None, 0
        logger.info("adaptive_spec: rank %d starts learning afresh", self.rank)

    def reset_stats(self) -> None:
        """Zero the counters and acceptance (benchmarks measure one mode at a time)."""
        self.acceptance = AcceptanceStats(ema_alpha=self.cfg.accept_ema_alpha)
        self._flush()  # into the digest (never reset) and the listeners' running totals
        self._decisions.clear()
        self._steps_histogram.clear()
        self.modes.clear()
        self.staleness.reset_counts()
        self.switches = 0
        self.decide_seconds = 0.0
        self.recent_decide_s.clear()
        self.recent_decide_cpu_s.clear()
        self.recent_policy_cpu_s.clear()

    def note_mode(self, mode: str) -> None:
        """How the worker ran the step (off / catchup / on / reentry, or a prefill: prefill-plain,
        prefill-spec); see hooks_offpath."""
        self.modes[mode] += 1
        if mode.startswith("prefill-"):
            self._prefill_plain = mode == "prefill-plain"

    # ---- failure ------------------------------------------------------------------
    def _fallback_decision(self) -> Decision:
        steps = self.cfg.max_steps if self.cfg.fallback == "static" else 0
        return Decision(steps, "fallback")

    def fail(self, why: str) -> None:
        """Switch to the configured fallback for the rest of the run; log once."""
        if self.fallback_reason is None:
            self.fallback_reason = why
            logger.error(
                "adaptive_spec: %s failed; falling back to %s for the rest of the run",
                why,
                "static speculation" if self.cfg.fallback == "static" else "drafting off",
            )

    # ---- status ---------------------------------------------------------------------
    def status(self) -> dict:
        acc = self.acceptance
        if self.sample_log is not None:  # a reader (the sweep, at each level's end) sees every sample
            self.sample_log.flush()
        return {
            "settings": {k: getattr(self.cfg, k) for k in self.cfg.keys()},
            "built_steps": self.built_steps,
            "rank": self.rank,
            "decision": {"steps": self.last.steps, "reason": self.last.reason} if self.last else None,
            "fallback": self.fallback_reason,
            "load": {
                "running": self.snapshot.running,
                "waiting": self.snapshot.waiting,
                "waiting_tokens": self.snapshot.waiting_tokens,
                "kv_usage": round(self.snapshot.kv_usage, 4),
            },
            "acceptance": {
                "accept_len_ema": acc.ema_accept_len,
                "accept_len_recent": acc.recent_accept_len,
                "accept_len_recent_upper": acc.recent_accept_len_upper(),  # what the floor reads
                "draft_accept_rate": acc.draft_accept_rate,
                "mean_accept_len": acc.mean_accept_len,
                "per_position": acc.per_position(),
                "samples": acc.samples,
            },
            "step_ms_mean": self.timer.mean_ms(),
            "steps_histogram": {str(k): v for k, v in sorted(self.steps_histogram.items())},
            "switches": self.switches,
            "stalled_results": self.stalled_results,  # no samples: a kernel built in each
            "follow": self.follow.status(),
            "rank_check": {"decisions": self.decision_count, "digest": f"{self.decision_digest:08x}"},
            "step_modes": dict(self.modes),
            "reentry": self.staleness.status(),
            "decisions": {f"{s}:{r}": n for (s, r), n in sorted(self.decisions.items())},
            "decide_us_mean": 1e6 * self.decide_seconds / max(1, sum(self.steps_histogram.values())),
            **_decide_percentiles(self.recent_decide_s),
            **_decide_percentiles(self.recent_decide_cpu_s, "decide_cpu_us"),
            **_decide_percentiles(self.recent_policy_cpu_s, "decide_policy_cpu_us"),
            "decide_selftest": self.selftest,
            "cost_model": self.policy.describe() if hasattr(self.policy, "describe") else None,
        }
