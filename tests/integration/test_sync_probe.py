"""The sync probe (ADAPTIVE_SPEC_SYNC_PROBE): torch's sync warnings counted by site and phase,
other warnings untouched, one throttled log line, and the SGLang method it hooks."""
import logging
import traceback
import warnings

import pytest

from adaptive_spec.sglang_plugin import sync_probe as sp

SGLANG_FILE = "/x/site-packages/sglang/srt/speculative/fake_worker.py"


def frame(filename, lineno, name):
    return traceback.FrameSummary(filename, lineno, name, line="")


def test_a_site_is_the_innermost_phase_and_the_innermost_sglang_frames():
    stack = [
        frame("/x/site-packages/sglang/srt/managers/scheduler.py", 10, "event_loop_overlap"),
        frame("/x/site-packages/sglang/srt/managers/scheduler.py", 20, "run_batch"),
        frame("/x/site-packages/adaptive_spec/sglang_plugin/hooks_offpath.py", 30, "around_forward_batch_generation"),
        frame(SGLANG_FILE, 40, "verify"),
        frame("/x/site-packages/torch/_tensor.py", 50, "tolist"),
        frame("/x/lib/python3.12/warnings.py", 60, "_showwarnmsg"),
    ]
    site = sp.site_of(stack)
    assert site == ("run_batch|sglang/srt/speculative/fake_worker.py:40 verify"
                    " <- adaptive_spec/sglang_plugin/hooks_offpath.py:30 around_forward_batch_generation"
                    " <- sglang/srt/managers/scheduler.py:20 run_batch")
    result_stack = [frame("/x/sglang/srt/managers/scheduler.py", 1, "process_batch_result"),
                    frame("/x/sglang/srt/managers/r.py", 2, "process_batch_result_decode")]
    assert sp.site_of(result_stack).startswith("process_batch_result_decode|")


@pytest.fixture
def armed(monkeypatch):
    import torch

    modes = []
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored afterwards
    monkeypatch.setattr(sp, "_armed", False)
    monkeypatch.setattr(sp, "_counter", sp.SyncCounter())
    with warnings.catch_warnings():
        sp.arm()
        yield modes


def test_sync_warnings_are_counted_by_site_and_others_pass_through(armed):
    assert armed == ["warn"]
    # a sync "inside SGLang": code compiled under an SGLang file name, in a run_batch phase
    code = compile("def run_batch():\n    warnings.warn('called a synchronizing CUDA operation')\n",
                   SGLANG_FILE, "exec")
    scope = {"warnings": warnings}
    exec(code, scope)
    for _ in range(3):
        scope["run_batch"]()
    (site, count), = sp._counter.sites.items()
    assert count == 3 and site == "run_batch|sglang/srt/speculative/fake_worker.py:2 run_batch"
    with pytest.warns(UserWarning, match="something else"):
        warnings.warn("something else")  # not ours: shown (and catchable) as before
    assert sum(sp._counter.sites.values()) == 3


def test_the_line_reports_syncs_per_decode_step_at_most_every_interval(caplog):
    t = [0.0]
    counter = sp.SyncCounter(rank=1, clock=lambda: t[0])
    for _ in range(10):
        counter.add("run_batch|a")
    counter.add("process_batch_result_decode|b")
    counter.decode_steps = 5
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        assert counter.maybe_log() is None  # too soon
        t[0] += sp.PROBE_LOG_EVERY_S
        line = counter.maybe_log()
        assert counter.maybe_log() is None
    assert line.startswith("adaptive_spec syncs rank=1 decode_steps=5 syncs=11 per_step=2.20 ")
    assert line.index("run_batch|a") < line.index("process_batch_result_decode|b")  # most first
    assert [r.getMessage() for r in caplog.records] == [line]


def test_the_hooked_sglang_method_exists():
    from importlib import import_module

    for target, _, _ in sp.hooks():
        module, cls, meth = target.rsplit(".", 2)
        assert callable(getattr(getattr(import_module(module), cls), meth)), target
