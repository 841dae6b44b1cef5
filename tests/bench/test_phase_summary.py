"""phase_summary reads what the phase clocks write (round trip through a real log line)."""
import pytest

from adaptive_spec.bench import phase_summary as ps
from adaptive_spec.sglang_plugin.phase_timing import PhaseClock


def test_the_clock_line_round_trips_into_the_table(tmp_path, capsys):
    t = iter(x * 0.01 for x in range(10_000))
    clock = PhaseClock(rank=0, clock=lambda: next(t))
    for _ in range(40):
        clock.add("run_batch", 0.004)
        clock.add("process_decode", 0.002)
        clock.on_decode_result(64)
    clock.on_prefill_result()
    log = tmp_path / "server-plain.log"
    log.write_text("[2026-11-30 01:00:00] " + clock.window_line() + "\nother line\n")
    (w,) = ps.windows(log)
    assert w["decode_steps"] == 40 and w["prefills"] == 1 and w["mean_running"] == 64.0
    assert w["ms"] == {"process_decode": 2.0, "run_batch": 4.0}
    assert ps.main([str(log), "--json", str(tmp_path / "w.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:4] == ["plain", "64", "40", "0.03"]


def test_a_missing_log_is_one_line_and_exit_2(tmp_path, capsys):
    assert ps.main([str(tmp_path / "nope.log")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def _window(running, run_ms, decode_ms, steps=40):
    """One phase-clock log line: `steps` decode steps of `running` requests."""
    t = iter(x * (run_ms + decode_ms) / 1000 for x in range(10_000))
    clock = PhaseClock(rank=0, clock=lambda: next(t))
    for _ in range(steps):
        clock.add("run_batch", run_ms / 1000)
        clock.add("process_decode", decode_ms / 1000)
        clock.on_decode_result(running)
    return clock.window_line() + "\n"


def test_each_server_is_compared_with_plain_at_the_nearest_batch(tmp_path):
    plain = tmp_path / "server-plain.log"
    plain.write_text(_window(64, 4.0, 2.0) + _window(16, 1.0, 1.0))
    ours = tmp_path / "server-adaptive-spec_forced-off.log"
    ours.write_text(_window(60, 4.5, 3.0))
    head, row = (ln.split() for ln in ps.differences([plain, ours]).splitlines())
    assert row[:3] == ["adaptive-spec_forced-off", "60", "64"]  # plain's level of 64, not 16
    cols = dict(zip(head[4:], row[4:]))
    assert cols["run_batch"] == "+0.50" and cols["process_decode"] == "+1.00"


def _line(running, ms_per_step, steps=40, prefills=0, drafting=None):
    """A phase-clock line (`drafting`: its drafting_steps field, None for an old line without)."""
    t = iter(x * ms_per_step / 1000 for x in range(10_000))
    clock = PhaseClock(rank=0, clock=lambda: next(t), drafting_count=lambda: drafting or 0)
    clock.drafting_at_start = 0
    for _ in range(steps):
        clock.add("run_batch", ms_per_step / 1000)
        clock.on_decode_result(running)
    for _ in range(prefills):
        clock.on_prefill_result()
    line = clock.window_line()
    return (line.rsplit(" drafting_steps=", 1)[0] if drafting is None else line) + "\n"


def test_bands_pool_only_the_windows_without_drafting(tmp_path):
    ours = tmp_path / "server-adaptive-spec_goodput.log"
    ours.write_text(_line(120, 10.0, prefills=8, drafting=0) + _line(110, 14.0, steps=80, prefills=20, drafting=0)
                    + _line(120, 30.0, drafting=5)  # drafted: left out
                    + _line(60, 6.0, drafting=0)  # another band
                    + _line(120, 99.0))  # an old line: drafting unknown, left out
    head, row, other = (ln.split() for ln in ps.pooled([ours], ps.parse_bands("96-128,48-64")).splitlines())
    assert row[:5] == ["adaptive-spec_goodput", "96-128", "2", "120", f"{28 / 120:.3f}"]
    cols = dict(zip(head, row))
    # steps-weighted: (40 x 10 + 80 x 14) / 120; the window's wall time is one step short
    assert cols["run_batch"] == f"{(40 * 10 + 80 * 14) / 120:.2f}"
    assert other[:4] == ["adaptive-spec_goodput", "48-64", "1", "40"]


def test_drafting_pools_the_windows_where_most_steps_drafted(tmp_path, capsys):
    ours = tmp_path / "server-adaptive-spec_goodput.log"
    ours.write_text(_line(62, 24.0, steps=40, prefills=20, drafting=40)
                    + _line(62, 9.0, drafting=0)  # plain: left out
                    + _line(62, 12.0, drafting=10)  # a probe's few drafting steps: left out
                    + _line(62, 99.0))  # an old line: drafting unknown, left out
    rows = ps.pooled([ours], ps.parse_bands("60-64"), drafting=True).splitlines()
    assert rows[1].split()[:5] == ["adaptive-spec_goodput", "60-64", "1", "40", "0.500"]
    assert ps.main([str(ours), "--drafting"]) == 2
    assert capsys.readouterr().err.strip() == "error: --drafting: needs --bands"
    assert ps.main([str(ours), "--bands", "60-64", "--drafting"]) == 0
    assert "(no window without drafting" not in capsys.readouterr().out


@pytest.mark.parametrize("text", ["64", "64-48", "a-b"])
def test_a_bad_band_is_one_line_and_exit_2(tmp_path, capsys, text):
    log = tmp_path / "server-plain.log"
    log.write_text(_line(64, 5.0, drafting=0))
    assert ps.main([str(log), "--bands", text]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_admission_queue_and_ratio_reach_the_tables(tmp_path):
    """Session 28's fields (after drafting_steps); a line from before them shows '-'."""
    t = iter(x * 0.01 for x in range(10_000))
    clock = PhaseClock(rank=0, clock=lambda: next(t))
    for i in range(40):
        clock.add("run_batch", 0.01)
        clock.on_decode_result(200)
        clock.on_queue(30 if i < 20 else 10, 0.5)
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(clock.window_line() + "\n" + _line(200, 10.0, drafting=0))
    new, old = ps.windows(log)
    assert (new["mean_waiting"], new["new_token_ratio"]) == (20.0, 0.5)
    assert (old["mean_waiting"], old["new_token_ratio"]) == (None, None)
    head, first, second = (ln.split() for ln in ps.table([log]).splitlines())
    first, second = dict(zip(head, first)), dict(zip(head, second))
    assert (first["waiting"], first["ntr"]) == ("20.0", "0.500") and (second["waiting"], second["ntr"]) == ("-", "-")
    head, row = (ln.split() for ln in ps.pooled([log], ps.parse_bands("160-256")).splitlines())
    assert dict(zip(head, row))["waiting"] == "20.0"  # steps-weighted over the windows that have the field


def _fit_line(steps, prefills, per_step_ms, per_prefill_ms, running=128):
    """A phase-clock line as the clocks write it, whose wall time and target forward are
    `per_step_ms` a decode step plus `per_prefill_ms` a prefill."""
    wall_ms = per_step_ms * steps + per_prefill_ms * prefills
    target = (0.2 * per_step_ms * steps + 0.9 * per_prefill_ms * prefills) / steps
    return (f"[x] adaptive_spec phases rank=0 window_s={wall_ms / 1000:.6f} decode_steps={steps} "
            f"prefills={prefills} mean_running={running} ms_per_decode_step={{\"target_forward\": {target:.6f}}} "
            f"calls_per_decode_step={{}} drafting_steps=0\n")


def test_the_fit_splits_a_window_into_decode_steps_and_prefills(tmp_path, capsys):
    """Session 32: forced off's steps at 128 read 8% dearer than plain's with 10% more prefills a
    step; the fit tells dearer prefills from more of them."""
    log = tmp_path / "server-plain.log"
    log.write_text("".join(_fit_line(s, p, 7.5, 24.0) for s, p in [(40, 10), (60, 12), (50, 20), (30, 3)]))
    assert ps.main([str(log), "--bands", "96-160", "--fit"]) == 0
    head, row = capsys.readouterr().out.strip().splitlines()[-2:]
    cols = dict(zip(head.split(), row.split()))
    assert cols["windows"] == "4" and cols["wall/step"] == "7.50" and cols["wall/prefill"] == "24.00"
    assert cols["target/step"] == "1.50" and cols["target/prefill"] == "21.60"
    same_share = tmp_path / "server-ours.log"  # prefills a fixed share of the steps: no split
    same_share.write_text("".join(_fit_line(s, s // 4, 7.5, 24.0) for s in (40, 60, 80)))
    assert "too few windows" in ps.fitted([same_share], ps.parse_bands("96-160"))


def test_max_ms_per_step_leaves_out_the_slow_windows(tmp_path, capsys):
    """Session 32: a profiled window pooled into pp's band rows read them 16.21 / 18.41 ms a step
    (plain / goodput) against 12.19 / 13.00 without it; --max-ms-per-step leaves such windows out
    of the bands and the fit."""
    log = tmp_path / "server-plain.log"
    log.write_text("".join(_fit_line(s, p, 7.5, 24.0) for s, p in [(40, 10), (60, 12), (50, 20)])
                   + _fit_line(30, 3, 60.0, 24.0))  # profiled: 62.4 ms a step
    assert ps.main([str(log), "--bands", "96-160", "--fit", "--max-ms-per-step", "40"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    pooled_row = dict(zip(out[-5].split(), out[-4].split()))
    assert pooled_row["windows"] == "3" and pooled_row["steps"] == "150"
    fit = dict(zip(out[-2].split(), out[-1].split()))
    assert fit["windows"] == "3" and fit["wall/step"] == "7.50" and fit["wall/prefill"] == "24.00"
    assert ps.main([str(log), "--bands", "96-160", "--fit"]) == 0
    everything = capsys.readouterr().out.strip().splitlines()
    assert dict(zip(everything[-2].split(), everything[-1].split()))["windows"] == "4"


@pytest.mark.parametrize("args", [["--max-ms-per-step", "40"], ["--bands", "96-160", "--max-ms-per-step", "0"]])
def test_max_ms_per_step_without_bands_or_not_positive_is_one_line_and_exit_2(tmp_path, capsys, args):
    log = tmp_path / "server-plain.log"
    log.write_text(_line(128, 5.0, drafting=0))
    assert ps.main([str(log)] + args) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_garbage_collector_and_the_threads_reach_the_tables(tmp_path):
    """Session 33's fields: GC time a decode step and the scheduler process's threads' CPU, from
    a real PhaseClock with a GcClock fed through gc's callback protocol and a fake /proc reader."""
    from adaptive_spec.sglang_plugin.phase_timing import GcClock

    t = iter(x * 0.01 for x in range(10_000))
    clock_fn = lambda: next(t)
    gc_clock = GcClock(clock=clock_fn)
    cpu = iter([{1: ("python3", 5.0), 7: ("sampler", 1.0)},  # at the window's first call
                {1: ("python3", 5.3), 7: ("sampler", 1.1), 9: ("new", 0.05)}])
    clock = PhaseClock(rank=0, clock=clock_fn, gc_clock=gc_clock, thread_cpu=lambda: next(cpu), main_tid=1)
    for i in range(40):
        clock.add("run_batch", 0.01)
        clock.on_decode_result(128)
        if i % 10 == 0:  # four collections of 0.01 s each, one of them full
            gc_clock.callback("start", {"generation": 2 if i == 0 else 0})
            gc_clock.callback("stop", {"generation": 2 if i == 0 else 0, "collected": 0})
    log = tmp_path / "server-adaptive-spec_forced-off.log"
    log.write_text(clock.window_line() + "\n")
    (w,) = ps.windows(log)
    assert w["gc_ms"] == 1.0 and w["gc_collections"] == [3, 0, 1]
    assert w["thread_cpu"] == {"main": 0.3, "others": 0.15, "busiest_other": "sampler:0.10"}
    head, row = (ln.split() for ln in ps.table([log]).splitlines())
    cols = dict(zip(head, row))
    assert (cols["gc"], cols["gc2"]) == ("1.00", "1")
    assert float(cols["other_cpu"]) == pytest.approx(0.15 / w["window_s"], abs=0.01)


def test_per_call_splits_decode_calls_from_prefill_calls(tmp_path, capsys):
    """The clocks' `<phase>@prefill` sums (since session 60) give each kind of call its own ms."""
    t = iter(x * 0.01 for x in range(10_000))
    clock = PhaseClock(rank=0, clock=lambda: next(t), drafting_count=lambda: 30)
    clock.drafting_at_start = 0
    for i in range(40):  # 40 decode calls of 8 ms, and a prefill call of 20 ms every 4th step
        clock.add("spec_forward", 0.008)
        clock.add("target_forward", 0.003)
        if i % 4 == 0:
            for label, s in (("spec_forward", 0.020), ("target_forward", 0.012)):
                clock.add(label, s)
                clock.add(label + "@prefill", s)
        clock.on_decode_result(128)
    log = tmp_path / "server-adaptive-spec_goodput.log"
    log.write_text(clock.window_line() + "\n" + _line(128, 9.0))  # and a line from before the split
    head, row = (ln.split() for ln in ps.per_call([log], ps.parse_bands("120-128")).splitlines())
    cols = dict(zip(head, row))
    assert row[:4] == ["adaptive-spec_goodput", "120-128", "1", "40"]  # the old line left out
    assert cols["drafted"] == "0.75"
    assert cols["spec_forward/decode"] == "8.00" and cols["spec_forward/prefill"] == "20.00"
    assert cols["target_forward/decode"] == "3.00" and cols["target_forward/prefill"] == "12.00"
    assert cols["run_batch/decode"] == "-"  # not clocked in this window
    assert ps.main([str(log), "--per-call"]) == 2
    assert capsys.readouterr().err.strip() == "error: --per-call: needs --bands"
    assert ps.main([str(log), "--bands", "120-128", "--per-call"]) == 0
    assert "spec_forward/decode" in capsys.readouterr().out
    old = tmp_path / "server-plain.log"
    old.write_text(_line(128, 9.0))
    assert "before session 60" in ps.per_call([old], ps.parse_bands("120-128"))
