"""Every step-time sample the controller takes, with its circumstances: a diagnostic.

`ADAPTIVE_SPEC_SAMPLE_LOG=1` in a server's environment makes the controller keep, for each
decode result it times, (batch size, step count, wall ms, flags, prefill ms, tokens) and log them
SAMPLES_PER_LINE at a time:

  adaptive_spec samples rank=0 rows=[[64, 0, 6.41, 0, 0.0, 1.0], [64, 0, 9.87, 1, 5.2, 1.0], ...]

Prefill ms: the wall time of the prefill results processed since the last decode result; tokens:
what the result gave each of its requests (mean, 1.0 when plain). With the wall ms they are what
the goodput policy's realized rate counts (policy/realized.py; since session 40, rows before it
have the first four fields only).

Flags (bits): AFTER_PREFILL the interval started at a prefill's result (the timer restarted
there); SWITCHED the previous result ran another step count; GREW the batch grew since the
previous result (requests merged in); DROPPED the sample did not reach the step-time table as
measured (a catch-up or re-entry step, a result whose interval holds a prefill, or, since
session 37, one beside a prefill's launch: the table got it less the launch's measured extra,
policy/prefill_load.py); UNSTEADY the batch is more than 10%
off its recent size (a ramp, a warm-up wave, a drain: what the goodput policy's prefill term
leaves out, `RecentBatch`, and its step-time table keeps); PLAIN_PREFILL (since session 40) a
prefill counted in the row's prefill ms ran as the plain server's, without the draft's own
prefill (`--adaptive-spec-off-prefill plain`), where the others ran SGLang's spec prefill: the
goodput policy's prefill term prices each kind at its own cost (since session 46,
policy/prefill_load.py). `python -m
adaptive_spec.bench.sample_summary` splits a bucket's samples by those flags.

Why: on the H200 (session 35, dense pair, 64 requests) the goodput policy's plain cell read
7.8-9.1 ms where plain's own decode step read 6.1-6.6 ms (fitted over its phase-clock windows),
and it ran k = 3 where EAGLE-3 made 0.86-0.90x of plain; the table keeps only means, so which
samples carried the excess could not be told. Costs one list per decode result while on; off,
nothing.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Optional

from .policy.prefill_load import RecentBatch

logger = logging.getLogger("adaptive_spec")

ENV = "ADAPTIVE_SPEC_SAMPLE_LOG"
SAMPLES_PER_LINE = 256

AFTER_PREFILL = 1
SWITCHED = 2
GREW = 4
DROPPED = 8
UNSTEADY = 16
PLAIN_PREFILL = 32


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


class SampleLog:
    def __init__(self, rank: int = 0, per_line: int = SAMPLES_PER_LINE, emit=None):
        self.rank = rank
        self.per_line = per_line
        self.emit = emit or (lambda line: logger.info(line))
        self.rows: list = []
        self._last: Optional[tuple] = None  # (steps, batch size) of the previous timed result
        self._after_prefill = False
        self._plain_prefill = False  # a prefill since the last row ran plain
        self._pending: Optional[list] = None  # a row waiting for `settle`
        self._recent_batch = RecentBatch()  # the prefill term's notion of steady load

    def on_prefill_result(self, plain: bool = False) -> None:
        self._after_prefill = True
        self._plain_prefill |= plain

    def on_sample(self, batch_size: int, steps: int, seconds: Optional[float],
                  used: Optional[bool], prefill_s: float = 0.0, tokens: float = 1.0) -> None:
        """`used` None: not known yet (an off step's sample waits for the next result,
        `Controller._clock_result`); its row is logged at `settle`."""
        last, self._last = self._last, (steps, batch_size)
        flags = AFTER_PREFILL if self._after_prefill else 0
        if self._plain_prefill:
            flags |= PLAIN_PREFILL
        self._after_prefill = self._plain_prefill = False
        if last is not None and last[0] != steps:
            flags |= SWITCHED
        if last is not None and batch_size > last[1]:
            flags |= GREW
        if self._recent_batch.size and self._recent_batch.off(batch_size):
            flags |= UNSTEADY
        self._recent_batch.update(batch_size)
        if seconds is None:
            return
        row = [batch_size, steps, round(1000.0 * seconds, 3), flags, round(1000.0 * prefill_s, 3),
               round(tokens, 3)]
        if used is None:
            self._pending = row
        else:
            self._append(row, used)

    def settle(self, used: bool) -> None:
        """The verdict on the row `on_sample` left pending."""
        row, self._pending = self._pending, None
        if row is not None:
            self._append(row, used)

    def _append(self, row: list, used: bool) -> None:
        if not used:
            row[3] |= DROPPED
        self.rows.append(row)
        if len(self.rows) >= self.per_line:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            rows = json.dumps(self.rows, separators=(",", ":"))
            self.emit(f"adaptive_spec samples rank={self.rank} rows={rows}")
            self.rows = []
