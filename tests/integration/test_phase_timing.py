"""The phase clocks (ADAPTIVE_SPEC_PHASE_TIMING): one log line per busy window, inclusive wall
time per decode step, and the SGLang signatures they read."""
import inspect
import logging
from types import SimpleNamespace

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


def idle(sched=None):
    plan = SimpleNamespace(batch_to_run=None, running_batch=Batch(0))
    return pt.after_get_next_batch_for_windows(plan, sched or SimpleNamespace(tp_rank=1))


def test_one_line_per_busy_window_with_time_per_decode_step(caplog, monkeypatch):
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock())
    decode, prefill, run = hook("process_decode"), hook("process_prefill"), hook("run_batch")
    busy = SimpleNamespace(batch_to_run=Batch(64), running_batch=Batch(64))
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        for i in range(30):
            run(lambda self, b: None, "sched", Batch(64))
            decode(lambda self, batch, result: None, "processor", Batch(64), "result")
            if i % 3 == 0:
                prefill(lambda self, batch, result: None, "processor", Batch(2), "result")
            pt.after_get_next_batch_for_windows(busy, SimpleNamespace())  # busy: no line
        assert not caplog.records
        idle()
        idle()  # still idle: nothing more to report
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("adaptive_spec phases rank=1 ")
    assert "decode_steps=30 prefills=10 mean_running=64.0" in line
    assert '"run_batch": 1.0' in line and '"process_prefill": 0.33' in line  # calls per decode step


def test_a_window_too_short_to_mean_anything_is_not_logged(caplog, monkeypatch):
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock())
    decode = hook("process_decode")
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        for _ in range(pt.MIN_DECODE_STEPS - 1):
            decode(lambda self, batch, result: None, "processor", Batch(1), "result")
        idle()
    assert not caplog.records
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
