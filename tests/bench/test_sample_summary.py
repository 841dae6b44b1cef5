"""The per-sample step-time log (ADAPTIVE_SPEC_SAMPLE_LOG) from the controller to
sample_summary's table, through a real log line."""
import json
import types

import pytest

from adaptive_spec import sample_log, signals
from adaptive_spec.bench import sample_summary as ss
from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.signals import LoadSnapshot


def run_controller(monkeypatch, results):
    """A goodput controller timing `results` [(seconds since the last, k, batch size, mode or
    'prefill')] with the sample log on; returns the log lines it wrote."""
    monkeypatch.setenv(sample_log.ENV, "1")
    now = [0.0]
    monkeypatch.setattr(signals, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
    lines = []
    ctl.sample_log.emit = lines.append
    ctl.on_snapshot(LoadSnapshot(running=64))
    for seconds, k, bs, mode in results:
        now[0] += seconds
        if mode == "prefill":
            ctl.on_prefill_result(admitted=1)
        elif mode == "extend":
            ctl.on_extend()
        else:
            ctl.on_result(k, [1 if k else 0] * bs, mode)
    ctl.status()  # a status read flushes what is buffered
    return lines


def test_each_sample_carries_its_circumstances(monkeypatch):
    lines = run_controller(monkeypatch, [
        (0.0, 0, 60, "off"),       # the first result: no interval
        (0.006, 0, 60, "off"),     # steady
        (0.009, 0, 0, "prefill"),  # a prefill's result restarts the clock
        (0.007, 0, 62, "off"),     # after the prefill, two requests merged in
        (0.030, 3, 62, "catchup"),  # a switch on: SGLang's catch-up step, not a sample for the policy
        (0.018, 3, 62, "on"),      # the first drafting step (the catch-up result says k = 3 here)
        (0.017, 3, 62, "on"),      # steady drafting
    ])
    rows = ss.samples("\n".join(f"[2026-12-04 19:00:00] {ln}" for ln in lines))
    assert rows == [  # batch, k, ms, flags, prefill ms since the last result, tokens a request
        [60, 0, 6.0, 0, 0.0, 1.0],
        # the off step a switch on lands in (the catch-up's host work): the switch cost's
        [62, 0, 7.0, sample_log.AFTER_PREFILL | sample_log.GREW | sample_log.DROPPED, 9.0, 1.0],
        [62, 3, 30.0, sample_log.SWITCHED | sample_log.DROPPED, 0.0, 2.0],
        [62, 3, 18.0, 0, 0.0, 2.0],  # the catch-up ran k = 3's step count already: no switch here
        [62, 3, 17.0, 0, 0.0, 2.0],
    ]


def test_the_realized_table_counts_prefills_and_tokens_and_leaves_switches_out(tmp_path, capsys):
    rows = [[60, 0, 6.0, 0, 0.0, 1.0], [60, 0, 6.0, 0, 4.0, 1.0],  # plain: 2 tokens in 16 ms
            [60, 0, 6.0, 0, 0.0, 1.0],  # the off step before a switch on: left out
            [60, 3, 40.0, sample_log.SWITCHED, 0.0, 1.0],  # the catch-up: left out
            [60, 3, 18.0, 0, 2.0, 2.5], [60, 3, 18.0, sample_log.UNSTEADY, 0.0, 2.5],
            [60, 3, 20.0, 0, 0.0, 2.0],  # k = 3: 4.5 tokens in 40 ms
            [8, 0, 5.0, 0]]  # a row of an old log: left out
    lines = ss.realized_table(rows).splitlines()
    cols = [ln.split() for ln in lines[1:]]
    assert cols[0][:3] == ["33-64", "0", "2"] and cols[0][6] == f"{2000 / 16:.1f}"
    assert cols[1][:3] == ["33-64", "3", "2"] and cols[1][6] == f"{4500 / 40:.1f}"
    assert cols[1][7] == f"{(4500 / 40) / (2000 / 16):.3f}"
    assert len(cols) == 2
    assert "before session 40" in ss.realized_table([[8, 0, 5.0, 0]])
    modes = [ln.split() for ln in ss.prefill_modes(
        rows + [[60, 0, 6.0, sample_log.PLAIN_PREFILL, 3.0, 1.0]]).splitlines()[1:]]
    assert modes == [["33-64", "plain", "1", "3.00"], ["33-64", "spec", "2", "3.00"]]
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(f"adaptive_spec samples rank=0 rows={json.dumps(rows[:-1])}\n")
    assert ss.main([str(log), "--realized"]) == 0
    assert "tok/s/req" in capsys.readouterr().out


def test_a_row_after_a_plain_prefill_is_flagged(monkeypatch):
    monkeypatch.setenv(sample_log.ENV, "1")
    ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
    lines = []
    ctl.sample_log.emit = lines.append
    ctl.on_snapshot(LoadSnapshot(running=8))
    ctl.on_result(0, [0] * 8, "off")
    for mode in ("prefill-plain", "prefill-spec"):
        ctl.note_mode(mode)
        ctl.on_prefill_result(admitted=1)
        ctl.on_result(0, [0] * 8, "off")
    ctl.on_result(0, [0] * 8, "off")
    ctl.status()
    flags = [row[3] & sample_log.PLAIN_PREFILL for row in ss.samples("\n".join(lines))]
    # the first result has no interval; the last off row waits for the next result's verdict
    assert flags == [sample_log.PLAIN_PREFILL, 0]


def test_a_ramp_is_flagged_unsteady_until_the_recent_size_catches_up():
    log = sample_log.SampleLog(emit=lambda line: None)
    sizes = [64] * 5 + [40] * 30 + [64] * 60  # a drain to 40 for 30 steps, then back to 64
    for bs in sizes:
        log.on_sample(bs, 0, 0.006, used=True)
    unsteady = [i for i, row in enumerate(log.rows) if row[3] & sample_log.UNSTEADY]
    assert unsteady[0] == 5  # the first step at 40
    assert any(sizes[i] == 64 for i in unsteady if i > 35)  # back at 64, the recent size lags
    assert unsteady[-1] < len(sizes) - 10  # and catches up


def test_the_summary_splits_a_bucket_by_class(tmp_path, capsys):
    rows = [[64, 0, 6.0, 0], [60, 0, 6.4, 0], [64, 0, 9.0, sample_log.AFTER_PREFILL],
            [64, 0, 12.0, sample_log.SWITCHED | sample_log.GREW], [20, 0, 4.0, 0], [64, 3, 17.0, 0]]
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text("other line\n"
                   f"[t] adaptive_spec samples rank=0 rows={json.dumps(rows[:3])}\n"
                   "[t] adaptive_spec samples rank=1 rows=[[64, 0, 99.0, 0]]\n"  # rank 0's only
                   f"[t] adaptive_spec samples rank=0 rows={json.dumps(rows[3:])}\n")
    assert ss.main([str(log), "--bucket", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "adaptive-spec_goodput: step-time samples at 33-64 running, ms"
    table = {tuple(line.split()[:2]): line.split()[2:] for line in out[2:]}
    assert table[("0", "steady")][0] == "2" and table[("0", "steady")][-1] == "6.20"  # 20 running is another bucket
    assert table[("0", "after-prefill")][0] == "1" and table[("0", "after-switch")][0] == "1"
    assert table[("3", "steady")] == ["1", "17.00", "17.00", "17.00", "17.00"]


@pytest.mark.parametrize("args", [["nope.log"], ["LOG", "--bucket", "48"]])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args):
    log = tmp_path / "server-x.log"
    log.write_text("")
    args = [str(tmp_path / a) if a.endswith(".log") else (str(log) if a == "LOG" else a) for a in args]
    assert ss.main(args) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_off_by_default(monkeypatch):
    monkeypatch.delenv(sample_log.ENV, raising=False)
    assert Controller(AdaptiveSpecConfig(policy="goodput")).sample_log is None


def test_quartiles_stay_within_the_samples():
    text = ss.table({(2, "dropped"): [14.7, 148.6]})
    row = text.splitlines()[1].split()
    p25, p50, p75 = (float(v) for v in row[3:6])
    assert 14.7 <= p25 <= p50 <= p75 <= 148.6 and p50 == pytest.approx(81.65, abs=0.01)



def test_the_launch_table_reads_a_prefills_launch_beside_the_decode_step(monkeypatch, capsys, tmp_path):
    """A prefill launched before a plain step's result is processed puts its host work in that
    result (8 ms here) and the step after the prefill's result runs 1 ms short: the table reads
    them over the cell's median; the controller gave the first to the prefill term, not the
    step-time table (flagged dropped), and kept the second."""
    steps = [(0.0, 0, 64, "off")] + [(0.006, 0, 64, "off")] * 12
    for _ in range(4):
        steps += [(0.0, 0, 0, "extend"), (0.014, 0, 64, "off"), (0.005, 0, 0, "prefill"),
                  (0.005, 0, 64, "off")] + [(0.006, 0, 64, "off")] * 4
    lines = run_controller(monkeypatch, steps)
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text("\n".join(f"[2026-12-04 19:00:00] {ln}" for ln in lines))
    rows = ss.samples(log.read_text())
    beside = [r for r, nxt in zip(rows, rows[1:]) if nxt[3] & sample_log.AFTER_PREFILL]
    assert [r[2] for r in beside] == [14.0] * 4 and all(r[3] & sample_log.DROPPED for r in beside)
    after = [r for r in rows if r[3] & sample_log.AFTER_PREFILL]
    assert [r[2] for r in after] == [5.0] * 4 and not any(r[3] & sample_log.DROPPED for r in after)
    assert ss.main([str(log), "--launches"]) == 0
    out = capsys.readouterr().out.splitlines()
    # 12 + 4 x 4 others, the last one still held for its verdict when the log was read; the
    # pairs: 14 ms beside the launch, 5 after the prefill's result, 7 ms over two 6-ms steps
    assert out[2].split() == ["64", "0", "27", "6.00", "4", "14.00", "5.00", "+8.00", "+7.00"]


def test_crossings_count_bucket_changes_and_the_switches_at_them(tmp_path, capsys):
    """A batch moving between 30 and 34 (buckets 17-32 and 33-64) with drafting on at 30 and off
    at 34: every crossing is a switch; one more switch inside a bucket."""
    rows = [[30, 3, 11.0, 0], [34, 0, 6.0, 0], [30, 3, 11.0, 0], [34, 0, 6.0, 0],
            [34, 3, 16.0, 0], [70, 3, 20.0, 0]]
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(f"[t] adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--crossings"]) == 0
    assert capsys.readouterr().out.strip() == (
        "adaptive-spec_goodput: 6 results; bucket changes 4 (17-32 <-> 33-64: 3  "
        "33-64 <-> 65-128: 1); drafting turned on or off 4 times, 3 at a bucket change")


def test_drafting_runs_are_counted_from_each_switch_on_by_their_first_bucket(tmp_path, capsys):
    """Two runs from plain at 33-64 (3 and 1 results) and one at 17-32; drafting from the
    first result on is no switch on."""
    rows = [[30, 3, 11.0, 0], [34, 0, 6.0, 0], [34, 3, 16.0, 0], [36, 3, 16.0, 0],
            [30, 3, 11.0, 0], [30, 0, 5.0, 0], [30, 2, 10.0, 0], [40, 0, 6.0, 0],
            [40, 1, 14.0, 0]]
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(f"[t] adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--drafting-runs"]) == 0
    lines = [ln.split() for ln in capsys.readouterr().out.strip().splitlines()]
    assert lines[1] == ["bucket", "runs", "results", "ms", "lengths"]
    assert lines[2] == ["17-32", "1", "1", "10.0", "1"]
    assert lines[3] == ["33-64", "2", "4", "57.0", "3", "1"]


def test_arrivals_time_each_stay_entered_from_below_until_plain_settles(tmp_path, capsys):
    """Session 44: a stay at 33-64 entered from a drain while drafting (a lone plain result and a
    probe do not settle it; 32 plain results in a row do), one that starts plain and never
    drafts, and one that never settles; a stay entered from above (128) is not one."""
    drafting_arrival = ([[60, 0, 10.0, 0, 90.0, 1.0]] + [[64, 3, 20.0, 0, 0.0, 2.5]] * 50
                        + [[64, 0, 7.0, 0, 0.0, 1.0]] * 5 + [[64, 1, 15.0, 0, 0.0, 1.6]] * 7
                        + [[64, 0, 7.0, 0, 0.0, 1.0]] * 40)
    rows = ([[4, 3, 8.0, 0, 0.0, 2.5]] + drafting_arrival + [[20, 3, 12.0, 0, 0.0, 2.5]]
            + [[64, 0, 7.0, 0, 0.0, 1.0]] * 40 + [[100, 0, 8.0, 0, 0.0, 1.0]]
            + [[64, 0, 7.0, 0, 0.0, 1.0]] * 3 + [[8, 3, 9.0, 0, 0.0, 2.5]]
            + [[64, 3, 20.0, 0, 0.0, 2.5]] * 10)
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(f"[t] adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--arrivals", "--bucket", "64"]) == 0
    lines = [ln.split() for ln in capsys.readouterr().out.strip().splitlines()]
    assert lines[1] == ["stay", "results", "s", "plain", "settled", "at", "s", "drafting", "share"]
    # 0.1 s (the first result and its prefill) + 50 x 20 ms + 5 x 7 + 7 x 15 before the 40 plain
    # drafting 1,000 + 105 of 1,520 ms in all = 0.73
    assert lines[2] == ["1", "103", "1.52", "1.24", "0.73"]
    assert lines[3] == ["2", "40", "0.28", "0.00", "0.00"]
    assert lines[4] == ["3", "10", "0.20", "-", "1.00"]
    assert len(lines) == 5
    assert ss.main([str(log), "--arrivals", "--bucket", "16"]) == 0
    assert "no stay at 9-16 running entered from below" in capsys.readouterr().out


def test_coverage_counts_every_row_and_the_batch_tokens(tmp_path, capsys):
    """Session 45: the server's throughput as its rows account for it, switches and ramps
    included (the realized view leaves them out), per bucket and k and in all."""
    rows = [[60, 0, 6.0, 0, 4.0, 1.0],  # 60 tokens in 10 ms
            [60, 3, 40.0, sample_log.SWITCHED, 0.0, 2.0],  # the catch-up: counted here
            [40, 3, 20.0, sample_log.UNSTEADY, 0.0, 2.5],  # a ramp: counted too
            [100, 0, 9.0, 0, 1.0, 1.0],  # 100 tokens in 10 ms
            [8, 0, 5.0, 0]]  # a row of an old log: left out
    cols = [ln.split() for ln in ss.coverage(rows).splitlines()[1:]]
    # 33-64, k = 3: 60 x 2 + 40 x 2.5 = 220 tokens in 60 ms = 3,667 a second; a mean batch of
    # 50, so 73.3 a request
    assert cols == [["33-64", "0", "1", "0.01", "6000", "60.0", "100.0"],
                    ["33-64", "3", "2", "0.06", "3667", "50.0", "73.3"],
                    ["65-128", "0", "1", "0.01", "10000", "100.0", "100.0"],
                    # 60 + 220 + 100 = 380 tokens in 80 ms; batch (60 + 60 + 40 + 100) / 4 = 65
                    ["all", "-", "4", "0.08", "4750", "65.0", "73.1"]]
    assert "before session 40" in ss.coverage([[8, 0, 5.0, 0]])
    log = tmp_path / "server-adaptive-spec_forced-on.log"
    log.write_text(f"adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--coverage"]) == 0
    assert "batch tok/s" in capsys.readouterr().out


def test_coverage_keeps_the_batch_range_asked_for(tmp_path, capsys):
    """`--batch 60-64`: a level's steady rows without its drain (session 45 read session 44's
    log at 60-64); the range goes with --coverage only, the other views read consecutive rows."""
    rows = [[64, 0, 8.0, 0, 2.0, 1.0], [62, 0, 8.0, 0, 0.0, 1.0],  # 126 tokens in 18 ms
            [30, 3, 12.0, 0, 0.0, 2.5]]  # the drain: left out
    log = tmp_path / "server-adaptive-spec_forced-off.log"
    log.write_text(f"adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--coverage", "--batch", "60-64"]) == 0
    cols = [ln.split() for ln in capsys.readouterr().out.strip().splitlines()[2:]]
    # 126 / 0.018 = 7,000 batch tokens a second, a mean batch of 63: 111.1 a request
    assert cols == [["33-64", "0", "2", "0.02", "7000", "63.0", "111.1"],
                    ["all", "-", "2", "0.02", "7000", "63.0", "111.1"]]
    for args in (["--coverage", "--batch", "64-60"], ["--coverage", "--batch", "x"],
                 ["--arrivals", "--batch", "60-64"]):
        assert ss.main([str(log), *args]) == 2
        assert "--batch takes LO-HI" in capsys.readouterr().err


def test_replay_table_takes_launched_rows_into_a_cell_at_the_buckets_share(tmp_path, capsys):
    """Session 49: a level's rows through the step-time table, with launched samples as ordinary
    ones (as before) and at the bucket's launched share; launched: a dropped row whose next row
    is flagged after-prefill. Another dropped row (a re-entry's) never reached the table."""
    drop, after = sample_log.DROPPED, sample_log.AFTER_PREFILL
    rows = []
    for i in range(32):  # k = 2: every 8th row beside a launch, 4 of 32: the share 0.125
        launched = i % 8 == 0
        flags = drop if launched else (after if i % 8 == 1 else 0)
        rows.append([16, 2, 22.0 if launched else 10.0, flags])
    rows += [[16, 3, 11.0, 0]] * 8  # k = 3: 8 rows, a burst of 7 launched ones, 17 rows
    rows += [[16, 3, 22.0, drop | (after if j else 0)] for j in range(7)]
    rows += [[16, 3, 11.0, after]] + [[16, 3, 11.0, 0]] * 16
    rows += [[16, 3, 99.0, drop]]  # a re-entry: left out
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(f"adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--replay-table", "--bucket", "16"]) == 0
    cols = [ln.split() for ln in capsys.readouterr().out.strip().splitlines()[2:]]
    # k = 2: (28 x 10 + 4 x 22) / 32 = 11.5 in both. k = 3 before: (25 x 11 + 7 x 22) / 32 =
    # 13.41; at the share, ceil(0.125 / 0.875 x 25) = 4 launched in: (25 x 11 + 4 x 22) / 29 =
    # 12.52
    assert cols == [["64", "before", "-", "-", "11.50/32", "13.41/32"],
                    ["64", "launch", "share", "-", "-", "11.50/32", "12.52/29"]]


def test_replay_prefill_puts_each_rows_prefills_at_its_decode_batch(tmp_path, capsys):
    """Session 51: the rows through the prefill term by their own decode batch, to set beside
    the server's status (which had charged prefills by the scheduler's count)."""
    after = sample_log.AFTER_PREFILL
    rows = [[64, 3, 20.0, 0, 0.0, 2.5]]  # the first: the recent batch is not known yet
    rows += [[64, 3, 20.0, after, 10.0, 2.5] if i % 2 else [64, 3, 20.0, 0, 0.0, 2.5]
             for i in range(31)]
    rows += [[8, 0, 5.0, 0]]  # a row of an old log: left out
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(f"adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--replay-prefill"]) == 0
    cols = [ln.split() for ln in capsys.readouterr().out.strip().splitlines()[2:]]
    # 31 steady decode steps (the 2nd row on) and 15 prefills of 10 ms beside them:
    # 150 / 31 = 4.839 ms a step, merged at the sync after the 32nd row
    assert cols == [["33-64", "4.839", "31", "31", "4.839"]]
    assert ss.replay_prefill([[8, 0, 5.0, 0]]) == "(no rows with prefill ms)"


def test_plain_rows_by_their_place_in_a_run_of_plain_results(tmp_path, capsys):
    """Session 53: whether a plain run's first results are its dear ones. The place counts every
    plain row in a row (a drafting one ends the run); the bucket's steady rows are averaged."""
    drop, unsteady = sample_log.DROPPED, sample_log.UNSTEADY
    rows = ([[60, 0, 6.0, 0, 2.0, 1.0], [60, 0, 8.0, drop, 0.0, 1.0],  # places 1, 2
             [60, 0, 7.0, unsteady, 0.0, 1.0],  # place 3: a ramp's, left out
             [60, 3, 18.0, 0, 0.0, 2.5]]  # ends the run
            + [[60, 0, 5.0, 0, 1.0, 1.0]] * 33  # places 1-33
            + [[100, 0, 9.0, 0, 0.0, 1.0]])  # place 34, at 65-128
    lines = ss.plain_runs(rows, 64).splitlines()
    # 1-32: 6, 8 and 32 rows of 5 ms: decode (6 + 8 + 160) / 34 = 5.12, prefill (2 + 32) / 34 =
    # 1.00, all-in 6.12; beside a launch the 8-ms one
    assert lines[1].split() == ["1-32", "34", "5.12", "1.00", "6.12", "8.0", "(1)"]
    assert lines[2].split() == ["33-64", "1", "5.00", "1.00", "6.00", "-"]
    assert len(lines) == 3  # nothing past 64
    assert ss.plain_runs(rows, 128).splitlines()[1].split() == [
        "33-64", "1", "9.00", "0.00", "9.00", "-"]  # its place counted over the 64 bucket's rows
    assert ss.plain_runs(rows, 256) == "(no steady plain rows at 129-256)"
    log = tmp_path / "server-goodput.log"
    log.write_text(f"[2026-12-06 17:00:00] adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--plain-runs", "--bucket", "64"]) == 0
    assert "1-32    34" in capsys.readouterr().out


def test_replay_policy_runs_the_rows_through_a_goodput_controller(tmp_path, capsys):
    """Session 54: a k = 3 cell at 3-4 running measured at 5.7 ms over 10 syncs, then a sync of
    2x stalls (a jump), then 5.7 again (the stall found): no failure, and the step table's
    jumps. The syncs come every 32 decisions, the first at the 32nd (results 1-31): rows 321-351
    stall in the sync of the 352nd decision, row 352 among 31 normal ones in the next."""
    rows = ([[4, 3, 5.7, 0, 0.0, 3.5]] * 320 + [[4, 3, 11.4, 0, 0.0, 3.5]] * 32
            + [[4, 3, 5.7, 0, 0.0, 3.5]] * 160)
    first, decisions = ss.replay_policy(rows).splitlines()
    assert first == '512 rows replayed; no failure; step jumps {"4": {"jump": 1, "stall": 1}}'
    assert decisions.startswith('its decisions by batch bucket (not the server\'s): {"3-4": {')
    assert sum(json.loads(decisions.split(": ", 1)[1])["3-4"].values()) == 512
    log = tmp_path / "server-goodput.log"
    log.write_text(f"[2026-12-06 17:00:00] adaptive_spec samples rank=0 rows={json.dumps(rows)}\n")
    assert ss.main([str(log), "--replay-policy"]) == 0
    assert "512 rows replayed; no failure" in capsys.readouterr().out


def test_replay_policy_names_the_policys_first_failure(monkeypatch):
    from adaptive_spec.policy.goodput import GoodputPolicy

    def broken(self, bucket, acc):
        return 1.0 / 0.0
    monkeypatch.setattr(GoodputPolicy, "_decide", broken)
    out = ss.replay_policy([[4, 0, 2.7, 0, 0.0, 1.0]] * 5)
    assert out.startswith("1 of 5 rows replayed; the policy failed at row 1: ZeroDivisionError: "
                          "float division by zero (test_sample_summary.py:")
