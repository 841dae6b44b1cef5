"""When the goodput policy measures instead of exploiting: a probe of an under-sampled cell
(bucket, k), a refresh of a filled one, a recheck of a cell that jumped, and k = 1's acceptance
re-read while no k can pay. What makes each necessary, with the GPU runs that showed it, is in
the methods' docs and in `goodput.py`'s module doc.

`ProbeSchedule` is a part of `GoodputPolicy` (its base class) and holds no state of its own: it
reads and updates the policy's (`GoodputPolicy.__init__`), so every rank, deciding from the same
table at the same decision, probes the same k at the same step.
"""

from __future__ import annotations

from typing import Callable, Optional


class ProbeSchedule:
    """The probe schedule of `GoodputPolicy` (see the module doc)."""

    def _probe(self, bucket: int, expected: list[float], times: list, goodput: list,
               best: float) -> Optional[int]:
        """Short probes of under-sampled k at this bucket, rarely, smallest k first, and only
        of a k that could still beat `best`, the best goodput among the k that may be chosen
        (`times`, `goodput`: each k's step time and goodput estimate; identical on every rank:
        the table only changes at syncs). Smallest first: each measured k raises the floor of
        every larger one, so at a batch where drafting loses, the expensive long chains are
        never probed."""
        if self._probe_left > 0:
            self._probe_left -= 1
            return self._probe_k
        if self._decisions % self.explore_interval != 0:
            return None

        def drafting_pays(k: int) -> bool:
            return k == 0 or expected[k] - 1.0 >= self.hopeless_gain

        def could_win(k: int) -> bool:
            return k == 0 or (drafting_pays(k)
                              and self.optimistic_goodput(bucket, k, expected) >= best)

        if not drafting_pays(self.max_steps):  # E_k grows with k: then no k pays
            return self._acceptance_probe()
        self._accept_probe = (self._accept_probe[0], self.refresh_interval)
        under = [k for k in range(self.max_steps + 1)
                 if self.table.samples(bucket, k) < self.min_samples and could_win(k)
                 and self._probe_due(bucket, k)
                 and (self._probes.get((bucket, k), (0, 0))[0] == 0
                      or self._switch_paid(bucket, k, times, self.reprobe_budget))]
        sync_after = True
        if under:
            # k=0 first: every estimate at this bucket scales from it, and an off step is
            # the cheapest probe
            k, self._probe_reason = under[0], "probe"
        elif self._plain_at_another_context(bucket):
            k, self._probe_reason = 0, "refresh"
        elif (k := self._recheck(bucket, expected, times, best)) is not None:
            self._probe_reason = "refresh"
        elif self._decisions % self.refresh_interval == 0 and self._current is not None:
            # A filled bucket: refresh the stalest of k=0 and the k that could still win (the
            # chosen k's neighbours among them), so an estimate that went wrong (or a cost that
            # drifted) cannot keep a k unchosen for ever, without paying for a far chain that
            # cannot win (`could_win`: its optimistic goodput). A neighbour whose estimate rests
            # on few samples is refreshed even when it looks hopeless: those few can all be
            # stalls (a probe in a prefill burst), and the refreshes stop once it has enough,
            # or once it has been probed `hopeless_probes` times (each at its own moment, not
            # all in one burst) and still cannot win. GPU, session 18 (`p2`, dense pair, 128-256
            # requests, plain chosen): k = 1 read 4x a plain step on 18 samples and was still
            # refreshed every 1,024 decisions, 7 steps at ~4x and a catch-up each time. Nor is
            # one refreshed that loses on the bounds its own samples do not enter
            # (`bounded_goodput`: the smaller batch's ratio): GPU, session 31 (dense, 128
            # requests, --stream-interval 4), k = 1 read 28.3 ms against plain's 6.7 on 16
            # samples, 14.1 against 5.9 at 64 requests, and was refreshed in 2 of 3 levels:
            # 7 steps at ~22 ms over a plain one and a full catch-up (70 ms of host time on
            # average) each, ~3% of a 6.6-s window.
            # Beyond the neighbours, any k that could still win: GPU, session 27 (MoE layout,
            # one request, dial 0.7), plain was chosen on 2,943 / 2,359 decisions of two
            # repeats while only k = 1 (4.7 ms a step, losing) was refreshed; the final table
            # put k = 3 at 4.2 ms against plain's 2.3, 1.34x plain's goodput, a cell no
            # neighbour refresh ever reached from k = 0. Still one refresh per interval.
            cur = self._current
            others = [k for k in range(self.max_steps + 1)
                      if k != cur
                      and (could_win(k) or (abs(k - cur) == 1 and drafting_pays(k)
                                            and self.table.samples(bucket, k) < self.trusted_samples
                                            and self._probes.get((bucket, k), (0, 0))[0]
                                            < self.hopeless_probes
                                            and self.bounded_goodput(bucket, k, expected) >= best))
                      and self._switch_paid(bucket, k, times, self.refresh_budget)]
            if not others:
                return None
            k = max(others, key=lambda k: (self.table.staleness(bucket, k), -k))
            # its own reason, so a sweep row tells these from the probes of unfilled cells
            # (session 17: one k = 1 probe a level at 128 requests, which kind not logged)
            self._probe_reason = "refresh"
        else:
            k = self._drafting_refresh(bucket, goodput, could_win)
            if k is None:
                return None
            self._probe_reason = "refresh"
            # merged at the next regular sync, not by one of its own: it is not due again for
            # >= 128 decisions, and a sync is the dearest decision
            sync_after = False
        started, _ = self._probes.get((bucket, k), (0, 0))
        self._probes[(bucket, k)] = (started + 1, self._decisions)
        self._probed_at[(bucket, k)] = self._bucket_decisions[bucket]
        return self._start_probe(k, self.probe_len, sync_after)

    def _recheck(self, bucket: int, expected: list[float], times: list,
                 best: float) -> Optional[int]:
        """A k not chosen now whose cell jumped (`StepTimeTable.recheck_due`) and would win at
        its mean before the jump: re-measured once per jump, when its switch fits
        `recheck_budget`. Only its own samples can tell a stall from a new cost, and a k left
        for a stall gets none: the refreshes take the stalest cells first, and the one that
        just jumped is the freshest. The realized ratio is left out of the test: the stall's
        results are in it too."""
        for k in range(self.max_steps + 1):
            due = self.table.recheck_due(bucket, k)
            if due is None or k == self._current:
                continue
            before, jump = due
            if self._rechecked.get((bucket, k)) == jump:
                continue
            if k > 0 and expected[k] - 1.0 < self.hopeless_gain:
                continue
            launch = self._bucket_view(bucket)[2][k]
            prefill = self.prefill.per_step(bucket, expected[k], launch, plain=k == 0)
            if (expected[k] / (before + prefill) >= best
                    and self._switch_paid(bucket, k, times, self.recheck_budget)):
                self._rechecked[(bucket, k)] = jump
                return k
        return None

    def _switch_paid(self, bucket: int, k: int, times: list, budget: float) -> bool:
        """Whether a probe or refresh of k that turns drafting on from plain (or plain on from
        drafting, which ends in a switch back on) has been paid for: the switch on's catch-up
        (`switch_cost`) fits `budget` of the time at this bucket (its decisions, at the chosen
        k's step time) since its last probe that needed a switch too (of any k: the budget is
        the bucket's; `_since_switching_probe`). The steps' loss is not
        priced: `refresh_interval` and `_probe_due` bound it, and an estimate made of stalls
        (what a refresh is there to mend) would overstate it. Where a switch is cheap (small
        batches) those stay the bounds. A cell's first probe is not asked (its caller): the
        table must learn each bucket once.
        GPU, session 38 (`be64`, dense pair, 56-72 requests, plain chosen on every steady
        decision): goodput made 0.93-0.98x of plain; its sample log holds 11 runs of 3-7
        drafting results begun after a plain one at 33-128 running in 6 levels (~5,900
        decisions, so at most 6 refreshes), each after a catch-up (133 ms a switch on at 33-64
        running; `sample_summary --drafting-runs`, `2026-12-05-s39-drafting-runs-be64.txt`).
        On that run's final table one refresh of a drafting k every 1,024 decisions cost ~3%
        in simulation (`policy_sim.py`, `steady-busy` lines)."""
        cur = self._current
        if cur is None or (cur == 0) == (k == 0):
            return True
        since = self._since_switching_probe(bucket, k)
        return since * budget * times[cur] >= self.switch.cost(bucket)

    def _since_switching_probe(self, bucket: int, k: int) -> float:
        """Decisions at this bucket since its last probe or refresh on k's side of the switch
        (k = 0, or any drafting k): the one whose switch a probe of k would repeat. Counted at
        the bucket, not over all: the sweep's levels visit a bucket for ~5 s each, and counted
        over all, the decisions at the other levels had paid for a refresh on arrival. GPU,
        session 50 (H100, dense pair, dial 0.5, 64 requests, plain on 382 of 389 steady
        decisions): a k = 1 refresh and its catch-up in a 4.8-s window, 0.936x of plain where
        forced off made 1.006x in another call."""
        last = max(self._probed_at.get((bucket, j), -10**9)
                   for j in range(self.max_steps + 1) if (j == 0) == (k == 0))
        return self._bucket_decisions[bucket] - last

    def _plain_at_another_context(self, bucket: int) -> bool:
        """While drafting, whether the plain cell is due for a refresh because it was measured
        at another context (`measured_at_another_context`), at most every
        `drafting_refresh_gap` decisions at this bucket, or more rarely where a switch on costs
        much. Drafting's edge shrinks with the context (each step
        reads the weights once for k + 1 tokens a request, the KV once either way), and while
        drafting only the drafting cells get samples: when the requests' contexts fell from
        3,000 tokens to 200 in simulation, a plain cell priced at the long contexts kept k = 3
        chosen where plain made 1.1x, until the next refresh 1,024 decisions later. While
        plain runs nothing is needed: where the context grew, the drafting cells read faster
        than they are (drafting is chosen and they are measured); where it shrank they read
        slower, and drafting, which lost at the longer context, loses at the shorter one too."""
        if not self._current or not self.table.measured_at_another_context(bucket, 0, self._context):
            return False
        # each costs a switch back on (the catch-up): at most ~2% of the decisions' time for it,
        # should the context keep moving (GPU, session 36: 140-160 ms a switch at 64 requests)
        gap = max(self.drafting_refresh_gap,
                  self.switch.cost(bucket) / (0.02 * self.step_time(bucket, self._current)))
        return self._since_switching_probe(bucket, 0) >= gap

    def _drafting_refresh(self, bucket: int, goodput: list, could_win: Callable) -> Optional[int]:
        """While drafting, a filled drafting k that could still win and is not settled yet
        (fewer than `trusted_samples` samples, which can all be stalls, or a mean that moved by
        more than `settled_move` at its last merge), refreshed as often as its cost allows.
        Between two drafting k no catch-up runs, so a refresh costs only what its
        `probe_len` steps lose against the chosen k's goodput; it runs once that loss fits
        its share of `drafting_refresh_budget` (split between the cells eligible) of the
        decisions since the cell last got samples, at most every `drafting_refresh_gap`
        decisions (one other cell: a near tie every 128, a k estimated 30% worse every 420).
        GPU, session 28 (MoE layout, 16 requests, dial 0.7): k = 2 ran 497 decisions of a 6-s
        level while the final table put k = 3 14% above it. With the one refresh per 1,024
        decisions, which cycles through k = 0, 1 and 3, a k = 3 cell whose first samples had
        stalled 1.3x kept k = 2 chosen for all 6,000 decisions of the simulation
        (`scripts/policy_sim.py`)."""
        cur = self._current
        if not cur or goodput[cur] <= 0:  # off (or nothing chosen yet): a probe pays a catch-up
            return None
        table = self.table
        others = [k for k in range(1, self.max_steps + 1)
                  if k != cur and table.samples(bucket, k) >= self.min_samples
                  and (table.samples(bucket, k) < self.trusted_samples
                       or table.last_move(bucket, k) > self.settled_move
                       or table.measured_at_another_context(bucket, k, self._context))]
        due = []
        for k in others:  # the budget is shared: each cell gets its part of it
            loss = max(0.0, 1.0 - goodput[k] / goodput[cur])
            gap = max(self.drafting_refresh_gap,
                      self.probe_len * loss * len(others) / self.drafting_refresh_budget)
            since = table.staleness(bucket, k) * self.sync_interval  # decisions, roughly
            if since >= gap:
                due.append((since / gap, -k, k))
        # `could_win` (the optimistic goodput, ~10 us a k) only for the cells that are due
        for _, _, k in sorted(due, reverse=True):
            if could_win(k):
                return k
        return None

    def _start_probe(self, k: int, length: int, sync_after: bool = True) -> int:
        self._probe_k = k
        self._probe_left = length - 1
        if sync_after:
            self._sync_after_probe = self._decisions + length + 1
        return k

    def _acceptance_probe(self) -> Optional[int]:
        """k = 1 for a few steps, on a doubling gap, while no k can pay (`hopeless_gain`)."""
        last, gap = self._accept_probe
        if self._decisions - last < gap:
            return None
        self._accept_probe = (self._decisions, min(gap * 2, 8 * self.refresh_interval))
        self._probe_reason = "reprobe"
        return self._start_probe(1, max(1, self.cfg.reprobe_steps))

    def _probe_due(self, bucket: int, k: int) -> bool:
        """Whether an under-sampled cell may be probed now. After `free_probes` probes the gap
        to the next doubles (up to `max_backoff` explore intervals): a cell whose samples keep
        being dropped (stalls, prefills) must not be probed every `explore_interval` steps for
        ever. GPU, session 5: at 128 requests a k=2 cell that never filled was probed ~2x a
        second, each probe a catch-up of every request's draft plus two drafting steps."""
        started, last = self._probes.get((bucket, k), (0, 0))
        if started < self.free_probes:
            return True
        gap = self.explore_interval * min(self.max_backoff, 2 ** (started - self.free_probes + 1))
        return self._decisions - last >= gap
