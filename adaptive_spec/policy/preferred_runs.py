"""How long the goodput cost model keeps preferring drafting once it starts to: the horizon a
switch on's price is spread over.

A switch from k = 0 to drafting costs a catch-up (`switch_cost.py`), which the drafting steps
after it must pay back. The policy spread the price over a fixed 128 drafting steps. Where the
running batch moves back and forth across a batch bucket's edge (28 <-> 36 requests: buckets
17-32 and 33-64) and drafting wins on one side and loses on the other, a drafting run lasts as
long as the batch stays on the drafting side, a few decisions, not 128. In simulation (a switch
on at 50 ms; session 36's final table on the GPU read 10-160 ms at 9-64 requests) the policy
switched on at almost every crossing and made 0.41-0.86x of the better static choice at
alternations every 2-10 decisions, and 0.86-0.99x on random walks of the batch around 32 (a
step a decision) where drafting lost 3-10% on the busy side (`python scripts/policy_sim.py`,
`bucket-edge` lines; `tests/unit/test_switch_cost.py`,
`test_a_batch_crossing_a_bucket_edge_every_few_decisions_does_not_flap`). The sweeps never
showed it: their concurrencies are powers of two, so in steady state the running batch stays
in one bucket.

So the runs in which the cost model prefers drafting (its best k, switch price and hysteresis
left out, > 0) and those in which it prefers plain are timed, a decayed mean of each, kept by the
batch bucket the run began at (a flapping edge says nothing of a load that drops elsewhere). A
switch on spreads its price over the mean drafting-preferred run; a switch off, which buys a
switch on when drafting is preferred again, over the mean plain-preferred run. Each horizon is
at least as long as the current run has already lasted (a load that settles lengthens it at
once), and never longer than the defaults (128 decisions at the drafting step time for a switch
on, the horizon the policy always used, or since session 41 the time the batch has held its
bucket when longer, up to 1,024: `GoodputPolicy._switch_on_horizon_s`; 1,024 at the plain step
time for a switch off), so that where runs are long both rules are what they were (a load that
stays at one batch bucket finishes no run). A switch on must clear the margin with the price paid (session 34's rule); a
switch off, the margin and, separately, the price. Where the runs are too short for either
switch to pay, the choice sticks, and which one sticks is decided over the mix of buckets the
batch visits (`GoodputPolicy._mixture_prefers`).

Runs are timed in seconds, not decisions: a run spent drafting lasts longer than the same
decisions spent plain, and the price is paid in seconds. The clock is the cost model's
predicted step time of each decision's k (rank-identical: the merged table), not the wall
clock, and the preference depends only on rank-identical inputs (the table, the acceptance, the
batch size), so every tensor-parallel rank reads the same horizons. Before and after, in
simulation: `python scripts/policy_sim.py`, its `bucket-edge` lines.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple


class PreferredRuns:
    WEIGHT = 0.3  # a finished run's weight in its mean: a few short runs pull it down

    def __init__(self):
        # seconds per run, by (drafting preferred, the batch bucket the run began at); missing:
        # no such run has finished (an unknown run is taken to be long)
        self.mean: Dict[Tuple[bool, int], float] = {}
        self.runs: Dict[Tuple[bool, int], int] = {}  # finished runs behind each mean
        self.state: Optional[bool] = None  # drafting preferred now (None: no decision yet)
        self.began_at = 0  # the bucket the current run began at
        self.clock = 0.0  # predicted seconds of every decision so far
        self.since = 0.0  # clock at which the current run began

    def tick(self, seconds: float) -> None:
        """A decision was made whose step the cost model prices at `seconds`."""
        self.clock += seconds

    def observe(self, drafting_preferred: bool, bucket: int) -> None:
        if self.state is None:
            self.state, self.since, self.began_at = drafting_preferred, self.clock, bucket
        elif drafting_preferred != self.state:
            key, length = (self.state, self.began_at), self.clock - self.since
            mean = self.mean.get(key)
            self.mean[key] = length if mean is None else mean + self.WEIGHT * (length - mean)
            self.runs[key] = self.runs.get(key, 0) + 1
            self.state, self.since, self.began_at = drafting_preferred, self.clock, bucket

    def horizon_s(self, drafting: bool, bucket: int) -> float:
        """Seconds the current run preferring drafting (or plain) is expected to last: the mean
        of the runs that began where it began (at `bucket` if it is not the current run), at
        least its length so far; inf where no such run has finished. Keyed by bucket: runs
        that flapped at one bucket's edge say nothing of a load that drops to another (in
        simulation, one mean for all had a drop to 4 requests after a flapping phase at 28-36
        wait before drafting until the gain had earned the switch's price)."""
        if self.state == drafting:
            mean = self.mean.get((drafting, self.began_at), math.inf)
            return max(mean, self.clock - self.since)
        return self.mean.get((drafting, bucket), math.inf)

    def snapshot(self) -> dict:
        """{"drafting" | "plain": {bucket the runs began at: [mean ms per run, runs]}}."""
        return {name: {str(2 ** b): [round(1000 * self.mean[(key, b)], 1), self.runs[(key, b)]]
                       for k, b in sorted(self.mean) if k == key}
                for name, key in (("drafting", True), ("plain", False))}
