"""`--adaptive-spec-off-path plain` (hooks_plain): the regime bookkeeping against real SGLang
0.5.16 objects on the CPU (a real ScheduleBatch, ReqToTokenPool and FutureMap; no model runs).

What the GPU does between the calls (the forwards) is played by the test: it writes what a
forward would publish and stash, through the same FutureMap methods the scheduler calls."""

import dataclasses
import types
from importlib import import_module
from pkgutil import resolve_name

import pytest
import torch

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import hooks_offpath, hooks_plain, plugin, state

from .test_hooks_sglang import make_req
from .test_offpath_bookkeeping import install

SLOTS = 1000  # req_to_token[row, pos] = SLOTS * row + pos: every reserved slot is recognisable


@pytest.fixture
def future_map(monkeypatch):
    import sglang.srt.speculative.spec_utils as spec_utils
    from sglang.srt.managers.overlap_utils import FutureMap
    from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    monkeypatch.setattr(spec_utils, "spec_need_hidden_states", lambda *a, **k: True)  # reads server args
    pool = ReqToTokenPool(size=8, max_context_len=64, device="cpu", enable_memory_saver=False)
    rows = torch.arange(pool.req_to_token.shape[0]).unsqueeze(1)
    pool.req_to_token[:] = (SLOTS * rows + torch.arange(64)).to(pool.req_to_token.dtype)
    fm = FutureMap("cpu", SpeculativeAlgorithm.EAGLE3, pool, needs_cpu_seq_lens=False)
    fm.pool_for_tests = pool
    monkeypatch.setattr(hooks_plain, "_state", types.SimpleNamespace(
        future_map=fm, spec_algorithm=SpeculativeAlgorithm.EAGLE3, publish_as_length=None, scheduler=None))
    return fm


def spec_batch(fm, rows, committed):
    """A running batch as the scheduler keeps it after a spec step: stale lengths on the batch,
    the draft input keyed on the request slots (its true lengths are in the future map)."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.speculative.eagle_info import EagleDraftInput
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    reqs = [make_req(f"r{i}", 8) for i in range(len(rows))]
    for req, c in zip(reqs, committed):
        req.kv_committed_len = c
    idx = torch.tensor(rows, dtype=torch.int64)
    batch = ScheduleBatch(reqs=reqs, req_to_token_pool=fm.pool_for_tests, req_pool_indices=idx,
                          spec_algorithm=SpeculativeAlgorithm.EAGLE3, seq_lens=torch.tensor(committed))
    batch.spec_info = EagleDraftInput(future_indices=idx)
    return batch


def spec_forward_done(fm, batch, lengths, bonus):
    """What a spec forward leaves: its new lengths published, its bonus token and draft state stashed."""
    from sglang.srt.managers.overlap_utils import RelayPayload

    bs = len(lengths)
    fm.publish(batch.req_pool_indices, torch.tensor(lengths))
    fm.stash(batch.req_pool_indices, RelayPayload(
        bonus_tokens=torch.tensor(bonus), topk_p=torch.ones(bs, 1),
        topk_index=torch.zeros(bs, 1, dtype=torch.int64), hidden_states=torch.zeros(bs, 4)))


def sglang_prepare(calls):
    """SGLang's prepare_for_decode as a recorder (its spec branch tops up KV slots on a GPU)."""
    def prepare(batch):
        calls.append(batch.spec_algorithm.is_none())
    return prepare


def plain_forward_done(fm, batch, bonus):
    """What the scheduler does after a plain step's forward (scheduler.run_batch, 0.5.16)."""
    from sglang.srt.managers.overlap_utils import FutureMap, RelayPayload

    hooks_plain.publish_next_as_length(batch)  # the worker's plain_step says so
    hooks_plain.around_publish(FutureMap.publish, fm, batch.req_pool_indices, batch.seq_lens + 1)
    hooks_plain.around_stash(FutureMap.stash, fm, batch.req_pool_indices, RelayPayload(bonus_tokens=torch.tensor(bonus)))


def test_spec_to_plain_to_spec_keeps_lengths_slots_and_tokens(monkeypatch, future_map):
    """A spec step, two plain steps, back to spec: each plain step writes the slot reserved at
    its KV length, reads the last bonus token, and the spec step after them finds the true
    lengths and the last token where spec-v2 looks (the future map)."""
    from sglang.srt.managers.overlap_utils import FutureMap, resolve_forward_inputs

    fm = future_map
    install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain", plain_kv="reserve"))
    ctl = state.get_controller()
    batch = spec_batch(fm, rows=[1, 3], committed=[10, 20])  # host lengths lag the GPU's
    spec_forward_done(fm, batch, lengths=[12, 23], bonus=[5, 6])
    calls = []

    # first off step: spec -> plain
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    assert calls == [False]  # SGLang's spec preparation ran (the KV top-up counts the reserve)
    assert batch.spec_algorithm.is_none() and batch.spec_info is None and batch._as_plain
    assert batch.out_cache_loc.tolist() == [SLOTS * 1 + 12, SLOTS * 3 + 23]  # the reserved slots
    assert batch.seq_lens.tolist() == [13, 24]  # DECODE counts the token being decoded
    assert [r.kv_committed_len for r in batch.reqs] == [11, 21]  # + the spec result's accepts later
    hooks_plain.around_resolve_forward_inputs(resolve_forward_inputs, batch, fm)
    assert batch.input_ids.tolist() == [5, 6]
    plain_forward_done(fm, batch, bonus=[7, 8])
    batch.input_ids = None  # as the scheduler does after a forward

    # second off step: plain -> plain, lengths exact on the batch
    hooks_plain.before_update_running_batch(None, batch)
    assert not batch.spec_algorithm.is_none()  # the KV check counts the spec reserve
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    assert calls == [False, False]
    assert batch.out_cache_loc.tolist() == [SLOTS * 1 + 13, SLOTS * 3 + 24]
    assert batch.seq_lens.tolist() == [14, 25]
    hooks_plain.around_resolve_forward_inputs(resolve_forward_inputs, batch, fm)
    assert batch.input_ids.tolist() == [7, 8]
    plain_forward_done(fm, batch, bonus=[9, 10])

    # drafting back on: plain -> spec
    ctl.update_settings(dataclasses.replace(ctl.cfg, force="on"))
    hooks_plain.before_update_running_batch(None, batch)
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    assert calls[-1] is False and not batch._as_plain
    assert batch.spec_info.future_indices is batch.req_pool_indices
    fm.resolve_seq_lens_cpu(batch)  # what the scheduler's forward does first
    assert batch.seq_lens.tolist() == [14, 25]  # KV length: 2 tokens decoded plain after 12 / 23
    assert fm.output_tokens_buf[batch.req_pool_indices].tolist() == [9, 10]
    assert hooks_plain.planned_steps(batch) == 3 and hooks_plain.planned_steps(batch) is None


def test_a_publish_is_rewritten_only_for_the_plain_step_it_follows(future_map):
    from sglang.srt.managers.overlap_utils import FutureMap

    fm = future_map
    plain_slots, other_slots = torch.tensor([1]), torch.tensor([2])
    hooks_plain.publish_next_as_length(types.SimpleNamespace(req_pool_indices=plain_slots))
    hooks_plain.around_publish(FutureMap.publish, fm, other_slots, torch.tensor([50]))
    hooks_plain.around_publish(FutureMap.publish, fm, plain_slots, torch.tensor([60]))
    assert fm.new_seq_lens_buf[[1, 2]].tolist() == [60, 50]  # the note was for another publish: dropped
    hooks_plain.publish_next_as_length(types.SimpleNamespace(req_pool_indices=plain_slots))
    hooks_plain.around_publish(FutureMap.publish, fm, plain_slots, torch.tensor([60]))
    assert fm.new_seq_lens_buf[1].item() == 59


def test_a_plain_result_stores_only_its_token_where_sglang_would_fail(future_map):
    from sglang.srt.managers.overlap_utils import FutureMap, RelayPayload

    fm = future_map
    batch = spec_batch(fm, rows=[1, 3], committed=[10, 20])
    spec_forward_done(fm, batch, lengths=[12, 23], bonus=[5, 6])
    topk_before = fm.topk_p_buf[batch.req_pool_indices].clone()
    plain = RelayPayload(bonus_tokens=torch.tensor([7, 8], dtype=torch.int32))
    with pytest.raises(AttributeError):
        FutureMap.stash(fm, batch.req_pool_indices, plain)  # SGLang's spec map reads draft fields
    hooks_plain.around_stash(FutureMap.stash, fm, batch.req_pool_indices, plain)
    assert fm.output_tokens_buf[batch.req_pool_indices].tolist() == [7, 8]
    assert torch.equal(fm.topk_p_buf[batch.req_pool_indices], topk_before)


def test_a_batch_the_regime_does_not_serve_goes_back_to_spec(monkeypatch, future_map):
    """A grammar request merged into a plain batch: the step is prepared by SGLang as a spec
    step (decode-lean runs it), its lengths and token taken from the future map."""
    fm = future_map
    install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain"))
    batch = spec_batch(fm, rows=[1, 3], committed=[10, 20])
    spec_forward_done(fm, batch, lengths=[12, 23], bonus=[5, 6])
    calls = []
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    assert batch._as_plain
    batch.has_grammar = True
    hooks_plain.before_update_running_batch(None, batch)
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    assert calls == [False, False] and not batch._as_plain
    assert batch.spec_info.future_indices is batch.req_pool_indices
    assert hooks_plain.planned_steps(batch) == 0  # the worker runs it off (lean), not decided again


def test_switching_the_off_path_at_run_time_leaves_the_regime(monkeypatch, future_map):
    fm = future_map
    install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain"))
    ctl = state.get_controller()
    batch = spec_batch(fm, rows=[1], committed=[10])
    spec_forward_done(fm, batch, lengths=[12], bonus=[5])
    calls = []
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    ctl.update_settings(dataclasses.replace(ctl.cfg, off_path="decode-lean"))
    hooks_plain.before_update_running_batch(None, batch)
    hooks_plain.around_prepare_for_decode(sglang_prepare(calls), batch)
    assert not batch._as_plain and not batch.spec_algorithm.is_none()
    assert hooks_plain.planned_steps(batch) is None  # not decided here: the worker decides


def record_target_forwards(worker) -> list:
    """The worker's target worker as a recorder: (decode path installed?, capture mode) per forward."""
    seen = []

    def target_forward(batch, capture_hidden_mode=None):
        seen.append((worker._as_decode_path.active, capture_hidden_mode.name))
        return types.SimpleNamespace(next_token_ids=torch.tensor([1]))

    worker.target_worker = types.SimpleNamespace(forward_batch_generation=target_forward)
    return seen


def test_a_plain_step_is_the_target_workers_own_decode(monkeypatch, future_map):
    """The worker hands a plain batch to the target worker (the plain server's forward and
    sampler) under the decode path; the next publish is marked as that step's."""
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain"))
    seen = record_target_forwards(worker)
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    batch = types.SimpleNamespace(_as_plain=True, spec_algorithm=SpeculativeAlgorithm.NONE, forward_mode=ForwardMode.DECODE,
                                  req_pool_indices=torch.tensor([4]), reqs=[object()])

    def sglang_step(*a, **k):
        raise AssertionError("a plain step never enters SGLang's spec step")

    result = hooks_offpath.around_forward_batch_generation(sglang_step, worker, batch)
    assert seen == [(True, "NULL")] and result.adaptive_spec_mode == "off" and worker._as_draft_stale
    assert hooks_plain._state.publish_as_length is batch.req_pool_indices
    assert state.get_controller().modes["off"] == 1


def test_plain_results_count_in_sglangs_spec_metrics_and_feed_the_controller(monkeypatch):
    """SGLang's decode log on a spec server divides by its spec round count: an interval of
    plain steps alone divided by zero (H200, session 12). A plain step counts as a round of one
    token per request, with the real metrics reporter."""
    from sglang.srt.managers.scheduler_components.metrics_reporter import SchedulerMetricsReporter
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain"))
    ctl = state.get_controller()
    reporter = SchedulerMetricsReporter.__new__(SchedulerMetricsReporter)
    reporter.spec_num_accept_tokens = reporter.spec_num_forward_ct = reporter.num_generated_tokens = 0
    reporter.spec_num_block_accept_tokens = reporter.spec_num_cap_tokens = 0
    processor = types.SimpleNamespace(metrics_reporter=reporter)
    batch = types.SimpleNamespace(spec_algorithm=SpeculativeAlgorithm.NONE, reqs=[1, 2, 3])

    def sglang_process(p, b, r):
        return reporter.spec_num_accept_tokens / reporter.spec_num_forward_ct  # its log's division

    assert hooks_plain.around_process_batch_result_decode(
        sglang_process, processor, batch, types.SimpleNamespace(adaptive_spec_mode="off")) == 1.0
    assert ctl.results_seen == 1
    with pytest.raises(ZeroDivisionError):  # a result that is not ours passes through untouched
        reporter.spec_num_accept_tokens = reporter.spec_num_forward_ct = 0
        hooks_plain.around_process_batch_result_decode(sglang_process, processor, batch, types.SimpleNamespace())
    assert ctl.results_seen == 1


def test_where_the_regime_cannot_run_it_says_why(monkeypatch, caplog):
    install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain"))
    args = types.SimpleNamespace(page_size=1, speculative_eagle_topk=1, enable_mixed_chunk=False,
                                 enable_dp_attention=False, pp_size=1)
    sched = types.SimpleNamespace(server_args=args, enable_overlap=True,
                                  model_worker=types.SimpleNamespace(_as_decode_path=object()),
                                  future_map=types.SimpleNamespace(needs_cpu_seq_lens=False))
    assert hooks_plain.scheduler_ineligible(sched) is None
    sched.enable_overlap = False
    assert hooks_plain.scheduler_ineligible(sched) == "the overlap scheduler is off"
    sched.enable_overlap, args.page_size = True, 16
    assert hooks_plain.scheduler_ineligible(sched) == "page size > 1"
    args.page_size = 1
    sched.future_map.needs_cpu_seq_lens = True
    assert "CPU lengths" in hooks_plain.scheduler_ineligible(sched)
    monkeypatch.setattr(hooks_plain, "_state", types.SimpleNamespace(future_map=None, spec_algorithm=None, publish_as_length=None))
    caplog.set_level("INFO", logger="adaptive_spec")
    hooks_plain.after_init_overlap(None, sched)  # not available: the off steps run decode-lean
    assert not hooks_plain.active() and state.get_controller().cfg.off_path == "decode-lean"
    # the default path on a server it cannot serve is expected: one warning line, not an error
    lines = [r for r in caplog.records if "plain off path" in r.message]
    assert [(r.levelname, "CPU lengths" in r.message) for r in lines] == [("WARNING", True)]


def test_the_plain_hooks_exist_in_sglang_and_load_only_for_this_path():
    for target, hook_path, _ in plugin.PLAIN_HOOKS:
        module_name, fn_name = hook_path.rsplit(".", 1)
        assert callable(getattr(import_module(f"adaptive_spec.sglang_plugin.{module_name}"), fn_name))
        assert callable(resolve_name(target)), target
    assert not {t for t, _, _ in plugin.PLAIN_HOOKS} & {t for t, _, _ in plugin.HOOKS}


def test_when_the_decode_path_is_dropped_the_plain_path_stops_too(monkeypatch, future_map):
    """A failure inside SGLang's step during our catch-up step drops the decode path (SGLang's
    own path runs from then on); a plain step runs on that decode path, so the plain off path
    turns off with it and a plain batch goes back to spec at its next preparation."""
    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain"))
    ctl = state.get_controller()
    batch = types.SimpleNamespace(x=1)
    ran = []
    hooks_offpath._rerun_as_sglang(lambda w, b: ran.append(b) or "sglang's result", worker, batch,
                                   {"x": 1}, ctl, "catchup", RuntimeError("boom"), (), {})
    assert ran == [batch] and worker._as_decode_path is None
    assert not hooks_plain.active() and ctl.cfg.off_path == "decode-lean"
