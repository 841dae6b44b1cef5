"""How much draft context is stale when drafting turns back on. Pure Python, no sglang import.

An off step writes no draft KV. Re-entry (the catch-up step) writes the draft KV of its own
position only, so a request that took part in n off steps drafts afterwards over n positions
of stale draft KV (session 7 on the GPU: drafting steps of a server flapping every 8 steps
accepted 3.85 vs static EAGLE-3's 3.99 on the always-right synthetic pair). This ledger counts
those positions per request at every re-entry: the size of the work a full catch-up does
(sglang_plugin/catchup.py, session 15; its own counts are here too), and the number to hold
acceptance after re-entry against.

Cheap by construction: an off step only increments a counter. A drafting step notes the
counter for each request in its batch (drafting steps are the costly ones: a loop over their
batch is noise); at a re-entry a request's stale positions are the off steps since its note. A
request first seen at a re-entry was admitted while off: every decoded token but the first came
from an off step (its prefill wrote the prompt's draft KV), so its count is its output length
minus one (the output length the scheduler holds may lag one step: a slight undercount).
Rank-identical like every other input: batch composition and output lengths are replicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Tuple

# re-entries kept for the status (most recent last)
RECENT_REENTRIES = 16
# Acceptance is kept per drafting round since the last re-entry, the first ACCEPT_WINDOW - 1
# rounds one by one and the rest together (the steady state): what the stale draft KV costs is
# the gap between the early rounds and the last column (the first step of a full catch-up,
# NOTES-reentry-catchup.md, "G0", measured from any server's status).
ACCEPT_WINDOW = 16


@dataclass
class Reentry:
    requests: int  # requests in the batch that re-entered
    stale_positions: int  # summed over those requests
    max_stale: int  # the most stale positions of one request

    @property
    def mean_stale(self) -> float:
        return self.stale_positions / self.requests if self.requests else 0.0


@dataclass
class StalenessLedger:
    off_steps: int = 0  # off steps run so far
    noted: Dict[str, int] = field(default_factory=dict)  # rid -> off_steps when its draft KV was last whole
    reentries: int = 0
    stale_total: int = 0
    requests_total: int = 0
    max_stale: int = 0
    recent: List[Reentry] = field(default_factory=list)
    rounds_since: int = ACCEPT_WINDOW  # drafting results since the last re-entry (capped)
    # steps -> [accepted drafts summed per round index, request-rounds per round index]
    accept_since: Dict[int, Tuple[List[int], List[int]]] = field(default_factory=dict)
    # `--adaptive-spec-catchup full` (sglang_plugin/catchup.py): runs, positions rewritten that
    # were stale, tokens run in all (stale + each request's newest), why a re-entry ran without it
    full_catchups: int = 0
    full_catchup_stale: int = 0
    full_catchup_tokens: int = 0
    full_catchup_skipped: Dict[str, int] = field(default_factory=dict)
    full_catchup_host_s: float = 0.0  # host time of the runs, summed (launches, no sync)
    full_catchup_slowest: Tuple[float, int] = (0.0, 0)  # (host seconds, tokens) of the slowest

    def on_off_step(self) -> None:
        self.off_steps += 1

    def on_drafting_step(self, rids: Iterable[str]) -> None:
        """The requests of a drafting step's batch: their draft KV is whole again. The notes
        become this batch's (finished requests are forgotten: a server that never turns
        drafting off would otherwise keep every request it ever served)."""
        self.noted = dict.fromkeys(rids, self.off_steps)

    def on_reentry(self, reqs: Iterable[Tuple[str, int]]) -> Reentry:
        """(rid, output length) of each request in the catch-up step's batch. Forgets requests
        no longer in the batch (finished or aborted while off)."""
        seen: Dict[str, int] = {}
        stale_sum = most = 0
        for rid, out_len in reqs:
            mark = self.noted.get(rid)
            stale = self.off_steps - mark if mark is not None else max(0, out_len - 1)
            stale_sum += stale
            most = max(most, stale)
            seen[rid] = self.off_steps
        self.noted = seen  # drafting goes on from here for these requests
        r = Reentry(requests=len(seen), stale_positions=stale_sum, max_stale=most)
        self.reentries += 1
        self.stale_total += stale_sum
        self.requests_total += r.requests
        self.max_stale = max(self.max_stale, most)
        self.recent = (self.recent + [r])[-RECENT_REENTRIES:]
        return r

    def on_reentry_result(self) -> None:
        """The catch-up step's result was processed: the next drafting result is round 0."""
        self.rounds_since = 0

    def on_drafting_result(self, steps: int, accepted: int, requests: int) -> None:
        """A drafting result (`steps` > 0): `accepted` drafts over `requests` requests."""
        sums, rounds = self.accept_since.setdefault(steps, ([0] * ACCEPT_WINDOW, [0] * ACCEPT_WINDOW))
        i = min(self.rounds_since, ACCEPT_WINDOW - 1)
        sums[i] += accepted
        rounds[i] += requests
        self.rounds_since = min(self.rounds_since + 1, ACCEPT_WINDOW)

    def on_full_catchup(self, stale_positions: int, tokens: int, host_s: float = 0.0) -> None:
        self.full_catchups += 1
        self.full_catchup_stale += stale_positions
        self.full_catchup_tokens += tokens
        self.full_catchup_host_s += host_s
        if host_s > self.full_catchup_slowest[0]:
            self.full_catchup_slowest = (host_s, tokens)

    def on_full_catchup_skipped(self, why: str) -> None:
        self.full_catchup_skipped[why] = self.full_catchup_skipped.get(why, 0) + 1

    def reset_counts(self) -> None:
        """Zero the re-entry statistics; the per-request notes stay (they describe the KV)."""
        self.reentries = self.stale_total = self.requests_total = self.max_stale = 0
        self.recent = []
        self.accept_since = {}
        self.full_catchups = self.full_catchup_stale = self.full_catchup_tokens = 0
        self.full_catchup_skipped = {}
        self.full_catchup_host_s, self.full_catchup_slowest = 0.0, (0.0, 0)

    def _catchup_host_times(self) -> dict:
        if not self.full_catchups:
            return {}
        slowest_s, slowest_tokens = self.full_catchup_slowest
        return {"host_ms_mean": round(1000 * self.full_catchup_host_s / self.full_catchups, 2),
                "host_ms_max": round(1000 * slowest_s, 2), "tokens_of_slowest": slowest_tokens}

    def status(self) -> dict:
        return {
            "reentries": self.reentries,
            "stale_positions_per_request": round(self.stale_total / self.requests_total, 2)
            if self.requests_total else None,
            "stale_positions_max": self.max_stale,
            "recent": [{"requests": r.requests, "mean": round(r.mean_stale, 2), "max": r.max_stale}
                       for r in self.recent],
            # per step count: accept length (bonus included) of drafting round i after a
            # re-entry, i = 0..14, then every later round (and a server that never re-entered)
            "accept_len_by_round_since_reentry": {
                str(k): {"accept_len": [round(1.0 + a / n, 3) if n else None for a, n in zip(sums, rounds)],
                         "request_rounds": rounds}
                for k, (sums, rounds) in sorted(self.accept_since.items())},
            "full_catchup": {"runs": self.full_catchups, "stale_positions": self.full_catchup_stale,
                             "tokens": self.full_catchup_tokens, "skipped": dict(self.full_catchup_skipped),
                             **self._catchup_host_times()},
        }
