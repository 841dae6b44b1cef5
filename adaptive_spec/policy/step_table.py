"""The goodput policy's step-time table t(batch bucket, k): mean seconds per decode step, learned
online from the step times the server measures, with the rules that keep stalls out of it (the
trim, the plausible bound, the caps by longer chains and larger batches) and the bounds the
policy reads from it (floors, estimates across buckets). Why each rule exists is in
`policy/goodput.py`'s docstring and beside the rule. Never imports SGLang."""

from __future__ import annotations

import math
from collections import deque
from typing import Callable, Iterable, Optional


MAX_BUCKET_EXP = 12  # batch buckets 1, 2, 4, ... 4096
TRIM_FACTOR = 2.5  # a step sample over this many times its reference is a stall (`_trimmed`)
# A cell measured at a context (KV tokens per running request) this many times off today's, and
# this many tokens away, is refreshed (`StepTimeTable.measured_at_another_context`). The token
# floor keeps short-prompt loads out: the sweeps' requests go from ~84 tokens at a level's start
# to ~200 in its steady state, a small part of a step's reads on the 8B pair.
CONTEXT_DRIFT = 2.0
CONTEXT_DRIFT_TOKENS = 512


def bucket_of(batch_size: int) -> int:
    """ceil(log2(batch size)), capped: (n - 1).bit_length() is that exactly, without floats."""
    return min(MAX_BUCKET_EXP, (max(1, batch_size) - 1).bit_length())


def bucket_label(bucket: int) -> str:
    """The batch sizes a bucket holds, as text: 1, 2, 3-4, 5-8, ..."""
    top = 2 ** bucket
    return str(top) if top <= 2 else f"{top // 2 + 1}-{top}"


class StepTimeTable:
    """t(bucket, k): mean seconds per decode step, with sample counts."""

    LOCAL_CAP = 64  # samples kept per cell between two syncs (the latest)
    PLAUSIBLE = 1.5  # slack on the (2k+2) x t(k=0) bound of a drafting step's cost
    IMPLAUSIBLE_QUORUM = 3  # a cell's samples in a sync from which those over it are trimmed, not dropped
    CEILING_SAMPLES = 6  # samples a cell needs before it caps a shorter chain or a smaller batch
    # A plain step at a smaller batch reads the same weights: under this share of the larger
    # batch's plain step it was mis-timed, and the smaller batch bounds nothing above it
    # (`smaller_batch_floor`). Dense pair, H100, session 53: 4.8 ms at 1 running, 8.2 at 65-128
    # (0.58). GPU, session 54 (MoE layout, a cold start): plain at 1 running read 0.49 ms on
    # samples right after the warm-up's prefills, 2.5 later; k = 1's 3.6 over it floored every
    # drafting k at 3-4 out of every probe, and the server ran plain on all 6,949 decisions there
    SMALLER_PLAIN_MIN_SHARE = 0.5
    # ... and how recently it must have had them (syncs; 256 = 8,192 decisions, 1-3 minutes of
    # a busy server): a cell measured at shorter contexts long ago is no bound on today's
    CAP_FRESH_SYNCS = 256
    # A decode result processed after a prefill's launch holds the launch's host work (GPU,
    # session 49, H100, dense pair at 9-16 running: ~22 ms against ~10.5). Such samples enter
    # a cell no more often than the bucket's own share of them (`launch_share`): a cell
    # sampled in an arrival burst, every step beside a launch, is otherwise priced as if every
    # step had one. Sessions 48 and 49 (run 2 of each): k = 3's second sync at 16 running held
    # 7 launched samples in a row among its 23 (10-12% of the bucket's samples are launched);
    # the cell read 13.1-13.4 ms against 10.1-10.8 for k = 2, which then ran 479 of 498
    # decisions and 283 of 577 results where EAGLE-3 made 1.09-1.12x of it. At the share,
    # the same rows read 9.7-9.9 ms on 22 samples (the burst's launches left out, the share
    # then low), 10.8-11.0 later with their share (`sample_summary --replay-table`;
    # `policy_sim.py`, launch-burst-16: k = 3 from decision 59-75 of 6,000, 1,210-2,043 before).
    LAUNCH_SHARE_MIN = 32.0  # a bucket's samples before its launched share caps a cell
    LAUNCH_SHARE_MEMORY = 512.0  # samples of history the share weighs at most
    # A well-measured cell whose mean jumps at one merge may have met a host stall rather than
    # a new cost: it is taken at its new mean (a real change must be followed) and the mean
    # before the jump is kept (the lower of the means before this merge and the last, for a
    # stall that began just before a sync). Samples within JUMP_RATIO of it are merged
    # against it, as if the jump had not come; the first ones RECHECK_SYNCS or more syncs
    # after the jump that read above it let the jump stand, and the cell starts again from
    # them (before, the stall may still last). GPU, session 53 (H100, MoE layout, 4
    # requests): k = 3, chosen with ~1,000 samples at 5.7 ms, read 9.8-10.6 ms after a 1-s
    # stall of every step; plain ran for 10 s of the 20-s level, k = 3 was not measured again
    # (only its own samples could mend it) and goodput made 0.880x of EAGLE-3 (`recheck_due`,
    # `GoodputPolicy._recheck`)
    # A stall can outlast a recheck (one of ~1 s spans 90-175 decisions at 4 requests on the
    # MoE layout, the recheck comes 128 after the jump): samples that read above the mean
    # before the jump take the new cost, but the jump stays open for RECHECK_ROUNDS more
    # rechecks, each after twice the wait of the last (4, 8, 16, 32 syncs), and only the last
    # such reading lets it stand for good. Simulated (session 58, `policy_sim.py --only
    # incumbent-stall`): every step 2x dearer for 200 decisions at 4 running, k = 3's recheck
    # within the stall let the jump stand and plain ran 1,999 of the 2,000 decisions after it
    # (0.919x of static k = 3).
    # A jump of a cell that had samples at the sync before too (the k the policy runs) is held
    # for one sync: its mean stays and the next sync's samples, which the chosen k brings at
    # once, tell a stall (back within JUMP_RATIO: it merges as if it had not come) from a new
    # cost (merged then, against the mean before the jump). Taken at once, a stall of a few
    # steps made the policy leave its k until the recheck: GPU, session 60 (H100, MoE layout,
    # 4 requests): ~100 ms of slow k = 3 steps (21-51 ms, then 13-14, against 5.8) moved the
    # cell from 5.91 to 7.15 ms; plain ran 576 decisions (~1.5 s) before the recheck found
    # k = 3 at 5.8 again, and goodput made 0.901x of EAGLE-3 on that 5-s level (`_jump_held`).
    JUMP_RATIO = 1.25
    JUMP_MIN_SAMPLES = 24.0
    RECHECK_SYNCS = 4
    RECHECK_ROUNDS = 3

    def __init__(self, max_steps: int, decay: float = 0.9):
        self.max_steps = max_steps
        self.decay = decay  # weight of the old mean at each sync (adapts to drift)
        n = (MAX_BUCKET_EXP + 1) * (max_steps + 1)
        self.mean = [0.0] * n
        self.count = [0.0] * n
        self.syncs = 0
        self.fresh_at = [-1] * n  # sync number at which each cell last got samples
        # ... and the context then (KV tokens per running request; 0.0: not known)
        self.context_at = [0.0] * n
        self.moved = [1.0] * n  # how far (relative) each cell's mean moved at its last merge
        # per cell, the mean before a jump not yet rechecked (0.0: none) and the sync of the jump
        self.jumped_from = [0.0] * n
        self.jumped_at = [-1] * n
        self.recheck_wait = [self.RECHECK_SYNCS] * n  # syncs from jumped_at to the recheck
        self.mean_before = [0.0] * n  # each cell's mean before its last merge
        # what the last merge found of jumps: (cell, "jump" | "stall" | "recheck again" |
        # "new cost"); and
        # per bucket, how many of each since the start (the status)
        self.merge_events: list = []
        self.jump_counts: dict = {}
        # Local, not yet merged: the latest samples since the last sync.
        self._local = [deque(maxlen=self.LOCAL_CAP) for _ in range(n)]
        # ... and those over the plausible bound, held aside (see `record`)
        self._implausible = [deque(maxlen=self.LOCAL_CAP) for _ in range(n)]
        # ... and those beside a prefill's launch, held aside (`_launched_kept`)
        self._launched = [deque(maxlen=self.LOCAL_CAP) for _ in range(n)]
        # per bucket, merged: the share of its samples taken beside a launch, and the samples
        # behind it; local: (launched, all) samples since the last sync
        buckets = MAX_BUCKET_EXP + 1
        self.launch_share = [0.0] * buckets
        self.launch_weight = [0.0] * buckets
        self._bucket_local = [[0.0] * buckets, [0.0] * buckets]
        self._active: set[int] = set()  # cells with local samples (a sync touches only these)
        self._caps: list = []  # per cell, the bound `caps` computes; rebuilt once per sync
        self._caps_at = None

    def _i(self, bucket: int, k: int) -> int:
        return bucket * (self.max_steps + 1) + k

    def record(self, batch_size: int, k: int, seconds: float, launched: bool = False) -> None:
        """A decode step's wall time; `launched`: a prefill's launch landed in it (see
        `LAUNCH_SHARE_MIN`)."""
        b = bucket_of(batch_size)
        i = self._i(b, k)
        if self.count[i] >= 3 and seconds > 10.0 * self.mean[i]:
            return  # a stall (a compile, a huge prefill burst), not the cost of this k
        i0 = self._i(b, 0)
        if k > 0 and self.count[i0] >= 3 and seconds > self.PLAUSIBLE * (2 * k + 2) * self.mean[i0]:
            # k draft forwards and a verify of k+1 tokens per request cost at most ~2k+1 plain
            # decode steps; far above that a sample is a stall, and one such sample in a
            # rarely probed cell would keep that k (and, through the floor, every larger k)
            # from ever being chosen. Held aside, not lost: at a large batch the bound is
            # wrong, not the samples. GPU, session 28 (dense pair, 129-256 running): a k = 1
            # step cost 5.4x the bucket's plain step in the final table, more against the plain
            # steps of the bucket's smaller batches; in simulation with those costs, dropped,
            # they left k = 1 unfilled (no floor under k = 2, 3) and it was probed 1-4 times.
            self._implausible[i].append(seconds)
            self._active.add(i)
            return
        self._bucket_local[0][b] += launched
        self._bucket_local[1][b] += 1.0
        (self._launched if launched else self._local)[i].append(seconds)
        self._active.add(i)

    def sync(self, reducer: Callable[[list], list]) -> None:
        """Merge each cell's local trimmed mean (averaged over ranks by `reducer`, weighted by
        the sample counts) into the shared table. Every rank calls this at the same decision."""
        self.merge(reducer(self.local_vector()))

    def local_vector(self) -> list:
        """What this rank adds at a sync (each cell's trimmed sum, then its count, then each
        bucket's launched and all samples); the local samples are consumed."""
        n = len(self._local)
        weighted = [0.0] * n
        counts = [0.0] * n
        for i in self._active:
            local, slow = self._local[i], self._implausible[i]
            # samples over the plausible bound count when the sync holds enough samples of
            # the cell for the trim to judge them (a stall then lies far above the rest and is
            # cut); a lone one, as in a single step chosen between syncs, is still dropped
            source = list(local) + self._launched_kept(i)
            if slow and len(local) + len(slow) >= self.IMPLAUSIBLE_QUORUM:
                source += slow
            if len(source) < self.IMPLAUSIBLE_QUORUM and self.count[i] >= self.CEILING_SAMPLES:
                # too few for the trim to judge them: judged by the cell's own mean instead.
                # A lone stall weighs 1/11 of the cell (merge): GPU, session 36, one 45-ms
                # plain step at 33-64 running (a switch's host work) moved 5.7 ms to 9.1.
                source = [v for v in source if v <= TRIM_FACTOR * self.mean[i]]
            kept = _trimmed(source) if source else []
            counts[i] = float(len(kept))
            weighted[i] = sum(kept)
            local.clear()
            slow.clear()
            self._launched[i].clear()
        self._active.clear()
        launched, seen = self._bucket_local
        self._bucket_local = [[0.0] * len(seen), [0.0] * len(seen)]
        return weighted + counts + launched + seen

    def _launched_kept(self, i: int) -> list:
        """The cell's local samples beside a launch that enter this sync: all of them until
        the bucket has `LAUNCH_SHARE_MIN` samples, then the latest ones, as many as make them
        the bucket's launched share s of what enters (rounded up: s / (1 - s) per other
        sample), none where no other sample came (a probe wholly in an arrival burst tells
        nothing of the step at the bucket's share; the cell stays unfilled and is probed
        again). The share is merged, so rank-identical; what each rank keeps is merged as
        every cell's samples are."""
        launched = list(self._launched[i])
        b = i // (self.max_steps + 1)
        share = self.launch_share[b]
        if not launched or self.launch_weight[b] < self.LAUNCH_SHARE_MIN or share >= 1.0:
            return launched
        allowed = math.ceil(share * len(self._local[i]) / (1.0 - share) - 1e-9)
        return launched[len(launched) - allowed:] if allowed > 0 else []

    def merge(self, merged: list, context: float = 0.0) -> None:
        """Merge `local_vector`'s values as averaged over the ranks into the shared table;
        `context`: KV tokens per running request now (rank-identical), kept per cell merged."""
        n, buckets = len(self._local), len(self.launch_share)
        sums, ns = merged[:n], merged[n:2 * n]
        if len(merged) >= 2 * n + 2 * buckets:  # each bucket's launched share (`local_vector`)
            self._merge_launch_share(merged[2 * n:2 * n + buckets], merged[2 * n + buckets:])
        self.syncs += 1
        self.merge_events = []
        self._merge_cells(sums, ns, context)
        for i, event in self.merge_events:
            counts = self.jump_counts.setdefault(str(2 ** (i // (self.max_steps + 1))), {})
            counts[event] = counts.get(event, 0) + 1

    def _merge_cells(self, sums: list, ns: list, context: float) -> None:
        """Each cell with merged samples: its fresh mean into its mean (`merge`)."""
        for i, c in enumerate(ns):
            if c <= 0:
                continue
            fresh = sums[i] / c
            old = self.mean[i]
            sampled_before = self.fresh_at[i] == self.syncs - 1  # `syncs` is this merge's
            basis = self._merge_basis(i, fresh)
            if sampled_before and self._jump_held(i):
                continue
            if (self.count[i] == 0 or basis is None
                    or (ns[i] >= 2 and not 0.5 <= fresh / basis <= 2.0)):
                # new, a jump these samples confirm, or a change too large for noise (a bad
                # start, a new context length): start the cell again from the fresh samples
                self.mean[i], self.count[i] = fresh, 0.0
            else:
                w_old = self.decay * min(self.count[i], 12.0)  # recent samples dominate
                self.mean[i] = (w_old * basis + ns[i] * fresh) / (w_old + ns[i])
            self.moved[i] = abs(self.mean[i] - old) / old if old > 0 else 1.0
            self.mean_before[i] = old
            self.count[i] += ns[i]
            self.fresh_at[i] = self.syncs
            self.context_at[i] = context

    def _jump_held(self, i: int) -> bool:
        """Whether cell i's jump, recorded at this merge, is held for one sync: its mean and
        count stay, and it is marked fresh, so the next sync's samples settle the jump."""
        if self.jumped_at[i] != self.syncs or self.jumped_from[i] <= 0.0:
            return False
        self.moved[i] = 0.0
        self.mean_before[i] = self.mean[i]
        self.fresh_at[i] = self.syncs
        return True

    def _merge_basis(self, i: int, fresh: float) -> Optional[float]:
        """The mean the fresh samples of cell i merge against: its mean, or the one before a
        jump that these samples find to be a stall (`JUMP_RATIO`); None where they confirm the
        jump (a new cost: the cell starts again from them). Records a new jump and what settles
        one (called after `syncs` moved to this merge's)."""
        old, before = self.mean[i], self.jumped_from[i]
        if before > 0.0:
            if fresh <= self.JUMP_RATIO * before:
                self.jumped_from[i] = 0.0
                self.merge_events.append((i, "stall"))
                return before
            if self.syncs - self.jumped_at[i] >= self.recheck_wait[i]:
                if self.recheck_wait[i] < self.RECHECK_SYNCS << self.RECHECK_ROUNDS:
                    # the stall may outlast the recheck: the new cost now, once more later
                    self.recheck_wait[i] *= 2
                    self.jumped_at[i] = self.syncs
                    self.merge_events.append((i, "recheck again"))
                    return None
                self.jumped_from[i] = 0.0
                self.merge_events.append((i, "new cost"))
                return None
            return old  # the stall may still last
        if self.count[i] >= self.JUMP_MIN_SAMPLES and fresh > self.JUMP_RATIO * old:
            base = min(old, self.mean_before[i]) if self.mean_before[i] > 0.0 else old
            self.jumped_from[i], self.jumped_at[i] = base, self.syncs
            self.recheck_wait[i] = self.RECHECK_SYNCS
            self.merge_events.append((i, "jump"))
        return old

    def recheck_due(self, bucket: int, k: int) -> Optional[tuple]:
        """(the cell's mean before its jump, the sync of the jump) where a jump's recheck is due
        (`recheck_wait` syncs since it), else None."""
        i = self._i(bucket, k)
        before = self.jumped_from[i]
        if before > 0.0 and self.syncs - self.jumped_at[i] >= self.recheck_wait[i]:
            return before, self.jumped_at[i]
        return None

    def _merge_launch_share(self, launched: list, seen: list) -> None:
        for b, (hit, all_) in enumerate(zip(launched, seen)):
            if all_ <= 0:
                continue
            w_old = min(self.launch_weight[b], self.LAUNCH_SHARE_MEMORY)
            self.launch_share[b] = (w_old * self.launch_share[b] + hit) / (w_old + all_)
            self.launch_weight[b] = w_old + all_

    def measured_at_another_context(self, bucket: int, k: int, context: float) -> bool:
        """Whether the cell was last measured at a context (KV tokens per running request)
        CONTEXT_DRIFT times off `context` and CONTEXT_DRIFT_TOKENS or more away from it:
        attention reads every request's whole KV each step, so a step's cost moves with
        the context, and a cell not sampled since is no longer today's."""
        then = self.context_at[self._i(bucket, k)]
        if then <= 0.0 or context <= 0.0 or abs(context - then) < CONTEXT_DRIFT_TOKENS:
            return False
        return context > CONTEXT_DRIFT * then or then > CONTEXT_DRIFT * context

    def staleness(self, bucket: int, k: int) -> int:
        """Syncs since the cell last got samples (large when never)."""
        return self.syncs - self.fresh_at[self._i(bucket, k)]

    def samples(self, bucket: int, k: int) -> float:
        return self.count[self._i(bucket, k)]

    def last_move(self, bucket: int, k: int) -> float:
        """How far (relative) the cell's mean moved at its last merge (1.0 before any)."""
        return self.moved[self._i(bucket, k)]

    def caps(self) -> list:
        """Per cell, an upper bound on its step time: the fastest cell with `CEILING_SAMPLES`,
        measured within `CAP_FRESH_SYNCS`, at the same batch bucket with a longer chain or at a
        larger bucket with the same or a longer chain (inf where none). A longer chain is never
        faster, nor is a larger batch, and a stall only ever makes a step look slower, so where
        a cell reads slower than such a bound, its own samples are the stalled ones.
        - Longer chains, GPU session 10 (dial 0.7): k=2 at 33-64 requests read 29.9 ms, k=3
          17.8 ms; as k=3's floor, k=2's stalls kept k=3 from being chosen (at 16-32 requests
          EAGLE-3 made 1.17x of plain, the goodput server ran k = 0 and 2 there).
        - Larger batches, GPU sessions 13-18 (dense pair): a plain step at 33-64 requests read
          8.9-11.6 ms in 5 final tables where one at 65-128 read 6.6-7.3 (other runs: 5.7-6.1
          at 33-64); its samples likely come mostly from ramp-ups, between the prefills of a burst of
          new requests. On session 18's `p2` final table, priced at 8.9 ms, plain loses to
          drafting at 64 requests, where plain made as much as EAGLE-3 and the goodput server
          drafted (0.93x of max(plain, eagle3), 3 pairs).
        Rebuilt once per sync (the table changes only there): one pass from the largest bucket
        and the longest chain down, ~100 cells."""
        if self._caps_at == self.syncs:
            return self._caps
        width, inf = self.max_steps + 1, math.inf
        mean, count, fresh_at = self.mean, self.count, self.fresh_at
        need, oldest = self.CEILING_SAMPLES, self.syncs - self.CAP_FRESH_SYNCS
        top = next((b for b in range(MAX_BUCKET_EXP, -1, -1)
                    if any(count[b * width:(b + 1) * width])), -1)
        rows = [[inf] * width for _ in range(MAX_BUCKET_EXP - top)]  # no samples up there
        above = [inf] * width  # the next larger bucket's bounds, its own cells included
        for b in range(top, -1, -1):
            base = b * width
            row, low = [inf] * width, [inf] * width
            longer = inf  # this bucket's longer chains, their own cells included
            for k in range(width - 1, -1, -1):
                bound = above[k] if above[k] < longer else longer
                row[k] = bound
                i = base + k
                if count[i] >= need and fresh_at[i] >= oldest and mean[i] < bound:
                    bound = mean[i]
                low[k] = longer = bound
            above = low
            rows.append(row)
        caps = [c for row in reversed(rows) for c in row]
        self._caps, self._caps_at = caps, self.syncs
        return caps

    def settled(self, bucket: int, k: int) -> float:
        """A measured cell's mean, capped by `caps` (a longer chain here, or the same or a
        longer chain at a larger batch, well and recently sampled)."""
        i = self._i(bucket, k)
        return min(self.mean[i], self.caps()[i])

    def settled_row(self, bucket: int) -> tuple:
        """(`settled` of every k at this bucket, None where unmeasured; `floor` of every k), in
        one pass instead of the per-k loops: the policy rebuilds a bucket's step times after
        every sync, on the scheduler's thread (14 of a sync decision's ~36 us on the CPU
        machine, session 13)."""
        width = self.max_steps + 1
        base = bucket * width
        caps = self.caps()
        settled = [min(self.mean[base + k], caps[base + k]) if self.count[base + k] > 0 else None
                   for k in range(width)]
        floors, top = [], 0.0
        for t in settled:
            floors.append(top)
            if t is not None:
                top = max(top, t)
        return settled, floors

    def estimate(self, bucket: int, k: int) -> Optional[float]:
        """Measured (`settled`) mean, else scaled from the nearest bucket where both k and 0
        are known."""
        i = self._i(bucket, k)
        if self.count[i] > 0:
            return self.settled(bucket, k)
        base_here = self.settled(bucket, 0) if self.count[self._i(bucket, 0)] > 0 else None
        for dist in range(1, MAX_BUCKET_EXP + 1):
            for b in (bucket - dist, bucket + dist):
                if 0 <= b <= MAX_BUCKET_EXP and self.count[self._i(b, k)] > 0:
                    t_bk = self.settled(b, k)
                    if base_here is not None and self.count[self._i(b, 0)] > 0:
                        t = base_here * t_bk / self.settled(b, 0)
                    else:
                        t = t_bk * (2.0 ** (bucket - b)) ** 0.5  # crude: cost grows sublinearly with batch
                    return min(t, self.caps()[i])
        return None

    def floor(self, bucket: int, k: int) -> float:
        """A lower bound on t(bucket, k): the slowest measured (`settled`) j < k at this bucket
        (a longer draft chain never makes a step faster: more draft steps, more tokens to
        verify). 0.0 when nothing below k is measured here."""
        return max((self.settled(bucket, j) for j in range(k)
                    if self.count[self._i(bucket, j)] > 0), default=0.0)

    def smaller_batch_floor(self, bucket: int, k: int, min_samples: float) -> float:
        """A lower bound on t(bucket, k): this bucket's k=0 time times t(k) / t(0) at the
        nearest smaller bucket that bounds it (k or a smaller j >= 1 there, and k=0, with
        `min_samples` each; a smaller j is a floor under k, as at this bucket). Drafting's
        relative cost only grows with the batch (the verify's k+1 tokens per request add work
        while a plain step's weight reads stay the same), so a k that lost at 64 requests loses
        at 128. 0.0 when no smaller bucket (or no k=0 here) is measured.

        The same monotonicity bounds the smaller bucket's ratio from above: for a j measured
        here (`min_samples`), the smaller bucket's t(j) / t(0) counts at most as this bucket's,
        so a stalled cell at the smaller batch floors nothing above what this bucket measured.
        GPU, session 29 (MoE layout, empty kernel caches, 4 requests): k = 1's 6 warm-up
        samples at 1 request read 2.48x a plain step there, 1.75x at 4 on 12 samples; with a
        low acceptance estimate that 2.48 keeps k = 2 and 3 from every probe at 4, and the
        first repeat ran plain on 2,307 of 2,328 decisions (the likely cause, see the test)."""
        i0 = self._i(bucket, 0)
        if k == 0 or self.count[i0] <= 0:
            return 0.0
        t0 = self.settled(bucket, 0)
        for b in range(bucket - 1, -1, -1):
            ib0 = self._i(b, 0)
            if self.count[ib0] < min_samples:
                continue
            if self.settled(b, 0) < self.SMALLER_PLAIN_MIN_SHARE * t0:
                continue  # its plain cell is no plain step: the ratio over it bounds nothing
            ratios = []
            for j in range(1, k + 1):
                if self.count[self._i(b, j)] >= min_samples:
                    r = self.settled(b, j) / self.settled(b, 0)
                    if self.count[self._i(bucket, j)] >= min_samples:
                        r = min(r, self.settled(bucket, j) / t0)
                    ratios.append(r)
            if ratios:
                return t0 * max(1.0, max(ratios))
        return 0.0

    def larger_batch_ratio(self, bucket: int, k: int, min_samples: float) -> Optional[float]:
        """An upper bound on t(bucket, k) / t(bucket, 0): that ratio at the nearest larger
        bucket where k and k=0 each have `min_samples`, measured within `CAP_FRESH_SYNCS`
        (the bound `smaller_batch_floor` reads the other way: drafting's relative cost only
        grows with the batch). None when no larger bucket has both."""
        oldest = self.syncs - self.CAP_FRESH_SYNCS
        for b in range(bucket + 1, MAX_BUCKET_EXP + 1):
            i, i0 = self._i(b, k), self._i(b, 0)
            if (min(self.count[i], self.count[i0]) >= min_samples
                    and min(self.fresh_at[i], self.fresh_at[i0]) >= oldest):
                return max(1.0, self.settled(b, k) / self.settled(b, 0))
        return None

    def snapshot(self, samples: bool = False, contexts: bool = False) -> dict:
        """{batch bucket: {k: mean ms}} of the measured cells, or their sample counts, or the
        context (KV tokens per running request) each was last measured at."""
        out = {}
        for b in range(MAX_BUCKET_EXP + 1):
            row = {}
            for k in range(self.max_steps + 1):
                i = self._i(b, k)
                if self.count[i] > 0:
                    row[str(k)] = (round(self.count[i], 1) if samples
                                   else round(self.context_at[i]) if contexts
                                   else round(1000 * self.mean[i], 3))
            if row:
                out[str(2**b)] = row
        return out

    def snapshot_launch_share(self) -> dict:
        """{batch bucket: [launched share, samples behind it]} where any sample was merged."""
        return {str(2 ** b): [round(share, 4), round(weight, 1)]
                for b, (share, weight) in enumerate(zip(self.launch_share, self.launch_weight))
                if weight > 0}


def _trimmed(values: Iterable[float], factor: float = TRIM_FACTOR) -> list[float]:
    """The samples within `factor` x their lower quartile. A stall only ever makes a step
    look slower, so the low samples are the trustworthy ones, and a sync's samples can be
    mostly stalls: two probes in one sync, the first steps of a new batch size in a prefill
    burst (GPU, session 4: 4 of 6 samples of a cell at 3-4x the truth passed the old cut of
    4x the median, and their mean kept the cell unchosen). The batch sizes inside one bucket
    differ by up to 2x, which the factor leaves in."""
    ordered = sorted(values)
    cut = factor * ordered[(len(ordered) - 1) // 4]
    return [v for v in ordered if v <= cut]
