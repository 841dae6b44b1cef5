"""What the goodput policy's cost model says, for the decision log and the status route: each
k's goodput over plain's at the last decision and what held a better k back, the model's terms
per bucket, and the step count it would run at each measured bucket (with the threshold that
would run the same). Read-only: nothing here changes a decision.

`GoodputStatus` is a part of `GoodputPolicy` (its base class) and holds no state of its own.
"""

from __future__ import annotations

from typing import Optional

from .step_table import MAX_BUCKET_EXP


class GoodputStatus:
    """The readable side of `GoodputPolicy` (see the module doc)."""

    def decision_basis(self) -> str:
        """The last fresh decision's cost model, for the decision log's line: each k's goodput
        over plain's (the realized rate counted), and what kept the current k where a better one
        was known ("margin": the gain under its margin, `GoodputPolicy._margin`; "price:S": the
        switch's price, S its share of the horizon it is spread over). Session 44 (H100, 64
        requests, 6-s levels): goodput arrived at 64 drafting from the drain before and kept
        k = 3 for 3-5 s where plain made 1.06x; the lines logged only the switches, not what
        the model believed there."""
        g = self._last_goodput
        if not g or g[0] <= 0.0:
            return ""
        model = "/".join(f"{v / g[0]:.3f}" for v in g)
        return f"model={model}" + (f" held={self._last_held}" if self._last_held else "")

    def decision_parts(self) -> str:
        """The last fresh decision's cost model in its parts, for the decision log's line:
        `parts=` each k's decode step + the prefill time it brings a step (ms) x the realized
        ratio, and `E=` each k's expected tokens, so that k's goodput is E x ratio / (step +
        prefill). Session 50 (H100, 64 requests, dial 0.7): the lines read k = 3 at 1.007-1.17x
        of plain where plain made 1.03x of EAGLE-3, and which part was off could only be
        guessed from the final status, taken at the last decision's acceptance (a draining
        batch's)."""
        bucket, expected = self._last_bucket, self._last_expected
        if bucket is None or not expected or not self._last_goodput:
            return ""
        return "parts=" + "/".join(
            f"{1000 * t:.2f}+{1000 * p:.2f}x{r:.3f}"
            for t, p, r in zip(*self._parts_at(bucket, expected))) + " E=" + "/".join(
            f"{e:.2f}" for e in expected)

    def _parts_at(self, bucket: int, expected: list) -> tuple:
        """(decode step s, prefill s a step, realized ratio) of each k at this bucket, from the
        model of now (the ratios 1 with `calibrate` off)."""
        times, prefill = self._model_parts(bucket, expected)
        ratios = (self._realized_ratios(bucket, expected) if self.calibrate
                  else [1.0] * len(times))
        return times, prefill, ratios

    def describe(self) -> dict:
        # the sample counts tell a filled cell from one whose probes keep losing samples (session
        # 10's table had the means only: whether 33-64 requests' k = 1, 2 bounded 128's probes
        # could not be read from it)
        length = self.prefill.request_length()
        return {"step_ms": self.table.snapshot(), "step_samples": self.table.snapshot(samples=True),
                "step_context_tokens": self.table.snapshot(contexts=True),
                # per bucket, the share of its samples beside a prefill's launch: a cell's own
                # launched samples enter up to that share (step_table.py, session 49)
                "step_launch_share": self.table.snapshot_launch_share(),
                "prefill_ms_admitted_tokens_per_step": self.prefill.snapshot(),
                # a prefill batch's fixed and per-new-request cost (its slope moves each kind's
                # mean to the bucket's batch size, prefill_load.py)
                "prefill_batch_fit_ms": self.prefill.snapshot_fit(),
                # each launch's extra in the decode step beside it, by k (prefill_load.py)
                "prefill_launch_ms": self.prefill.snapshot_launch(),
                # each prefill kind's cost a batch, plain and spec (prefill_load.py)
                "prefill_kind_ms": self.prefill.snapshot_kinds(),
                # the new requests a batch of each kind admitted (session 48)
                "prefill_kind_admitted": self.prefill.snapshot_kind_admitted(),
                # plain over spec a batch, pooled over the buckets: what an unseen kind is priced at
                "prefill_kind_ratio": round(self.prefill.kind_ratio, 4),
                # prefills left out of the prefill term as waves of arrivals (prefill_load.py)
                "prefill_waves": self.prefill.waves,
                # decode tokens a request takes, which arrivals are predicted from, and each
                # bucket's mean batch they scale with (session 52)
                "prefill_request_length": None if length is None else round(length, 1),
                "prefill_mean_batch": self.prefill.snapshot_batch(),
                "switch_on_ms": self.switch.snapshot(),
                # per bucket, cells that jumped at one merge, and how many of those jumps later
                # samples found to be a stall or a new cost (step_table.py, session 54)
                "step_jumps": self.table.jump_counts,
                # how long the model keeps preferring drafting, or plain (preferred_runs.py)
                "preferred_runs_ms": self.runs.snapshot(),
                # the batch's bucket now and its stay there, which a switch on's price is spread
                # over when longer than `switch_on_horizon` drafting steps (_switch_on_horizon_s)
                "bucket_stay_ms": ({str(2 ** self._bucket_now): round(
                    1000 * self._bucket_stay_s(self._bucket_now), 1)}
                    if self._bucket_now >= 0 else {}),
                # tokens delivered over the model's prediction, per bucket and k (realized.py)
                "realized_ratio": self.realized.snapshot(
                    lambda b: self._model_times(b, self._last_expected or self._unit_tokens)),
                "last_goodput_tok_per_s_per_req": {str(k): round(v, 1) for k, v in enumerate(self._last_goodput)},
                # the model's terms per bucket with a plain step, at the last decision's E_k
                "model_parts_ms": self.model_parts_by_bucket(),
                **self.choices_now()}

    def model_parts_by_bucket(self) -> dict:
        """{bucket: {"step", "prefill": ms a step, "realized": ratios, "tokens": E_k}} per bucket
        with a measured plain step, at the last decision's E_k: each k's goodput there is
        tokens x realized / (step + prefill) (decision_parts). For the status only."""
        expected = self._last_expected
        if not expected:
            return {}
        out = {}
        for b in self._plain_measured_buckets():
            times, prefill, ratios = self._parts_at(b, expected)
            out[str(2 ** b)] = {"step": [round(1000 * t, 3) for t in times],
                                "prefill": [round(1000 * p, 3) for p in prefill],
                                "realized": [round(r, 3) for r in ratios],
                                "tokens": [round(e, 3) for e in expected]}
        return out

    def _plain_measured_buckets(self) -> list:
        """The buckets with a measured plain step: those the status reads the model at."""
        return [b for b in range(MAX_BUCKET_EXP + 1) if self.table.samples(b, 0) > 0]

    def choices_now(self) -> dict:
        """What the cost model would run at each batch bucket with a measured plain step, at the
        last decision's acceptance (probes, hysteresis and the switch price left out): {bucket:
        [k, its goodput / plain's]}; and `threshold_suggestion`, the batch size from which it
        runs plain at every measured larger bucket, when it drafts below: what the threshold
        policy's `--adaptive-spec-threshold` would be on this model, draft and hardware (bucket
        resolution: the first batch size of that bucket). For the status only: changes nothing."""
        if self._last_expected is None:
            return {"choice_by_bucket": {}, "threshold_suggestion": None}
        choices = {}
        for b in self._plain_measured_buckets():
            _, candidates, goodput = self._goodput_at(b, self._last_expected)
            best = max(candidates, key=goodput.__getitem__)  # the first best, as _argmax
            choices[b] = [best, round(goodput[best] / goodput[0], 3)]
        return {"choice_by_bucket": {str(2 ** b): c for b, c in choices.items()},
                "threshold_suggestion": threshold_from(choices)}


def threshold_from(choices: dict) -> Optional[int]:
    """{bucket exponent: [k, gain]} -> the first batch size of the lowest bucket from which every
    listed bucket runs plain, when a bucket below it drafts (None: drafting pays at the largest
    listed bucket, or at none)."""
    plain_from = None
    for b in sorted(choices, reverse=True):
        if choices[b][0] != 0:
            break
        plain_from = b
    if plain_from is None or plain_from == min(choices):
        return None
    return 2 ** (plain_from - 1) + 1
