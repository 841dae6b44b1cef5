"""A decode result far slower than a step is logged with the Triton kernels built meanwhile
(sglang_plugin/slow_results.py), at most one line a second, every one counted."""

import logging

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.signals import LoadSnapshot
from adaptive_spec.sglang_plugin import slow_results
from adaptive_spec.sglang_plugin.slow_results import SlowResults, install_slow_results


class FakeClock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


def test_a_slow_result_is_logged_with_the_builds_since_it_began(caplog):
    clock, asked = FakeClock(), []
    listener = SlowResults(clock=clock, built_since=lambda t: asked.append(t) or 2)
    with caplog.at_level(logging.WARNING, logger="adaptive_spec"):
        listener(4, 3, 0.006, "on")  # a steady step: nothing
        listener(4, 3, None, "on")  # not timed: nothing
        assert caplog.text == "" and listener.count == 0
        listener(4, 1, 0.15, "on")
    # the result began 0.15 s before the clock's 1000.0: the builds are counted from 999.85
    assert asked == [1000.0 - 0.15]
    assert "a decode result took 150 ms (4 running, k = 1, mode on; slow result 1 since start; " \
           "Triton kernels built meanwhile, any process: 2)" in caplog.text


def test_one_line_a_second_and_every_slow_result_counted(caplog):
    clock = FakeClock()
    listener = SlowResults(clock=clock, built_since=lambda t: None)
    with caplog.at_level(logging.WARNING, logger="adaptive_spec"):
        listener(4, 0, 0.2, "off")  # logged at 1000.0
        clock.now += 0.5
        listener(4, 2, 0.3, "on")  # 0.5 s later: counted, not logged
        clock.now += 0.6
        listener(4, 3, 0.12, None)  # 1.1 s after the first line: logged, the third slow result
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and listener.count == 3
    assert "200 ms (4 running, k = 0, mode off; slow result 1" in lines[0]
    assert "120 ms (4 running, k = 3, mode -; slow result 3" in lines[1]
    assert lines[1].endswith("any process: no cache to read)")


def test_the_controller_hands_every_decode_results_wall_time_to_it(monkeypatch, caplog):
    """Wired to a real Controller: installed once however often asked; the first result has no
    interval yet, the second one's reaches the listener (the threshold put at 0 here)."""
    monkeypatch.setattr(slow_results, "SLOW_RESULT_S", 0.0)
    ctl = Controller(AdaptiveSpecConfig(force="on"))
    listener = install_slow_results(ctl)
    assert install_slow_results(ctl) is listener and ctl.wall_listeners == [listener]
    listener.built_since = lambda t: 0
    with caplog.at_level(logging.WARNING, logger="adaptive_spec"):
        for _ in range(2):
            ctl.on_snapshot(LoadSnapshot(running=2, waiting=0))
            k = ctl.decide(2).steps
            ctl.on_result(k, [1, 2], "on")
    assert listener.count == 1
    assert f"(2 running, k = {k}, mode on; slow result 1 since start; " in caplog.text


def test_its_status_counts_them_and_keeps_the_last_one_logged():
    clock = FakeClock()
    listener = SlowResults(clock=clock, built_since=lambda t: 4)
    assert listener.status() == {"count": 0, "threshold_ms": 80.0, "last_logged": None}
    listener(64, 0, 1.7354, "off")
    clock.now += 0.2
    listener(64, 3, 0.09, "on")  # within the second: counted, not logged
    assert listener.status() == {"count": 2, "threshold_ms": 80.0, "last_logged": {
        "ms": 1735.4, "running": 64, "steps": 0, "mode": "off", "kernels_built": 4}}


def test_the_kernels_built_are_named_on_a_second_line_when_there_were_any(caplog):
    clock, asked = FakeClock(), []
    listener = SlowResults(clock=clock, built_since=lambda t: 2,
                           names_since=lambda t: asked.append(t) or ["_fwd_kernel", "fused_moe"])
    with caplog.at_level(logging.WARNING, logger="adaptive_spec"):
        listener(128, 3, 0.264, "on")
        clock.now += 2.0
        listener.built_since = lambda t: 0
        listener(128, 3, 0.121, "on")  # no build: no names line
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and asked == [1000.0 - 0.264]
    assert lines[0].endswith("any process: 2)")  # the first line keeps its form
    assert lines[1] == ("adaptive_spec: Triton kernels built in that 264-ms result: "
                        "_fwd_kernel, fused_moe")
