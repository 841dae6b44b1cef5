"""model_check: the goodput policy's cost model against EAGLE-3 and plain measured beside it,
read from a committed sweep (session 36's 16 / 128 / 256 run)."""
import csv
import json
import statistics
from pathlib import Path

import pytest

from adaptive_spec.bench import model_check

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
HI = RESULTS / "2026-12-04-s36-dense-16-128-256.json"


def test_the_measured_and_decode_only_columns_follow_from_the_sweep(tmp_path, capsys):
    out = tmp_path / "check.csv"
    assert model_check.main([str(HI), "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    res = json.loads(HI.read_text())
    # 128 / 256: the final table has no k = 3 cell at plain's bucket (plain ran there): no row
    assert [int(r["concurrency"]) for r in rows] == [16]
    row = rows[0]
    tok = {s: [x["output_tok_s"] for x in res["rows"]
               if x["system"] == s and x["concurrency"] == 16] for s in ("plain", "eagle3")}
    made = statistics.fmean(tok["eagle3"]) / statistics.fmean(tok["plain"])
    assert float(row["measured"]) == round(made, 3)
    status = res["systems"]["adaptive-spec:goodput"]["final_status"][0]
    p = status["acceptance"]["per_position"]
    e3 = 1 + p[0] + p[0] * p[1] + p[0] * p[1] * p[2]
    cells = status["cost_model"]["step_ms"]["16"]
    assert float(row["model_decode_only"]) == round(e3 / cells["3"] * cells["0"], 3)
    # the prefill term adds more per step to the drafting step here (more requests finish)
    assert float(row["prefillk_ms"]) > float(row["prefill0_ms"]) > 0
    assert "concurrency" in capsys.readouterr().out


def test_a_sweep_without_the_goodput_server_is_one_line_and_status_2(tmp_path, capsys):
    f = tmp_path / "plain-only.json"
    f.write_text(json.dumps({"systems": {"plain": {}}, "rows": []}))
    assert model_check.main([str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no adaptive-spec:goodput final status" in err


def test_cells_reproduce_the_policys_own_choice_at_a_bucket(capsys):
    """--cells on session 38's k7 run at 33-64 running: with the launch term the best k and its
    gain over plain are what the policy's status reported (`choice_by_bucket`); without it plain
    leads."""
    path = RESULTS / "2026-12-05-s38-dense-16-32-64-k7.json"
    rows = model_check.cells_at(path, 64)[1:]
    without = {int(r[0]): float(r[5]) for r in rows}
    with_launch = {int(r[0]): float(r[6]) for r in rows}
    best = max(with_launch, key=with_launch.get)
    status = json.loads(path.read_text())["systems"]["adaptive-spec:goodput"]["final_status"][0]
    k, gain = status["cost_model"]["choice_by_bucket"]["64"]
    assert best == k and with_launch[best] / with_launch[0] == pytest.approx(gain, abs=0.002)
    assert max(without, key=without.get) == 0
    assert model_check.main(["--cells", "48", str(path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_each_prefill_kind_is_priced_at_its_own_cost_where_the_status_reports_it(tmp_path):
    """Session 46: plain at k = 0 and EAGLE-3's step count at the spec prefills' cost a batch,
    times the prefill batches a step; a status without the kinds reads as before."""
    model = {"step_ms": {"64": {"0": 8.0, "3": 19.5}},
             "prefill_ms_admitted_tokens_per_step": {"64": [3.0, 0.5, 1.0]},
             "prefill_launch_ms": {"64": {"batches_per_step": 0.4}},
             "prefill_kind_ms": {"64": [5.0, 40.0, 10.0, 40.0]}}
    rows = [{"system": s, "concurrency": 64, "output_tok_s": 100.0, "mean_running": 64}
            for s in ("plain", "eagle3")]

    def checked(cost_model):
        status = {"cost_model": cost_model, "acceptance": {"per_position": [0.7, 0.7, 0.7]}}
        f = tmp_path / "sweep.json"
        f.write_text(json.dumps({"systems": {"adaptive-spec:goodput": {"final_status": [status]},
                                             "eagle3": {"spec_steps": 3}}, "rows": rows}))
        (row,) = model_check.rows_of(f)
        return row["prefill0_ms"], row["prefillk_ms"]

    # 3 ms a step over 0.4 batches: 7.5 ms a batch over both, split at the pooled ratio
    # 0.5^(40/48) = 0.561231 (session 47): plain 5.392 ms, spec 9.608; each kind shrunk to its
    # share by 8 pseudo-batches: plain (40 x 5 + 8 x 5.392) / 48 = 5.065 ms, spec 9.935.
    # E_3 = 2.533: 1.2665 admitted a step drafting, (1 - e^-1.2665) / (1 - e^-0.5) = 1.8252 x
    # the batches a step; plain 5.065 x 0.4 = 2.03 ms, spec 9.935 x 0.4 x 1.8252 = 7.25
    assert checked(model) == (2.03, 7.25)
    # session 46's first runs left a kind's mean out under 4 batches: read as none seen, plain
    # at the mean of all (3 ms a step); spec as above
    model["prefill_kind_ms"] = {"64": [None, 3.0, 10.0, 40.0]}
    assert checked(model) == (3.0, 7.0)
    del model["prefill_kind_ms"]
    assert checked(model) == (3.0, 5.48)  # the mean of both: 3 ms a step, x 1.8252 drafting


def test_cells_price_the_prefill_kinds_three_ways():
    """Session 46's table (README): the kd run's final model at 33-64 with the kinds shrunk (the
    policy), raw (as it ran) and at one mean (before)."""
    path = RESULTS / "2026-12-06-s46-dense-32-64-kd.json"
    cost = json.loads(path.read_text())["systems"]["adaptive-spec:goodput"]["final_status"][0][
        "cost_model"]
    plain_ms, plain_n, spec_ms, spec_n = cost["prefill_kind_ms"]["64"]
    mean_all = cost["prefill_ms_admitted_tokens_per_step"]["64"][0] / cost["prefill_launch_ms"][
        "64"]["batches_per_step"]  # 1.788 ms a step over 0.2021 batches: 8.85 ms a batch
    prefill = {view: {int(r[0]): float(r[3]) for r in model_check.cells_at(path, 64, view)[1:]}
               for view in model_check.KIND_VIEWS}
    one_mean, raw, shrunk = prefill["one-mean"], prefill["raw"], prefill["shrunk"]
    # each way scales one mean a batch by the batches a step at k alike: the views differ by
    # the cost a batch alone. Spec (8.1 batches of 17.8 ms): raw 17.8 / 8.85 of one mean;
    # shrunk by 8 pseudo-batches at its share of the mean of all, split at the plain / spec
    # ratio (session 47; 64 is the only bucket with both kinds): 0.496^(8.1 / 16.1) = 0.703,
    # spec's share 8.85 / (0.905 x 0.703 + 0.095) = 12.11 ms; (8.1 x 17.8 + 8 x 12.11) / 16.1
    # = 14.99 ms: 1.69x
    assert raw[3] == pytest.approx(one_mean[3] * spec_ms / mean_all, abs=0.02)
    ratio = (plain_ms / spec_ms) ** (spec_n / (spec_n + 8))
    share = plain_n / (plain_n + spec_n)
    spec_prior = mean_all / (share * ratio + 1 - share)
    spec_shrunk = (spec_n * spec_ms + 8 * spec_prior) / (spec_n + 8)
    assert spec_shrunk == pytest.approx(14.99, abs=0.01)
    assert shrunk[3] == pytest.approx(one_mean[3] * spec_shrunk / mean_all, abs=0.02)
    assert one_mean[3] < shrunk[3] < raw[3]
    # plain (77.5 batches of 8.85 ms, nearly all there were): the same every way
    assert raw[0] == pytest.approx(one_mean[0] * plain_ms / mean_all, abs=0.02)
    assert plain_n > spec_n


def test_cells_price_a_bucket_whose_plain_prefills_are_left_out():
    """Session 47's first sweep: its only plain prefills at 64 were the warm-up's wave (10.4 ms
    a batch, spec 8.3); left out, plain at 64 is priced at 128's plain / spec ratio."""
    path = RESULTS / "2026-12-06-s47-dense-1-128-fs.json"
    cost = json.loads(path.read_text())["systems"]["adaptive-spec:goodput"]["final_status"][0][
        "cost_model"]
    assert cost["prefill_kind_ms"]["64"] == [10.433, 10.0, 8.293, 63.7]
    kept = {int(r[0]): r for r in model_check.cells_at(path, 64)[1:]}
    left = {int(r[0]): r for r in model_check.cells_at(path, 64, unseen_plain=True)[1:]}
    assert left[3] == kept[3]  # drafting's price is its own kind's either way
    # 128 alone pools: 7.553 / 9.828 = 0.7685 over 10.1 batches shrunk by 8: 0.7685^(10.1 /
    # 18.1) = 0.8633; plain at 64 is its share of the mean of all (0 plain batches left there):
    # the whole mean split at 0.8633, against (10 x 10.433 + 8 x mean share) / 18 kept
    assert float(left[0][3]) < 0.8 * float(kept[0][3])
    assert float(left[0][6]) > float(kept[0][6])  # plain's goodput rises


def test_each_kind_is_moved_to_the_buckets_batch_where_the_status_reports_its_batches():
    """Session 48: a kind's mean moves to the bucket's batch size along the fit's slope. The
    status of the unit test's bucket (test_prefill_load.py, "larger batches"): plain 10.8 ms
    over 6 batches of 7 new requests, spec 8 ms over 30 of 2, a slope of 0.758621 ms a request
    and 2.833333 new requests a batch (1.02 admitted over 0.36 batches a step)."""
    model = {"prefill_ms_admitted_tokens_per_step": {"64": [3.048, 1.02, 1.0]},
             "prefill_launch_ms": {"64": {"batches_per_step": 0.36}},
             "prefill_batch_fit_ms": {"64": [6.317, 0.758621, 36.0]},
             "prefill_kind_ms": {"64": [10.8, 6.0, 8.0, 30.0]},
             "prefill_kind_admitted": {"64": [7.0, 2.0]}}
    load = model_check.prefill_term(model)
    # as the unit test works out: plain 7.904474 ms a batch, spec 8.612629
    assert load.kind_cost(6, True) == pytest.approx(0.007904474, rel=1e-5)
    assert load.kind_cost(6, False) == pytest.approx(0.008612629, rel=1e-5)
    del model["prefill_kind_admitted"]  # a status from before: each kind as measured
    before = model_check.prefill_term(model)
    assert before.kind_cost(6, True) == pytest.approx(0.010008, rel=1e-3)  # 10.01 ms
    assert before.kind_cost(6, True) > before.kind_cost(6, False)
