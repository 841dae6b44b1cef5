"""What turning drafting back on costs, per batch bucket, learned online (goodput policy).

While drafting is off the draft KV goes stale, and the step that turns drafting back on first
rewrites it: the full catch-up re-runs the target over every stale position (up to one chunked
prefill, sglang_plugin/catchup.py), or, with few stale positions, SGLang's catch-up step runs.
The step-time table leaves those steps out (they are no sample of a step count's cost), so the
policy priced a switch from k = 0 to drafting at nothing. Where two step counts are within a few
percent of each other it then switched on whenever the table's noise favoured drafting: GPU,
session 34 (dense pair, dial 0.7, 64 requests, SGLang's default prefill graphs), 7 switches
from off to drafting (catch-ups and full re-entries, probes included) in one 6-s steady window,
where the table put k = 3 within a few percent of k = 0 and EAGLE-3 made 0.93-0.96x of plain; goodput made
0.88x / 0.91x of plain, its off steps as cheap as plain's.

Measured as the excess wall time, over what the table prices those steps at, of the results
around a switch from an off step to drafting: the last off step's result (with the overlap
scheduler it is processed after the next step's launch, where the catch-up's host work runs),
the switching step's and the next one's (Controller.on_result). A decayed mean per bucket;
the times are each rank's own, so they are merged only at the policy's syncs, through its
reducer, and every rank reads the same value.

A stall (a kernel built for a new shape, a burst of prefills) can land in those results too, and
a price that blocks switching is re-measured only by the switches that still happen (probes,
large gains). So a sample is clamped at `STALL_FACTOR` times the bucket's price once the price
rests on two switches or more, and the policy lets a price take at most a fixed share of the
horizon it spreads it over (`GoodputPolicy.max_switch_share`).
"""

from __future__ import annotations


class SwitchCost:
    DECAY = 0.8  # the old mean's weight per sync that brings new switches
    MEMORY = 16.0  # switches the merged mean weighs at most (follows a change of context length)
    STALL_FACTOR = 4.0  # a sample above this many times a settled price counts as this many

    def __init__(self, buckets: int):
        self.buckets = buckets
        self.seconds = [0.0] * buckets  # merged mean excess seconds of one switch on
        self.count = [0.0] * buckets  # merged switches behind it (capped at MEMORY)
        self._local = [[0.0] * buckets, [0.0] * buckets]  # excess seconds, switches

    def observe(self, bucket: int, excess_s: float) -> None:
        if self.count[bucket] >= 2 and self.seconds[bucket] > 0:
            excess_s = min(excess_s, self.STALL_FACTOR * self.seconds[bucket])
        self._local[0][bucket] += excess_s
        self._local[1][bucket] += 1.0

    def local_vector(self) -> list:
        """What this rank adds at a sync (its local sums); they are consumed."""
        out = self._local[0] + self._local[1]
        self._local = [[0.0] * self.buckets, [0.0] * self.buckets]
        return out

    def merge(self, merged: list) -> None:
        """Merge `local_vector`'s sums as averaged over the ranks."""
        n = self.buckets
        sums, counts = merged[:n], merged[n:2 * n]
        for b in range(n):
            c = counts[b]
            if c <= 0:
                continue
            w_old = self.DECAY * self.count[b]
            self.seconds[b] = (w_old * self.seconds[b] + sums[b]) / (w_old + c)
            self.count[b] = min(w_old + c, self.MEMORY)

    def cost(self, bucket: int) -> float:
        """Seconds one switch on costs at this bucket, never below 0: measured here, else the
        most a smaller measured bucket paid (a larger batch has at least as many stale
        positions to rewrite), else 0.0 (nothing known: the first switch is free, and measures
        it)."""
        if self.count[bucket] > 0:
            return max(0.0, self.seconds[bucket])
        below = [self.seconds[b] for b in range(bucket) if self.count[b] > 0]
        return max(0.0, max(below, default=0.0))

    def snapshot(self) -> dict:
        """{batch bucket: [ms per switch on, switches behind it]}."""
        return {str(2 ** b): [round(1000 * self.seconds[b], 2), round(self.count[b], 1)]
                for b in range(self.buckets) if self.count[b] > 0}
