"""Load and acceptance signals the policies decide on. Pure Python, no sglang import.

Everything here is rank-identical under tensor parallelism: batch composition, the waiting
queue and KV accounting are replicated on every TP rank by SGLang's scheduler, and
accept lengths are broadcast from rank 0 after verification. Wall-clock step times are
NOT rank-identical; they are recorded for observability and may only influence a
decision through a value every rank agrees on.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Optional, Sequence


@dataclass(frozen=True)
class LoadSnapshot:
    """What the scheduler sees when it launches a decode batch."""

    running: int = 0  # requests in the decode batch
    waiting: int = 0  # requests in the waiting queue
    waiting_tokens: int = 0  # prompt tokens of the waiting requests (extrapolated past 256)
    kv_used: int = 0  # KV token slots in use (not free, not evictable)
    kv_total: int = 0  # KV token slots in the pool
    forward_ct: int = 0  # scheduler's forward counter when taken
    taken_at: float = 0.0  # time.monotonic() when taken

    @property
    def kv_usage(self) -> float:
        return self.kv_used / self.kv_total if self.kv_total else 0.0

    def with_running(self, running: int) -> "LoadSnapshot":
        """This snapshot with another batch size (positional: a third of the time of
        `dataclasses.replace`, which runs every decode step whose batch size changed)."""
        return LoadSnapshot(running, self.waiting, self.waiting_tokens, self.kv_used,
                            self.kv_total, self.forward_ct, self.taken_at)


@dataclass
class AcceptanceStats:
    """Accept-length estimate from verify results, attributed to the steps they ran with.

    `observe` is fed once per processed decode result with the step count recorded on
    that result (under the overlap scheduler a result arrives one iteration after the
    decision for the next batch was made, so "current steps" would be wrong).
    Accept length counts the bonus token: 1 <= accept_len <= steps + 1.
    """

    ema_alpha: float = 0.1
    # Per-position counters are multiplied by this per observed result, so old evidence
    # fades (a draft that got better or worse is noticed).
    pos_decay: float = 0.995
    ema_accept_len: Optional[float] = None  # only from results that drafted (steps > 0)
    samples: int = 0
    # Per-position conditional acceptance counters: hits[j] / tries[j] estimates
    # P(draft j+1 accepted | drafts 1..j accepted).
    pos_hits: list = field(default_factory=list)
    pos_tries: list = field(default_factory=list)
    total_drafted: int = 0
    total_accepted_drafts: int = 0
    total_rounds: int = 0  # request-rounds that drafted
    # Recent accept length per request-round: every round weighs 1, decayed by (1 - 1 /
    # RECENT_ROUNDS) per later round, so its noise is the same at 1 request as at 64. The
    # per-result EMA above weighs a lone request's round like a batch of 64: at 1 request on
    # the dial-0.5 pair (mean 1.87) it dipped under the threshold policy's floor of 1.5 and kept
    # drafting off for 91% of the level's steps (GPU, session 16: 0.76x of EAGLE-3 there).
    # The floor asks for an upper bound, not the mean: a few rounds at a fresh start (or after a
    # spell off, when only re-probes add rounds) can all be short. Simulated at one request on
    # dial-0.5 statistics (tests/unit/test_threshold_policy.py), the mean alone turned drafting
    # off in 29 of 40 starts, for 254-989 of the first 1,000 steps. A bound on the rounds' own
    # spread alone still trips when 7 of the first 8 rounds read 1 (mean 1.125, bound ~1.36), so
    # the spread is blended with a prior one (PRIOR_VAR over PRIOR_ROUNDS pseudo-rounds): an
    # always-wrong draft's rounds all read 1 and its bound falls under a floor of 1.5 after 9.
    RECENT_ROUNDS = 64
    RECENT_MIN_ROUNDS = 8
    PRIOR_VAR = 1.0  # the spread of a draft near the floor (dial 0.5: ~1.1), in accept length^2
    PRIOR_ROUNDS = 8.0
    _recent_sum: float = field(default=0.0, init=False, repr=False)
    _recent_squares: float = field(default=0.0, init=False, repr=False)
    _recent_weight: float = field(default=0.0, init=False, repr=False)

    def observe(self, steps: int, correct_drafts_per_req: Sequence[int]) -> Optional[int]:
        """Count one result; the drafts it accepted (None: it drafted nothing)."""
        if steps <= 0 or not correct_drafts_per_req:
            return None
        n = len(correct_drafts_per_req)
        # A request with c correct drafts tried positions 0..c (those below `steps`) and hit
        # 0..c-1, so all that counts is how many requests had each c, counted in C: as bytes,
        # one memchr-speed count per c (the per-request Python loop cost 56 us per result at 64
        # requests, a Counter 7: results/2026-11-30-s8-decision-and-bookkeeping-cost.json; the
        # bytes half a Counter's time). SGLang's counts lie in 0..steps; anything else is
        # clamped on the slower path.
        try:
            packed = bytes(correct_drafts_per_req)
        except (TypeError, ValueError):  # not small non-negative ints
            packed = None
        exact = [packed.count(c) for c in range(steps + 1)] if packed is not None else None
        if exact is None or sum(exact) != n:
            exact = [0] * (steps + 1)
            for correct, k in Counter(correct_drafts_per_req).items():
                exact[min(max(int(correct), 0), steps)] += k
        accepted = sum(c * k for c, k in enumerate(exact))
        mean_accept_len = 1.0 + accepted / n
        if self.ema_accept_len is None:
            self.ema_accept_len = mean_accept_len
        else:
            a = self.ema_alpha
            self.ema_accept_len = (1 - a) * self.ema_accept_len + a * mean_accept_len
        self.samples += 1
        keep = (1.0 - 1.0 / self.RECENT_ROUNDS) ** n
        self._recent_sum = keep * self._recent_sum + n + accepted
        self._recent_squares = keep * self._recent_squares + sum(k * (1 + c) ** 2 for c, k in enumerate(exact))
        self._recent_weight = keep * self._recent_weight + n
        self.total_rounds += n
        self.total_drafted += steps * n
        self.total_accepted_drafts += accepted
        while len(self.pos_tries) < steps:
            self.pos_tries.append(0)
            self.pos_hits.append(0)
        tries, hits, decay = self.pos_tries, self.pos_hits, self.pos_decay
        for j in range(len(tries)):
            tries[j] *= decay
            hits[j] *= decay
        at_least = n  # requests with >= j correct drafts, j = 0, 1, ...
        for j in range(steps):
            tries[j] += at_least
            at_least -= exact[j]
            hits[j] += at_least
        return accepted

    def per_position(self) -> list[Optional[float]]:
        return [h / t if t else None for h, t in zip(self.pos_hits, self.pos_tries)]

    @property
    def recent_accept_len(self) -> Optional[float]:
        """Mean accept length (bonus included) over about the last RECENT_ROUNDS
        request-rounds; None before any drafting result."""
        return self._recent_sum / self._recent_weight if self._recent_weight else None

    def recent_accept_len_upper(self, z: float = 2.0) -> Optional[float]:
        """An upper confidence bound on `recent_accept_len`: mean + z standard errors, the
        rounds' spread blended with PRIOR_VAR, the decayed weight taken as the sample count
        (which understates it: conservative). None before RECENT_MIN_ROUNDS rounds."""
        w = self._recent_weight
        if w < self.RECENT_MIN_ROUNDS:
            return None
        mean = self._recent_sum / w
        spread = max(0.0, self._recent_squares / w - mean * mean)
        var = (w * spread + self.PRIOR_ROUNDS * self.PRIOR_VAR) / (w + self.PRIOR_ROUNDS)
        return mean + z * math.sqrt(var / w)

    @property
    def mean_accept_len(self) -> Optional[float]:
        """Over every drafting round seen (bonus token included)."""
        if not self.total_rounds:
            return None
        return 1.0 + self.total_accepted_drafts / self.total_rounds

    @property
    def draft_accept_rate(self) -> Optional[float]:
        if not self.total_drafted:
            return None
        return self.total_accepted_drafts / self.total_drafted


@dataclass
class StepTimer:
    """Wall time between consecutive processed decode results (observability only)."""

    last_at: Optional[float] = None
    recent: deque = field(default_factory=lambda: deque(maxlen=64))

    def tick(self, steps: int, now: Optional[float] = None) -> Optional[float]:
        now = time.monotonic() if now is None else now
        dt = None if self.last_at is None else now - self.last_at
        self.last_at = now
        if dt is not None:
            self.recent.append((steps, dt))
        return dt

    def elapsed(self, now: Optional[float] = None) -> Optional[float]:
        """Seconds since the last result (None before the first)."""
        now = time.monotonic() if now is None else now
        return None if self.last_at is None else now - self.last_at

    def restart(self, now: Optional[float] = None) -> None:
        """The next interval starts now: another batch's result (a prefill's) was just
        processed, so the next decode result's wall time is that decode step's alone."""
        self.last_at = time.monotonic() if now is None else now

    def mean_ms(self) -> Optional[float]:
        if not self.recent:
            return None
        return 1000.0 * sum(dt for _, dt in self.recent) / len(self.recent)
