"""The phase clocks (ADAPTIVE_SPEC_PHASE_TIMING): one log line per busy window, inclusive wall
time per decode step, and the SGLang signatures they read."""
import inspect
import logging
from types import SimpleNamespace

import pytest

from adaptive_spec.sglang_plugin import phase_timing as pt


class Batch:
    def __init__(self, n):
        self.n = n

    def batch_size(self):
        return self.n

    def is_empty(self):
        return self.n == 0


def hook(label):
    return dict((lbl, fn) for (_, fn, _), (lbl, _) in zip(pt.hooks(), pt.PHASES))[label]


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock(clock=c))
    return c


def schedule(idle, sched=None):
    plan = SimpleNamespace(batch_to_run=None if idle else Batch(1), running_batch=Batch(0 if idle else 1))
    return pt.after_get_next_batch_for_windows(plan, sched or SimpleNamespace(tp_rank=1))


def decode_steps(n, bs=64, prefill_every=None):
    decode, prefill, run = hook("process_decode"), hook("process_prefill"), hook("run_batch")
    for i in range(n):
        schedule(idle=False)
        run(lambda self, b: None, "sched", Batch(bs))
        decode(lambda self, batch, result: None, "processor", Batch(bs), "result")
        if prefill_every and i % prefill_every == 0:
            prefill(lambda self, batch, result: None, "processor", Batch(2), "result")


def lines(caplog):
    return [r.getMessage() for r in caplog.records if "adaptive_spec phases" in r.getMessage()]


def test_one_line_per_busy_window_with_time_per_decode_step(caplog, clock):
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        decode_steps(30, prefill_every=3)
        schedule(idle=True)
        clock.t += 0.2
        schedule(idle=True)
        assert not lines(caplog)  # a short pause is no end of window
        clock.t += 0.4
        schedule(idle=True)
        clock.t += 1.0
        schedule(idle=True)  # still idle: nothing more to report
    (line,) = lines(caplog)
    assert line.startswith("adaptive_spec phases rank=1 ")
    assert "decode_steps=30 prefills=10 mean_running=64.0" in line
    assert '"run_batch": 1.0' in line and '"process_prefill": 0.33' in line  # calls per decode step


def test_a_window_reports_the_waiting_queue_and_the_admission_ratio(caplog, clock):
    """The 256-request levels of session 28 lost throughput to requests waiting ~1 s for
    admission; the window line says how many waited and at which new-token ratio."""
    sched = SimpleNamespace(tp_rank=0, waiting_queue=[],
                            new_token_ratio_tracker=SimpleNamespace(current=0.7))
    decode, run = hook("process_decode"), hook("run_batch")
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        for i in range(40):
            sched.waiting_queue = [object()] * (30 if i < 20 else 10)
            sched.new_token_ratio_tracker.current = 0.7 - 0.001 * i
            schedule(idle=False, sched=sched)
            run(lambda self, b: None, "sched", Batch(200))
            decode(lambda self, batch, result: None, "processor", Batch(200), "result")
        schedule(idle=True, sched=sched)
        clock.t += 1.0
        schedule(idle=True, sched=sched)
    (line,) = lines(caplog)
    assert line.endswith("drafting_steps=0 mean_waiting=20.0 new_token_ratio=0.661")


def test_a_scheduler_without_the_queue_fields_still_gets_its_window(caplog, clock):
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        decode_steps(30)
        schedule(idle=True)
        clock.t += 1.0
        schedule(idle=True)
    (line,) = lines(caplog)
    assert line.endswith("mean_waiting=0.0")  # no waiting_queue: nothing waits; no ratio


def test_one_stream_replacing_its_request_stays_one_window(caplog, clock):
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        for _ in range(3):  # three requests of one stream, a few ms apart
            decode_steps(25, bs=1)
            schedule(idle=True)
            clock.t += 0.003
        clock.t += 0.6
        schedule(idle=True)
    (line,) = lines(caplog)
    assert "decode_steps=75 " in line


def test_a_server_that_sleeps_when_idle_ends_the_window_at_its_next_batch(caplog, clock):
    # --sleep-on-idle: one idle call, then nothing until the next level's first batch
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        decode_steps(40, bs=16)
        schedule(idle=True)
        clock.t += 5.0
        decode_steps(30, bs=128)
        schedule(idle=True)
        clock.t += 0.6
        schedule(idle=True)
    first, second = lines(caplog)
    assert "decode_steps=40 " in first and "mean_running=16.0" in first
    assert "window_s=0.00 " in first  # the 5 s asleep are not part of the level
    assert "mean_running=128.0" in second


def test_a_window_too_short_to_mean_anything_is_not_logged(caplog, clock):
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        decode_steps(pt.MIN_DECODE_STEPS - 1, bs=1)
        schedule(idle=True)
        clock.t += 1.0
        schedule(idle=True)
    assert not lines(caplog)
    assert pt._clock.decode_steps == 0  # reset all the same


def test_the_clock_is_inclusive_and_survives_an_exception(monkeypatch):
    ticks = iter([0.0, 1.0, 1.0, 3.5])
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock())
    monkeypatch.setattr(pt.time, "perf_counter", lambda: next(ticks))
    run = hook("run_batch")
    run(lambda self, b: "ok", "sched", Batch(1))

    def boom(self, b):
        raise RuntimeError("forward failed")

    try:
        run(boom, "sched", Batch(1))
    except RuntimeError:
        pass
    else:
        raise AssertionError("the hook must not swallow SGLang's exception")
    assert pt._clock.seconds["run_batch"] == 3.5 and pt._clock.calls["run_batch"] == 2


def test_the_sglang_methods_clocked_exist_with_the_arguments_read():
    from importlib import import_module

    for _, target in pt.PHASES:
        module, cls, meth = target.rsplit(".", 2)
        assert callable(getattr(getattr(import_module(module), cls), meth)), target
    from sglang.srt.managers.scheduler_components.batch_result_processor import SchedulerBatchResultProcessor

    params = list(inspect.signature(SchedulerBatchResultProcessor.process_batch_result_decode).parameters)
    assert params[:2] == ["self", "batch"]  # _after reads the batch as the first argument
    # is_prefill_call reads the batch as the first argument or by these names (BATCH_KWARGS)
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.managers.tp_worker import TpModelWorker
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    for meth in (Scheduler.run_batch, EAGLEWorkerV2.forward_batch_generation):
        assert list(inspect.signature(meth).parameters)[:2] == ["self", "batch"], meth
    params = list(inspect.signature(TpModelWorker.forward_batch_generation).parameters)
    assert params[:3] == ["self", "batch", "forward_batch"] and set(pt.BATCH_KWARGS) <= set(params)


class Drafting:
    """Stands in for the controller's count of drafting decode steps."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        return self.n


def test_a_busy_window_ends_after_the_set_seconds_and_counts_its_drafting_steps(caplog, monkeypatch):
    c, drafted = Clock(), Drafting()
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock(clock=c, max_window_s=1.0, drafting_count=drafted))
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        for i in range(100):  # 1/64 s a step; steps 10-19 and 70-74 draft
            decode_steps(1, bs=32)
            drafted.n += 1 if 10 <= i < 20 or 70 <= i < 75 else 0
            c.t += 1 / 64
        schedule(idle=True)
        c.t += 0.6
        schedule(idle=True)
    first, second = lines(caplog)
    assert "decode_steps=64 " in first and " drafting_steps=10 " in first + " "
    assert "decode_steps=36 " in second and " drafting_steps=5 " in second + " "


def test_the_drafting_count_restarts_when_the_controller_counters_are_reset(monkeypatch):
    drafted = Drafting()
    drafted.n = 40
    clock = pt.PhaseClock(clock=Clock(), drafting_count=drafted)
    drafted.n = 3  # reset_stats between sweep levels, then 3 more drafting steps
    assert clock.drafting_steps() == 3


def test_the_drafting_count_reads_the_controllers_step_modes(monkeypatch):
    from adaptive_spec.sglang_plugin import state

    monkeypatch.setattr(state, "_controller", SimpleNamespace(
        modes={"off": 50, "on": 7, "catchup": 2, "reentry": 1, "prefill-spec": 4}))
    assert pt.drafting_steps_so_far() == 10
    monkeypatch.setattr(state, "_controller", None)
    assert pt.drafting_steps_so_far() == 0  # a plain server


@pytest.mark.parametrize("text, expected", [("2.5", 2.5), ("", None), ("0", None), ("x", None)])
def test_the_window_length_comes_from_the_environment(monkeypatch, text, expected):
    monkeypatch.setenv(pt.WINDOW_ENV, text)
    assert pt.max_window_s() == expected


def test_a_window_reports_the_garbage_collectors_time_and_the_threads_cpu(caplog, monkeypatch):
    """The real gc callback and the real /proc/self/task, through the scheduler hooks: a full
    collection inside the window is counted, and the main thread's CPU is read apart from the
    others' (session 32 found every launch site of the spec server dearer; these tell GC and
    GIL-taking threads apart from slower launches)."""
    import gc

    c = Clock()
    gc_clock = pt.GcClock()
    monkeypatch.setattr(pt, "_gc_clock", gc_clock)
    monkeypatch.setattr(pt, "_gc_watched", False)
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock(clock=c, gc_clock=gc_clock, thread_cpu=pt.thread_cpu_seconds))
    try:
        with caplog.at_level(logging.INFO, logger="adaptive_spec"):
            decode_steps(30)
            gc.collect()
            schedule(idle=True)
            c.t += 1.0
            schedule(idle=True)
    finally:
        if gc_clock.callback in gc.callbacks:
            gc.callbacks.remove(gc_clock.callback)
    (line,) = lines(caplog)
    fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv and not kv.startswith("{"))
    # at least the one full collection asked for (the interpreter may add its own)
    assert int(fields["gc_collections"].split("/")[2]) >= 1 and float(fields["gc_ms_per_decode_step"]) > 0
    assert '"main": ' in line and '"others": ' in line


def test_thread_cpu_is_read_from_each_tasks_stat_whatever_its_name(tmp_path):
    """/proc/<pid>/task/<tid>/stat: the name sits in parentheses and may hold spaces and
    parentheses itself; utime and stime are fields 14 and 15, in clock ticks."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    for tid, name, utime, stime in [(11, "python3", 3 * tick, tick), (12, "odd (name) x", tick // 2, 0)]:
        (tmp_path / str(tid)).mkdir()
        rest = ["S"] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 30
        (tmp_path / str(tid) / "stat").write_text(f"{tid} ({name}) " + " ".join(rest) + "\n")
    (tmp_path / "13").mkdir()  # a thread that ended between the listing and the read
    snapshot = pt.thread_cpu_seconds(str(tmp_path))
    assert snapshot == {11: ("python3", 4.0), 12: ("odd (name) x", 0.5)}
    assert pt.thread_cpu_delta({11: ("python3", 1.0)}, snapshot, main_tid=11) == {
        "main": 3.0, "others": 0.5, "busiest_other": "odd (name) x:0.50"}
    assert pt.thread_cpu_seconds(str(tmp_path / "nope")) == {}


def test_prefill_calls_are_also_summed_apart_decode_and_verify_calls_not(monkeypatch):
    """Session 59: goodput's spec_forward took 1.16 ms a decode step more than EAGLE-3's at 128,
    prefill and decode calls in one figure; the clocks now keep the prefill calls' share apart."""
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    ticks = iter(range(100))
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock())
    monkeypatch.setattr(pt.time, "perf_counter", lambda: float(next(ticks)))
    spec, target = hook("spec_forward"), hook("target_forward")
    extend = SimpleNamespace(forward_mode=ForwardMode.EXTEND)
    decode = SimpleNamespace(forward_mode=ForwardMode.DECODE)
    verify = SimpleNamespace(forward_mode=ForwardMode.TARGET_VERIFY)  # is_extend() in SGLang
    spec(lambda self, batch: None, "worker", extend)  # 1 s each call
    spec(lambda self, batch: None, "worker", decode)
    mixed = SimpleNamespace(forward_mode=ForwardMode.MIXED)
    spec(lambda self, batch, on_publish=None: None, "worker", batch=mixed)
    target(lambda self, batch, **kw: None, "tp", extend, capture_hidden_mode=None)
    target(lambda self, batch=None, forward_batch=None, **kw: None, "tp", batch=None,
           forward_batch=verify, is_verify=True)
    seconds, calls = pt._clock.seconds, pt._clock.calls
    assert calls["spec_forward"] == 3 and calls["spec_forward@prefill"] == 2
    assert seconds["spec_forward@prefill"] == 2.0
    assert calls["target_forward"] == 2 and calls["target_forward@prefill"] == 1


def test_a_batch_the_clock_cannot_read_counts_as_no_prefill():
    assert not pt.is_prefill_call(("worker",), {})
    assert not pt.is_prefill_call(("worker", object()), {})
    assert not pt.is_prefill_call(("tp",), {"batch": None, "forward_batch": None})
