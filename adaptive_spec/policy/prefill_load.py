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
decode step counts when its batch is within `RecentBatch.STEADY_BAND` of the recent batch size,
and a prefill when the last decode step counted.

Whether a prefill batch really costs the same whatever it holds is checked, not assumed: each
bucket also keeps a least-squares fit of a batch's seconds against its new requests (fixed cost
plus cost per request, `batch_fit`), reported in the policy's status; its slope moves each
prefill kind's mean to the bucket's batch size (session 48, "A kind's batch size" below). Session
18 (TP = 2, dense pair, 64 requests) is why: there the term tipped the choice to k = 3 where
EAGLE-3 made 0.95x of plain; on the run's final table a cost per new request, instead of per
batch, would have put plain ahead (a reading of that table, not a measurement).

A prefill's launch. With the overlap scheduler a prefill batch is scheduled and launched on the
host before the decode result beside it is processed, so that decode result's wall time holds the
launch's host work beyond what the GPU's decode step hid of it. Measured on the H200 (session 36's
sample logs, dense pair; `sample_summary --launches`): 8.4 ms over a 5.8-ms plain step at 33-64
requests, 3.5 ms over a 12.0-ms k = 3 step at 17-32 and 2.4 ms over an 18.6-ms one at 33-64: a
longer GPU step hides more of it. Left out (trimmed as a stall or mixed into the decode cell), a
busy plain server's prefills read 1.8 ms a step cheaper than its phase clocks measured (7.5 against
9.3 ms a step at 64 requests), a k = 3 server's 1.4, and the model put EAGLE-3 at 0.83x of plain
where it made 0.99x (at 16 requests 1.29x where it made 1.41x; `bench.model_check`). So each such
result's time beyond its step count's settled step time comes here, per bucket and k (`on_launch`,
from `Controller._take_sample`), and the table gets the result less the extra measured so far
(`GoodputPolicy.observe_prefill_launch`): a prefill batch then costs P / B (the seconds per batch)
plus that extra at the k it meets, with B measured prefill batches per decode step. Where every
decode step has a launch beside it (a prefill each step) the split cannot be seen: the table holds
steps with their launches, the extra reads ~0, the total is the same, and the table is never
starved of samples (session 5). At a k with no such result yet the extra is the nearest measured
k's scaled by their step times, t_j / t_k (from 64 requests' plain results: 2.6 ms at k = 3, where
2.4 was read). The result after the prefill's own, a little short (0.1 ms under a plain step at 64,
1.4 under a k = 3 step at 32: part of its step ran beside the prefill), is an ordinary sample:
routing it to the term as well (tried) left the table nothing where a prefill comes every other
step (`test_busy_batches_are_sampled_between_prefills`).

A prefill's kind. While drafting is off a prefill runs plain, as the plain server's (the target
alone, `--adaptive-spec-off-prefill plain`); while drafting, SGLang's spec prefill adds the draft's
own prefill. On an H100 (session 46, dense pair, 64 requests, `call_s45.sh lv`) a spec prefill
batch cost ~2x a plain one: forced off's steady window ran 0.27 plain prefill batches a decode step
for 1.33 ms a step (~5.0 ms a batch), forced on's 0.54 spec ones for 5.37 ms a step (~10.0 ms a
batch). Priced alike, the term bills whichever kind ran to every k: while plain ran, drafting's
prefills read cheap, and while drafting ran, plain's read dear, so both ways the model leaned to
drafting. The goodput server there read k = 3 at 1.03-1.09x of plain for most of the level and
drafted 70% of it, where forced on made 0.955x of forced off. So each bucket also keeps each
kind's seconds and batches, and a step count is priced at its own kind's cost a batch (plain at
k = 0, spec while drafting; `kind_cost`) times the measured batches a step. A kind seen in few
batches leans to the mean of all (`KIND_PRIOR` pseudo-batches at it; none seen: the mean, as
before): in the next run (session 46, `call_s46.sh kd`) 8 spec batches, taken in a few probes,
read 17.8 ms against 11.6 from 133 in the run after, and unshrunk put k = 3 at 0.85x of plain
where forced on made 0.95x.

Where a kind has not run at a bucket, the mean of all there is the other kind's, and pricing the
unseen kind at it leans to drafting again: in session 47's sweep (H100, 64 requests) goodput
drafted the whole level, no plain prefill ran there, and plain was priced at the spec prefills'
mean, where at 128 plain ones cost 0.77x of spec ones. So the mean of all a kind leans to is
first split between the kinds at `kind_ratio`, the plain / spec cost a batch pooled over the
buckets where both ran (a geometric mean weighted by the fewer kind's batches, shrunk toward
`PRIOR_RATIO` by `RATIO_PRIOR` batches; PRIOR_RATIO while no bucket has run both). PRIOR_RATIO was
1 until session 52; it is 0.75 since: a spec prefill runs the target's prefill and the draft's
on top, never cheaper, and plain ones cost 0.50x (session 46, H100, 64 requests) and 0.77x
(session 47, 128) of spec ones. A sweep drafts at 1-32 requests, and at its first 64 level plain
had never run a prefill anywhere: at 1 plain was priced at spec's cost, and once the arrivals are
predicted at their steady rate ("Arrivals predicted" below) that put plain's prefills ~2x dear at
64, where plain and drafting are near a tie (simulated, a variant of `policy_sim.py level-entry`
with waves, not kept: goodput drafted all of 64's level where plain made 1.037x).

Waves. A prefill admitting many new requests at once (more than `WAVE_MIN` and than
`WAVE_SHARE` of the batch beside it) is a wave of arrivals, not steady turnover, and is left out
as a ramp is, whatever the batch size reads. Session 47 (H100, 64 requests): the sweep's warm-up
wave came in prefills of 9-12 new requests (~30 ms each) while the batch read steady at 64,
where steady turnover ran prefills of 1-4 (~5 ms); counted, they were the only plain prefills at
64 and priced plain's above drafting's (10.4 against 8.3 ms a batch) for the rest of the run.

A kind's batch size. Below the wave's bar a surge still comes in larger batches than steady
turnover, and a kind seen mostly in one is priced dear for its batch size, not its kind. Session 48
(H100, 64 requests, second run): the warm-up pass's prefills at 50-69 running admitted 1-10 new
requests a batch (two of 6 under the bar of 8); its plain ones set plain at 10.2 ms a batch against
spec's 8.9 from steady ones of 1-3, and goodput drafted the level where plain made 1.08x of
EAGLE-3. So each kind also keeps the new requests its batches admitted, and its mean is moved to
the bucket's mean batch along the batch fit's per-request slope (`kind_mean`: own mean - slope x
(its new requests a batch - the bucket's)), before it is shrunk or pooled into the ratio; no slope
(every batch of one size, or a fit sloping down) leaves it as measured.

Arrivals predicted (session 52). A bucket's measured arrivals a wait for turnover: a level
whose requests all came at once (a wave, left out) finishes none for its shortest request's
length, and those steady steps with no prefill dilute a for ~MEMORY_STEPS more. GPU, session 51
(H100, 64 requests, the sweep's first pass): the term read 0.31 / 0.72 ms a step (k = 0 / 3) as
the level began, on the warm-up visit's steps (waves only, no turnover), and 1.74 / 4.79 once it
had filled near the level's end; goodput drafted until then, 0.947x of plain. In steady load
requests arrive as they finish (a steady batch admits what leaves it), so a = b x E / L: the
batch b, each request's E tokens a step, L decode tokens a request. L is counted over every
admission and every decode token, waves and ramps included (`request_length`: a wave brings the
admissions a ramp's steps lack), and a_k is then b_bucket x E_k / L, b_bucket the bucket's mean
steady batch; the measured P / (1 - exp(-a)) still gives what a step with arrivals costs (how they
batch, what a batch costs), a ratio the ramp dilutes alike above and below, taken at the nearest
bucket that has one while this one has none (`cost_bucket`). Before L is known a_k = a * E_k /
E_cur at the bucket's own measurements, as before. A chunked prompt's prefill counts once a chunk,
as a batch of its own does: L is then decode tokens per prefill entry, what the term prices.
While a level's requests have not begun to finish, the prefills the term predicts are missing
from the wall times: the realized rate waits for them (`turnover_begun`).

Only requests that go on to decode count in L (session 62): one finished by its prefill's token
(`max_new_tokens` 1, as the extend warm-up's 67 prefills at start; a prefill-only client) brings
no decode token and frees no decode slot, so counted it only shortened L and raised a_k for every
k, plain's most (1 - exp(-a) saturates). GPU, session 62 (H100, DeepSeek-V3 layout, 64 requests:
a warm-up wave of 128-token requests, then the level's 96-288): L read 139 at the run's end; the
term put plain's prefills at 3.1 ms a step and k = 3's at 7.1, where the plain server's phase
clocks read 8.8 ms a step with its prefills beside ~7.2-ms decode steps. k = 3 read 1.03x of
plain as the level began, then 0.97-0.98x, held there by the switch margin; goodput made 0.926x
of plain. Its final model re-priced by hand (session 62's readings): k = 3 at 1.000x of plain
at L = 139, 0.983x at 192 with the run's realized ratio for k = 3 (1.029, itself read against
the longer term), 0.955x with that at 1. Simulated (`policy_sim.py --only start-ladder`, the
warm-up's prefills before the sweep): at 64, where plain leads by 4-5%, the old count drafted 893
of 900 decisions in 3 of 6 runs (0.940-0.944x of the better static choice), this one 0-43
(0.990-0.998x). The hook counts a prefill's requests not finished after it
(`Controller.on_prefill_result`'s `decoding`).

Tensor parallel: the prefill seconds are each rank's own wall time; like the step times they
are merged only at the policy's syncs through its reducer (an all-reduce mean), so every rank
reads the same values. Admissions and accept lengths are rank-identical already, and so is
`request_length`, kept on every rank from them alone.
"""

from __future__ import annotations

import math
from typing import Callable, Optional


class RecentBatch:
    """The recent batch size (an EMA over ~20 decode steps) and whether a batch is off it by
    more than STEADY_BAND: a ramp, a warm-up wave, a drain rather than steady load."""

    STEADY_BAND = 0.1  # a batch within 10% of the recent batch size is steady load
    BATCH_EMA = 0.05  # weight of the newest batch size in the recent one (~20 steps)

    def __init__(self):
        self.size = 0.0  # 0.0 before the first batch

    def off(self, batch_size: int) -> bool:
        return abs(batch_size - self.size) > self.STEADY_BAND * self.size

    def update(self, batch_size: int) -> None:
        recent = self.size
        self.size = recent + self.BATCH_EMA * (batch_size - recent) if recent else float(batch_size)


class PrefillLoad:
    MEMORY_STEPS = 512.0  # decode steps of history the merged values weigh at most
    DECAY = 0.9  # the old values' weight per sync, on top of the cap (follows a load change)
    MIN_STEPS = 32.0  # decode steps seen at a bucket before its prefill term is used
    LAUNCH_MEMORY = 64.0  # prefill launches of history a launch extra weighs at most
    LAUNCH_MIN = 4.0  # launches seen at (bucket, k) before its extra is read
    KIND_PRIOR = 8.0  # pseudo-batches at the mean of all that a kind's own cost is shrunk by
    RATIO_PRIOR = 8.0  # batches at PRIOR_RATIO the pooled plain / spec ratio is shrunk by
    PRIOR_RATIO = 0.75  # plain over spec a batch before any bucket has run both (module doc)
    KIND_MEAN_FLOOR = 0.5  # a kind's mean moved to the bucket's batch size keeps this share
    WAVE_MIN = 4  # a prefill admitting more new requests than this and than WAVE_SHARE of the
    WAVE_SHARE = 0.125  # batch beside it is a wave of arrivals, not steady turnover
    LENGTH_MEMORY = 2048.0  # admissions of history the mean request length weighs at most
    LENGTH_MIN = 32.0  # requests finished (admitted less those in the batch) before it is read
    TURNOVER_SHARE = 0.5  # measured arrivals at this share of the predicted: turnover has begun
    TURNOVER_RARE = 0.05  # predicted arrivals a step below which a bucket's steps cannot tell

    def __init__(self, buckets: int, max_steps: int = 3):
        self.buckets = buckets
        self.width = max_steps + 1  # step counts 0..max
        self.seconds = [0.0] * buckets  # merged: prefill seconds per decode step
        self.admitted = [0.0] * buckets  # merged: requests admitted per decode step
        self.tokens = [1.0] * buckets  # merged: tokens per request per decode step
        self.batches = [0.0] * buckets  # merged: prefill batches per decode step
        self.steps = [0.0] * buckets  # merged decode steps behind those values (capped)
        self.batch = [0.0] * buckets  # merged: the decode batch size of the steady steps
        # merged, per bucket x k: a launch's extra seconds in the decode result beside it, and
        # the launches behind that mean (capped)
        self.launch = [0.0] * (buckets * self.width)
        self.launches = [0.0] * (buckets * self.width)
        # merged, per bucket: (seconds, batches) of plain prefills, then of spec ones (decayed)
        self.kinds = [[0.0] * 4 for _ in range(buckets)]
        # merged, per bucket: the new requests those plain, then spec, batches admitted (decayed)
        self.kind_admitted = [[0.0] * 2 for _ in range(buckets)]
        # plain over spec a batch, pooled over the buckets (`pool_kinds`)
        self.kind_ratio = self.PRIOR_RATIO
        self._priced_buckets: list = []  # `_priced_at` buckets, refreshed at merges
        self.waves = 0  # prefills left out as waves of arrivals (rank-identical: their counts are)
        # seconds, admitted, tokens, steps; then the batch fit's batches, sum n^2, sum n * seconds;
        # then the plain prefills' seconds, batches and new requests; then the batch sizes
        self._local = [[0.0] * buckets for _ in range(11)]
        # launch extras summed and counted, per bucket x k
        self._local_launch = [[0.0] * (buckets * self.width) for _ in range(2)]
        self.fit_sums = [[0.0] * 5 for _ in range(buckets)]  # batches, n, n^2, s, n*s (decayed)
        self._recent_batch = RecentBatch()
        self._steady = False  # whether the last decode step counted
        self._skipped = False  # a prefill since the last decode step was left out (`on_prefill`)
        self._interval_priced = False  # the last decode step's interval counted whole
        self._decode_bucket = 0  # the last decode step's bucket (`turnover_begun`)
        # every admission and decode token, decayed together (`request_length`; never merged:
        # rank-identical inputs), and the last decode batch (the requests in flight)
        self.length_admitted = self.length_tokens = 0.0
        self._in_flight = 0

    @property
    def steady(self) -> bool:
        """Whether the last decode step was steady load (within STEADY_BAND of the recent batch)."""
        return self._steady

    @property
    def interval_priced(self) -> bool:
        """Whether the last decode step's interval is one this term counted whole: the step
        steady and every prefill since the step before it counted, none left out as a wave or
        beside an unsteady step. The realized rate counts only such results
        (`GoodputPolicy.result_priced`): a wall time holding a prefill left out here reads as the
        model's error. GPU, session 51 (H100, 64 requests, the warm-up visit): plain results
        after a dip in the batch held 33-45 ms of prefills the term had left out, and plain's
        ratio read 0.853 when the first measured pass came, which put k = 3 at 1.157x of plain
        where it made 0.96x."""
        return self._interval_priced

    @classmethod
    def is_wave(cls, admitted: int, batch_size: int) -> bool:
        """Whether a prefill admitting `admitted` new requests beside a batch of `batch_size` is
        a wave of arrivals (the module doc's "Waves")."""
        return admitted > max(cls.WAVE_MIN, cls.WAVE_SHARE * batch_size)

    def on_prefill(self, bucket: int, seconds: float, admitted: int, plain: bool = False,
                   batch_size: Optional[int] = None) -> None:
        """A prefill batch of `admitted` new requests took `seconds` while `bucket`'s batch
        (of `batch_size`, where known) decoded; `plain`: it ran without the draft's prefill
        (the module doc's "A prefill's kind"). A wave is left out, as a ramp is."""
        if batch_size is not None and self.is_wave(admitted, batch_size):
            self.waves += 1
            self._skipped = True
            return
        self._skipped |= not self._steady
        if self._steady:
            self._local[0][bucket] += seconds
            self._local[1][bucket] += admitted
            self._local[4][bucket] += 1.0
            self._local[5][bucket] += admitted * admitted
            self._local[6][bucket] += admitted * seconds
            if plain:
                self._local[7][bucket] += seconds
                self._local[8][bucket] += 1.0
                self._local[9][bucket] += admitted

    def on_launch(self, bucket: int, k: int, extra_seconds: float) -> None:
        """A decode result at step count k processed after a prefill batch's launch took
        `extra_seconds` beyond k's settled step time (the module doc's "A prefill's launch");
        steady load only, as the prefills themselves."""
        if self._steady and 0 <= k < self.width:
            i = bucket * self.width + k
            self._local_launch[0][i] += extra_seconds
            self._local_launch[1][i] += 1.0

    def on_admitted(self, admitted: int) -> None:
        """A prefill's result admitted `admitted` new requests that go on to decode: every one
        counts in `request_length`, waves and prefills beside an unsteady step or after an idle
        gap too (one finished by its prefill does not: the module doc, "Arrivals predicted").
        Past LENGTH_MEMORY both sums are scaled back to it, a decay at the admissions' pace."""
        if admitted <= 0:
            return
        self.length_admitted += admitted
        if self.length_admitted > self.LENGTH_MEMORY:  # both scaled: the ratio is kept
            self.length_tokens *= self.LENGTH_MEMORY / self.length_admitted
            self.length_admitted = self.LENGTH_MEMORY

    def request_length(self) -> Optional[float]:
        """Decode tokens a request takes from its admission to its finish (L; the module doc's
        "Arrivals predicted"): the decode tokens over the admissions, both decayed alike once
        LENGTH_MEMORY admissions are counted, so in steady load the ratio of their rates, L. A
        wave reads it low until its requests' tokens come, by its share of the memory (at most
        64 / 2,048 at a sweep's 64), and before the memory fills the requests in flight, which
        hold ~half their tokens, by up to half the batch over the admissions. (Less half the
        batch in flight, tried: decayed sums then read L 25% long at 128 running, simulated.)
        None until LENGTH_MIN requests have finished (admitted beyond those in the batch)."""
        if self.length_admitted - self._in_flight < self.LENGTH_MIN:
            return None
        return self.length_tokens / self.length_admitted

    def turnover_begun(self, bucket: Optional[int] = None) -> bool:
        """Whether requests arrive at this bucket at TURNOVER_SHARE or more of the rate the
        request length predicts for its steps, MIN_STEPS of them merged (True before the length
        is known, and where arrivals are rarer than TURNOVER_RARE a step: a few steps cannot
        tell, and the term is small there). The realized rate counts only such buckets' results
        (`GoodputPolicy.result_priced`): in a level's first steps no request has finished, no
        prefill comes, and the wall lacks what the term predicts, so whichever k ran then read
        dear prefills as its own gain (simulated, `policy_sim.py level-entry`: plain's ratio at
        64 read 1.21-1.22 after a warm-up visit without turnover). `bucket`: the last decode
        step's when not given."""
        bucket = self._decode_bucket if bucket is None else bucket
        length = self.request_length()
        if length is None:
            return True
        if self.steps[bucket] < self.MIN_STEPS:
            return False
        predicted = self.batch[bucket] * self.tokens[bucket] / length
        return (predicted < self.TURNOVER_RARE
                or self.admitted[bucket] >= self.TURNOVER_SHARE * predicted)

    def on_decode(self, bucket: int, tokens_per_request: float, batch_size: int) -> None:
        skipped, self._skipped = self._skipped, False
        self._steady = not self._recent_batch.off(batch_size)
        self._interval_priced = self._steady and not skipped
        self._decode_bucket = bucket
        self._recent_batch.update(batch_size)
        self.length_tokens += batch_size * tokens_per_request
        self._in_flight = batch_size
        if self._steady:
            self._local[2][bucket] += tokens_per_request
            self._local[3][bucket] += 1.0
            self._local[10][bucket] += batch_size

    def sync(self, reducer: Callable[[list], list]) -> None:
        """Merge the local sums (mean over ranks through `reducer`); every rank calls this at
        the same decision."""
        self.merge(reducer(self.local_vector()))

    def local_vector(self) -> list:
        """What this rank adds at a sync (its local sums, row after row); they are consumed."""
        out = [v for row in self._local + self._local_launch for v in row]
        for row in self._local:
            row[:] = [0.0] * self.buckets
        for row in self._local_launch:
            row[:] = [0.0] * (self.buckets * self.width)
        return out

    def merge(self, merged: list) -> None:
        """Merge `local_vector`'s sums as averaged over the ranks."""
        n, m = self.buckets, self.buckets * self.width
        rows = len(self._local)
        (sec, adm, tok, steps, batches, adm2, adm_sec, plain_sec, plain_batches, plain_adm,
         batch) = (merged[i * n:(i + 1) * n] for i in range(rows))
        extra, launched = merged[rows * n:rows * n + m], merged[rows * n + m:rows * n + 2 * m]
        for i in range(m):
            if launched[i] > 0:
                w_old = self.DECAY * min(self.launches[i], self.LAUNCH_MEMORY)
                self.launch[i] = (w_old * self.launch[i] + extra[i]) / (w_old + launched[i])
                self.launches[i] = min(w_old + launched[i], self.LAUNCH_MEMORY)
        for b in range(n):
            if batches[b] > 0:
                fit = self.fit_sums[b]
                fresh = (batches[b], adm[b], adm2[b], sec[b], adm_sec[b])
                fit[:] = [self.DECAY * old + new for old, new in zip(fit, fresh)]
                by_kind = ((plain_sec[b], plain_batches[b], plain_adm[b]),
                           (sec[b] - plain_sec[b], batches[b] - plain_batches[b],
                            adm[b] - plain_adm[b]))
                for j, (seconds, count, admitted) in enumerate(by_kind):
                    if count > 1e-9:  # a kind's mean moves only with its own batches
                        kind, kind_adm = self.kinds[b], self.kind_admitted[b]
                        kind[2 * j] = self.DECAY * kind[2 * j] + seconds
                        kind[2 * j + 1] = self.DECAY * kind[2 * j + 1] + count
                        kind_adm[j] = self.DECAY * kind_adm[j] + admitted
            s = steps[b]
            if s <= 0:
                continue
            w_old = self.DECAY * min(self.steps[b], self.MEMORY_STEPS)
            w = w_old + s
            self.seconds[b] = (w_old * self.seconds[b] + sec[b]) / w
            self.admitted[b] = (w_old * self.admitted[b] + adm[b]) / w
            self.tokens[b] = (w_old * self.tokens[b] + tok[b]) / w
            self.batches[b] = (w_old * self.batches[b] + batches[b]) / w
            self.batch[b] = (w_old * self.batch[b] + batch[b]) / w
            self.steps[b] = min(w, self.MEMORY_STEPS)
        self.refresh_merged()

    def refresh_merged(self) -> None:
        """What is derived from the merged values, once a merge (or a reader setting them, as
        `bench.model_check`) has changed them: the pooled kind ratio and the buckets that can
        price a batch (`cost_bucket`, asked by every decision's prefill terms)."""
        self.pool_kinds()
        self._priced_buckets = [b for b in range(self.buckets) if self._priced_at(b)]

    def pool_kinds(self) -> None:
        """`kind_ratio`: plain prefill batches' cost over spec ones', the geometric mean over
        the buckets where both kinds ran, each weighted by the fewer of its two kinds' batches,
        shrunk toward PRIOR_RATIO by RATIO_PRIOR batches; PRIOR_RATIO while no bucket has run
        both. At merges only (the kinds change nowhere else): a decision reads it for free."""
        log_sum = weight = 0.0
        for b, (s_plain, c_plain, s_spec, c_spec) in enumerate(self.kinds):
            if min(s_plain, c_plain, s_spec, c_spec) > 0.0:
                w = min(c_plain, c_spec)
                log_sum += w * math.log(self.kind_mean(b, True) / self.kind_mean(b, False))
                weight += w
        prior = self.RATIO_PRIOR * math.log(self.PRIOR_RATIO)
        self.kind_ratio = math.exp((log_sum + prior) / (weight + self.RATIO_PRIOR))

    def kind_mean(self, bucket: int, plain: bool) -> Optional[float]:
        """A kind's own seconds a batch here (None: none seen), moved to the bucket's mean new
        requests a batch along the batch fit's per-request slope (the module doc's "A kind's
        batch size"), no lower than KIND_MEAN_FLOOR of its own mean."""
        seconds, count = self.kinds[bucket][0:2] if plain else self.kinds[bucket][2:4]
        if count <= 0.0:
            return None
        mean = seconds / count
        _, slope, _ = self.batch_fit(bucket)
        batches, admitted = self.fit_sums[bucket][0:2]
        if not slope or slope <= 0.0 or batches <= 0.0:
            return mean
        kind_admitted = self.kind_admitted[bucket][0 if plain else 1] / count
        moved = mean - slope * (kind_admitted - admitted / batches)
        return max(moved, self.KIND_MEAN_FLOOR * mean)

    def kind_cost(self, bucket: int, plain: bool) -> Optional[float]:
        """Seconds a prefill batch of this kind (plain, else spec) costs at this bucket: its own
        mean (`kind_mean`) shrunk towards `kind_prior` by KIND_PRIOR pseudo-batches; None
        before any prefill time here (per_step then adds none)."""
        if self.batches[bucket] <= 0.0 or self.seconds[bucket] <= 0.0:
            return None
        count = self.kinds[bucket][1 if plain else 3]
        own = count * self.kind_mean(bucket, plain) if count > 0.0 else 0.0
        return (own + self.KIND_PRIOR * self.kind_prior(bucket, plain)) / (count + self.KIND_PRIOR)

    def kind_prior(self, bucket: int, plain: bool) -> float:
        """What a kind's cost a batch leans to here: the mean of all batches here split
        between the kinds at `kind_ratio`, in the shares they ran here (the mean of all itself
        while the ratio is 1). Call only where `kind_cost` has a mean of all."""
        mean_all = self.seconds[bucket] / self.batches[bucket]
        c_plain, c_spec = self.kinds[bucket][1], self.kinds[bucket][3]
        share = c_plain / (c_plain + c_spec) if c_plain + c_spec > 0.0 else 0.5
        spec = mean_all / (share * self.kind_ratio + 1.0 - share)
        return self.kind_ratio * spec if plain else spec

    def per_step(self, bucket: int, tokens_k: float, launch_s: float = 0.0,
                 plain: Optional[bool] = None) -> float:
        """Expected prefill seconds per decode step at this bucket when each request gains
        `tokens_k` tokens per step (E_k), each prefill batch adding `launch_s` to the decode
        step beside it (`launch_extra`), each batch costing what the `plain` (True) or spec
        (False) kind costs (`kind_cost`; None: the mean of all). Once the request length is
        known the arrivals come from it and the batches are priced where they were measured,
        here or at the nearest bucket (`cost_bucket`; the module doc's "Arrivals predicted");
        before, from what was measured here. 0.0 without enough evidence."""
        length = self.request_length()
        source = self.cost_bucket(bucket) if length is not None else bucket
        if source is None or not self._priced_at(source):
            return 0.0
        a, p = self.admitted[source], self.seconds[source]
        per_batch = None if plain is None else self.kind_cost(source, plain)
        if per_batch is not None:
            p = per_batch * self.batches[source]
        if length is not None:
            # the bucket's mean batch; before its first steps, 3/4 of its top
            batch = self.batch[bucket] if self.steps[bucket] > 0 else 0.75 * 2 ** bucket
            a_k = batch * tokens_k / length
        else:
            a_k = a * tokens_k / max(self.tokens[source], 1e-9)
        launches = max(0.0, launch_s) * self.batches[source]  # per step, at the measured rate
        # expm1: a source whose values decayed to ~1e-17 reads 1 - exp(-a) as 0.0 (GPU, session
        # 54: a division by zero, the server's fallback for the rest of its run)
        return (p + launches) * math.expm1(-a_k) / math.expm1(-a)

    def _priced_at(self, bucket: int) -> bool:
        """Whether this bucket has seen MIN_STEPS steady decode steps and prefills beside them."""
        return (self.steps[bucket] >= self.MIN_STEPS and self.admitted[bucket] > 0.0
                and self.seconds[bucket] > 0.0)

    def cost_bucket(self, bucket: int) -> Optional[int]:
        """The bucket whose prefill batches price this one's: itself once `_priced_at`, else the
        nearest such (the lower on a tie); None: none yet. A batch's cost and how arrivals
        batch change little from one bucket to the next, and 0.0 was the one sure error: GPU,
        session 51 (64 requests), the term read ~0 at a level whose bucket had seen only the
        warm-up's waves."""
        priced = self._priced_buckets
        return min(priced, key=lambda b: (abs(b - bucket), b)) if priced else None

    def measured_launch(self, bucket: int, k: int) -> float:
        """The launch extra measured at (bucket, k) (0.0 until LAUNCH_MIN launches), never below
        0: what a decode step beside a launch is reduced by before it enters the table."""
        i = bucket * self.width + k
        return max(0.0, self.launch[i]) if self.launches[i] >= self.LAUNCH_MIN else 0.0

    def launch_extra(self, bucket: int, k: int, times: list) -> float:
        """Seconds a prefill's launch adds to the decode step beside it at step count k:
        measured at (bucket, k), else the nearest measured k's scaled by their step times
        (`times`: each k's step time at this bucket; a longer GPU step hides more of it), else
        0.0; never below 0."""
        base = bucket * self.width
        measured = [j for j in range(self.width) if self.launches[base + j] >= self.LAUNCH_MIN]
        if not measured:
            return 0.0
        j = min(measured, key=lambda j: (abs(j - k), j))
        extra = self.measured_launch(bucket, j)
        return extra * times[j] / times[k] if j != k and times[k] > 0 else extra

    def batch_fit(self, bucket: int) -> tuple:
        """(fixed seconds, seconds per new request, batches) of the prefill batches at this
        bucket, by least squares; the per-request term is None while every batch held the same
        number of new requests (no slope to fit)."""
        count, sx, sxx, sy, sxy = self.fit_sums[bucket]
        if count <= 0:
            return (0.0, None, 0.0)
        denom = count * sxx - sx * sx
        if denom <= 1e-9 * count * count:
            return (sy / count, None, count)
        slope = (count * sxy - sx * sy) / denom
        return ((sy - slope * sx) / count, slope, count)

    def snapshot_fit(self) -> dict:
        """{batch bucket: [fixed ms, ms per new request (None: no spread), batches]}."""
        out = {}
        for b in range(self.buckets):
            fixed, per, count = self.batch_fit(b)
            if count > 0:
                out[str(2 ** b)] = [round(1000 * fixed, 3), None if per is None else round(1000 * per, 3),
                                    round(count, 1)]
        return out

    def snapshot_launch(self) -> dict:
        """{batch bucket: {k: [a launch's extra ms in the decode step beside it, launches]}} and
        the prefill batches per decode step under "batches_per_step"."""
        out = {}
        for b in range(self.buckets):
            row = {str(k): [round(1000 * self.launch[b * self.width + k], 3),
                            round(self.launches[b * self.width + k], 1)]
                   for k in range(self.width) if self.launches[b * self.width + k] > 0}
            if row or self.steps[b] > 0:
                out[str(2 ** b)] = dict(row, batches_per_step=round(self.batches[b], 4))
        return out

    def snapshot_kinds(self) -> dict:
        """{batch bucket: [plain ms a batch (its own mean, unshrunk; None: none seen), plain
        batches, spec ms a batch, spec batches]} (decayed counts)."""
        out = {}
        for b in range(self.buckets):
            row = []
            for seconds, count in (self.kinds[b][0:2], self.kinds[b][2:4]):
                row += [round(1000 * seconds / count, 3) if count > 0 else None, round(count, 1)]
            if row[1] > 0 or row[3] > 0:
                out[str(2 ** b)] = row
        return out

    def snapshot_kind_admitted(self) -> dict:
        """{batch bucket: [plain batches' new requests a batch, spec ones' (None: none seen)]}:
        what `kind_mean` moves each kind's mean from (session 48)."""
        out = {}
        for b in range(self.buckets):
            counts = (self.kinds[b][1], self.kinds[b][3])
            if max(counts) > 0:
                out[str(2 ** b)] = [round(a / c, 3) if c > 0 else None
                                    for a, c in zip(self.kind_admitted[b], counts)]
        return out

    def snapshot_batch(self) -> dict:
        """{batch bucket: the mean decode batch of its steady steps}: what predicted arrivals
        scale with (session 52)."""
        return {str(2 ** b): round(self.batch[b], 2) for b in range(self.buckets)
                if self.steps[b] > 0}

    def snapshot(self) -> dict:
        """{batch bucket: [prefill ms per decode step, admitted per step, tokens per step]}."""
        return {str(2 ** b): [round(1000 * self.seconds[b], 3), round(self.admitted[b], 3),
                              round(self.tokens[b], 3)]
                for b in range(self.buckets) if self.steps[b] > 0}
