"""Prometheus series move when our hooks run against real SGLang objects (CPU)."""

from prometheus_client import CollectorRegistry, generate_latest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import state
from adaptive_spec.sglang_plugin.hooks_scheduler import after_get_next_batch_to_run, after_resolve_spec_v2_tokens
from adaptive_spec.sglang_plugin.metrics import SLOW_EVERY, install_metrics

from .test_hooks_sglang import install, make_req, make_scheduler


def value(text, line_start):
    for line in text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_series_names_labels_and_values_move(monkeypatch):
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    ctl = state.get_controller()
    reg = CollectorRegistry()
    install_metrics(ctl, rank=0, registry=reg)

    after_get_next_batch_to_run(None, make_scheduler(running=4, waiting_lens=[]))
    EAGLEWorkerV2.activate_step_by_batch(worker, 4)
    text = generate_latest(reg).decode()
    assert value(text, 'adaptive_spec_drafting{tp_rank="0"}') == 1.0
    assert value(text, 'adaptive_spec_steps{tp_rank="0"}') == 3.0

    EAGLEWorkerV2.activate_step_by_batch(worker, 64)
    batch = ScheduleBatch(reqs=[make_req("a", 4), make_req("b", 4)])
    for _ in range(3):
        after_resolve_spec_v2_tokens([], None, GenerationBatchResult(speculative_num_draft_tokens=4, num_correct_drafts_per_req_cpu=[3, 1]), batch)
    for _ in range(SLOW_EVERY):
        EAGLEWorkerV2.activate_step_by_batch(worker, 64)
    text = generate_latest(reg).decode()
    assert value(text, 'adaptive_spec_drafting{tp_rank="0"}') == 0.0
    assert value(text, 'adaptive_spec_decisions_total{reason="threshold",steps="0",tp_rank="0"}') == 1 + SLOW_EVERY
    assert value(text, 'adaptive_spec_decisions_total{reason="idle",steps="3",tp_rank="0"}') == 1
    assert value(text, 'adaptive_spec_switches_total{tp_rank="0"}') == 1
    assert value(text, 'adaptive_spec_accept_rate_position{position="1",tp_rank="0"}') == 1.0
    assert value(text, 'adaptive_spec_accept_rate_position{position="2",tp_rank="0"}') == 0.5
    assert value(text, 'adaptive_spec_step_seconds_count{steps="3",tp_rank="0"}') == 2  # 3 results, 2 intervals
    assert value(text, 'adaptive_spec_decide_seconds_total{tp_rank="0"}') > 0


def test_slow_decode_results_are_counted(monkeypatch):
    """Every decode result at or over slow_results.SLOW_RESULT_S counts once (put at 0 here:
    3 results, 2 timed intervals). The line each gets is rate-limited; the counter is not."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult

    from adaptive_spec.sglang_plugin import slow_results

    install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    ctl = state.get_controller()
    reg = CollectorRegistry()
    install_metrics(ctl, rank=0, registry=reg)
    series = 'adaptive_spec_slow_decode_results_total{tp_rank="0"}'
    assert value(generate_latest(reg).decode(), series) == 0
    monkeypatch.setattr(slow_results, "SLOW_RESULT_S", 0.0)
    batch = ScheduleBatch(reqs=[make_req("a", 4), make_req("b", 4)])
    result = GenerationBatchResult(speculative_num_draft_tokens=4,
                                   num_correct_drafts_per_req_cpu=[3, 1])
    for _ in range(3):
        after_resolve_spec_v2_tokens([], None, result, batch)
    assert value(generate_latest(reg).decode(), series) == 2
