"""The stack sampler (ADAPTIVE_SPEC_STACK_SAMPLER): function counts from a live thread's stack,
one line per phase-clock window, and stack_summary's table from those lines."""
import logging
import threading
import time
from types import SimpleNamespace

import pytest

from adaptive_spec.bench import stack_summary as ss
from adaptive_spec.sglang_plugin import phase_timing as pt
from adaptive_spec.sglang_plugin import stack_sampler as sts


def busy_outer(stop: threading.Event):
    while not stop.is_set():
        busy_inner()


def busy_inner():
    t = time.perf_counter()
    while time.perf_counter() - t < 0.001:
        pass


def test_a_live_thread_is_sampled_function_by_function():
    stop = threading.Event()
    worker = threading.Thread(target=busy_outer, args=(stop,), daemon=True)
    worker.start()
    sampler = sts.StackSampler(interval_s=0.001, limit_s=5.0)
    try:
        sampler.start(worker.ident)
        deadline = time.monotonic() + 10
        while sampler.samples < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        sampler.stop()
        worker.join(2)
    assert sampler.samples >= 50
    outer = next(k for k in sampler.incl if k.endswith("busy_outer"))
    inner = next(k for k in sampler.incl if k.endswith("busy_inner"))
    assert sampler.incl[outer] == sampler.samples  # on every sampled stack
    assert sampler.incl[inner] >= 0.5 * sampler.samples  # where the thread spends its time
    assert "test_stack_sampler.py:" in outer


def fake_stack(*names):
    """A frame chain (innermost first) made of real code objects named `names`."""
    frame = None
    for name in reversed(names):
        code = compile("pass", f"/site/sglang/srt/{name}.py", "exec").replace(co_name=name, co_qualname=name)
        frame = SimpleNamespace(f_code=code, f_back=frame)
    return frame


def test_the_window_line_gives_wall_ms_per_decode_step():
    t = iter(0.002 * i for i in range(1000))
    sampler = sts.StackSampler(clock=lambda: next(t))
    for i in range(101):  # 101 samples 2 ms apart: 200 ms
        sampler.add_stack(fake_stack("verify", "run_batch") if i % 4 == 0 else fake_stack("decode", "run_batch"))
    line = sampler.window_line(rank=0, decode_steps=20, mean_running=64.0)
    assert sampler.samples == 0  # a fresh window after the line
    (w,) = ss.windows_from_text(line)
    assert w["decode_steps"] == 20 and w["mean_running"] == 64.0 and w["interval_ms"] == 2.0
    assert w["incl"]["sglang/srt/run_batch.py:run_batch"] == pytest.approx(10.1, abs=0.01)  # 101 x 2 ms / 20
    assert w["self"]["sglang/srt/verify.py:verify"] == pytest.approx(2.6, abs=0.01)  # 26 samples
    assert sampler.window_line(rank=0, decode_steps=20, mean_running=64.0) is None  # nothing sampled


def test_the_phase_clock_window_carries_the_sampler_line(caplog, monkeypatch):
    t = {"now": 0.0}
    monkeypatch.setattr(pt, "_clock", pt.PhaseClock(clock=lambda: t["now"]))
    monkeypatch.setattr(pt, "_window_listeners", [])
    monkeypatch.setattr(sts, "_sampler", sts.StackSampler(clock=lambda: t["now"]))
    sts.hooks()
    assert pt._window_listeners == [sts._listener]
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        for _ in range(30):
            t["now"] += 0.01
            pt._clock.add("run_batch", 0.01)
            pt._clock.on_decode_result(8)
            sts._sampler.add_stack(fake_stack("run_batch"))
        pt._clock.flush()
    (line,) = [r.getMessage() for r in caplog.records if "adaptive_spec stacks" in r.getMessage()]
    assert "decode_steps=30 mean_running=8.0 samples=30" in line
    sts._sampler.add_stack(fake_stack("idle_loop"))
    assert sts._sampler.samples == 1
    pt._clock.reset()  # an idle reset empties the sampler's window too
    assert sts._sampler.samples == 0


def test_the_sampler_turns_the_phase_clocks_on(monkeypatch):
    monkeypatch.delenv(pt.ENV, raising=False)
    monkeypatch.setenv(sts.ENV, "1")
    assert pt.enabled() and sts.enabled()


def test_the_summary_ranks_functions_by_excess_over_plain(tmp_path, capsys):
    def log(name, stacks):
        t = iter(0.002 * i for i in range(1000))
        sampler = sts.StackSampler(clock=lambda: next(t))
        for s in stacks:
            sampler.add_stack(s)
        path = tmp_path / f"server-{name}.log"
        path.write_text("[x] " + sampler.window_line(0, 10, 60.0) + "\n")
        return path

    plain = log("plain", [fake_stack("decode", "run_batch")] * 50)
    ours = log("ours", [fake_stack("decode", "run_batch")] * 40 + [fake_stack("stub", "spec", "run_batch")] * 10)
    assert ss.main([str(plain), str(ours), "--near", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:3] == ["function", "plain", "(60)"]
    first = out[2].split()
    assert first[0] in ("sglang/srt/spec.py:spec", "sglang/srt/stub.py:stub")  # 0 in plain, >0 in ours
    assert float(first[1]) == 0.0 and float(first[2]) > 0
    assert ss.main([str(tmp_path / "nope.log")]) == 2


def test_a_band_pools_the_windows_in_it_by_their_decode_steps(tmp_path, capsys):
    """--band: 1-s windows hold too few steps for a function that runs now and then (a prefill);
    the windows whose mean batch lies in the band are pooled, weighted by their decode steps."""
    def window(stacks, steps, running):
        t = iter(0.002 * i for i in range(1000))
        sampler = sts.StackSampler(clock=lambda: next(t))
        for s in stacks:
            sampler.add_stack(s)
        return "[x] " + sampler.window_line(0, steps, running) + "\n"

    plain = tmp_path / "server-plain.log"
    plain.write_text(window([fake_stack("decode", "run_batch")] * 50, 10, 120.0))
    ours = tmp_path / "server-ours.log"
    ours.write_text(window([fake_stack("decode", "run_batch")] * 50, 10, 110.0)            # no prefill
                    + window([fake_stack("prefill", "run_batch")] * 50, 30, 130.0)        # 3x the steps
                    + window([fake_stack("prefill", "run_batch")] * 50, 10, 20.0))        # outside the band
    one = {w["mean_running"]: w for w in ss.windows(ours)}
    assert ss.main([str(plain), str(ours), "--band", "96-160"]) == 0
    out = capsys.readouterr().out
    assert "ours: 2 windows, 40 steps" in out and "plain: 1 windows, 10 steps" in out
    pooled = ss.in_band([plain, ours], 96, 160)["ours"]
    prefill = "sglang/srt/prefill.py:prefill"
    assert pooled["incl"][prefill] == pytest.approx(one[130.0]["incl"][prefill] * 30 / 40)
    assert ss.main([str(plain), "--band", "96"]) == 2
