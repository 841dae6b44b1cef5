"""The off path's per-step bookkeeping against real SGLang classes (no model runs on CPU):
which step runs off / catch-up / on, what SGLang is told, and the target-forward conversion."""

import contextlib
import os
import types

import pytest
import torch

from adaptive_spec.config import ENV_VAR, AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import hooks_offpath, state
from adaptive_spec.sglang_plugin.hooks_worker import after_eagle_worker_init

from .test_hooks_sglang import FakeWorker


class FakeDecodePath:
    """Stands in for DecodePath (needs a GPU model runner): records when it is installed."""

    def __init__(self):
        self.active = False

    @contextlib.contextmanager
    def installed(self):
        self.active = True
        try:
            yield
        finally:
            self.active = False


def install(monkeypatch, cfg):
    from sglang.srt.speculative.adaptive_runtime_state import AdaptiveController

    monkeypatch.setenv(ENV_VAR, cfg.to_json())
    monkeypatch.delenv(hooks_offpath.SKIP_ENV, raising=False)
    worker = FakeWorker(cfg.max_steps)
    worker.adaptive_controller = AdaptiveController(worker, config_path=None)
    after_eagle_worker_init(None, worker)
    worker.adaptive_controller.init_states(cuda_graph_bs=None)
    worker._as_decode_path = FakeDecodePath()
    worker._as_draft_stale = False
    return worker


def decode_batch(bs):
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    return types.SimpleNamespace(forward_mode=ForwardMode.DECODE, is_extend_in_batch=False, seq_lens=torch.full((bs,), 100))


def run_steps(worker, batch_sizes):
    """Drive the AROUND hook like SGLang's scheduler does; record what SGLang's body saw."""
    seen = []

    def sglang_forward(w, batch, *a, **kw):
        w.activate_step_by_batch(batch.seq_lens.shape[0])  # SGLang's own per-step call: must be inert
        seen.append(
            {
                "steps": w.speculative_num_steps,
                "skip_draft_extend": os.environ.get(hooks_offpath.SKIP_ENV) == "1",
                "decode_forward": hooks_offpath._decode_forward_active,
            }
        )
        return types.SimpleNamespace()

    results = [hooks_offpath.around_forward_batch_generation(sglang_forward, worker, decode_batch(bs)) for bs in batch_sizes]
    return seen, [r.adaptive_spec_mode for r in results]


def test_off_catchup_on_sequence(monkeypatch):
    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    seen, modes = run_steps(worker, [1, 1, 32, 32, 4, 4, 4])
    assert modes == ["on", "on", "off", "off", "catchup", "on", "on"]
    # Off: no drafting (0-step state), draft-extend skipped, target forward as plain decode.
    assert seen[2] == {"steps": 0, "skip_draft_extend": True, "decode_forward": True}
    # Catch-up: SGLang's 0-step path *with* draft-extend and its own target forward.
    assert seen[4] == {"steps": 0, "skip_draft_extend": False, "decode_forward": False}
    # On: k steps, SGLang untouched.
    assert seen[5] == {"steps": 3, "skip_draft_extend": False, "decode_forward": False}
    assert os.environ.get(hooks_offpath.SKIP_ENV) is None  # restored after every step
    assert state.get_controller().modes == {"on": 4, "off": 2, "catchup": 1}
    # Exactly one decision per step (SGLang's own activate call inside was a no-op).
    assert sum(state.get_controller().steps_histogram.values()) == 7


def test_zero_step_steps_hand_sglang_int64_bonus_tokens(monkeypatch):
    """SGLang's 0-step verify uses the bonus tokens as its int64 `candidates`; without the
    overlap scheduler they arrive as int32 (crashed the first off step on the H200). Off and
    catch-up steps get them cast; on steps reach SGLang as they came."""
    from sglang.srt.speculative.eagle_info import EagleDraftInput

    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    seen = []

    def sglang_forward(w, batch, *a, **kw):
        seen.append(batch.spec_info.bonus_tokens.dtype)
        return types.SimpleNamespace()

    modes = []
    for bs in [1, 32, 4]:
        batch = decode_batch(bs)
        batch.spec_info = EagleDraftInput(bonus_tokens=torch.arange(bs, dtype=torch.int32))
        modes.append(hooks_offpath.around_forward_batch_generation(sglang_forward, worker, batch).adaptive_spec_mode)
    assert modes == ["on", "off", "catchup"]
    assert seen == [torch.int32, torch.int64, torch.int64]


def failing_once(worker, publish_first=False):
    """SGLang's step as a recorder that fails the first time, after editing the batch (as its
    verify step does) and, optionally, after telling the scheduler the new lengths."""
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    # SGLang's own per-step activation, as a method of the class (the hook shadows it per step)
    worker.__class__ = type("FakeWorkerV2", (type(worker),),
                            {"activate_step_by_batch": EAGLEWorkerV2.activate_step_by_batch})
    calls = []

    def sglang_forward(w, batch, on_publish=None):
        w.activate_step_by_batch(batch.seq_lens.shape[0])
        calls.append({"spec_info": batch.spec_info, "steps": w.speculative_num_steps,
                      "skip_draft_extend": os.environ.get(hooks_offpath.SKIP_ENV) == "1"})
        if len(calls) == 1:
            batch.spec_info = "verify input"
            if publish_first:
                on_publish("new lengths")
            raise RuntimeError("Expected 'candidates' to be of type long (torch.int64).")
        if on_publish is not None:
            on_publish("new lengths")
        return types.SimpleNamespace()

    return sglang_forward, calls


def test_a_failed_off_step_is_rerun_by_sglangs_own_path(monkeypatch):
    """SGLang fails inside our off step before publishing: the batch is as it was, the
    controller falls back (static: max steps), SGLang's own path re-runs the step and every
    later one, and the server keeps serving."""
    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    sglang_forward, calls = failing_once(worker)
    published = []
    batch = decode_batch(32)
    batch.spec_info = "draft input"
    result = hooks_offpath.around_forward_batch_generation(sglang_forward, worker, batch, on_publish=published.append)
    assert [c["spec_info"] for c in calls] == ["draft input", "draft input"]  # batch restored
    assert calls[0]["steps"] == 0 and calls[0]["skip_draft_extend"]
    assert calls[1] == {"spec_info": "draft input", "steps": 3, "skip_draft_extend": False}
    assert published == ["new lengths"] and not hasattr(result, "adaptive_spec_mode")
    ctl = state.get_controller()
    assert "off step inside SGLang" in ctl.fallback_reason and ctl.status()["fallback"]
    assert worker._as_decode_path is None and os.environ.get(hooks_offpath.SKIP_ENV) is None
    hooks_offpath.around_forward_batch_generation(sglang_forward, worker, batch)
    assert calls[2]["steps"] == 3  # later steps: SGLang's path with the fallback's step count


def test_a_failure_after_the_step_published_its_lengths_propagates(monkeypatch):
    """Once the scheduler has the step's lengths a re-run could contradict them: SGLang's error
    propagates as it would without us."""
    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    sglang_forward, calls = failing_once(worker, publish_first=True)
    batch = decode_batch(32)
    batch.spec_info = "draft input"
    with pytest.raises(RuntimeError, match="candidates"):
        hooks_offpath.around_forward_batch_generation(sglang_forward, worker, batch, on_publish=lambda x: None)
    assert len(calls) == 1 and state.get_controller().fallback_reason is None


def test_under_tensor_parallel_a_failed_off_step_propagates(monkeypatch):
    """With TP > 1 one rank falling back alone would run other steps than its peers: the
    error ends the step as it would without us."""
    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    state.get_controller().reducer = lambda values: values  # what a multi-rank server installs
    sglang_forward, calls = failing_once(worker)
    batch = decode_batch(32)
    batch.spec_info = "draft input"
    with pytest.raises(RuntimeError, match="candidates"):
        hooks_offpath.around_forward_batch_generation(sglang_forward, worker, batch)
    assert len(calls) == 1 and state.get_controller().fallback_reason is None


def barrier_worker(monkeypatch, off_barrier, stale_target_event=None):
    """A worker whose target runner and draft runner (SGLang's `war_fastpath_runner`) carry the
    read-done event slot the scheduler's WAR barrier reads."""
    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None,
                                                     off_barrier=off_barrier))
    worker._target_worker.model_runner.war_fastpath_read_done_event = stale_target_event
    worker.war_fastpath_runner = types.SimpleNamespace(war_fastpath_read_done_event=None)
    return worker


def run_with_graph(worker, batch_sizes, graph=True):
    """SGLang's step: an off step's target decode graph records its read-done event on the
    target runner (decode_cuda_graph_runner.py); an eager forward records none."""
    seen = []

    def sglang_forward(w, batch, *a, **kw):
        if hooks_offpath._decode_forward_active and graph:
            w._target_worker.model_runner.war_fastpath_read_done_event = f"read-done {len(seen)}"
        seen.append(w.war_fastpath_runner.war_fastpath_read_done_event)
        return types.SimpleNamespace()

    modes = [hooks_offpath.around_forward_batch_generation(sglang_forward, worker, decode_batch(bs)).adaptive_spec_mode
             for bs in batch_sizes]
    return modes, seen


def test_fast_barrier_hands_the_decode_graphs_read_done_event_to_the_scheduler(monkeypatch):
    worker = barrier_worker(monkeypatch, "fast")
    modes, _ = run_with_graph(worker, [32])
    assert modes == ["off"]
    # where the scheduler's _apply_war_barrier looks (and clears it), as after a plain decode
    assert worker.war_fastpath_runner.war_fastpath_read_done_event == "read-done 0"
    assert worker._target_worker.model_runner.war_fastpath_read_done_event is None


def test_fast_barrier_never_hands_over_an_old_event(monkeypatch):
    """An off step without a decode graph (eager) records no event: the scheduler must wait for
    the whole forward, not on an event from an earlier step."""
    worker = barrier_worker(monkeypatch, "fast", stale_target_event="read-done of an earlier step")
    run_with_graph(worker, [32], graph=False)
    assert worker.war_fastpath_runner.war_fastpath_read_done_event is None


def test_coarse_barrier_and_drafting_steps_leave_sglangs_events_alone(monkeypatch):
    worker = barrier_worker(monkeypatch, "coarse")
    run_with_graph(worker, [32])
    assert worker.war_fastpath_runner.war_fastpath_read_done_event is None  # SGLang: whole-forward wait
    worker = barrier_worker(monkeypatch, "fast")
    modes, _ = run_with_graph(worker, [4])  # drafting: draft-extend records the draft runner's own
    assert modes == ["on"] and worker.war_fastpath_runner.war_fastpath_read_done_event is None


def test_sglang_reads_the_event_where_the_fast_barrier_puts_it():
    """The SGLang 0.5.16 code the fast barrier relies on: the scheduler's WAR barrier takes the
    read-done event from the worker's `war_fastpath_runner` (EAGLEWorkerV2: the draft runner),
    and the decode graph records one on its own model runner."""
    import inspect

    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.model_executor.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    barrier = inspect.getsource(Scheduler._apply_war_barrier)
    assert "war_fastpath_runner" in barrier and "war_fastpath_read_done_event" in barrier
    assert "draft_runner" in inspect.getsource(EAGLEWorkerV2.war_fastpath_runner.fget)
    assert "self.model_runner.war_fastpath_read_done_event = read_done" in inspect.getsource(DecodeCudaGraphRunner)


def test_the_stale_draft_ledger_counts_off_steps_per_request_at_reentry(monkeypatch):
    # same sequence as above; the batch's requests are r0.. (the first bs of them), and each
    # request's output grows by one token per step
    worker = install(monkeypatch, AdaptiveSpecConfig(threshold=16, hysteresis=4, queue_threshold=None))
    step = [0]

    def sglang_forward(w, batch, *a, **kw):
        return types.SimpleNamespace()

    modes = []
    for bs in [1, 1, 32, 32, 4, 4, 4]:
        batch = decode_batch(bs)
        batch.reqs = [types.SimpleNamespace(rid=f"r{i}", output_ids=[0] * (10 + step[0])) for i in range(bs)]
        modes.append(hooks_offpath.around_forward_batch_generation(sglang_forward, worker, batch).adaptive_spec_mode)
        step[0] += 1
    assert modes == ["on", "on", "off", "off", "catchup", "on", "on"]
    st = state.get_controller().status()["reentry"]
    # r0 drafted before the two off steps: 2 stale; r1-r3 first seen at the re-entry (admitted
    # while off): every output token but the first, 14 - 1 = 13 each
    assert st["reentries"] == 1 and st["stale_positions_max"] == 13
    assert st["recent"] == [{"requests": 4, "mean": (2 + 3 * 13) / 4, "max": 13}]


def test_a_batch_without_requests_leaves_the_ledger_alone(monkeypatch):
    worker = install(monkeypatch, AdaptiveSpecConfig(force="flap:1"))
    _, modes = run_steps(worker, [8] * 3)  # decode_batch has no .reqs: the ledger just skips
    assert modes == ["on", "off", "catchup"]
    assert state.get_controller().status()["reentry"]["reentries"] == 0


def test_flapping_every_step_never_drafts_from_a_stale_state(monkeypatch):
    worker = install(monkeypatch, AdaptiveSpecConfig(force="flap:1"))
    _, modes = run_steps(worker, [8] * 6)
    assert modes == ["on", "off", "catchup", "off", "catchup", "off"]


def test_sglang_off_path_option_leaves_sglang_alone(monkeypatch):
    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="sglang"))
    calls = []
    hooks_offpath.around_forward_batch_generation(lambda w, b, *a, **k: calls.append(os.environ.get(hooks_offpath.SKIP_ENV)), worker, decode_batch(4))
    assert calls == [None]


def test_a_prefill_batch_tells_the_controller_its_time_is_not_a_decode_sample(monkeypatch):
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    worker = install(monkeypatch, AdaptiveSpecConfig(policy="goodput"))
    ctl = state.get_controller()
    prefill = types.SimpleNamespace(forward_mode=ForwardMode.EXTEND, is_extend_in_batch=False,
                                    seq_lens=torch.full((2,), 40))
    hooks_offpath.around_forward_batch_generation(lambda w, b, *a, **k: "ran", worker, prefill)
    assert ctl._unsampled == 2
    run_steps(worker, [2])  # a decode step is not a prefill: nothing changes
    assert ctl._unsampled == 2


def verify_forward_batch(bs, draft_tokens=1, seq_lens_cpu=True):
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode

    lens = torch.arange(10, 10 + bs)
    return types.SimpleNamespace(
        forward_mode=ForwardMode.TARGET_VERIFY,
        spec_info=types.SimpleNamespace(draft_token_num=draft_tokens),
        capture_hidden_mode=CaptureHiddenMode.FULL,
        batch_size=bs,
        seq_lens=lens.clone(),
        seq_lens_cpu=lens.clone() if seq_lens_cpu else None,
        seq_lens_sum=int(lens.sum()) if seq_lens_cpu else None,
        forward_metadata_ready=True,
    )


def test_one_token_verify_runs_as_plain_decode(monkeypatch):
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode

    worker = install(monkeypatch, AdaptiveSpecConfig(force="off"))
    tp_worker = worker._target_worker
    fb = verify_forward_batch(3)
    seen = {}

    def target_forward(tp, batch, forward_batch, *a, **kw):
        seen.update(mode=forward_batch.forward_mode, installed=worker._as_decode_path.active,
                    lens=forward_batch.seq_lens.tolist(), lens_sum=forward_batch.seq_lens_sum,
                    spec=forward_batch.spec_info, hidden=forward_batch.capture_hidden_mode,
                    planned=forward_batch.forward_metadata_ready)  # fmt: skip
        return "logits"

    monkeypatch.setattr(hooks_offpath, "_decode_forward_active", True)
    out = hooks_offpath.around_target_forward(target_forward, tp_worker, batch=None, forward_batch=fb, is_verify=True)
    assert out == "logits"
    # DECODE counts the token being decoded in seq_lens: same position, same KV slot.
    assert seen == {"mode": ForwardMode.DECODE, "installed": True, "lens": [11, 12, 13], "lens_sum": 36,
                    "spec": None, "hidden": CaptureHiddenMode.NULL, "planned": False}  # fmt: skip


def test_other_target_forwards_are_untouched(monkeypatch):
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    worker = install(monkeypatch, AdaptiveSpecConfig(force="off"))
    modes = []
    fwd = lambda tp, batch, forward_batch, *a, **kw: modes.append(forward_batch.forward_mode)  # noqa: E731
    for active, fb in ((False, verify_forward_batch(2)), (True, verify_forward_batch(2, draft_tokens=4))):
        monkeypatch.setattr(hooks_offpath, "_decode_forward_active", active)
        hooks_offpath.around_target_forward(fwd, worker._target_worker, batch=None, forward_batch=fb, is_verify=True)
    assert modes == [ForwardMode.TARGET_VERIFY, ForwardMode.TARGET_VERIFY]


@pytest.mark.parametrize("off_path", ["decode-lean", "decode"])
def test_decode_lean_off_steps_skip_the_verify_graph_plan(monkeypatch, off_path):
    """decode-lean: during an off step SGLang's verify preparation finds no verify graph (so
    it plans none), the target forward still runs through the decode path, the result reports
    the graph that forward used, and the spec state's runner is back after the step. Catch-up
    and on steps, and off steps of plain `decode`, see the real runner."""
    verify_graph = types.SimpleNamespace(can_run_graph=lambda fb: True, bs=8)
    seen = []

    def sglang_step(w, batch, *a, **kw):
        mr = w._target_worker.model_runner
        entry = {"verify_graph_seen": mr.decode_cuda_graph_runner.can_run_graph(None)}
        out = hooks_offpath.around_target_forward(
            lambda tp, b, fb, *a2, **k2: types.SimpleNamespace(can_run_cuda_graph=True),
            w._target_worker, batch=None, forward_batch=verify_forward_batch(4), is_verify=True)
        entry["decode_graph_used"] = out.can_run_cuda_graph
        seen.append(entry)
        return types.SimpleNamespace(can_run_cuda_graph=entry["verify_graph_seen"])

    worker = install(monkeypatch, AdaptiveSpecConfig(force="flap:1", off_path=off_path))
    worker._target_worker.model_runner = types.SimpleNamespace(decode_cuda_graph_runner=verify_graph)
    results = [hooks_offpath.around_forward_batch_generation(sglang_step, worker, decode_batch(4))
               for _ in range(4)]
    by_mode = {}
    for r, e in zip(results, seen):
        by_mode.setdefault(r.adaptive_spec_mode, []).append((e["verify_graph_seen"], r.can_run_cuda_graph))
    assert set(by_mode) >= {"off", "catchup"}, by_mode
    lean = off_path == "decode-lean"
    # off: the body finds no verify graph (lean) and the result says the decode graph ran
    assert all(v == (not lean) and ran is True for v, ran in by_mode["off"]), by_mode
    assert all(v is True for v, _ in by_mode["catchup"] + by_mode.get("on", []))
    assert worker._target_worker.model_runner.decode_cuda_graph_runner is verify_graph


# ---------------------------------------------------------------------------- direct off step
def direct_setup(monkeypatch, sampled, fail=False):
    """A direct-path worker over real SGLang pieces where they run on CPU: a ScheduleBatch of
    three requests (committed lengths 7, 9, 12; last bonus tokens 41, 42, 43), the real
    EagleDraftInput, EAGLEWorkerV2's own draft-stub code; the target worker is a recorder."""
    from sglang.srt.managers.schedule_batch import ScheduleBatch
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.speculative import eagle_worker_v2
    from sglang.srt.speculative.eagle_info import EagleDraftInput
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    from .test_hooks_sglang import make_req

    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="direct"))
    reqs = [make_req(f"r{i}", 4) for i in range(3)]
    for r, n in zip(reqs, (7, 9, 12)):
        r.kv_committed_len = n
    batch = ScheduleBatch(reqs=reqs)
    batch.forward_mode = ForwardMode.DECODE
    batch.spec_algorithm = SpeculativeAlgorithm.EAGLE3
    batch.seq_lens = torch.tensor([7, 9, 12])
    batch.seq_lens_cpu = batch.seq_lens.clone()
    batch.seq_lens_sum = 28
    batch.req_pool_indices = torch.tensor([2, 0, 1])
    batch.spec_info = EagleDraftInput(bonus_tokens=torch.tensor([41, 42, 43], dtype=torch.int32))
    batch.input_ids, batch.out_cache_loc = "untouched", "untouched"
    # KV slot of request pool row r at position p: 1000 r + p
    worker.req_to_token_pool = types.SimpleNamespace(
        req_to_token=torch.arange(3)[:, None] * 1000 + torch.arange(64)[None, :])
    seen = {}

    def target_forward(b, capture_hidden_mode=None):
        seen.update(mode=b.forward_mode, ids=b.input_ids.tolist(), lens=b.seq_lens.tolist(),
                    lens_cpu=b.seq_lens_cpu.tolist(), lens_sum=b.seq_lens_sum, slots=b.out_cache_loc.tolist(),
                    spec=b.spec_info, hidden=capture_hidden_mode, installed=worker._as_decode_path.active)
        if fail:
            raise RuntimeError("no GPU")
        return GenerationBatchResult(logits_output=types.SimpleNamespace(), can_run_cuda_graph=True,
                                     next_token_ids=torch.tensor(sampled))

    worker.target_worker = types.SimpleNamespace(forward_batch_generation=target_forward)
    worker.device, worker.topk = "cpu", 1
    worker.draft_worker = types.SimpleNamespace(draft_runner=None)
    monkeypatch.setattr(eagle_worker_v2, "get_draft_recurrent_hidden_state_spec", lambda runner: (16, torch.bfloat16))
    worker._stub_skipped_draft_extend = types.MethodType(eagle_worker_v2.EAGLEWorkerV2._stub_skipped_draft_extend, worker)
    return worker, batch, seen


def test_direct_off_step_decodes_the_bonus_token_and_returns_a_one_token_spec_result(monkeypatch):
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.managers.scheduler_components.batch_result_processor import SchedulerBatchResultProcessor
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode

    worker, batch, seen = direct_setup(monkeypatch, sampled=[5, 6, 7])
    before = {name: getattr(batch, name) for name in hooks_offpath._DIRECT_FIELDS}
    published = []
    sglang_step = lambda *a, **k: pytest.fail("the direct step must not enter SGLang's verify step")  # noqa: E731
    # SGLang's own isolation around a spec-v2 forward (0.5.16 snapshots every batch field)
    with Scheduler._forward_isolation(types.SimpleNamespace(), batch, overlap=False):
        result = hooks_offpath.around_forward_batch_generation(sglang_step, worker, batch, on_publish=published.append)
    # the forward: a DECODE of the last bonus tokens at their committed positions, into the
    # slots SGLang reserved there, through the decode path, no hidden states
    assert seen == {"mode": ForwardMode.DECODE, "ids": [41, 42, 43], "lens": [8, 10, 13], "lens_cpu": [8, 10, 13],
                    "lens_sum": 31, "slots": [2007, 9, 1012], "spec": None, "hidden": CaptureHiddenMode.NULL,
                    "installed": True}  # fmt: skip
    # the result: SGLang's 0-step shape (accept length 1, the sampled token is the next bonus)
    assert result.adaptive_spec_mode == "off" and result.speculative_num_draft_tokens == 1
    assert result.next_token_ids.dtype == torch.int32 and result.next_token_ids.tolist() == [5, 6, 7]
    assert result.accept_lens.dtype == torch.int32 and result.accept_lens.tolist() == [1, 1, 1]
    assert result.new_seq_lens.tolist() == [8, 10, 13] and published[0] is result.new_seq_lens
    assert result.next_draft_input.bonus_tokens.tolist() == [5, 6, 7]
    assert result.next_draft_input.topk_p.shape == (3, 1) and result.next_draft_input.hidden_states.shape == (3, 16)
    assert worker._as_draft_stale  # the next drafting step catches the draft up first
    # SGLang restored the batch for the scheduler
    assert all(getattr(batch, n) is v for n, v in before.items())
    # SGLang's own result processing commits one token per request
    processor = types.SimpleNamespace(model_worker=types.SimpleNamespace(on_verify_complete_cpu=lambda *a, **k: None))
    tokens = SchedulerBatchResultProcessor._resolve_spec_v2_tokens(processor, result, batch)
    assert tokens == [[5], [6], [7]] and [r.kv_committed_len for r in batch.reqs] == [8, 10, 13]
    assert result.num_correct_drafts_per_req_cpu == [0, 0, 0]


def test_direct_off_step_leaves_special_batches_and_failures_to_sglangs_step(monkeypatch):
    worker, batch, seen = direct_setup(monkeypatch, sampled=[5, 6, 7])
    batch.return_logprob = True  # spec-v2 logprobs come from SGLang's verify step
    ran = []
    sglang_step = lambda w, b, *a, **k: ran.append(b) or types.SimpleNamespace()  # noqa: E731
    assert hooks_offpath.around_forward_batch_generation(sglang_step, worker, batch).adaptive_spec_mode == "off"
    assert ran and not seen
    # a failing direct step: the batch is put back and the default off path takes over,
    # this step included; the policy keeps deciding (no run-wide fallback)
    worker, batch, seen = direct_setup(monkeypatch, sampled=[5, 6, 7], fail=True)
    before = {name: getattr(batch, name) for name in hooks_offpath._DIRECT_FIELDS}
    ran.clear()
    result = hooks_offpath.around_forward_batch_generation(sglang_step, worker, batch)
    assert seen and ran and all(getattr(batch, n) is v for n, v in before.items())
    ctl = state.get_controller()
    assert ctl.cfg.off_path == "decode-lean" and ctl.fallback_reason is None and result.adaptive_spec_mode == "off"


def test_sglangs_record_of_every_switch_stays_bounded():
    """EAGLEWorkerV2.apply_runtime_state records each switch through ServerArgs.override (real
    SGLang 0.5.16 object here): 1,000 switches leave the latest one, other records stay."""
    from sglang.srt.server_args import ServerArgs

    sa = ServerArgs.__new__(ServerArgs)
    sa.override("deployment", speculative_eagle_topk=1)
    for i in range(1000):
        steps = 3 * (i % 2)
        sa.override(hooks_offpath.SWITCH_SOURCE, speculative_num_steps=steps, speculative_num_draft_tokens=steps + 1)
        hooks_offpath.bound_switch_records(sa)
    records = sa._runtime_mutations
    assert len(records) <= hooks_offpath.MAX_SWITCH_RECORDS + 1
    assert records[0] == ("deployment", {"speculative_eagle_topk": 1})
    assert records[-1] == (hooks_offpath.SWITCH_SOURCE, {"speculative_num_steps": 3, "speculative_num_draft_tokens": 4})
    assert sa.speculative_num_steps == 3


def test_sglangs_line_per_switch_is_folded_into_our_decision_log(monkeypatch, caplog):
    """SGLang logs one INFO line per runtime-state switch; our worker hook filters exactly
    that line from SGLang's worker logger (others pass)."""
    import logging

    from adaptive_spec.sglang_plugin import hooks_worker

    install(monkeypatch, AdaptiveSpecConfig(threshold=16))
    sglang_logger = logging.getLogger(hooks_worker.SGLANG_WORKER_LOGGER)
    before = hooks_worker.SWITCH_LINE_FILTER.dropped
    with caplog.at_level(logging.INFO, logger=hooks_worker.SGLANG_WORKER_LOGGER):
        sglang_logger.info("Switch adaptive runtime state: steps 3 -> 0, draft_tokens 4 -> 1")
        sglang_logger.info("Capture cuda graph end.")
    assert [r.getMessage() for r in caplog.records if r.name == hooks_worker.SGLANG_WORKER_LOGGER] \
        == ["Capture cuda graph end."]
    assert hooks_worker.SWITCH_LINE_FILTER.dropped == before + 1
