"""Goodput policy: the draft steps k (0..max) that maximise accepted tokens per second.

No offline profiling: the step-time table t(batch bucket, k) is learned online from the
step times the server measures anyway (wall time between processed decode results), and
acceptance from the verify results, per draft position.

  expected tokens per step  E_k = 1 + sum_{j=1..k} prod_{i<=j} p_i
      (p_i: pooled, decayed chance that draft i is right given drafts 1..i-1 were)
  choice                    k* = argmax_k E_k / t(bucket, k)

For a fixed batch the same k maximises the batch's throughput (bs * E_k / t) and each
request's token rate (E_k / t), so "throughput when busy, latency when idle" is one rule;
with `tpot_slo_ms` the choice is restricted to the k whose predicted TPOT (t / E_k) meets
the target when any does. Only a k measured at this batch bucket (or k=0), or bounded from
above by a larger one, may be chosen; unmeasured cells are estimated from measured neighbours
and probed rarely (a few steps, smallest k first) until they have `min_samples` samples. A
switch needs a `switch_margin` gain, so the choice does not flap on noise (a switch from
drafting to plain `switch_off_margin`, smaller: the model's errors at a near tie lean to
drafting).

What the GPU runs of 2026-11-29 taught the table and the probes:
- A cell's first samples can be stalls (a Triton compile on a new batch shape). Averaged, they
  made k=0 look slower than drafting, and a cell never chosen never got the samples that would
  correct it. So each sync merges a trimmed mean (samples over 4x the median dropped), a
  drafting sample above (2k+2) x 1.5 times the bucket's plain step is dropped (unless the sync
  holds 3 or more samples of the cell: then the trim judges it with the rest), and every
  `refresh_interval` decisions k=0, a neighbour of the chosen k or another k that could still
  win gets a short probe.
- Prefills: a decode result right after a prefill carries the prefill's time (the controller
  is told, and the step time restarts at the prefill's result, `Controller.on_prefill_result`;
  session 5 saw that dropping the two decode results around each prefill starved the busy
  batches, where a prefill comes every 1-3 steps, of samples). Probes of a new
  batch size run exactly while its requests are prefilled, so left in, those few samples made
  k=1 look 10x slower than it is (sweeps of session 3: off at 32-64 requests where drafting
  wins 1.5x). So the table holds decode steps only, and the prefill time is added per bucket
  by a model of its own (`PrefillLoad`): a prefill batch costs about the same however many
  new requests it holds, and a drafting server, finishing requests in fewer and longer steps,
  puts more of them into each (GPU, session 17, MoE layout at 128 requests: plain TPOT 15.4 ms
  against a 5.9-ms plain decode step; left out, the policy ran plain where EAGLE-3 made 1.36x).
  A prefill while drafting runs the draft's prefill too, ~2x a plain one's cost at 64 requests
  on an H100 (session 46): priced alike, whichever kind ran made the other mode look like it,
  both ways in drafting's favour; so plain is priced at plain prefills' cost and drafting at
  spec ones' (prefill_load.py, "A prefill's kind").
- A probe is expensive exactly where drafting loses (at 256 requests one k=3 step cost 16x a
  k=0 step). So only a k that could still win is probed: no estimate yet, or an estimated
  goodput within `probe_optimism` of the best; smallest k first, because a measured k is a
  floor for every larger one (more draft steps and verify tokens never make a step faster).
  A smaller batch bounds a larger one too: t(k) / t(0) only grows with the batch, so a k that
  lost at 64 requests is not probed at 128 (session 9: those probes were 6% of the level's
  steps at 4x a plain step's cost). The same bound read the other way caps the smaller batch's
  ratio by what the larger batch measured itself (session 29: a stalled warm-up cell at one
  request kept k = 2, 3 unprobed at 4).
- An estimate scaled from another bucket is good for choosing what to probe, not what to run
  (one kept k=3 at 128 requests for ~2 s in the step-load run), hence "measured here".
- Few samples can all be stalls (session 4, dial 0.9: a probe in the warm-up's prefill burst
  put k=3 at 128 requests at 62.8 ms; EAGLE-3's same-run throughput bounds it under 52 ms with
  its prefills), and a cell that looks hopeless is never probed again. So a sync keeps only
  the samples near its lower quartile, a sparse cell may be `optimism(samples)` times too
  slow, and a neighbour of the chosen k is refreshed until it has `trusted_samples` (unless
  the bounds its own samples do not enter, the smaller batch's ratio, rule it out).
- A k whose expected tokens per step barely exceed 1 (a draft that is always wrong) cannot pay
  for its draft forwards whatever its step time, yet the optimism above let it look as cheap
  as a plain step, so it was refreshed every `refresh_interval` decisions for ever (GPU,
  session 19: goodput 0.949x of plain at 16 requests with the always-wrong draft). Such a k is
  not probed; k = 1 re-reads the acceptance on a doubling gap instead (`hopeless_gain`).
- A cell whose samples keep being dropped never fills; probed every 16 steps regardless, it
  cost 0.64x of EAGLE-3 at 128 requests (GPU, session 5). After a few probes of one cell the
  gap to the next one doubles each time.
- A probe is one catch-up step plus `min_samples` steps, and its samples are merged right after
  its last result: one probe fills a cell, and the next explore moves on to the next k (3-step
  probes merged every 32 decisions needed ~4 probes and ~4 catch-ups per cell; a new batch size
  took 226 decisions to reach its best k in the simulation test, now <= 80: a large part of a
  5-s sweep level).
- The floor cuts both ways: a shorter chain's stalled cell, above a longer chain's measured
  time, priced that longer chain out (session 10: k=2 read 29.9 ms at 33-64 requests, k=3
  17.8). Stalls only slow a step, so a measured cell is capped by every well-sampled longer
  chain, and by the same or a longer chain at every larger batch (`StepTimeTable.caps`),
  before it floors anything (sessions 13-18: a plain step at 33-64 requests, sampled mostly
  in ramp-ups, read 1.3-1.8x one at 65-128 in 5 final tables).
- While drafting, a refresh of another drafting k needs no catch-up and costs only what its
  steps lose against the chosen k, so an unsettled one (few samples, or a mean still moving)
  is refreshed as often as a 0.5% goodput budget allows, not once per 1,024 decisions
  (`_drafting_refresh`; GPU session 28, MoE at 16 requests: k = 2 ran a whole level while the
  final table put k = 3 14% above it).
- A step's cost moves with the requests' context (attention reads the whole KV each step), and
  while drafting only the drafting cells get samples: a plain cell measured at a context 2x off
  today's (and 512 tokens or more away) is refreshed at once, a drafting one as an unsettled
  cell (`StepTimeTable.measured_at_another_context`; simulation, session 36: k = 3 kept ~1,000
  decisions after 3,000-token contexts fell to 200, where plain made 1.1x).
- Deep draft positions are seen only in probes: each position's acceptance is shrunk towards
  the one before it (`PRIOR_TRIES` pseudo-tries), so two unlucky probe rounds cannot rule the
  long chains out.

Tensor parallelism: every input is rank-identical except the measured times. Those are
accumulated locally and merged into the table only every `sync_interval` decisions, through
`reducer` (an all-reduce mean over the TP CPU group in the server; identity with one rank),
so every rank decides from the same table at the same step. A reducer with `start` (the
server's) is asynchronous: the all-reduce starts at the sync and its result is merged
`sync_lag` decisions later, on every rank at the same decision, so no rank waits for the
other on the scheduler's thread. GPU, session 20 (TP = 2): the blocking all-reduce took up to
1.4 ms (decide p99 1,399 us against a 12-us median), every 32 decisions.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Callable, Optional

from ..signals import AcceptanceStats, LoadSnapshot
from .base import Decision
from .goodput_probes import ProbeSchedule
from .goodput_status import GoodputStatus
from .preferred_runs import PreferredRuns
from .prefill_load import PrefillLoad
from .realized import RealizedRate
from .step_table import MAX_BUCKET_EXP, StepTimeTable, bucket_of
from .switch_cost import SwitchCost


def _price_share(price: float, horizon_s: float) -> float:
    """A switch's price as a share of the time it is spread over. A horizon of no time (a run,
    or a step, priced at 0 s: `tests/unit/test_controller_fuzz.py` reached one and the division
    sent the server to its fallback for the rest of the run) pays back no price."""
    if price <= 0.0:
        return 0.0
    return price / horizon_s if horizon_s > 0.0 else math.inf


def _argmax(ks: list, values: list) -> int:
    """The first k of `ks` with the largest value (as max(ks, key=...), a third of its time)."""
    best = ks[0]
    for k in ks:
        if values[k] > values[best]:
            best = k
    return best


class GoodputPolicy(ProbeSchedule, GoodputStatus):
    # Prior per-position acceptance before any measurement: optimistic, so drafting is
    # tried; the measured values replace it after the first verify results.
    PRIOR_ACCEPT = 0.7
    PRIOR_TRIES = 8.0  # weight of that prior, and of position j-1's value for position j
    # Before measurements, relative cost of one draft step + the longer verify (per k).
    PRIOR_STEP_COST = 0.35
    # Noise allowed on a smaller batch's t(k) / t(0) when it bounds an unprobed cell here.
    MONOTONE_SLACK = 1.15

    def __init__(self, cfg, reducer: Optional[Callable[[list], list]] = None):
        self.cfg = cfg
        self.max_steps = cfg.max_steps
        self.table = StepTimeTable(cfg.max_steps)
        # prefill seconds per decode step, and how they change with k (prefill_load.py)
        self.prefill = PrefillLoad(MAX_BUCKET_EXP + 1, cfg.max_steps)
        # what a switch from k = 0 to drafting costs (the catch-up of the stale draft KV), and
        # the decisions a drafting run must last to pay it back (switch_cost.py)
        self.switch = SwitchCost(MAX_BUCKET_EXP + 1)
        # the tokens each k delivered against the model's prediction for the time it took, per
        # bucket: scales the model's goodput (realized.py); off, the model's parts alone decide
        self.realized = RealizedRate(MAX_BUCKET_EXP + 1, cfg.max_steps)
        self.calibrate = cfg.goodput_model == "realized"
        self._unit_tokens = [1.0] * (cfg.max_steps + 1)  # E_k before any decision (the status)
        self.switch_horizon = 128
        # ... of which a price may take at most this share: a stalled switch's price must not
        # keep a large gain (over 1.03 / 0.75, ~1.37x) off until the next probe re-measures it
        self.max_switch_share = 0.25
        # Whether a prefill's launch in the decode step beside it is priced (session 37, CPU
        # only: `observe_prefill_launch`). Off: on the H200 (session 38, `call_s37.sh k7`, 64
        # requests, up to 7 steps) its extra put plain at 6.5 + 1.76 + 1.09 ms a step where the
        # phase clocks read 8.18 with the prefills (48-95 running: the launch counted twice),
        # the policy drafted k = 5 on half a repeat's decisions, and made 0.815x of plain
        # there; without the term the same final table has plain ahead. Measured either way
        # (the status's `prefill_launch_ms`).
        self.price_launches = False
        # ... spread over the time a drafting run lasts, measured (preferred_runs.py); a switch
        # off over a plain run's, at most this many plain steps
        self.runs = PreferredRuns()
        self.plain_horizon = 8 * self.switch_horizon
        # A switch on's price is spread over this many drafting steps, or over the time the
        # batch has stayed in its bucket when longer (a load that has held that long is taken
        # to hold as long again, as preferred_runs.py takes a run), up to the longest many.
        # Session 41, simulated: with a fixed 128, a drop from 128 to 60 running where drafting
        # won by 5-7% stayed plain (the price took ~6% of a 2-s horizon, the margin 3%); a fixed
        # 1,024 drafted there but flapped at a bucket edge (`policy_sim.py --switch-on-horizon
        # 1024`); growing with the stay it drafts there and moves no bucket-edge case by more
        # than 1.6%, where a stay is short.
        self.switch_on_horizon = self.switch_horizon
        self.switch_on_horizon_max = self.plain_horizon
        self._bucket_now, self._bucket_since = -1, 0.0  # the batch's bucket, and since when (clock)
        self._last_times: list = []  # each k's predicted step time at the last fresh decision
        # the batch buckets of the latest decisions, and how many of them each holds: where the
        # batch moves between buckets faster than a switch pays back, the choice that sticks is
        # made for the mixture (`_mixture_prefers`)
        self._recent_buckets: deque = deque(maxlen=256)
        self._bucket_visits = [0] * (MAX_BUCKET_EXP + 1)
        # decisions made at each bucket, and that count at each (bucket, k)'s last probe: the
        # budget a switching probe or refresh spends is the bucket's own time (_switch_paid)
        self._bucket_decisions = [0] * (MAX_BUCKET_EXP + 1)
        self._probed_at: dict = {}
        self.reducer = reducer or (lambda v: v)
        self.sync_interval = 32
        # decisions between an asynchronous sync's start and its merge (see the module doc);
        # well under `explore_interval`, so a probe's samples are merged before the next explore
        self.sync_lag = 4
        self._pending_syncs: deque = deque()  # (merge at decision #, handle, table part length)
        self.min_samples = 6
        self.trusted_samples = 24  # below this, a neighbour of the chosen k is still refreshed
        self.hopeless_probes = 3  # ... until it has been probed this often and still cannot win
        self.explore_interval = 16
        self.refresh_interval = 1024  # re-measure a non-chosen k of a filled bucket (~0.5%)
        # ... and, where it needs a switch on, once the switch's price fits this share of the
        # time since the last probe here that needed one (`_switch_paid`); a repeated probe
        # of a cell still under-sampled, once it fits this one
        self.refresh_budget = 0.005
        self.reprobe_budget = 0.01
        # a recheck of a cell that jumped (`_recheck`): the k it may win back is worth more
        self.recheck_budget = 0.02
        # While drafting, another filled drafting k is refreshed as often as its cost allows
        # (`_drafting_refresh`): the goodput its steps lose may take this share of the decisions,
        # and no cell is refreshed more often than every `drafting_refresh_gap` decisions
        self.drafting_refresh_budget = 0.005
        self.drafting_refresh_gap = 128
        self.settled_move = 0.05  # ... while the cell's mean still moves more than this per merge
        # A k whose expected tokens per step exceed a plain step's 1 by less than this cannot
        # pay for its draft forwards and longer verify (measured on the H200: 1.36-3x a plain
        # step), however its step time reads: it is neither probed nor refreshed. Its
        # acceptance can only be re-read by drafting, so k = 1 is re-probed for
        # `cfg.reprobe_steps` steps every `refresh_interval` decisions, the gap doubling up
        # to 8x while it stays this low (as the threshold policy's re-probes back off).
        # GPU, session 19 (always-wrong draft, 16 requests): k = 1 was refreshed every 1,024
        # decisions, 7 steps and a catch-up each, and goodput made 0.949x of plain twice.
        self.hopeless_gain = 0.05
        self._accept_probe = (0, self.refresh_interval)  # (decision of the last, gap to the next)
        self.probe_len = 1 + self.min_samples  # one catch-up step (from k=0), then a cell's worth
        self.probe_optimism = 1.4  # probe k only if goodput[k] * this >= the best (well sampled)
        self.free_probes = 4  # probes of a cell at the explore interval; then the gap doubles
        self.max_backoff = 64  # ... up to explore_interval x this decisions
        self.switch_margin = 0.03
        # ... but a switch from drafting to plain needs only this gain (the switch on that may
        # follow is priced apart, `_choose`). The model's errors at a near tie lean to
        # drafting: a cell fed by a level's start and drains, where drafting steps are cheap
        # (session 61), and prefills over-predicted alike for every k, which dilutes plain's
        # lead per token (session 62). GPU, session 62 (H100, DeepSeek-V3 layout, 64 requests):
        # k = 3 read 0.97-0.98x of plain for the level's second half, held by the 3% margin,
        # and goodput made 0.926x of plain. Simulated (`policy_sim.py`, CPU, no performance
        # claim): level-starts at 0.97 drafted 0 of 800 decisions at 60 where it drafted 800
        # (0.962x of plain -> 1.000x), sweep-levels at 64 0.974 / 0.968 -> 0.978 / 0.977;
        # bucket-edge alternating every 5 lost 1% (0.994 -> 0.984); the other lines that moved
        # changed by -0.5% to +0.8%.
        self.switch_off_margin = 0.01
        # Between syncs, probes and batch-size buckets the table and the probe schedule are
        # fixed and only the acceptance estimate moves (slowly: decay 0.995 per result), so a
        # choice is reused for up to `reuse_for` decisions. The GPU servers spent 34 us of CPU
        # per goodput decide (session 13, dial 0.7) where the same code takes 5 us in a tight
        # loop: the scheduler's own work between two steps leaves the policy's data cold.
        self.reuse_for = 8
        self._reuse = (None, -1, -1, 0)  # (decision, bucket, table syncs, reusable up to decision #)
        self._decisions = 0
        self._current: Optional[int] = None
        self._last_goodput: list = []
        # what kept the current k over a better one at the last fresh decision (decision_basis)
        self._last_held: Optional[str] = None
        self._last_expected: Optional[list] = None  # E_k at the last decision (the status reads it)
        self._last_bucket: Optional[int] = None  # the last fresh decision's bucket (decision_parts)
        self._probe_k: Optional[int] = None
        self._probe_left = 0
        self._probe_reason = "probe"  # "probe" (an under-sampled cell) or "refresh" (a filled one)
        self._probes: dict = {}  # (bucket, k) -> (probes started, decision of the last one)
        self._rechecked: dict = {}  # (bucket, k) -> the table's sync of the jump rechecked last
        self._realized_at_jump: dict = {}  # table cell -> its realized sums before its jump
        self._context = 0.0  # KV tokens per running request at this decision (rank-identical)
        # a probe's samples are merged right after its last result arrives (overlap: one
        # decision late), so the next explore sees them instead of probing the cell again
        self._sync_after_probe = -1
        # per bucket: (step times for k = 0..max, the k that may be chosen); the table only
        # changes at a sync, so this is rebuilt once per sync, not per decision
        self._bucket_cache: dict = {}
        self._ratio_cache: dict = {}  # per bucket: each k's realized ratio (`_realized_ratios`)
        self._cache_sync = -1

    # ---- inputs ---------------------------------------------------------------------
    def observe_step_time(self, batch_size: int, k: int, seconds: float) -> None:
        if 0 <= k <= self.max_steps and seconds > 0:
            self.table.record(batch_size, k, seconds)

    def observe_prefill(self, batch_size: int, seconds: float, admitted: int,
                        plain: bool = False) -> None:
        """A prefill batch of `admitted` requests took `seconds` beside a decode batch of
        `batch_size`; `plain`: it ran without the draft's prefill (prefill_load.py, "A
        prefill's kind")."""
        if seconds > 0:
            self.prefill.on_prefill(bucket_of(batch_size), seconds, max(0, admitted), plain,
                                    batch_size=batch_size)

    def observe_admitted(self, admitted: int) -> None:
        """A prefill's result admitted `admitted` new requests that go on to decode, whatever
        its time: the mean request length counts every such admission (prefill_load.py,
        "Arrivals predicted")."""
        self.prefill.on_admitted(max(0, admitted))

    def observe_prefill_launch(self, batch_size: int, k: int, seconds: float) -> None:
        """A decode result at step count k processed right after a prefill batch's launch took
        `seconds`: its time beyond k's settled step time is the launch's (prefill_load.py, "A
        prefill's launch"), and the table gets the step less the extra measured here so far.
        Where every decode step has a launch beside it (a prefill each step, as at 128-256
        requests) the two cannot be told apart: the table then learns steps with their launches
        and the term ~0 beside them, the same total, and never starves (session 5). Unpriced
        (`price_launches` off, the default) the whole step enters the table as one beside a
        launch: a cell takes such samples at its bucket's launched share (step_table.py,
        session 49: an arrival burst of them had kept k = 3 unchosen at 16 requests)."""
        if not 0 <= k <= self.max_steps or seconds <= 0:
            return
        bucket = bucket_of(batch_size)
        settled = self.table.settled_row(bucket)[0][k]
        if settled is not None:
            self.prefill.on_launch(bucket, k, seconds - settled)
        if not self.price_launches:  # in the table, at the bucket's launched share
            self.table.record(batch_size, k, seconds, launched=True)
            return
        self.observe_step_time(batch_size, k, seconds - self.prefill.measured_launch(bucket, k))

    def observe_switch_on(self, batch_size: int, results: list) -> None:
        """The results around a switch from an off step to drafting, as (step count the table
        prices it at, seconds[, True where a prefill's launch landed in it]): their time beyond
        that price, and beyond the launch's price in the prefill term, is what the switch cost
        (switch_cost.py)."""
        bucket = bucket_of(batch_size)
        row = self.table.settled_row(bucket)
        launch = self._bucket_view(bucket)[2]
        excess = 0.0
        for k, seconds, *launched in results:
            excess += seconds - self.step_time(bucket, k, row) - (launch[k] if launched else 0.0)
        self.switch.observe(bucket, excess)

    def observe_decode(self, batch_size: int, tokens_per_request: float) -> None:
        """A decode result: each request gained `tokens_per_request` tokens (mean)."""
        self.prefill.on_decode(bucket_of(batch_size), tokens_per_request, batch_size)

    def result_priced(self) -> bool:
        """Whether the decode result just observed (`observe_decode`) may count in the realized
        rate: its interval is one the prefill term counted whole (`PrefillLoad.interval_priced`)
        at a bucket whose requests have begun to turn over (`PrefillLoad.turnover_begun`).
        Asked by the controller at the result itself: a plain result reaches
        `observe_realized` one result later (`Controller._observe_realized`)."""
        return self.prefill.interval_priced and self.prefill.turnover_begun()

    def observe_realized(self, batch_size: int, k: int, seconds: float, tokens: float) -> None:
        """A decode result at step count k took `seconds` of wall time, the prefill results
        since the last decode result included, and its requests gained `tokens` each: against
        the model's (uncalibrated) goodput for k here, in steady load only (realized.py)."""
        expected = self._last_expected
        if (expected is None or not 0 <= k <= self.max_steps or seconds <= 0
                or not self.prefill.steady):
            return
        self.realized.on_result(bucket_of(batch_size), k, seconds, tokens, expected[k])

    # ---- model ----------------------------------------------------------------------
    def expected_tokens(self, acc: AcceptanceStats) -> list[float]:
        """E_k for k = 0..max. Position j's acceptance is its hits/tries shrunk towards
        position j-1's (PRIOR_TRIES pseudo-tries): the deep positions are seen only in the
        rare probes of long chains, and a few unlucky rounds there must not rule a k out."""
        hits, tries = acc.pos_hits, acc.pos_tries
        e, run, out = 1.0, 1.0, [1.0]
        prior = self.PRIOR_ACCEPT
        for j in range(self.max_steps):
            h, t = (hits[j], tries[j]) if j < len(tries) else (0.0, 0.0)
            p = (h + self.PRIOR_TRIES * prior) / (t + self.PRIOR_TRIES)
            prior = p
            run *= p
            e += run
            out.append(e)
        return out  # out[k] = E_k

    def step_time(self, bucket: int, k: int, row: Optional[tuple] = None) -> float:
        """t(bucket, k): measured, else scaled from another bucket, else the prior; never below
        the floor. `row`: the bucket's `settled_row`, when the caller already has it."""
        settled, floors = row if row is not None else self.table.settled_row(bucket)
        t = settled[k] if settled[k] is not None else self.table.estimate(bucket, k)
        if t is None:
            base = settled[0] if settled[0] is not None else self.table.estimate(bucket, 0)
            base = base if base is not None else 0.01
            t = base * (1.0 + self.PRIOR_STEP_COST * k)
        return max(t, floors[k])

    def optimism(self, samples: float) -> float:
        """How many times too slow a cell's mean may be, given its sample count: a few
        samples can all be stalls. Session 4 (GPU, dial 0.9): the 4 samples of k=3 at 128
        requests, taken in the warm-up's prefill burst, read 62.8 ms (eagle3's same-run
        throughput puts a k=3 step there under 52 ms with its prefills); with a fixed 1.4
        the cell was never probed again and the server ran plain where eagle3 made 1.14x."""
        return self.probe_optimism * (1.0 + self.min_samples / max(samples, 1.0))

    def _bounds(self, bucket: int, k: int) -> float:
        """The fastest step time k's bounds allow, its own samples left out: the floor (the
        measured smaller k here) and the smaller batch's ratio, with slack for its noise."""
        return max(self.table.floor(bucket, k),
                   self.table.smaller_batch_floor(bucket, k, self.min_samples) / self.MONOTONE_SLACK)

    def _goodput_at_time(self, bucket: int, k: int, expected: list[float], t: float) -> float:
        if t <= 0:
            return math.inf
        launch = self._bucket_view(bucket)[2][k]
        ratio = self._realized_ratios(bucket, expected)[k] if self.calibrate else 1.0
        return expected[k] * ratio / (t + self.prefill.per_step(bucket, expected[k], launch,
                                                                plain=k == 0))

    def bounded_goodput(self, bucket: int, k: int, expected: list[float]) -> float:
        """What a cell whose few samples may all be stalls could still reach: k's goodput at
        `_bounds`."""
        return self._goodput_at_time(bucket, k, expected, self._bounds(bucket, k))

    def optimistic_goodput(self, bucket: int, k: int, expected: list[float]) -> float:
        """The best goodput k could plausibly have at this bucket: its own measured mean
        `optimism(samples)` times too slow, never faster than the floor (the measured smaller
        k here). Unmeasured here: the floor alone. An estimate scaled from another bucket does
        not count: one stalled cell at 8 requests, scaled down, kept k=3 from ever being
        probed at 1 request (dial 0.9, 2026-11-29: k=2 ran there, 0.95x of eagle3)."""
        n = self.table.samples(bucket, k)
        mean = self.table.estimate(bucket, k) if n > 0 else None
        # a smaller batch's ratio, with slack for its noise: GPU, session 9, a k=1 step at
        # 128 requests cost 4x a plain one after k=1 had lost at 64; its probes and those of
        # k=2 and k=3 took 44 of the level's 687 steps
        floor = self._bounds(bucket, k) if n < self.trusted_samples else self.table.floor(bucket, k)
        t = max(floor, mean / self.optimism(n) if mean is not None else 0.0)
        return self._goodput_at_time(bucket, k, expected, t)

    # ---- decision -------------------------------------------------------------------
    def decide(self, snap: LoadSnapshot, acc: AcceptanceStats) -> Decision:
        self._decisions += 1
        d = self._decisions
        self._context = snap.kv_used / snap.running if snap.running > 0 else 0.0
        if d % self.sync_interval == 0 or d == self._sync_after_probe:
            self._start_sync(d)
        while self._pending_syncs and self._pending_syncs[0][0] <= d:
            _, handle, n_table = self._pending_syncs.popleft()
            self._merge(handle.wait(), n_table)
        bucket = bucket_of(snap.running)
        if bucket != self._bucket_now:
            self._bucket_now, self._bucket_since = bucket, self.runs.clock
        recent = self._recent_buckets
        if len(recent) == recent.maxlen:
            self._bucket_visits[recent[0]] -= 1
        recent.append(bucket)
        self._bucket_visits[bucket] += 1
        self._bucket_decisions[bucket] += 1
        reused, r_bucket, r_syncs, r_until = self._reuse
        if (d <= r_until and bucket == r_bucket and self.table.syncs == r_syncs
                and self._probe_left == 0 and d % self.explore_interval != 0):
            self.runs.tick(self._last_times[reused.steps])
            return reused  # nothing but the acceptance can have moved (see reuse_for)
        decision = self._decide(bucket, acc)
        self.runs.tick(self._last_times[decision.steps])
        if decision.reason not in ("probe", "refresh", "reprobe"):
            self._reuse = (decision, bucket, self.table.syncs, d + self.reuse_for - 1)
        return decision

    def _start_sync(self, d: int) -> None:
        """One all-reduce for the table, the prefill term and the switch cost (under TP each
        reducer call is a collective on the CPU group): merged now, or `sync_lag` decisions
        later when the reducer is asynchronous."""
        table_part = self.table.local_vector()
        values = (table_part + self.prefill.local_vector() + self.switch.local_vector()
                  + self.realized.local_vector())
        start = getattr(self.reducer, "start", None)
        if start is None:
            self._merge(self.reducer(values), len(table_part))
        else:
            self._pending_syncs.append((d + self.sync_lag, start(values), len(table_part)))

    def _merge(self, merged: list, n_table: int) -> None:
        end_switch = len(merged) - self.realized.vector_length
        end_prefill = end_switch - 2 * self.switch.buckets
        self.table.merge(merged[:n_table], self._context)
        self._realized_around_jumps()
        self.prefill.merge(merged[n_table:end_prefill])
        self.switch.merge(merged[end_prefill:end_switch])
        self.realized.merge(merged[end_switch:])

    def _realized_around_jumps(self) -> None:
        """A stall raises what a k's results took as it raises its step cell: where the table
        finds a jump to be a stall (`StepTimeTable.merge_events`), k's realized sums go back to
        what they were before it, or its goodput would still read the stall through the
        realized ratio after its cell was mended. Run before the realized rate merges this sync,
        whose results come after the recheck. Both index a cell as bucket x (max + 1) + k."""
        for i, event in self.table.merge_events:
            if event == "jump":
                self._realized_at_jump[i] = self.realized.cell(i)
            elif event == "stall" and i in self._realized_at_jump:
                self.realized.set_cell(i, self._realized_at_jump.pop(i))
            elif event == "new cost":
                self._realized_at_jump.pop(i, None)

    def _decide(self, bucket: int, acc: AcceptanceStats) -> Decision:
        expected = self.expected_tokens(acc)
        times, candidates, goodput = self._goodput_at(bucket, expected)
        self._last_goodput, self._last_expected, self._last_times = goodput, expected, times
        self._last_bucket = bucket
        self._last_held = None
        self.runs.observe(_argmax(candidates, goodput) > 0, bucket)
        probe = self._probe(bucket, expected, times, goodput,
                            goodput[_argmax(candidates, goodput)])
        if probe is not None:
            return Decision(probe, self._probe_reason)
        best, reason, self._last_held = self._choose(bucket, times, candidates, goodput, expected)
        self._current = best
        return Decision(best, reason)

    def forecast(self, snap: LoadSnapshot, acc: AcceptanceStats) -> int:
        """The step count the cost model would choose at `snap.running` now, probes left out,
        changing nothing: a prefill asks whether the batch its requests join will draft
        (hooks_plain.after_prepare_for_extend). Rank-identical as `decide` is."""
        expected = self.expected_tokens(acc)
        bucket = bucket_of(snap.running)
        times, candidates, goodput = self._goodput_at(bucket, expected)
        return self._choose(bucket, times, candidates, goodput, expected)[0]

    def _model_times(self, bucket: int, expected: list[float]) -> list:
        """Each k's decode step plus the prefill time it brings per step (prefill_load.py),
        the prefills' launches included: the model's parts, uncalibrated."""
        return [t + p for t, p in zip(*self._model_parts(bucket, expected))]

    def _model_parts(self, bucket: int, expected: list[float]) -> tuple:
        """(each k's decode step, the prefill time it brings per step with the prefills'
        launches) in seconds at this bucket: `_model_times`' two terms, apart."""
        times, _, launch = self._bucket_view(bucket)
        prefill = [self.prefill.per_step(bucket, e, x, plain=k == 0)
                   for k, (e, x) in enumerate(zip(expected, launch))]
        return times, prefill

    def _goodput_at(self, bucket: int, expected: list[float]) -> tuple:
        """(each k's time per decode step, the k that may be chosen, each k's goodput): the
        model's times, each over the tokens k delivered against the model's prediction here
        (realized.py), so a k that delivers 6% less reads 6% slower."""
        times = self._model_times(bucket, expected)
        if self.calibrate:
            times = [t / r for t, r in zip(times, self._realized_ratios(bucket, expected, times))]
        return times, self._bucket_view(bucket)[1], [e / t for e, t in zip(expected, times)]

    def _choose(self, bucket: int, times: list, candidates: list, goodput: list, expected: list) -> tuple:
        """(k, reason, what held a better k back or None: `decision_basis`): the best goodput among the candidates (those meeting the TPOT target,
        when one is set and any does), kept at the current k unless a switch gains more than
        its margin (`_margin`); from k = 0, unless drafting also pays back what turning it on costs
        at this bucket (`switch_cost`) within the steps a drafting run is expected to last;
        to k = 0, unless plain pays back the switch on that will follow within the steps a
        plain run is expected to last (`preferred_runs.py`)."""
        reason = "cost_model"
        slo = self.cfg.tpot_slo_ms
        if slo is not None:
            meets = [k for k in candidates if 1000.0 * times[k] / expected[k] <= slo]
            if meets:
                candidates, reason = meets, "slo"
        best = _argmax(candidates, goodput)
        cur, held = self._current, None
        if cur is not None and cur in candidates:
            stay = goodput[cur] * (1 + self._margin(best, cur))
            if goodput[best] <= stay:
                if best != cur:
                    held = "margin"
                best = cur  # not worth a switch
            elif cur == 0 or best == 0:
                # the catch-up's time buys no tokens: over the horizon drafting runs that much
                # shorter (session 34: switched on 7 times in 6 s where k = 3 tied k = 0), and
                # plain, which ends in a switch on, that much shorter too. A stalled price is
                # capped at a share of the default drafting horizon's steps.
                drafting = cur if best == 0 else best
                price = min(self.switch.cost(bucket),
                            self.max_switch_share * self.switch_horizon * times[drafting])
                longest = (self._switch_on_horizon_s(bucket, times[best]) if best > 0
                           else self.plain_horizon * times[best])
                share = _price_share(price, min(longest, self.runs.horizon_s(best > 0, bucket)))
                # on: the price and the margin together (session 34's rule); off: each alone,
                # as a switch off cleared the margin alone before its price was known
                bar = stay if cur == 0 else goodput[cur]
                if goodput[best] * (1.0 - share) <= bar:
                    # not paid back within the runs measured; over the default horizon either,
                    # or the choice sticks and the recent buckets' mix picks the one that does
                    default_share = _price_share(price, longest)
                    if (goodput[best] * (1.0 - default_share) <= bar
                            or not self._mixture_prefers(best, cur, expected, default_share)):
                        held = f"price:{share:.3f}"
                        best = cur
        return best, reason, held

    def _margin(self, target: int, cur: int) -> float:
        """The gain a switch from `cur` to `target` must clear: `switch_off_margin` from
        drafting to plain, else `switch_margin`."""
        return self.switch_off_margin if target == 0 < cur else self.switch_margin

    def _switch_on_horizon_s(self, bucket: int, step_s: float) -> float:
        """Seconds a switch on's price is spread over at most: `switch_on_horizon` drafting steps
        of `step_s`, or the time the batch has stayed in `bucket` when longer (0 for another
        bucket: a forecast's), up to `switch_on_horizon_max` steps. Rank-identical: the clock is
        the model's predicted time of each decision (preferred_runs.py)."""
        return min(max(self.switch_on_horizon * step_s, self._bucket_stay_s(bucket)),
                   max(self.switch_on_horizon, self.switch_on_horizon_max) * step_s)

    def _bucket_stay_s(self, bucket: int) -> float:
        """Predicted seconds of the decisions since the batch entered `bucket` (0 for another
        bucket than the batch's now)."""
        return self.runs.clock - self._bucket_since if bucket == self._bucket_now else 0.0

    def _mixture_prefers(self, target: int, cur: int, expected: list, share: float) -> bool:
        """Where the runs are too short for a switch to pay back, the choice sticks; whether
        `target` should be the one that sticks: its goodput over the batch buckets of the latest
        decisions (each k's step time weighted by the decisions there) beats `cur`'s by the
        margin with `share` (the price over the default horizon) paid. Asked only where the
        switch pays over the default horizon (so at a steady batch, session 34's rule stands).
        Without it the choice sticks wherever the first short runs left it: in plain, say, at
        alternations where static drafting makes 1.07x of plain (`policy_sim`'s bucket-edge
        costs).
        What it cannot see: a choice that moves the batch. Closed-loop clients at 34 whose next
        request joins a few steps after the last finished sit mostly at 33-34 running when plain and
        lower when drafting (requests finish sooner); the mix seen under plain favours plain,
        and static drafting made 1.09-1.21x of plain where the policy made 0.80-0.90x of that
        (`python scripts/policy_sim.py`, `closed-loop` lines). A delay in steps overstates it (a
        drafting step is ~2x a plain one); with the delay in wall time (session 41,
        `closed-loop-wall` lines) the policy made 0.978-0.994x of the better static choice at
        1-20 ms and 0.869-0.970x at 20-60 ms."""
        if len(self._recent_buckets) < self._recent_buckets.maxlen:
            return False
        t_target = t_cur = 0.0
        for b, visits in enumerate(self._bucket_visits):
            if visits:
                times = self._goodput_at(b, expected)[0]
                t_target += visits * times[target]
                t_cur += visits * times[cur]
        if t_target <= 0.0 or t_cur <= 0.0 or math.isinf(share):
            return False  # nothing to weigh: the choice sticks
        return (expected[target] / t_target * (1.0 - share)
                > expected[cur] / t_cur * (1 + self._margin(target, cur)))

    def delivered_ratio(self, bucket: int) -> list:
        """Each k's realized ratio at this bucket (realized.py), read also while `calibrate` is
        off: the metrics' `adaptive_spec_realized_ratio`."""
        return self._realized_ratios(bucket, self._last_expected or self._unit_tokens)

    def _realized_ratios(self, bucket: int, expected: list, times: Optional[list] = None) -> list:
        """Each k's `RealizedRate.ratio` here against the model's times (`times` when the caller
        has them), read once per sync (the sums change only there; the times' prefill term moves a
        little with E_k in between): read per decision they made a decision several times
        dearer."""
        self._clear_caches_at_a_new_sync()
        ratios = self._ratio_cache.get(bucket)
        if ratios is None:
            times = times if times is not None else self._model_times(bucket, expected)
            ratios = self._ratio_cache[bucket] = [self.realized.ratio(bucket, k, times)
                                                  for k in range(self.max_steps + 1)]
        return ratios

    def _clear_caches_at_a_new_sync(self) -> None:
        """The per-bucket views and ratios change only at a sync: dropped at the first use after."""
        if self._cache_sync != self.table.syncs:
            self._bucket_cache.clear()
            self._ratio_cache.clear()
            self._cache_sync = self.table.syncs

    def _bucket_view(self, bucket: int) -> tuple:
        """(step time of each k, the k that may be chosen, each k's prefill launch extra,
        `PrefillLoad.launch_extra`) at this bucket. Chosen only where
        measured at this batch size (k=0 always: the plain step), or where a larger batch
        bounds it (`larger_batch_ratio`: t(k) / t(0) there is at least the ratio here). An
        estimate scaled from a smaller batch, or from a larger one without its k=0, is good
        enough to decide what to probe, not to run on (at 128 requests one kept k=3 for ~2 s,
        GPU step load 2026-11-29, until its own samples walked it down to 0)."""
        self._clear_caches_at_a_new_sync()
        view = self._bucket_cache.get(bucket)
        if view is None:
            row = self.table.settled_row(bucket)
            times = [self.step_time(bucket, k, row) for k in range(self.max_steps + 1)]
            candidates = [0]
            for k in range(1, self.max_steps + 1):
                if self.table.samples(bucket, k) >= self.min_samples:
                    candidates.append(k)
                    continue
                ratio = self.table.larger_batch_ratio(bucket, k, self.min_samples)
                if ratio is not None:
                    # bounded from above by a larger batch: safe to run on until its own samples
                    # arrive (GPU, session 21's step load: 12 decisions of plain at 2 running,
                    # a size class the ramps had skipped, between k = 3 at 4 and at 1)
                    times[k] = max(times[0] * ratio, row[1][k])
                    candidates.append(k)
            # merged at the same syncs as the table: cached with it
            launch = [self.prefill.launch_extra(bucket, k, times) if self.price_launches
                      else 0.0 for k in range(self.max_steps + 1)]
            view = self._bucket_cache[bucket] = (times, candidates, launch)
        return view
