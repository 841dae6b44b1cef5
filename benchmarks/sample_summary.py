"""The step-time samples of one batch bucket, split by their circumstances, from a server log
written with ADAPTIVE_SPEC_SAMPLE_LOG=1 (adaptive_spec/sample_log.py).

  python -m adaptive_spec.bench.sample_summary [--bucket 64] server-*.log

Per step count k and sample class, the count and the 25th / 50th / 75th percentile and mean in
ms. Classes, a sample with several flags counting in the first: dropped (never reached the
policy), after-switch, unsteady (the batch more than 10% off its recent size), after-prefill, grew
(requests merged in); steady: none of them. A plain cell that reads above plain's own decode step shows
here which samples carry the excess.

  python -m adaptive_spec.bench.sample_summary --launches server-*.log

Per batch bucket and k: the decode samples around a prefill against the cell's other samples:
the one right before a sample flagged after-prefill (with the overlap scheduler the prefill was
launched before that result was processed: its host work is in it) and the after-prefill one
(a little short: part of its step ran beside the prefill); their excess over the median, the
first alone ("extra", what policy/prefill_load.py prices; session 37, from session 36's logs:
+8.4 ms over a 5.8-ms plain step at 33-64 requests) and both together ("net").

  python -m adaptive_spec.bench.sample_summary --crossings server-*.log

How often consecutive results changed batch bucket, per pair of buckets, and how often drafting
turned on or off, how many of those at a bucket change: a policy that flaps at a bucket's edge
(session 38, policy/preferred_runs.py) turns drafting on and off at most of its crossings.

  python -m adaptive_spec.bench.sample_summary --drafting-runs server-*.log

Per batch bucket: the runs of drafting results that began right after a plain one (each a switch
on, its catch-up included), their count, results and ms in all, and their lengths; at a batch
where plain wins those are probes and refreshes (session 39, GoodputPolicy._switch_paid).

  python -m adaptive_spec.bench.sample_summary --plain-runs [--bucket 64] server-*.log

The bucket's steady plain rows by their place in a run of plain results (1-32, 33-64, past 64):
decode, prefill and all-in ms a result, and the decode ms beside a prefill's launch (session 53:
whether a plain run's first decisions, whose prefills still run with the draft, are its dear
ones).

  python -m adaptive_spec.bench.sample_summary --arrivals [--bucket 64] server-*.log

Each stay of the batch in the bucket entered from a smaller one (a level's start after a drain):
its results and seconds, the seconds before plain settled (the first 32 plain results in a row
began) and the share of its seconds spent drafting (session 44, an H100 at 64 requests: goodput
arrived drafting from the drain and settled on plain 3.1 and 5.1 s into 6.6-s levels).

  python -m adaptive_spec.bench.sample_summary --realized server-*.log

Per batch bucket and k, what the steps delivered (session 40, policy/realized.py; logs written
since then): results, decode and prefill ms a step, tokens a request a step, and tokens a second a
request with the prefills counted, against plain's at the same bucket. Left out, as the policy
leaves them: results after a switch, the one before a switch, and those of a ramp or drain. Then,
per bucket, the rows with prefill ms by how their prefills ran (spec: with the draft's own
prefill; plain: the plain server's), their count and mean prefill ms: the goodput policy's
prefill term priced both alike until session 46 (each at its own cost since, prefill_load.py).

  python -m adaptive_spec.bench.sample_summary --coverage [--batch 60-64] server-*.log

Per batch bucket and k, every row counted (ramps, drains and switches too): results, seconds
(decode and prefill ms), the batch's tokens a second (batch size x tokens a request over those
seconds), the mean batch and tokens a second a request, with the log's total: the server's own
throughput as its samples account for it, to set beside what the benchmark's clients measured.
`--batch LO-HI` keeps the rows of those batch sizes (a level's steady part without its ramp and
drain). Session 44 (H100, 64 requests; session 45's reading of its log): at 60-64 running
goodput's k = 3 rows delivered 6,948 batch tokens a second and its plain rows 6,762, where
EAGLE-3's clients measured 6,682 and the plain server's 7,102 (two passes' means); a server
that runs one k (forced on, forced off) tells whether the samples miss time or tokens.

  python -m adaptive_spec.bench.sample_summary --replay-table --bucket 16 server-*.log

`--bucket`'s rows through the goodput policy's step-time table, a sync every 32, with every
sample taken as an ordinary one (before session 49) and with those beside a prefill's launch
entering a cell at the bucket's launched share: each k's mean after every second sync. Session
49 (H100, 16 requests, run 2): k = 3's cell read 13.37 ms after an arrival burst of launches
against 10.1-10.5 for k = 2, 9.87 at the bucket's share (`2026-12-06-s49-readings.txt`).

  python -m adaptive_spec.bench.sample_summary --replay-prefill server-*.log

Every row through the goodput policy's prefill term (policy/prefill_load.py) at its own decode
batch's bucket, a sync every 32 rows: each bucket's prefill ms a decode step at the end, beside
the server's status (`prefill_ms_admitted_tokens_per_step`, its first value). The rows do not
hold a prefill's new requests: a row's prefills count as one batch of one request, which moves
the batch counts and fits, not the seconds a step. Session 51 (H100, 64 requests): the server
read 3.48 ms a step at 33-64, its rows 4.22: its prefills had gone by the scheduler's count,
which put some at 65-128 (`Controller._decode_batch_beside`).

  python -m adaptive_spec.bench.sample_summary --replay-policy server-*.log

Every row through a goodput controller of this checkout, in order: a decision at the row's batch
size, its prefill's result (one request) when it had one, then its decode result at the row's k,
time and acceptance (the decisions are not the server's: each row keeps the k that ran). Whether
the policy fails on what the server measured (the exception and where it was raised), the step
table's jumps (`step_jumps`), and the replay's own decisions by batch bucket. Session 54 (H100,
MoE layout, 4 requests): the goodput server fell back after a division by zero in the prefill
term; since the fix its own rows raise nothing (`2026-12-06-s54-readings.txt`).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

from adaptive_spec.policy.prefill_load import PrefillLoad
from adaptive_spec.policy.step_table import MAX_BUCKET_EXP, StepTimeTable, bucket_label, bucket_of
from adaptive_spec.sample_log import (AFTER_PREFILL, DROPPED, GREW, PLAIN_PREFILL, SWITCHED,
                                      UNSTEADY)

from .phase_summary import _aligned, server_name

LINE = re.compile(r"adaptive_spec samples rank=0 rows=(\[.*\])")
# the first flag a sample carries names its class (a sample after a switch that also grew is
# "after-switch"), so each sample counts once
CLASSES = ((DROPPED, "dropped"), (SWITCHED, "after-switch"), (UNSTEADY, "unsteady"),
           (AFTER_PREFILL, "after-prefill"), (GREW, "grew"))


def samples(text: str) -> List[list]:
    """Rank 0's [batch size, k, ms, flags] rows in a log's text, in order."""
    out = []
    for ln in text.splitlines():
        m = LINE.search(ln)
        if m:
            out.extend(json.loads(m.group(1)))
    return out


def sample_class(flags: int) -> str:
    return next((name for bit, name in CLASSES if flags & bit), "steady")


def split(rows: List[list], bucket: int) -> Dict[tuple, List[float]]:
    """(k, class) -> the ms of the samples whose batch falls in `bucket` (a power of two: the
    policy's bucket of batch sizes bucket/2+1 .. bucket)."""
    out: Dict[tuple, List[float]] = {}
    for bs, k, ms, flags, *_ in rows:
        if 2 ** bucket_of(bs) == bucket:
            out.setdefault((k, sample_class(flags)), []).append(ms)
    return out


def table(groups: Dict[tuple, List[float]]) -> str:
    rows = [["k", "class", "n", "p25", "p50", "p75", "mean"]]
    for (k, name), ms in sorted(groups.items()):
        # "inclusive": quartiles within the samples (the default extrapolates: two samples of
        # 14.7 and 148.6 ms read a p25 of -22.7 in session 36's table)
        q = statistics.quantiles(ms, n=4, method="inclusive") if len(ms) > 1 else [ms[0]] * 3
        rows.append([str(k), name, str(len(ms)), *(f"{v:.2f}" for v in q), f"{statistics.fmean(ms):.2f}"])
    return _aligned(rows)


def launch_table(rows: List[list]) -> str:
    """Per (bucket, k): the other samples' count and median; the pairs around a prefill (the
    sample before one flagged after-prefill, which holds the prefill's launch, and that one,
    which lacks what of its step ran beside the prefill; at one k, neither after a switch nor in
    a ramp) with their count and means; the first one's excess over the median (what the goodput
    policy's prefill term prices) and the pair's, in ms."""
    other: Dict[tuple, List[float]] = {}
    pairs: Dict[tuple, List[tuple]] = {}
    skip = SWITCHED | UNSTEADY
    for i, (bs, k, ms, flags, *_) in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        key = (2 ** bucket_of(bs), k)
        if nxt is not None and nxt[3] & AFTER_PREFILL:
            if not (flags | nxt[3]) & skip and nxt[1] == k and 2 ** bucket_of(nxt[0]) == key[0]:
                pairs.setdefault(key, []).append((ms, nxt[2]))
        elif not flags & (skip | DROPPED | AFTER_PREFILL):
            other.setdefault(key, []).append(ms)
    out = [["bucket", "k", "other n", "median", "pairs", "beside", "after", "extra", "net"]]
    for key in sorted(pairs):
        if key not in other:
            continue
        med = statistics.median(other[key])
        beside = statistics.fmean(b for b, _ in pairs[key])
        after = statistics.fmean(a for _, a in pairs[key])
        out.append([str(key[0]), str(key[1]), str(len(other[key])), f"{med:.2f}",
                    str(len(pairs[key])), f"{beside:.2f}", f"{after:.2f}", f"{beside - med:+.2f}",
                    f"{beside + after - 2 * med:+.2f}"])
    return _aligned(out)


def crossings(rows: List[list]) -> str:
    """Bucket changes between consecutive results, per pair of buckets, and drafting turned on
    or off (k = 0 <-> k > 0), how many of those at a bucket change."""
    edges: Counter = Counter()
    flips = flips_at_change = 0
    for (bs0, k0, *_), (bs1, k1, *_) in zip(rows, rows[1:]):
        b0, b1 = bucket_of(bs0), bucket_of(bs1)
        if b0 != b1:
            edges[(min(b0, b1), max(b0, b1))] += 1
        if (k0 > 0) != (k1 > 0):
            flips += 1
            flips_at_change += b0 != b1
    pairs = "  ".join(f"{bucket_label(a)} <-> {bucket_label(b)}: {n}"
                      for (a, b), n in sorted(edges.items()))
    return (f"{len(rows)} results; bucket changes {sum(edges.values())}"
            + (f" ({pairs})" if pairs else "")
            + f"; drafting turned on or off {flips} times, {flips_at_change} at a bucket change")


def drafting_runs(rows: List[list]) -> str:
    """Runs of drafting results (k > 0) that began right after a plain one (k = 0), by the
    bucket of their first result: how many, their results and ms in all, and each one's
    length in results (in order)."""
    runs: Dict[int, List[tuple]] = {}
    i = 1
    while i < len(rows):
        if rows[i - 1][1] == 0 and rows[i][1] > 0:
            j = i
            while j < len(rows) and rows[j][1] > 0:
                j += 1
            runs.setdefault(bucket_of(rows[i][0]), []).append((j - i, sum(r[2] for r in rows[i:j])))
            i = j
        else:
            i += 1
    out = [["bucket", "runs", "results", "ms", "lengths"]]
    for b in sorted(runs):
        out.append([bucket_label(b), str(len(runs[b])), str(sum(n for n, _ in runs[b])),
                    f"{sum(ms for _, ms in runs[b]):.1f}", " ".join(str(n) for n, _ in runs[b])])
    return _aligned(out)


def plain_runs(rows: List[list], bucket: int) -> str:
    """`bucket`'s steady plain rows (rows of a ramp or drain left out) by their place in a run of
    plain results (k = 0 in a row, counted over every bucket: results 1-32, 33-64, past 64):
    their count, mean decode and prefill ms, the two together, and the decode ms of those beside
    a prefill's launch (DROPPED, not AFTER_PREFILL). Session 53 (H100, 64 requests): goodput's
    plain read 12.6 / 11.1 / 16.3 ms a result all-in in one call and 8.5 / 8.4 / 9.1 in another,
    whatever the place: not the spec prefills of a run's first 32 decisions."""
    places = (("1-32", 32), ("33-64", 64), (">64", math.inf))
    cells: Dict[str, List[list]] = {}
    place = 0
    for row in rows:
        place = place + 1 if row[1] == 0 else 0
        if row[1] != 0 or row[3] & UNSTEADY or 2 ** bucket_of(row[0]) != bucket or len(row) < 6:
            continue
        cells.setdefault(next(name for name, top in places if place <= top), []).append(row)
    out = [["results", "rows", "decode ms", "prefill ms", "all-in ms", "beside a launch ms"]]
    for name, _ in places:
        rs = cells.get(name)
        if not rs:
            continue
        decode, prefill = (statistics.fmean(r[i] for r in rs) for i in (2, 4))
        launched = [r[2] for r in rs if r[3] & DROPPED and not r[3] & AFTER_PREFILL]
        out.append([name, str(len(rs)), f"{decode:.2f}", f"{prefill:.2f}",
                    f"{decode + prefill:.2f}",
                    f"{statistics.fmean(launched):.1f} ({len(launched)})" if launched else "-"])
    if len(out) == 1:
        return f"(no steady plain rows at {bucket // 2 + 1}-{bucket})"
    return _aligned(out)


SETTLED_PLAIN = 32  # plain results in a row that count as the policy having settled on plain


def arrivals(rows: List[list], bucket: int) -> str:
    """Each stay of the batch in `bucket` (consecutive results there) entered from a smaller one:
    its results and seconds (decode and prefill ms), the seconds before its first run of
    SETTLED_PLAIN plain results began ("-": none; a probe or a lone prefill's result is
    shorter), and the share of its seconds spent drafting. A policy that arrives from a drain
    where it drafted and keeps drafting where plain wins shows as a late settle (session 44)."""
    out = [["stay", "results", "s", "plain settled at s", "drafting share"]]
    i, n = 1, 0
    while i < len(rows):
        if not (2 ** bucket_of(rows[i][0]) == bucket > 2 ** bucket_of(rows[i - 1][0])):
            i += 1
            continue
        j = i
        while j < len(rows) and 2 ** bucket_of(rows[j][0]) == bucket:
            j += 1
        stay = rows[i:j]
        wall = [r[2] + (r[4] if len(r) > 4 else 0.0) for r in stay]
        settled, run = None, 0
        for m, r in enumerate(stay):
            run = run + 1 if r[1] == 0 else 0
            if run == SETTLED_PLAIN:
                settled = sum(wall[:m + 1 - run]) / 1000
                break
        drafting, total = sum(w for w, r in zip(wall, stay) if r[1] > 0), sum(wall)
        n += 1
        out.append([str(n), str(len(stay)), f"{total / 1000:.2f}",
                    "-" if settled is None else f"{settled:.2f}",
                    f"{drafting / total:.2f}" if total > 0 else "-"])
        i = j
    return _aligned(out) if n else f"(no stay at {bucket // 2 + 1}-{bucket} running entered from below)"


def realized_table(rows: List[list]) -> str:
    """Per (bucket, k): results, mean decode ms and prefill ms a step, tokens a request a step and
    tokens a second a request with the prefills, and that rate over k = 0's at the bucket; rows
    without the prefill and token fields (logs before session 40) are left out."""
    cells: Dict[tuple, List[list]] = {}
    for i, row in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        before_switch = nxt is not None and nxt[3] & SWITCHED
        if len(row) < 6 or row[3] & (SWITCHED | UNSTEADY) or before_switch:
            continue
        cells.setdefault((bucket_of(row[0]), row[1]), []).append(row)
    if not cells:
        return "(no rows with prefill ms and tokens: a log from before session 40?)"
    rate = {key: 1000.0 * sum(r[5] for r in rs) / sum(r[2] + r[4] for r in rs)
            for key, rs in cells.items()}
    out = [["bucket", "k", "results", "decode ms", "prefill ms", "tokens", "tok/s/req", "vs k=0"]]
    for (b, k), rs in sorted(cells.items()):
        plain = rate.get((b, 0))
        decode, prefill, tokens = (statistics.fmean(r[i] for r in rs) for i in (2, 4, 5))
        out.append([bucket_label(b), str(k), str(len(rs)), f"{decode:.2f}", f"{prefill:.2f}",
                    f"{tokens:.3f}", f"{rate[(b, k)]:.1f}",
                    f"{rate[(b, k)] / plain:.3f}" if plain else "-"])
    return _aligned(out)


def prefill_modes(rows: List[list]) -> str:
    """Per bucket: the rows with prefill ms whose prefills ran spec or plain (PLAIN_PREFILL), their
    count and mean prefill ms (usually one prefill batch a row)."""
    cells: Dict[tuple, List[float]] = {}
    for row in rows:
        if len(row) >= 6 and row[4] > 0:
            mode = "plain" if row[3] & PLAIN_PREFILL else "spec"
            cells.setdefault((bucket_of(row[0]), mode), []).append(row[4])
    out = [["bucket", "prefills", "rows", "prefill ms"]]
    for (b, mode), ms in sorted(cells.items()):
        out.append([bucket_label(b), mode, str(len(ms)), f"{statistics.fmean(ms):.2f}"])
    return _aligned(out) if cells else "(no rows with prefill ms)"


def coverage(rows: List[list]) -> str:
    """Per (bucket, k) and in all, every row counted: results, seconds (decode and prefill ms),
    batch tokens a second (batch size x tokens a request, over those seconds), the mean batch
    and tokens a second a request (batch tokens a second over the mean batch: a drain's smaller
    batches make fewer batch tokens, not fewer a request); rows without the prefill and token
    fields (logs before session 40) are left out."""
    cells: Dict[tuple, List[float]] = {}
    for row in rows:
        if len(row) >= 6:
            for key in ((bucket_of(row[0]), row[1]), None):
                cell = cells.setdefault(key, [0, 0.0, 0.0, 0])
                cell[0] += 1
                cell[1] += (row[2] + row[4]) / 1000.0
                cell[2] += row[0] * row[5]
                cell[3] += row[0]
    if not cells:
        return "(no rows with prefill ms and tokens: a log from before session 40?)"
    out = [["bucket", "k", "results", "s", "batch tok/s", "mean batch", "tok/s/req"]]
    for key in sorted(k for k in cells if k is not None) + [None]:
        n, seconds, tokens, batch = cells[key]
        label = ["all", "-"] if key is None else [bucket_label(key[0]), str(key[1])]
        rate = tokens / seconds if seconds > 0 else None
        out.append(label + [str(n), f"{seconds:.2f}", "-" if rate is None else f"{rate:.0f}",
                            f"{batch / n:.1f}",
                            "-" if rate is None else f"{rate / (batch / n):.1f}"])
    return _aligned(out)


REPLAY_SYNC_ROWS = 32  # the policy syncs every 32 decisions (GoodputPolicy.sync_interval)


def replay_table(rows: List[list], bucket: int) -> str:
    """The rows of `--bucket` through the goodput policy's step-time table, a sync every
    REPLAY_SYNC_ROWS of them, twice: every sample as an ordinary one (before session 49) and
    those beside a prefill's launch as such (entering a cell at the bucket's launched share,
    policy/step_table.py). Beside a launch: a row flagged dropped whose next row is flagged
    after-prefill (the launch table's pairs); other dropped rows (catch-ups, re-entries)
    never reached the table and are left out. Each k's
    mean, ms / samples, after every second sync. A reading of the logs, not the policy: its
    decisions, probes and merges across buckets are not replayed."""
    picked = []
    for i, (bs, k, ms, flags, *_) in enumerate(rows):
        if 2 ** bucket_of(bs) != bucket:
            continue
        launched = (bool(flags & DROPPED) and i + 1 < len(rows)
                    and bool(rows[i + 1][3] & AFTER_PREFILL))
        if launched or not flags & DROPPED:
            picked.append((bs, k, ms / 1000.0, launched))
    if not picked:
        return "(none in this bucket)"
    steps, b = max(k for _, k, _, _ in picked), bucket_of(picked[0][0])
    tables = {"before": StepTimeTable(steps), "launch share": StepTimeTable(steps)}
    out = [["rows", "table"] + [f"k={k}" for k in range(steps + 1)]]
    for n, (bs, k, seconds, launched) in enumerate(picked, start=1):
        for name, t in tables.items():
            t.record(bs, k, seconds, launched and name == "launch share")
            if n % REPLAY_SYNC_ROWS == 0 or n == len(picked):
                t.merge(t.local_vector())
                if n % (2 * REPLAY_SYNC_ROWS) == 0 or n == len(picked):
                    out.append([str(n), name] + [
                        f"{1000 * t.mean[t._i(b, j)]:.2f}/{t.count[t._i(b, j)]:.0f}"
                        if t.count[t._i(b, j)] else "-" for j in range(steps + 1)])
    return _aligned(out)


def replay_policy(rows: List[list]) -> str:
    """The rows through a goodput controller (the module doc's `--replay-policy`): the rows
    replayed, the policy's first failure or none, and its step table's jumps."""
    import traceback

    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from adaptive_spec.signals import LoadSnapshot

    steps = max(3, max(k for _, k, *_ in rows))
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=steps))
    policy, failure, clock = ctl.policy, [], {"tick": 0.0, "elapsed": 0.0}
    ctl.timer.tick = lambda steps, now=None: clock["tick"]
    ctl.timer.elapsed = lambda now=None: clock["elapsed"]
    decide = policy.decide

    def recorded(*args):
        try:
            return decide(*args)
        except Exception as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            failure.append(f"{type(exc).__name__}: {exc} "
                           f"({Path(frame.filename).name}:{frame.lineno}, {frame.line})")
            raise
    policy.decide = recorded
    decided: Dict[str, Counter] = {}
    for n, (bs, k, ms, flags, prefill_ms, accept_len, *_) in enumerate(rows):
        ctl.on_snapshot(LoadSnapshot(running=bs))
        d = ctl.decide(bs)
        decided.setdefault(bucket_label(bucket_of(bs)), Counter())[f"{d.steps}:{d.reason}"] += 1
        if failure:
            return (f"{n + 1} of {len(rows)} rows replayed; the policy failed at row {n + 1}: "
                    f"{failure[0]}")
        if prefill_ms:
            clock["elapsed"] = prefill_ms / 1000.0
            ctl.on_prefill_result(admitted=1)
        clock["tick"] = ms / 1000.0
        correct = max(0, min(k, round(accept_len) - 1))
        ctl.on_result(k, [correct] * bs, "on" if k else "off")
    by_bucket = {b: dict(sorted(c.items())) for b, c in decided.items()}
    return (f"{len(rows)} rows replayed; no failure; "
            f"step jumps {json.dumps(policy.table.jump_counts)}\n"
            f"its decisions by batch bucket (not the server's): {json.dumps(by_bucket)}")


def replay_prefill(rows: List[list]) -> str:
    """Every row (those since session 40, which carry prefill ms and tokens) through the
    prefill term at its decode batch's bucket, a sync every REPLAY_SYNC_ROWS rows: per bucket,
    the term's prefill ms a decode step and decode steps behind it (capped and decayed as the
    policy's), and the steady rows' own mean prefill ms for comparison. A reading of the
    logs, not the policy: see the module doc for what the rows do not hold."""
    load, own = PrefillLoad(MAX_BUCKET_EXP + 1), {}
    for n, (bs, _, _, flags, prefill_ms, tokens, *_) in enumerate(
            (r for r in rows if len(r) >= 6), start=1):
        b = bucket_of(bs)
        if prefill_ms > 0:
            load.on_prefill(b, prefill_ms / 1000.0, 1, plain=bool(flags & PLAIN_PREFILL),
                            batch_size=bs)
        load.on_decode(b, tokens, bs)
        if load.steady:
            own.setdefault(b, []).append(prefill_ms)
        if n % REPLAY_SYNC_ROWS == 0:
            load.sync(lambda v: v)  # one rank: the reducer's mean is the values themselves
    load.sync(lambda v: v)
    out = [["bucket", "term ms a step", "steps", "steady rows", "their mean ms"]]
    for label, (ms, _, _) in load.snapshot().items():
        b = int(label).bit_length() - 1
        mine = own.get(b, [])
        out.append([bucket_label(b), f"{ms:.3f}", f"{load.steps[b]:.0f}", str(len(mine)),
                    f"{statistics.fmean(mine):.3f}" if mine else "-"])
    return _aligned(out) if len(out) > 1 else "(no rows with prefill ms)"


# The views instead of one bucket's table, the first one asked for printed: flag, help, the title
# after the log's name (None: the view is one line, printed after the name), what prints it from
# the rows and --bucket
VIEWS = (
    ("crossings", "bucket changes between consecutive results, and drafting turned on or off at "
     "them", None, lambda rows, bucket: crossings(rows)),
    ("realized", "per bucket and k, the tokens a second a request the steps delivered with their "
     "prefills", "what the steps delivered, prefills counted",
     lambda rows, bucket: realized_table(rows) + "\n" + prefill_modes(rows)),
    ("plain-runs", "--bucket's steady plain rows by their place in a run of plain results",
     "--bucket's steady plain rows by their place in a run of plain results", plain_runs),
    ("drafting-runs", "per bucket, the runs of drafting results begun after a plain one",
     "runs of drafting begun after a plain result", lambda rows, bucket: drafting_runs(rows)),
    ("launches", "every bucket's samples beside a prefill's launch against the rest",
     "decode samples beside a prefill's launch, ms", lambda rows, bucket: launch_table(rows)),
    ("arrivals", "each stay of the batch in --bucket entered from below: how long it drafted "
     "on arrival", "stays entered from below and the drafting on arrival", arrivals),
    ("replay-table", "--bucket's rows through the step-time table, launched samples at the "
     "bucket's share or not", "--bucket's rows through the step-time table, ms / samples",
     replay_table),
    ("replay-policy", "every row through a goodput controller: its first failure or none",
     None, lambda rows, bucket: replay_policy(rows)),
    ("replay-prefill", "every row through the prefill term at its decode batch's bucket",
     "every row through the prefill term by its decode batch, ms a step",
     lambda rows, bucket: replay_prefill(rows)),
    ("coverage", "per bucket and k, every row: seconds and the batch's tokens a second",
     "the server's throughput as its samples account for it",
     lambda rows, bucket: coverage(rows)),
)


def _batch_range(text: str):
    """'LO-HI' -> (LO, HI), None when it is not one."""
    lo, _, hi = text.partition("-")
    if not (lo.isdigit() and hi.isdigit()) or not 1 <= int(lo) <= int(hi):
        return None
    return int(lo), int(hi)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--bucket", type=int, default=64, help="a power of two: batches bucket/2+1..bucket")
    ap.add_argument("--batch", default=None, metavar="LO-HI",
                    help="with --coverage: only the rows whose batch size is in LO..HI")
    for flag, help_text, _, _ in VIEWS:
        ap.add_argument(f"--{flag}", action="store_true", help=f"instead: {help_text}")
    a = ap.parse_args(argv)
    missing = [str(p) for p in a.logs if not p.is_file()]
    if missing:
        print(f"error: no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
    if a.bucket < 1 or a.bucket & (a.bucket - 1):
        print(f"error: --bucket must be a power of two, got {a.bucket}", file=sys.stderr)
        return 2
    batch = _batch_range(a.batch) if a.batch is not None else (1, math.inf)
    if batch is None or (a.batch is not None and not a.coverage):
        # the other views read consecutive rows: a filter would join rows that were not
        print(f"error: --batch takes LO-HI (1 <= LO <= HI) and goes with --coverage, got "
              f"{a.batch!r}", file=sys.stderr)
        return 2
    for p in a.logs:
        rows = [r for r in samples(p.read_text(errors="replace")) if batch[0] <= r[0] <= batch[1]]
        view = next((v for v in VIEWS if getattr(a, v[0].replace("-", "_"))), None)
        if rows and view is not None:
            _, _, title, render = view
            if title is None:
                print(f"{server_name(p)}: {render(rows, a.bucket)}")
            else:
                print(f"{server_name(p)}: {title}")
                print(render(rows, a.bucket))
        elif rows:
            groups = split(rows, a.bucket)
            print(f"{server_name(p)}: step-time samples at {a.bucket // 2 + 1}-{a.bucket} running, ms")
            print(table(groups) if groups else "(none in this bucket)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
