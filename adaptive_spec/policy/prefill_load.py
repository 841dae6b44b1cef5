"""Prefill time per decode step, per batch bucket, and what it would be at another step count.

The goodput policy's step-time table leaves prefills out (a prefill's result restarts the step
timer, `Controller.on_prefill_result`), on the ground that a prefill costs every k the same per
output token. On the MoE layout at 64-256 requests that is not so (GPU, session 17, `fe`):
the table read 5.9 ms for a plain step and 13.3 ms for a k=3 step at 65-128 requests, but the
plain server's TPOT was 15.4 ms and EAGLE-3 made 1.36x its throughput. Most of a busy plain
server's time went into prefill batches of 1-5 new requests each, and a prefill batch costs
about the same whatever it holds (launch-bound, no CUDA graph). A drafting server finishes
requests in fewer, longer steps, so more new requests share each prefill batch. Without this
term the policy ran plain on 819 of 860 steps at 128 requests (0.74x of EAGLE-3).

Model, per bucket, from what ran there: `admitted` requests per decode step (a), `seconds` of
prefill per decode step (P), `tokens` per request per decode step (E_cur, 1 when plain).
New requests arrive in proportion to the tokens produced (a busy server admits one as one
finishes), so at step count k with E_k tokens per request per step a_k = a * E_k / E_cur, and a
decode step meets at least one of them, so runs a prefill batch, with probability
1 - exp(-a_k) (arrivals spread evenly in time). A prefill batch costs what the measured ones
cost: P_k = P * (1 - exp(-a_k)) / (1 - exp(-a)).

Only steady load counts: while the batch grows or shrinks (a burst of new requests at once,
the drain after one), the prefill work is a fixed amount that no k changes, and adding it per
step would make every k's step look alike and favour drafting (in the first 128-request level
of session 17's `pf` run, dense pair, the policy chose k = 1 twice right after the ramp-up,
where plain wins: consistent with this, not proven to be it). A
decode step counts when its batch is within `STEADY_BAND` of the recent batch size, and a
prefill when the last decode step counted.

Tensor parallel: the prefill seconds are each rank's own wall time; like the step times they
are merged only at the policy's syncs through its reducer (an all-reduce mean), so every rank
reads the same values. Admissions and accept lengths are rank-identical already.
"""

from __future__ import annotations

import math
from typing import Callable


class PrefillLoad:
    MEMORY_STEPS = 512.0  # decode steps of history the merged values weigh at most
    DECAY = 0.9  # the old values' weight per sync, on top of the cap (follows a load change)
    MIN_STEPS = 32.0  # decode steps seen at a bucket before its prefill term is used
    STEADY_BAND = 0.1  # a batch within 10% of the recent batch size is steady load
    BATCH_EMA = 0.05  # weight of the newest batch size in the recent one (~20 steps)

    def __init__(self, buckets: int):
        self.buckets = buckets
        self.seconds = [0.0] * buckets  # merged: prefill seconds per decode step
        self.admitted = [0.0] * buckets  # merged: requests admitted per decode step
        self.tokens = [1.0] * buckets  # merged: tokens per request per decode step
        self.steps = [0.0] * buckets  # merged decode steps behind those values (capped)
        self._local = [[0.0] * buckets for _ in range(4)]  # seconds, admitted, tokens, steps
        self._recent_batch = 0.0
        self._steady = False  # whether the last decode step counted

    def on_prefill(self, bucket: int, seconds: float, admitted: int) -> None:
        """A prefill batch of `admitted` new requests took `seconds` while `bucket`'s batch
        decoded."""
        if self._steady:
            self._local[0][bucket] += seconds
            self._local[1][bucket] += admitted

    def on_decode(self, bucket: int, tokens_per_request: float, batch_size: int) -> None:
        recent = self._recent_batch
        self._steady = abs(batch_size - recent) <= self.STEADY_BAND * recent
        self._recent_batch = recent + self.BATCH_EMA * (batch_size - recent) if recent else float(batch_size)
        if self._steady:
            self._local[2][bucket] += tokens_per_request
            self._local[3][bucket] += 1.0

    def sync(self, reducer: Callable[[list], list]) -> None:
        """Merge the local sums (mean over ranks through `reducer`); every rank calls this at
        the same decision."""
        n = self.buckets
        merged = reducer([v for row in self._local for v in row])
        for row in self._local:
            row[:] = [0.0] * n
        sec, adm, tok, steps = (merged[i * n:(i + 1) * n] for i in range(4))
        for b in range(n):
            s = steps[b]
            if s <= 0:
                continue
            w_old = self.DECAY * min(self.steps[b], self.MEMORY_STEPS)
            w = w_old + s
            self.seconds[b] = (w_old * self.seconds[b] + sec[b]) / w
            self.admitted[b] = (w_old * self.admitted[b] + adm[b]) / w
            self.tokens[b] = (w_old * self.tokens[b] + tok[b]) / w
            self.steps[b] = min(w, self.MEMORY_STEPS)

    def per_step(self, bucket: int, tokens_k: float) -> float:
        """Expected prefill seconds per decode step at this bucket when each request gains
        `tokens_k` tokens per step (E_k); 0.0 without enough evidence here."""
        a, p = self.admitted[bucket], self.seconds[bucket]
        if self.steps[bucket] < self.MIN_STEPS or a <= 0.0 or p <= 0.0:
            return 0.0
        a_k = a * tokens_k / max(self.tokens[bucket], 1e-9)
        return p * (1.0 - math.exp(-a_k)) / (1.0 - math.exp(-a))

    def snapshot(self) -> dict:
        """{batch bucket: [prefill ms per decode step, admitted per step, tokens per step]}."""
        return {str(2 ** b): [round(1000 * self.seconds[b], 3), round(self.admitted[b], 3),
                              round(self.tokens[b], 3)]
                for b in range(self.buckets) if self.steps[b] > 0}
