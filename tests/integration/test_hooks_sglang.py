"""Our hooks against real SGLang 0.5.16 objects (CPU: no model runs)."""

import types

import pytest
import torch

from adaptive_spec.config import ENV_VAR, AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import state
from adaptive_spec.sglang_plugin.hooks_scheduler import (
    after_get_next_batch_to_run,
    after_process_batch_result_prefill,
    after_resolve_spec_v2_tokens,
    snapshot_from_scheduler,
)
from adaptive_spec.sglang_plugin.hooks_worker import PolicyParams, after_eagle_worker_init
from adaptive_spec.sglang_plugin.slow_results import SlowResults


def make_req(rid, prompt_len):
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.sampling.sampling_params import SamplingParams

    return Req(rid, "", list(range(1, prompt_len + 1)), SamplingParams(max_new_tokens=16))


def make_scheduler(running, waiting_lens, pool=1000, used=300):
    """A real Scheduler object carrying the state our hook reads (nothing else is set up)."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.mem_cache.allocator import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.chunk_cache import ChunkCache

    sched = Scheduler.__new__(Scheduler)
    sched.running_batch = ScheduleBatch(reqs=[make_req(f"run{i}", 8) for i in range(running)])
    sched.waiting_queue = [make_req(f"wait{i}", n) for i, n in enumerate(waiting_lens)]
    sched.token_to_kv_pool_allocator = TokenToKVPoolAllocator(pool, torch.bfloat16, "cpu", None, False)
    sched.token_to_kv_pool_allocator.alloc(used)
    sched.tree_cache = ChunkCache(
        CacheInitParams(disable=True, req_to_token_pool=None, token_to_kv_pool_allocator=sched.token_to_kv_pool_allocator, page_size=1)
    )
    sched.max_total_num_tokens = pool
    sched.forward_ct = 77
    return sched


def test_snapshot_from_real_scheduler_state():
    snap = snapshot_from_scheduler(make_scheduler(running=5, waiting_lens=[10, 20, 30]))
    assert (snap.running, snap.waiting, snap.waiting_tokens) == (5, 3, 60)
    assert (snap.kv_used, snap.kv_total, snap.forward_ct) == (300, 1000, 77)
    assert snap.kv_usage == pytest.approx(0.3)


def test_a_long_queue_counts_its_first_requests_and_extrapolates():
    """Only the status reads the waiting tokens: a queue of 1,000 is not walked every step."""
    from adaptive_spec.sglang_plugin import hooks_scheduler

    n = hooks_scheduler.MAX_WAITING_SCANNED
    snap = snapshot_from_scheduler(make_scheduler(running=1, waiting_lens=[10] * n + [1000] * (1000 - n)))
    assert snap.waiting == 1000 and snap.waiting_tokens == 10 * 1000  # the first n's mean x 1,000


class FakeWorker:
    """Stands in for EAGLEWorkerV2's GPU side: records which runtime state is applied."""

    def __init__(self, steps):
        self.speculative_num_steps = steps
        self.applied = []
        # the model runner's decode graph runner: what a decode-lean off step hides and restores
        self._target_worker = types.SimpleNamespace(
            tp_rank=0, model_runner=types.SimpleNamespace(decode_cuda_graph_runner=None))

    def build_adaptive_runtime_state(self, speculative_num_steps, speculative_num_draft_tokens, cuda_graph_bs=None):
        from sglang.srt.speculative.adaptive_runtime_state import SpecRuntimeState

        return SpecRuntimeState(
            speculative_num_steps=speculative_num_steps,
            speculative_num_draft_tokens=speculative_num_draft_tokens,
            draft_attn_backend=None, cuda_graph_runner=None, target_attn_backend=None, target_graph_runner=None,
            draft_extend_attn_backend=None, cuda_graph_runner_for_draft_extend=None,
        )  # fmt: skip

    def apply_runtime_state(self, st):
        if st.speculative_num_steps == self.speculative_num_steps:
            return  # as EAGLEWorkerV2.apply_runtime_state does
        self.speculative_num_steps = st.speculative_num_steps
        self.applied.append(st.speculative_num_steps)


def install(monkeypatch, cfg):
    """What happens in a scheduler process: SGLang builds its controller, our hook swaps the policy."""
    from sglang.srt.speculative.adaptive_runtime_state import AdaptiveController

    monkeypatch.setenv(ENV_VAR, cfg.to_json())
    worker = FakeWorker(cfg.max_steps)
    worker.adaptive_controller = AdaptiveController(worker, config_path=None)
    after_eagle_worker_init(None, worker)
    worker.adaptive_controller.init_states(cuda_graph_bs=[1, 2, 4, 8, 16, 32, 64])
    return worker


def test_policy_replaces_sglang_decisions_in_the_real_controller(monkeypatch):
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    ctl = state.get_controller()
    assert isinstance(worker.adaptive_controller.params, PolicyParams)
    assert [type(listener) for listener in ctl.wall_listeners] == [SlowResults]  # slow results
    assert sorted(worker.adaptive_controller._states) == [0, 3]  # states built for our candidates only
    # The real EAGLEWorkerV2 per-step hook point, called as SGLang calls it.
    for bs in [1, 8, 15, 16, 40, 13, 12, 11, 1]:
        EAGLEWorkerV2.activate_step_by_batch(worker, bs)
    assert worker.applied == [0, 3]  # off at 16, back on below 16-4
    assert ctl.steps_histogram == {3: 5, 0: 4}  # 16, 40, 13, 12 off (back on below 12)


def test_scheduler_and_result_hooks_feed_the_controller(monkeypatch):
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=64, queue_threshold=2, min_accept_len=1.5, accept_ema_alpha=1.0))
    ctl = state.get_controller()
    # Queue depth comes from the scheduler, not from the batch.
    after_get_next_batch_to_run(None, make_scheduler(running=2, waiting_lens=[5, 5, 5]))
    EAGLEWorkerV2.activate_step_by_batch(worker, 2)
    assert ctl.last.reason == "queue" and worker.speculative_num_steps == 0
    after_get_next_batch_to_run(None, make_scheduler(running=2, waiting_lens=[]))
    EAGLEWorkerV2.activate_step_by_batch(worker, 2)
    assert worker.speculative_num_steps == 3
    # A result that ran with 3 steps arrives (one iteration late): all drafts of its 16 requests
    # rejected, enough request-rounds for the floor to be sure (signals.recent_accept_len_upper).
    batch = ScheduleBatch(reqs=[make_req(f"r{i}", 4) for i in range(16)])
    result = GenerationBatchResult(speculative_num_draft_tokens=4, num_correct_drafts_per_req_cpu=[0] * 16)
    after_resolve_spec_v2_tokens([], None, result, batch)
    # A result from an off step carries no acceptance information and is ignored.
    after_resolve_spec_v2_tokens([], None, GenerationBatchResult(speculative_num_draft_tokens=1, num_correct_drafts_per_req_cpu=[0] * 16), batch)
    assert ctl.acceptance.ema_accept_len == 1.0 and ctl.acceptance.samples == 1
    EAGLEWorkerV2.on_verify_complete_cpu(worker, [0, 0], batch_size=2)  # SGLang's own call: no switch
    EAGLEWorkerV2.activate_step_by_batch(worker, 2)
    EAGLEWorkerV2.activate_step_by_batch(worker, 2)
    assert ctl.last.reason == "acceptance" and worker.speculative_num_steps == 0


def test_a_prefill_result_restarts_the_decode_step_time(monkeypatch):
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult

    install(monkeypatch, AdaptiveSpecConfig(policy="goodput"))
    ctl = state.get_controller()
    seen = []
    ctl.policy.observe_step_time = lambda bs, k, s: seen.append(s)
    # more requests than AFTER_PREFILL_UNTIMED_MAX: the result after the prefill is a sample
    batch = ScheduleBatch(reqs=[make_req(f"r{i}", 4) for i in range(6)])
    result = GenerationBatchResult(speculative_num_draft_tokens=1,
                                   num_correct_drafts_per_req_cpu=[0] * 6)
    after_resolve_spec_v2_tokens([], None, result, batch)
    ctl.on_extend()  # a prefill launched
    after_process_batch_result_prefill(None, None, batch, result)  # ... and its result processed
    marked = ctl.timer.last_at
    after_resolve_spec_v2_tokens([], None, result, batch)
    timed_at = ctl.timer.last_at
    after_resolve_spec_v2_tokens([], None, result, batch)  # an off sample waits for the next result
    assert len(seen) == 1 and 0 <= seen[0] <= timed_at - marked + 1e-9  # timed from the prefill


def test_a_prefill_result_tells_how_many_of_its_requests_go_on_to_decode(monkeypatch):
    """SGLang has set each request's finish state when the hook runs: a request finished by its
    prefill's token (max_new_tokens 1, as the extend warm-up's) is admitted but does not count
    in the request length (prefill_load.py, "Arrivals predicted")."""
    from sglang.srt.managers.schedule_batch import FINISH_LENGTH, ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult

    install(monkeypatch, AdaptiveSpecConfig(policy="goodput"))
    ctl = state.get_controller()
    reqs = [make_req(f"r{i}", 8) for i in range(3)]
    reqs[1].finished_reason = FINISH_LENGTH(1)
    result = GenerationBatchResult(speculative_num_draft_tokens=1,
                                   num_correct_drafts_per_req_cpu=[0, 0, 0])
    after_process_batch_result_prefill(None, None, ScheduleBatch(reqs=reqs), result)
    assert ctl.policy.prefill.length_admitted == 2
    # a request that cannot tell counts, as before: bookkeeping never sends a server to fallback
    odd = ScheduleBatch(reqs=reqs + [types.SimpleNamespace()])
    after_process_batch_result_prefill(None, None, odd, result)
    assert ctl.policy.prefill.length_admitted == 6 and ctl.fallback_reason is None


def test_every_decode_result_is_timed_when_sglang_has_processed_it(monkeypatch):
    """A spec result's step time is read at the end of SGLang's processing of it, as a plain
    result's and a prefill's: read where its accept lengths reach the CPU (before the
    per-request loop), a drafting step after a prefill lost its own processing to the prefill,
    and a plain step after a drafting one carried the drafting step's."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    from adaptive_spec import signals
    from adaptive_spec.sglang_plugin import hooks_plain

    now = [0.0]
    monkeypatch.setattr(signals, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    install(monkeypatch, AdaptiveSpecConfig(policy="goodput"))
    ctl = state.get_controller()
    steps_seen, prefills_seen = [], []
    ctl.policy.observe_step_time = lambda bs, k, s: steps_seen.append((k, round(s, 6)))
    ctl.policy.observe_prefill = (
        lambda bs, s, admitted, plain=False: prefills_seen.append(round(s, 6)))
    processor = types.SimpleNamespace(metrics_reporter=types.SimpleNamespace(update_spec_metrics=lambda *a: None))
    # more requests than AFTER_PREFILL_UNTIMED_MAX: the result after the prefill is a sample
    spec_batch = ScheduleBatch(reqs=[make_req(f"r{i}", 4) for i in range(6)])
    spec_batch.spec_algorithm = SpeculativeAlgorithm.EAGLE3
    plain_batch = ScheduleBatch(reqs=[make_req(f"r{i}", 4) for i in range(6)])
    plain_batch.spec_algorithm = SpeculativeAlgorithm.NONE

    def process(batch, result, resolved_at, done_at):
        """SGLang's processing of a decode result: tokens on the CPU at `resolved_at` (a spec
        result's are resolved there), its per-request loop and output until `done_at`."""
        def sglang(processor, batch, result):
            now[0] = resolved_at
            if not batch.spec_algorithm.is_none():
                after_resolve_spec_v2_tokens([], processor, result, batch)
            now[0] = done_at
        hooks_plain.around_process_batch_result_decode(sglang, processor, batch, result)

    drafted = GenerationBatchResult(speculative_num_draft_tokens=4,
                                    num_correct_drafts_per_req_cpu=[2, 1] * 3)
    plain = GenerationBatchResult()
    plain.adaptive_spec_mode = "off"  # what our plain step sets on its result
    after_get_next_batch_to_run(None, make_scheduler(running=6, waiting_lens=[]))
    process(spec_batch, drafted, 0.000, 0.004)  # the first result: no interval yet
    now[0] = 0.010
    after_process_batch_result_prefill(None, None, spec_batch, drafted)  # a prefill's result, at 10 ms
    process(spec_batch, drafted, 0.015, 0.019)  # a drafting step after the prefill
    process(plain_batch, plain, 0.023, 0.027)  # a plain step after the drafting one
    process(spec_batch, drafted, 0.031, 0.035)  # a drafting step after the plain one
    assert prefills_seen == [0.006]  # from the end of the last decode result's processing
    assert steps_seen == [(3, 0.009), (0, 0.008), (3, 0.008)]  # each a whole iteration


def test_hook_errors_fall_back_without_raising(monkeypatch):
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=4, fallback="static"))
    ctl = state.get_controller()
    after_get_next_batch_to_run(None, object())  # not a scheduler: the hook must not raise
    assert ctl.fallback_reason.startswith("scheduler snapshot hook")
    for bs in (1, 100):
        EAGLEWorkerV2.activate_step_by_batch(worker, bs)
        assert worker.speculative_num_steps == 3  # static speculation from now on
    assert ctl.status()["decision"] == {"steps": 3, "reason": "fallback"}


def test_worker_hook_is_inert_without_settings(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    worker = FakeWorker(3)
    worker.adaptive_controller = None
    after_eagle_worker_init(None, worker)
    assert state.get_controller() is None


def test_tp_rank_is_read_where_sglang_0516_keeps_it():
    """GPU run at TP=2 (2026-11-29): both ranks logged "rank 0" when the rank was read from
    the target worker; EAGLEWorkerV2 of 0.5.16 keeps it in `ps`."""
    import types

    from adaptive_spec.sglang_plugin.hooks_worker import tp_rank_of

    assert tp_rank_of(types.SimpleNamespace(ps=types.SimpleNamespace(tp_rank=1),
                                            _target_worker=types.SimpleNamespace())) == 1
    assert tp_rank_of(types.SimpleNamespace(_target_worker=types.SimpleNamespace(tp_rank=3))) == 3
    assert tp_rank_of(types.SimpleNamespace()) == 0


def test_the_realized_rate_gets_each_result_with_the_prefills_before_it(monkeypatch):
    """Through SGLang's result hooks: a decode result's wall time for the goodput policy's
    realized rate (policy/realized.py) holds the prefill results' time since the last decode
    result, and its tokens are 1 + the drafts accepted a request; the first two results of a run
    are left out (the controller's settle rule)."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    from adaptive_spec import signals
    from adaptive_spec.sglang_plugin import hooks_plain

    now = [0.0]
    monkeypatch.setattr(signals, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    install(monkeypatch, AdaptiveSpecConfig(policy="goodput"))
    ctl = state.get_controller()
    seen = []
    ctl.policy.observe_realized = lambda bs, k, s, tokens: seen.append((bs, k, round(s, 6), tokens))
    reporter = types.SimpleNamespace(update_spec_metrics=lambda *a: None)
    processor = types.SimpleNamespace(metrics_reporter=reporter)
    batch = ScheduleBatch(reqs=[make_req("a", 4), make_req("b", 4)])
    batch.spec_algorithm = SpeculativeAlgorithm.EAGLE3
    drafted = GenerationBatchResult(speculative_num_draft_tokens=4,
                                    num_correct_drafts_per_req_cpu=[2, 1])

    def process(done_at):
        def sglang(processor, batch, result):
            after_resolve_spec_v2_tokens([], processor, result, batch)
            now[0] = done_at
        hooks_plain.around_process_batch_result_decode(sglang, processor, batch, drafted)

    after_get_next_batch_to_run(None, make_scheduler(running=2, waiting_lens=[]))
    for done_at in (0.004, 0.012, 0.020, 0.028):  # the first two settle (the first: no interval)
        process(done_at)
    now[0] = 0.031
    after_process_batch_result_prefill(None, None, batch, drafted)  # a prefill's result
    process(0.040)
    # two 8-ms steps, then 9 ms of decode + 3 of prefill
    assert seen == [(2, 3, 0.008, 2.5), (2, 3, 0.008, 2.5), (2, 3, 0.012, 2.5)]
