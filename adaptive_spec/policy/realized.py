"""What each step count really delivered against what the cost model said it would (goodput).

The cost model adds up parts, each measured on its own: a decode step's time from the table
(stalls trimmed, the steps around a switch and a prefill's launch routed elsewhere), the prefill
term scaled to each k (prefill_load.py) and E_k from the pooled acceptance. Their sum can still
be off by more than the margin that separates two step counts near the crossover. GPU, session
40 (H100, dense pair, dial 0.7, 64 requests, `call_s39.sh fo`): the final model put k = 3 at
19.5 ms a step plus 4.1 of prefills and 2.51 tokens a request, a tie with plain (106.4 against
106.5 tokens a second a request); the phase clocks read 24.5 ms a drafting step with its
prefills (the tokens it gave were not logged) and plain 9.40 ms where the model said 9.39
(`phase_summary --drafting`, `2026-12-05-s40-phases-fo-drafting.txt`). Goodput drafted through
the level and made 0.92x of plain.

So every decode result of steady load is also counted at its (batch bucket, k): its wall time,
prefills beside it included (the controller adds the prefill results' intervals since the last
decode result: `Controller._observe_realized`), the tokens its requests gained, and E_k as the
model read it then. Read against the model of now, not of then (a cell's first predictions come
from a prior or a few samples, and a ratio against them would outlive the model's error): the
tokens gained over the E_k predicted, times the model's step time now over the mean wall time a
step. That ratio, shrunk towards 1 by `PRIOR_STEPS` pseudo-steps, read as 1 within `DEADBAND`
and clipped to [LOW, HIGH], scales k's modelled goodput (`GoodputPolicy._goodput_at`). A
drafting k with fewer than `MIN_STEPS` of its own borrows the bucket's drafting k pooled: what
the model misses while drafting (the draft's prefill, results the table leaves out) is mostly
shared by the chains. The results around a switch carry its catch-up, which switch_cost.py
prices: the controller leaves them out.

Not told apart: at a light load the gap between a request's end and its successor's prefill (the
client's, when under the controller's MAX_PREFILL_S) is counted as prefill time of the k that
runs; at one request that is a few ms in a request of ~0.6 s (an estimate, not measured), under
DEADBAND.

Tensor parallel: the tokens are rank-identical, the wall times each rank's own; the sums are
merged only at the policy's syncs through its reducer (an all-reduce mean), so every rank reads
the same ratios, as with the table.
"""

from __future__ import annotations


class RealizedRate:
    # the old sums' weight per sync that brings new results to the cell: one read every step
    # weighs its last ~320 steps (32 a sync / (1 - 0.9)), one read only in probes keeps them
    DECAY = 0.9
    PRIOR_STEPS = 32.0  # pseudo-steps at ratio 1: a probe's few steps move a ratio a little
    MIN_STEPS = 16.0  # a drafting k's own steps before its own ratio is read
    LOW, HIGH = 0.75, 1.33  # a ratio further off is a broken input, not a model error
    # a ratio this close to 1 reads as 1: the steps' noise, which must not tip the near ties
    # the switch margin settles (policy_sim's bucket-edge cases moved by up to 4.5% either way
    # on ratios of 0.996-1.001)
    DEADBAND = 0.02
    FIELDS = 4  # per cell: wall seconds, tokens gained, E_k predicted, decode steps

    def __init__(self, buckets: int, max_steps: int):
        self.buckets = buckets
        self.width = max_steps + 1
        n = buckets * self.width
        self.merged = [[0.0] * n for _ in range(self.FIELDS)]  # decayed sums, per bucket x k
        self._local = [[0.0] * n for _ in range(self.FIELDS)]

    @property
    def vector_length(self) -> int:
        return self.FIELDS * self.buckets * self.width

    def on_result(self, bucket: int, k: int, seconds: float, tokens: float,
                  expected: float) -> None:
        """A decode result at (bucket, k) took `seconds`; each request gained `tokens` (mean)
        where the model expected `expected` (E_k)."""
        if 0 <= k < self.width and seconds > 0 and expected > 0:
            i = bucket * self.width + k
            for row, v in zip(self._local, (seconds, tokens, expected, 1.0)):
                row[i] += v

    def local_vector(self) -> list:
        """What this rank adds at a sync (its local sums, row after row); they are consumed."""
        out = [v for row in self._local for v in row]
        n = self.buckets * self.width
        self._local = [[0.0] * n for _ in range(self.FIELDS)]
        return out

    def merge(self, merged: list) -> None:
        """Merge `local_vector`'s sums as averaged over the ranks."""
        n = self.buckets * self.width
        fresh = [merged[f * n:(f + 1) * n] for f in range(self.FIELDS)]
        for i in range(n):
            if fresh[3][i] <= 0:
                continue
            for row, new in zip(self.merged, fresh):
                row[i] = self.DECAY * row[i] + new[i]

    def cell(self, i: int) -> list:
        """Cell i's (bucket x width + k) merged sums, one per field."""
        return [row[i] for row in self.merged]

    def set_cell(self, i: int, sums: list) -> None:
        """Put back sums `cell` returned (the results since dropped)."""
        for row, v in zip(self.merged, sums):
            row[i] = v

    def steps(self, bucket: int, k: int) -> float:
        return self.merged[3][bucket * self.width + k]

    def ratio(self, bucket: int, k: int, model_times: list) -> float:
        """What k delivers at this bucket over what the model (`model_times`: each k's seconds
        a step now, prefills included) predicts, shrunk towards 1 and clipped; a drafting k short
        of MIN_STEPS reads the bucket's drafting k pooled."""
        base = bucket * self.width
        ks = [k]
        if k > 0 and self.steps(bucket, k) < self.MIN_STEPS:
            ks = range(1, self.width)
        wall, tokens, expected, steps = ([row[base + j] for j in ks] for row in self.merged)
        modelled = sum(s * model_times[j] for s, j in zip(steps, ks))
        n = sum(steps)
        if n <= 0 or modelled <= 0 or sum(wall) <= 0 or sum(expected) <= 0:
            return 1.0
        raw = (sum(tokens) / sum(expected)) * (modelled / sum(wall))
        shrunk = (n * raw + self.PRIOR_STEPS) / (n + self.PRIOR_STEPS)
        if abs(shrunk - 1.0) < self.DEADBAND:
            return 1.0
        return min(self.HIGH, max(self.LOW, shrunk))

    def snapshot(self, model_times_of) -> dict:
        """{batch bucket: {k: [ratio as read, own decode steps]}} for the cells with results;
        `model_times_of(bucket)`: the model's times there now."""
        out = {}
        for b in range(self.buckets):
            ks = [k for k in range(self.width) if self.steps(b, k) > 0]
            if ks:
                times = model_times_of(b)
                out[str(2 ** b)] = {str(k): [round(self.ratio(b, k, times), 3),
                                             round(self.steps(b, k), 1)] for k in ks}
        return out
