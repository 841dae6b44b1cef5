"""Statistics on hand-made request traces; every expected value is worked out by hand here."""
import pytest

from adaptive_spec.bench import stats as st
from adaptive_spec.bench.stats import RequestRecord as R


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-9)


def two_requests():
    # r1: sent at 0.0, chunks at 0.1 (1 tok), 0.2 (1 tok), 0.4 (2 toks), done at 0.4
    #     ttft 0.1, tpot (0.4 - 0.1) / (4 - 1) = 0.1, itls [0.1, 0.2], e2e 0.4
    r1 = R(idx=0, start=0.0, end=0.4, chunk_times=[0.1, 0.2, 0.4], chunk_tokens=[1, 1, 2],
           completion_tokens=4, verify_ct=2)
    # r2: sent at 0.05, chunks at 0.25 (1), 0.35 (1), done at 0.35
    #     ttft 0.2, tpot 0.1 / 1 = 0.1, itls [0.1], e2e 0.3
    r2 = R(idx=1, start=0.05, end=0.35, chunk_times=[0.25, 0.35], chunk_tokens=[1, 1],
           completion_tokens=2, verify_ct=1)
    return [r1, r2]


def test_percentile_linear_interpolation():
    assert st.percentile([], 50) is None
    assert st.percentile([5.0], 99) == 5.0
    # sorted [1, 2, 3, 4]: rank (4-1)*0.5 = 1.5 -> 2 + 0.5*(3-2) = 2.5
    assert st.percentile([4, 1, 3, 2], 50) == approx(2.5)
    # rank 3*0.99 = 2.97 -> 3 + 0.97*(4-3) = 3.97
    assert st.percentile([4, 1, 3, 2], 99) == approx(3.97)
    assert st.percentile([4, 1, 3, 2], 0) == 1
    assert st.percentile([4, 1, 3, 2], 100) == 4
    with pytest.raises(ValueError):
        st.percentile([1], 101)


def test_per_request_values():
    r1, r2 = two_requests()
    assert r1.ttft() == approx(0.1)
    assert r1.tpot() == approx(0.1)
    assert r1.itls() == [approx(0.1), approx(0.2)]
    assert r1.e2e() == approx(0.4)
    assert r2.ttft() == approx(0.2)
    assert r2.tpot() == approx(0.1)
    assert r1.n_tokens == 4 and r1.completed
    # one token only: no TPOT
    assert R(start=0, chunk_times=[0.5], chunk_tokens=[1]).tpot() is None


def test_summarize_two_requests():
    s = st.summarize(two_requests())
    # window [0.0, 0.4]: 6 tokens / 0.4 s = 15 tok/s
    assert s["output_tok_s"] == approx(15.0)
    assert s["duration_s"] == approx(0.4)
    assert s["output_tokens"] == 6
    # ttft [0.1, 0.2]: p50 0.15 s, p99 0.1 + 0.99 * 0.1 = 0.199 s
    assert s["ttft_ms_p50"] == approx(150.0)
    assert s["ttft_ms_p99"] == approx(199.0)
    # tpot [0.1, 0.1]
    assert s["tpot_ms_p50"] == approx(100.0)
    assert s["tpot_ms_p99"] == approx(100.0)
    # itl sorted [0.1, 0.1, 0.2]: p50 = 0.1; p99: rank 1.98 -> 0.1 + 0.98 * 0.1 = 0.198
    assert s["itl_ms_p50"] == approx(100.0)
    assert s["itl_ms_p99"] == approx(198.0)
    # e2e [0.4, 0.3]: p50 0.35
    assert s["e2e_ms_p50"] == approx(350.0)
    # accept length: (4 + 2) / (2 + 1) = 2
    assert s["mean_accept_len"] == approx(2.0)
    assert (s["requests"], s["completed"], s["errors"], s["cancelled"]) == (2, 2, 0, 0)


def test_summarize_with_cut_off_and_error():
    r1, r2 = two_requests()
    # cut off at 0.3 after 2 tokens: counts for tok/s and TPOT (0.2 - 0.1) / 1
    r3 = R(idx=2, start=0.1, chunk_times=[0.2, 0.3], chunk_tokens=[1, 1], cancelled=True)
    r4 = R(idx=3, start=0.1, end=0.11, error="HTTP 500: boom")
    s = st.summarize([r1, r2, r3, r4])
    assert s["output_tokens"] == 8  # 4 + 2 + 2
    assert s["output_tok_s"] == approx(8 / 0.4)
    assert (s["requests"], s["completed"], s["cancelled"], s["errors"]) == (4, 2, 1, 1)
    # tpots [0.1, 0.1, 0.1] -> 100 ms
    assert s["tpot_ms_p50"] == approx(100.0)
    assert st.first_error([r1, r4]) == "HTTP 500: boom"
    # plain server: no verify counts -> no accept length
    assert st.mean_accept_len([R(completion_tokens=5)]) is None


def test_accept_length_counts_speculative_rounds_only():
    """Plain off steps (`--adaptive-spec-off-path plain`) make tokens without a verify round:
    the per-round histogram says what the rounds made (here 1 + 4 tokens in 2 rounds), the 25
    plain-step tokens stay out."""
    mixed = R(completion_tokens=30, verify_ct=2, accept_histogram=[1, 0, 0, 1])
    assert st.mean_accept_len([mixed]) == approx(2.5)
    assert st.mean_accept_len([R(completion_tokens=30, verify_ct=2)]) == approx(15.0)  # no histogram sent


def test_explicit_windows():
    recs = two_requests()
    # only [0.0, 0.2]: tokens at 0.1 and 0.2 -> 2 tokens / 0.2 s = 10 tok/s
    s = st.summarize(recs, window=(0.0, 0.2))
    assert s["output_tok_s"] == approx(10.0)
    assert s["requests"] == 2  # both started inside
    # two windows [0, 0.1] + [0.3, 0.4]: tokens 1 (0.1) + 1 (0.35) + 2 (0.4) = 4 in 0.2 s
    s = st.summarize(recs, windows=[(0.0, 0.1), (0.3, 0.4)])
    assert s["output_tok_s"] == approx(20.0)
    assert s["requests"] == 2  # r1 (0.0) and r2 (0.05) started inside [0, 0.1]


def test_throughput_interval_by_batch_means():
    # one request streaming 10 tokens in each of four 1-s slices: no spread, interval 0
    steady = [R(idx=0, start=0.0, end=4.0, chunk_times=[i + 0.5 for i in range(4)],
                chunk_tokens=[10] * 4, completion_tokens=40)]
    assert st.summarize(steady, window=(0.0, 4.0))["output_tok_s_ci95"] == approx(0.0)
    # slices of 10, 20, 10, 20 tok/s: mean 15, sd sqrt(100/3), t(3 dof) = 3.18, n = 4
    uneven = [R(idx=0, start=0.0, end=4.0, chunk_times=[0.5, 1.5, 2.5, 3.5],
                chunk_tokens=[10, 20, 10, 20], completion_tokens=60)]
    half = 3.18 * (100 / 3) ** 0.5 / 2
    assert st.summarize(uneven, window=(0.0, 4.0))["output_tok_s_ci95"] == pytest.approx(half, abs=0.01)
    # fewer than 4 whole slices: no interval
    assert st.summarize(uneven, window=(0.0, 3.9))["output_tok_s_ci95"] is None


def test_non_streamed_tpot():
    r = R(start=1.0, end=2.0, chunk_times=[2.0], chunk_tokens=[10])
    s = st.summarize([r], stream=False)
    assert s["tpot_ms_p50"] == approx(100.0)  # 1 s / 10 tokens
    assert s["ttft_ms_p50"] is None and s["itl_ms_p50"] is None


def test_ratios_and_envelope():
    rows = [
        {"system": "plain", "concurrency": 1, "output_tok_s": 200.0},
        {"system": "eagle3", "concurrency": 1, "output_tok_s": 500.0},
        {"system": "adaptive-spec:threshold", "concurrency": 1, "output_tok_s": 450.0},
        {"system": "plain", "concurrency": 256, "output_tok_s": 16000.0},
        {"system": "eagle3", "concurrency": 256, "output_tok_s": 11000.0},
        {"system": "adaptive-spec:threshold", "concurrency": 256, "output_tok_s": 15680.0},
        {"system": "builtin-adaptive", "concurrency": 256, "output_tok_s": None},
    ]
    env = st.envelope(rows)
    assert env[(1, None, None, None)] == 500.0 and env[(256, None, None, None)] == 16000.0
    st.add_ratios(rows)
    ours1, ours256 = rows[2], rows[5]
    assert ours1["tok_s_vs_plain"] == approx(2.25)       # 450 / 200
    assert ours1["tok_s_vs_envelope"] == approx(0.9)     # 450 / 500
    assert ours256["tok_s_vs_plain"] == approx(0.98)     # 15680 / 16000
    assert ours256["tok_s_vs_envelope"] == approx(0.98)
    assert rows[6]["tok_s_vs_plain"] is None
    assert st.ratio(1.0, 0) is None and st.ratio(None, 1.0) is None
    assert st.ratio(3.0, 2.0) == approx(1.5)


def test_repeats_pair_with_plain_of_the_same_repeat():
    # --repeat 3 at N = 64: plain drifts down over the run; ours is 0.98x of it each time
    rows = []
    for k, plain in enumerate((6000.0, 5000.0, 4000.0)):
        rows += [{"system": "plain", "concurrency": 64, "repeat": k, "output_tok_s": plain,
                  "tpot_ms_p50": 10.0 + k},
                 {"system": "ours", "concurrency": 64, "repeat": k, "output_tok_s": 0.98 * plain,
                  "tpot_ms_p50": 11.0 + k}]
    st.add_ratios(rows)
    assert [r["tok_s_vs_plain"] for r in rows if r["system"] == "ours"] == [0.98] * 3
    (p,) = st.paired_ratios(rows)
    assert p["system"] == "ours" and p["concurrency"] == 64 and p["repeats"] == 3
    assert p["mean"] == approx(0.98) and p["ci95"] == approx(0.0)
    # unpaired, the drift alone would read 0.98 +- 0.2: the pairing is what makes it exact
    rows[3]["output_tok_s"] = 0.90 * 5000.0
    (p,) = st.paired_ratios(rows)
    sd = (((0.98 - p["mean"]) ** 2 * 2 + (0.90 - p["mean"]) ** 2) / 2) ** 0.5
    assert p["mean"] == pytest.approx((0.98 * 2 + 0.90) / 3, abs=1e-4)
    assert p["ci95"] == pytest.approx(4.30 * sd / 3 ** 0.5, abs=1e-3)  # t(0.975, 2 df)
    merged = st.mean_over_repeats(rows)
    assert [(m["system"], m["output_tok_s"]) for m in merged] == [
        ("plain", pytest.approx(5000.0)), ("ours", pytest.approx((5880.0 + 4500.0 + 3920.0) / 3))]
    assert all("repeat" not in m for m in merged) and merged[0]["tpot_ms_p50"] == approx(11.0)
    assert st.paired_ratios([{"system": "ours", "concurrency": 1, "output_tok_s": 1.0}]) == []


def test_repeats_pair_with_the_better_of_plain_and_eagle3_in_the_same_repeat():
    # eagle3 wins the first repeat, plain the second: each pair's reference is that repeat's best
    rows = []
    for k, (plain, eagle3, ours) in enumerate(((1000.0, 2000.0, 1900.0), (3000.0, 2500.0, 3000.0))):
        rows += [{"system": "plain", "concurrency": 16, "repeat": k, "output_tok_s": plain},
                 {"system": "eagle3", "concurrency": 16, "repeat": k, "output_tok_s": eagle3},
                 {"system": "ours", "concurrency": 16, "repeat": k, "output_tok_s": ours}]
    (p,) = st.paired_ratios(rows, ("plain", "eagle3"))
    assert p["system"] == "ours" and p["ratios"] == [0.95, 1.0] and p["mean"] == approx(0.975)
    assert {q["system"] for q in st.paired_ratios(rows)} == {"eagle3", "ours"}  # vs plain alone


def test_means_against_the_better_mean_have_no_per_repeat_max_bias():
    # plain and eagle3 equally fast on average, readings swapped between repeats; ours equals
    # that speed every time: per-repeat max reads 0.95x, the ratio of means reads 1.0x
    rows = []
    for k, (plain, eagle3) in enumerate(((1000.0, 1100.0), (1100.0, 1000.0))):
        rows += [{"system": "plain", "concurrency": 64, "repeat": k, "output_tok_s": plain},
                 {"system": "eagle3", "concurrency": 64, "repeat": k, "output_tok_s": eagle3},
                 {"system": "ours", "concurrency": 64, "repeat": k, "output_tok_s": 1050.0}]
    (p,) = st.paired_ratios(rows, ("plain", "eagle3"))
    assert p["mean"] == pytest.approx(1050 / 1100, abs=1e-4)
    (m,) = st.means_vs_envelope(rows)
    assert m["system"] == "ours" and m["ratio"] == approx(1.0) and m["repeats"] == 2
    assert m["envelope_tok_s"] == approx(1050.0) and m["mean_tok_s"] == approx(1050.0)
    lo, hi = m["ci95"]
    assert lo < 1.0 < hi  # the references' spread widens the interval
    rows[-1]["output_tok_s"] = 840.0  # ours 945 on average: 0.9x the better mean
    (m,) = st.means_vs_envelope(rows)
    assert m["ratio"] == approx(0.9)
    # one repeat, or no reference at the level: nothing to report
    assert st.means_vs_envelope(rows[:3]) == []
    assert st.means_vs_envelope([r for r in rows if r["system"] == "ours"]) == []


def test_pairs_of_one_system_pool_over_runs_that_named_it_differently():
    def run(name, ratios, n=64):
        rows = []
        for k, q in enumerate(ratios):
            rows += [{"system": "plain", "concurrency": n, "repeat": k, "output_tok_s": 1000.0},
                     {"system": name, "concurrency": n, "repeat": k, "output_tok_s": 1000.0 * q},
                     {"system": "other", "concurrency": n, "repeat": k, "output_tok_s": 5.0}]
        return rows

    (p,) = st.pooled_pairs([run("off-a", (0.9, 1.0)), run("off-b", (1.1,))], ["off-a", "off-b"])
    assert p["concurrency"] == 64 and p["pairs"] == 3 and p["mean"] == approx(1.0)
    assert p["ratios"] == [0.9, 1.0, 1.1]
    assert p["ci95"] == pytest.approx(4.30 * 0.1 / 3 ** 0.5, abs=1e-3)  # sd 0.1, t(0.975, 2 df)
    assert st.pooled_pairs([run("off-a", (0.9,))], ["nope"]) == []
    with_eagle3 = run("goodput", (0.9,)) + [{"system": "eagle3", "concurrency": 64, "repeat": 0,
                                             "output_tok_s": 1800.0}]
    (p,) = st.pooled_pairs([with_eagle3, run("goodput", (1.1,))], ["goodput"], ("plain", "eagle3"))
    assert p["ratios"] == [0.5, 1.1]  # over eagle3 where the run has it, else over plain


def test_runs_of_one_pass_pool_one_pair_a_level():
    """Session 47's sweeps ran one pass each and wrote no `repeat`: `paired` over two of them
    found no pairs."""
    def one_pass(ours, plain=1000.0, eagle3=900.0):
        return [{"system": "plain", "concurrency": 64, "output_tok_s": plain},
                {"system": "eagle3", "concurrency": 64, "output_tok_s": eagle3},
                {"system": "goodput", "concurrency": 64, "output_tok_s": ours}]

    (p,) = st.pooled_pairs([one_pass(950.0), one_pass(1900.0, eagle3=2000.0)], ["goodput"],
                           ("plain", "eagle3"))
    assert p["pairs"] == 2 and p["ratios"] == [0.95, 0.95]  # 950 / 1000, 1900 / 2000
    twice = one_pass(950.0) + one_pass(990.0)  # a level twice without repeats: not paired
    assert st.pooled_pairs([twice], ["goodput"]) == []


def test_lossless_check():
    outs = {
        "plain": {("c1", 0): [5, 5, 5, 5], ("c1", 1): [7, 7, 7]},
        "eagle3": {("c1", 0): [5, 5, 5, 5], ("c1", 1): [7, 7]},       # cut short: prefix ok
        "adaptive-spec:threshold": {("c1", 0): [5, 5, 6, 5], ("c1", 1): [7, 7, 7]},
    }
    res = st.lossless_check(outs)
    assert res["eagle3"] == {"identical_to_plain": True, "requests": 2, "tokens": 6,
                             "mismatches": 0, "first_mismatch": None}
    bad = res["adaptive-spec:threshold"]
    assert bad["identical_to_plain"] is False and bad["mismatches"] == 1
    assert bad["first_mismatch"]["position"] == 2
    assert "plain" not in res
    assert st.lossless_check({"eagle3": {}}) == {}


def test_histograms():
    assert st.histogram_diff({"0": 10, "3": 7}, {"0": 4, "3": 7}) == {"0": 6}
    assert st.histogram_diff({"1": 2}, None) == {"1": 2}
    assert st.histogram_diff(None, {"1": 2}) is None
    assert st.histogram_of([3, 3, None, 0]) == {"3": 2, "0": 1}
    assert st.histogram_of([None]) is None


def test_record_roundtrip():
    r1, _ = two_requests()
    d = r1.to_dict()
    assert st.RequestRecord.from_dict(d).tpot() == approx(0.1)


def test_decode_rates_from_sglang_log_lines():
    from adaptive_spec.bench.log_throughput import decode_rates

    def line(running, gen):
        return (f"[2026-11-29 18:21:39] Decode batch, #running-req: {running}, #token: 1, "
                f"token usage: 0.5, cuda graph: True, gen throughput (token/s): {gen}, #queue-req: 0")

    lines = [line(256, 20000.0), line(250, 22000.0), line(200, 9.0),  # 200: no level
             line(64, 10000.0), line(61, 9000.0), line(60, 1.0),      # 60 < 0.95 * 64
             "[..] Prefill batch, #new-seq: 8, input throughput (token/s): 5.0"]
    got = decode_rates(lines, levels=(64, 256))
    assert got == {64: [10000.0, 9000.0], 256: [20000.0, 22000.0]}


def test_prefill_batches_are_counted_per_running_level():
    from adaptive_spec.bench.log_throughput import prefill_batches

    def line(running):
        return (f"[2026-11-29 20:40:11] Prefill batch, #new-seq: 2, #new-token: 168, #cached-token: 0, "
                f"token usage: 0.19, #running-req: {running}, #queue-req: 0, #pending-token: 0")

    lines = [line(126), line(130), line(100), line(256), "Decode batch, #running-req: 128, x"]
    assert prefill_batches(lines, levels=(128, 256)) == {128: 2, 256: 1}


def test_prefill_requests_sum_the_new_sequences_of_those_batches(capsys, tmp_path):
    from adaptive_spec.bench.log_throughput import main, prefill_requests

    def line(new_seq, running):
        return (f"[2026-12-03 12:40:11] Prefill batch, #new-seq: {new_seq}, #new-token: 168, #cached-token: 0, "
                f"token usage: 0.19, #running-req: {running}, #queue-req: 0, #pending-token: 0")

    lines = [line(1, 126), line(2, 130), line(3, 100), line(5, 256)]
    assert prefill_requests(lines, levels=(128, 256)) == {128: 3, 256: 5}
    log = tmp_path / "server-plain.log.batches"
    log.write_text("\n".join(lines) + "\n")
    assert main([str(log)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].endswith(",prefill_batches,prefill_requests,prefills_past_level")
    assert [r.split(",")[-3:-1] for r in rows[1:] if r.split(",")[1] == "128"] == [["2", "3"]]


def test_prefills_past_a_level_count_batches_that_would_hold_more_than_its_clients():
    """Session 34: beside a full closed loop's prefill SGLang still holds the finished requests
    their successors replace (#running-req 31 + #new-seq 2 at 32 clients)."""
    from adaptive_spec.bench.log_throughput import prefills_past_level

    def line(new_seq, running):
        return (f"[2026-12-03 14:40:11] Prefill batch, #new-seq: {new_seq}, #new-token: 80, #cached-token: 0, "
                f"token usage: 0.1, #running-req: {running}, #queue-req: 0, #pending-token: 0")

    lines = [line(2, 31), line(1, 31), line(1, 32), line(3, 31), line(3, 30), line(5, 127)]  # 30: not at 32
    assert prefills_past_level(lines, levels=(32, 128)) == {32: 3, 128: 1}


def test_a_levels_decisions_in_its_steady_window_apart_from_ramp_and_drain():
    # session 17: a 128-request level's drafting steps were mostly in its ramp-up and drain,
    # which the level's totals could not show
    from adaptive_spec.bench.sweep import Sweep

    def sample(t, on, off):
        return {"t": t, "running": 100, "decisions": {"3:cost_model": on, "0:cost_model": off},
                "step_modes": {"on": on, "off": off}}

    samples = [sample(0.0, 0, 0), sample(1.0, 40, 10),   # ramp-up: drafting at small batches
               sample(2.0, 41, 200), sample(5.0, 42, 800),  # steady: plain, one probe step
               sample(6.0, 90, 810)]  # drain
    row = {}
    Sweep._server_side(None, row, samples, steady=(1.5, 5.5))
    assert row["decisions"] == {"3:cost_model": 90, "0:cost_model": 810}
    assert row["decisions_steady"] == {"3:cost_model": 1, "0:cost_model": 600}
    assert row["step_modes_steady"] == {"on": 1, "off": 600}
    row = {}
    Sweep._server_side(None, row, samples)  # no steady window: the totals only
    assert "decisions_steady" not in row
