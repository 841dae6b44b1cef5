"""The goodput policy's cost model against the servers measured beside it, from a sweep JSON.

  python -m adaptive_spec.bench.model_check FILE.json ... [--csv OUT.csv]

For each concurrency where the sweep ran plain, eagle3 and adaptive-spec:goodput: the goodput
server's final table (rank 0's `final_status`) at the batch bucket of plain's mean running
requests, a decode step's time at k = 0 and at eagle3's step count K (`step_ms`, the cells'
means), the prefill time each brings per decode step (`prefill_ms_admitted_tokens_per_step`
through the policy's own `PrefillLoad.per_step`, each prefill kind at its own cost where the
status reports it), and from them the EAGLE-3 / plain ratio the
model predicts, E_K / (t_K + P_K) against 1 / (t_0 + P_0), E_K from the final per-position
acceptance; beside it the ratio EAGLE-3 made (its mean output tok/s over the repeats against
plain's). Session 37: at 64 requests in session 36's `hi`/`pc` runs the model read 0.83x where
EAGLE-3 made 0.99x (a prefill's launch left out: policy/prefill_load.py).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from pathlib import Path
from typing import List

from adaptive_spec.policy.step_table import MAX_BUCKET_EXP, bucket_of
from adaptive_spec.policy.prefill_load import PrefillLoad

from .phase_summary import _aligned

COLUMNS = ["file", "concurrency", "bucket", "k", "t0_ms", "tk_ms", "prefill0_ms", "prefillk_ms",
           "model_decode_only", "model", "measured"]


def expected(per_position: List[float], k: int) -> float:
    """E_k = 1 + p_1 + p_1 p_2 + ... (per-position conditional acceptances)."""
    e, run = 1.0, 1.0
    for p in per_position[:k]:
        run *= p
        e += run
    return e


def prefill_term(model: dict) -> PrefillLoad:
    """A PrefillLoad holding the merged values a status's cost model reports: the prefill time,
    admissions and tokens a step, the prefill batches a step and, where reported, each prefill
    kind's cost a batch (session 46) and the request length with each bucket's mean batch
    (session 52)."""
    load = PrefillLoad(MAX_BUCKET_EXP + 1)
    snapshot = model.get("prefill_ms_admitted_tokens_per_step") or {}
    for bucket, (ms, admitted, tokens) in snapshot.items():
        b = int(math.log2(int(bucket)))
        load.seconds[b], load.admitted[b], load.tokens[b] = ms / 1000.0, admitted, tokens
        load.steps[b] = load.MEMORY_STEPS
    for bucket, row in (model.get("prefill_launch_ms") or {}).items():
        load.batches[int(math.log2(int(bucket)))] = row.get("batches_per_step", 0.0)
    for bucket, row in (model.get("prefill_kind_ms") or {}).items():
        kinds = []
        for ms, count in (row[0:2], row[2:4]):  # a mean not reported (session 46's first runs,
            count = count if ms is not None else 0.0  # under 4 batches) counts as none seen
            kinds += [(ms or 0.0) / 1000.0 * count, count]
        load.kinds[int(math.log2(int(bucket)))] = kinds
    moved_kinds(load, model)
    if "prefill_request_length" not in model:  # a status from before session 52: its policy's
        load.PRIOR_RATIO = 1.0  # plain / spec prior, and arrivals as measured at each bucket
    elif model["prefill_request_length"] is not None:
        load.length_admitted = load.LENGTH_MEMORY
        load.length_tokens = model["prefill_request_length"] * load.LENGTH_MEMORY
        for bucket, batch in (model.get("prefill_mean_batch") or {}).items():
            load.batch[int(math.log2(int(bucket)))] = batch
    load.refresh_merged()  # the pooled plain / spec ratio (session 47), the priced buckets
    return load


def moved_kinds(load: PrefillLoad, model: dict) -> None:
    """Where the status reports each kind's new requests a batch (session 48): those, the batch
    fit's slope and the bucket's mean batch (its new requests over its prefill batches a step),
    so `kind_mean` moves each kind's mean to that batch as the policy does; a status from before
    has no slope here: each kind at its mean as measured, as the policy then priced it."""
    admitted = model.get("prefill_kind_admitted") or {}
    fits, steps = model.get("prefill_batch_fit_ms") or {}, model.get(
        "prefill_ms_admitted_tokens_per_step") or {}
    slopes = {}
    for bucket, (plain_n, spec_n) in admitted.items():
        b = int(math.log2(int(bucket)))
        counts = (load.kinds[b][1], load.kinds[b][3])
        load.kind_admitted[b] = [(n or 0.0) * c for n, c in zip((plain_n, spec_n), counts)]
        fit, batches = fits.get(bucket), load.batches[b]
        if fit and fit[1] is not None and batches > 0 and bucket in steps:
            slopes[b] = fit[1] / 1000.0
            load.fit_sums[b][0:2] = [1.0, steps[bucket][1] / batches]  # the mean batch's requests
    load.batch_fit = lambda b: (0.0, slopes.get(b), 1.0)


KIND_VIEWS = ("shrunk", "raw", "one-mean")


def cells_at(path: Path, bucket: int, kinds: str = "shrunk",
             unseen_plain: bool = False) -> List[List[str]]:
    """The goodput server's final cost model at one batch bucket (a power of two): per measured
    k, E_k, the decode step, the prefill time per step without and with a prefill's launch
    (`prefill_launch_ms`, session 37's term), and the goodput (tokens per second per request)
    each way. Session 38: at 64 requests with up to 7 steps the launch term flipped the choice
    from plain to k = 5 where plain made 1.16-1.22x of static drafting. `kinds`: each prefill
    kind priced as the policy does (shrunk), at its own mean alone (raw: session 46's runs), or
    every prefill at the mean of all (one-mean: before session 46). `unseen_plain`: the plain
    prefills and plain's prefill launches at this bucket left out (session 47: what its wave
    guards would have left where the warm-up's wave was all of them there)."""
    status = json.loads(path.read_text())["systems"]["adaptive-spec:goodput"]["final_status"][0]
    model, per_position = status["cost_model"], status["acceptance"]["per_position"]
    cells = {int(k): ms / 1000.0 for k, ms in model["step_ms"][str(bucket)].items()}
    load = prefill_term(model)
    if unseen_plain:
        load.kinds[bucket_of(bucket)][0:2] = [0.0, 0.0]
        load.pool_kinds()
    if kinds == "one-mean":
        load.kinds = [[0.0] * 4 for _ in load.kinds]  # no kind seen: the mean of all
        load.pool_kinds()
    elif kinds == "raw":
        load.KIND_PRIOR = 1e-9  # the kind's own mean where it has batches, else its prior
    launched = PrefillLoad(MAX_BUCKET_EXP + 1, max(cells))
    load.width, load.launch, load.launches = launched.width, launched.launch, launched.launches
    b = bucket_of(bucket)
    row = (model.get("prefill_launch_ms") or {}).get(str(bucket)) or {}
    for k, value in row.items():
        if k.isdigit() and not (unseen_plain and k == "0"):
            load.launch[b * load.width + int(k)] = value[0] / 1000.0
            load.launches[b * load.width + int(k)] = value[1]
    times = [cells.get(k, 0.0) for k in range(load.width)]
    out = [["k", "E_k", "step_ms", "prefill_ms", "launch_ms", "goodput", "goodput_with_launch"]]
    for k, t in sorted(cells.items()):
        e = expected(per_position, k)
        p, x = load.per_step(b, e, plain=k == 0), load.launch_extra(b, k, times)
        with_launch = load.per_step(b, e, x, plain=k == 0)
        out.append([str(k), f"{e:.3f}", f"{1000 * t:.2f}", f"{1000 * p:.2f}",
                    f"{1000 * (with_launch - p):.2f}", f"{e / (t + p):.1f}",
                    f"{e / (t + with_launch):.1f}"])
    return out


def rows_of(path: Path) -> List[dict]:
    res = json.loads(path.read_text())
    systems = res.get("systems") or {}
    status = ((systems.get("adaptive-spec:goodput") or {}).get("final_status") or [None])[0]
    if not status:
        raise ValueError("no adaptive-spec:goodput final status")
    k = int((systems.get("eagle3") or {}).get("spec_steps") or 3)
    model = status["cost_model"]
    per_position = status["acceptance"]["per_position"]
    load = prefill_term(model)
    tok, running = {}, {}
    for r in res["rows"]:
        key = (r["system"], r["concurrency"])
        tok.setdefault(key, []).append(r["output_tok_s"])
        running.setdefault(key, []).append(r.get("mean_running") or r["concurrency"])
    out = []
    for n in sorted({c for _, c in tok}):
        if ("plain", n) not in tok or ("eagle3", n) not in tok:
            continue
        b = bucket_of(round(statistics.fmean(running[("plain", n)])))
        cells = model["step_ms"].get(str(2 ** b)) or {}
        if "0" not in cells or str(k) not in cells:
            continue
        t0, tk = cells["0"] / 1000.0, cells[str(k)] / 1000.0
        e0, ek = 1.0, expected(per_position, k)
        p0, pk = load.per_step(b, e0, plain=True), load.per_step(b, ek, plain=False)
        measured = statistics.fmean(tok[("eagle3", n)]) / statistics.fmean(tok[("plain", n)])
        out.append({"file": path.name, "concurrency": n, "bucket": 2 ** b, "k": k,
                    "t0_ms": round(1000 * t0, 2), "tk_ms": round(1000 * tk, 2),
                    "prefill0_ms": round(1000 * p0, 2), "prefillk_ms": round(1000 * pk, 2),
                    "model_decode_only": round(ek / tk * t0, 3),
                    "model": round(ek / (tk + pk) * (t0 + p0), 3),
                    "measured": round(measured, 3)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--csv", type=Path, default=None, help="also write the rows as CSV")
    ap.add_argument("--cells", type=int, default=None, metavar="BUCKET",
                    help="instead: each k's terms and goodput at this batch bucket (64: 33-64)")
    ap.add_argument("--kinds", choices=KIND_VIEWS, default="shrunk",
                    help="with --cells: prefill kinds priced as the policy does (shrunk), at "
                         "their own means alone (raw), or all at one mean (one-mean)")
    ap.add_argument("--unseen-plain", action="store_true",
                    help="with --cells: plain's prefills and launches at that bucket left out "
                         "(as a wave's)")
    a = ap.parse_args(argv)
    if a.cells is not None:
        try:
            for f in a.files:
                print(f"{f.name}: the final cost model at bucket {a.cells} (prefill kinds: "
                      f"{a.kinds}{', its plain ones left out' if a.unseen_plain else ''})")
                print(_aligned(cells_at(f, a.cells, a.kinds, a.unseen_plain)))
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            print(f"error: cannot read bucket {a.cells} of the final table: {e!r}", file=sys.stderr)
            return 2
        return 0
    rows = []
    for f in a.files:
        try:
            rows += rows_of(f)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {f}: cannot read the model and the servers: {e!r}", file=sys.stderr)
            return 2
    print(_aligned([COLUMNS] + [[str(r[c]) for c in COLUMNS] for r in rows]))
    if a.csv is not None:
        with a.csv.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
