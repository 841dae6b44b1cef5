"""`--adaptive-spec-off-prefill plain` (hooks_plain.after_prepare_for_extend, before_merge_batch;
hooks_offpath.plain_prefill_step): a prefill while drafting is off runs as the plain server's,
against real SGLang 0.5.16 objects on the CPU (ScheduleBatch, EagleDraftInput, FutureMap; no
model runs: the target worker's forward is a recorder)."""

import dataclasses
import types

import pytest
import torch

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import hooks_offpath, hooks_plain, state

from .test_offpath_bookkeeping import install, run_steps
from .test_plain_regime import future_map, record_target_forwards, spec_batch  # noqa: F401 (future_map: a fixture)

PLAIN_PREFILL = dict(off_path="plain", off_prefill="plain")


def prefill_batch(fm, rows):
    """A prefill batch as the scheduler builds it on a spec server (before its forward)."""
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    batch = spec_batch(fm, rows, committed=[8] * len(rows))
    batch.spec_info = None
    batch.forward_mode = ForwardMode.EXTEND
    return batch


def decided(cfg_changes, batch_size=4, steps=hooks_plain.PLAIN_PREFILL_AFTER_OFF_STEPS):
    """The controller after `steps` decode decisions under these settings."""
    ctl = state.get_controller()
    ctl.update_settings(dataclasses.replace(ctl.cfg, **cfg_changes))
    for _ in range(steps):
        ctl.decide(batch_size)
    return ctl


def test_a_prefill_while_drafting_is_off_is_prepared_as_the_plain_servers(monkeypatch, future_map):
    install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    decided({})
    batch = prefill_batch(future_map, rows=[2, 5])
    hooks_plain.after_prepare_for_extend(None, batch)
    assert batch.spec_algorithm.is_none() and batch._as_plain


@pytest.mark.parametrize("why", ["drafting on", "spec prefill chosen", "no decision yet", "a chunked prompt",
                                 "logprobs asked", "path off", "off too briefly", "long prompts",
                                 "a multimodal request"])
def test_other_prefills_stay_sglangs(monkeypatch, future_map, why):
    install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    batch = prefill_batch(future_map, rows=[2, 5])
    if why == "drafting on":
        decided({"force": "on"})
    elif why == "spec prefill chosen":
        decided({"off_prefill": "spec"})
    elif why == "a chunked prompt":
        decided({})
        batch.chunked_req = batch.reqs[0]
    elif why == "logprobs asked":
        decided({})
        batch.return_logprob = True
    elif why == "path off":
        decided({})
        monkeypatch.setattr(hooks_plain._state, "future_map", None)
    elif why == "off too briefly":  # 5 + 2 requests: the last decision's size class (5-8)
        decided({}, batch_size=5, steps=hooks_plain.PLAIN_PREFILL_AFTER_OFF_STEPS - 1)
    elif why == "long prompts":  # the catch-up at re-entry would re-run the target over them
        decided({})
        batch.extend_num_tokens = (hooks_plain.PLAIN_PREFILL_MAX_TOKENS_PER_REQUEST + 1) * len(batch.reqs)
    elif why == "a multimodal request":  # its prompt is not all token ids (the catch-up needs them)
        decided({})
        batch.reqs[1].multimodal_inputs = object()
    hooks_plain.after_prepare_for_extend(None, batch)
    assert not batch.spec_algorithm.is_none() and not getattr(batch, "_as_plain", False)


def test_a_prefill_right_after_a_policys_probe_runs_plain_and_one_during_it_does_not(monkeypatch, future_map):
    """A probe pauses the off run (controller.EXCURSIONS): the prefill after it is plain at once,
    the one while it drafts is SGLang's (a plain one would make the probe's next step a
    catch-up)."""
    from adaptive_spec.policy import Decision

    install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    ctl = decided({})
    script = iter([Decision(2, "probe")] * 3 + [Decision(0, "cost_model")])
    monkeypatch.setattr(ctl, "policy", types.SimpleNamespace(max_steps=3, decide=lambda snap, acc: next(script)))
    prepared = []
    for _ in range(4):
        ctl.decide(4)
        batch = prefill_batch(future_map, rows=[2, 5])
        hooks_plain.after_prepare_for_extend(None, batch)
        prepared.append(batch.spec_algorithm.is_none())
    assert prepared == [False, False, False, True]


def test_a_prefill_growing_the_batch_to_where_the_policy_runs_plain_skips_the_draft(monkeypatch, future_map):
    """The refill of a busy closed loop: the last decision drafted at 20 requests; a prefill
    taking the batch to 129 is plain when the policy would run plain there (its forecast),
    one taking it to 22 is SGLang's."""
    from adaptive_spec.policy import Decision
    from adaptive_spec.signals import LoadSnapshot

    install(monkeypatch, AdaptiveSpecConfig(**PLAIN_PREFILL))
    ctl = state.get_controller()
    plain_from_128 = lambda snap, acc: 0 if snap.running >= 128 else 3  # noqa: E731
    monkeypatch.setattr(ctl, "policy", types.SimpleNamespace(
        max_steps=3, forecast=plain_from_128, decide=lambda snap, acc: Decision(3, "cost_model")))
    ctl.decide(20)
    prepared = []
    for running in (20, 127):
        ctl.on_snapshot(LoadSnapshot(running=running))
        batch = prefill_batch(future_map, rows=[2, 5])
        hooks_plain.after_prepare_for_extend(None, batch)
        prepared.append(batch.spec_algorithm.is_none())
    assert prepared == [False, True]


class _Scheduler:
    """What `hooks_plain.still_running` reads of SGLang's Scheduler: its running batch."""

    def __init__(self, running_batch):
        self.running_batch = running_batch


def test_requests_that_finished_in_a_full_batch_do_not_count_towards_the_one_their_successors_join(
        monkeypatch, future_map):
    """A closed loop at its cap of 32: three requests finished, and SGLang still holds them in
    its running batch (it drops them when it prepares the next decode step) while their three
    successors are prefilled. The batch stays at 32, the last decision's size class (17-32),
    where the policy drafts: SGLang's prefill. Counted with the finished ones (35, where the
    forecast runs plain) the prefill ran plain into a drafting batch (GPU, session 34)."""
    import weakref

    from sglang.srt.managers.schedule_batch import FINISH_LENGTH

    from adaptive_spec.policy import Decision
    from adaptive_spec.signals import LoadSnapshot

    from .test_hooks_sglang import make_req

    install(monkeypatch, AdaptiveSpecConfig(**PLAIN_PREFILL))
    ctl = state.get_controller()
    plain_above_32 = lambda snap, acc: 0 if snap.running > 32 else 3  # noqa: E731
    monkeypatch.setattr(ctl, "policy", types.SimpleNamespace(
        max_steps=3, forecast=plain_above_32, decide=lambda snap, acc: Decision(3, "cost_model")))
    ctl.decide(29)
    running = types.SimpleNamespace(reqs=[make_req(f"run{i}", 8) for i in range(32)])
    for req in running.reqs[:3]:
        req.finished_reason = FINISH_LENGTH(length=8)
    ctl.on_snapshot(LoadSnapshot(running=32))  # SGLang's batch size: the finished ones in it
    prepared = []
    for sched in (_Scheduler(running), None):  # None: no scheduler known, the snapshot's count
        monkeypatch.setattr(hooks_plain._state, "scheduler", weakref.ref(sched) if sched else None)
        batch = prefill_batch(future_map, rows=[2, 5, 6])
        hooks_plain.after_prepare_for_extend(None, batch)
        prepared.append(batch.spec_algorithm.is_none())
    assert prepared == [False, True]


def test_a_plain_prefill_merging_into_a_spec_batch_joins_its_draft_input(monkeypatch, future_map):
    """SGLang merges the draft inputs of the two batches (EagleDraftInput.merge_batch); a plain
    prefill has none, so it takes one keyed on its request slots: the next spec step gathers its
    length and first token from the future map like every other request's."""
    install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    decided({})
    running = spec_batch(future_map, rows=[1, 3], committed=[10, 20])
    new = prefill_batch(future_map, rows=[4])
    hooks_plain.after_prepare_for_extend(None, new)
    hooks_plain.before_merge_batch(running, new)
    assert not new.spec_algorithm.is_none() and not new._as_plain
    running.spec_info.merge_batch(new.spec_info)  # what ScheduleBatch.merge_batch does with them
    assert running.spec_info.future_indices.tolist() == [1, 3, 4]


def test_a_plain_prefill_merging_into_a_plain_batch_stays_plain(monkeypatch, future_map):
    install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    decided({})
    running = spec_batch(future_map, rows=[1, 3], committed=[10, 20])
    hooks_plain._to_plain_step(running, lengths_on_batch=True)  # a plain running batch
    new = prefill_batch(future_map, rows=[4])
    hooks_plain.after_prepare_for_extend(None, new)
    hooks_plain.before_merge_batch(running, new)
    assert new.spec_algorithm.is_none() and new.spec_info is None and new._as_plain


def test_a_plain_prefill_is_the_target_alone_and_the_next_drafting_step_catches_up(monkeypatch, future_map):
    """The worker runs a plain prefill on the target worker (no hidden states, no draft prefill,
    not under the decode path), marks the next publish as a KV length, and the draft as stale:
    the first drafting step after it is a catch-up step."""
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    seen = record_target_forwards(worker)
    batch = types.SimpleNamespace(_as_plain=True, spec_algorithm=SpeculativeAlgorithm.NONE, forward_mode=ForwardMode.EXTEND,
                                  is_extend_in_batch=False, req_pool_indices=torch.tensor([4]), reqs=[object()])

    def sglang_step(*a, **k):
        raise AssertionError("a plain prefill never enters SGLang's spec step (no draft prefill)")

    hooks_offpath.around_forward_batch_generation(sglang_step, worker, batch)
    assert seen == [(False, "NULL")] and worker._as_draft_stale
    assert hooks_plain._state.publish_as_length is batch.req_pool_indices
    assert state.get_controller().status()["step_modes"] == {"prefill-plain": 1}
    decided({"force": "on"})
    _, modes = run_steps(worker, [1, 1])
    assert modes == ["catchup", "on"]


def test_a_plain_prefill_asks_for_the_capture_its_prefill_cuda_graph_was_captured_with(monkeypatch, future_map):
    """SGLang 0.5.16 replays the target's prefill graph only for the capture mode it was captured
    with (FULL on an EAGLE server: prefill_cuda_graph_runner.can_run_graph); asking for none ran
    450 of 451 plain prefills eager on the GPU (session 33). Without a graph runner: none."""
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardMode
    from sglang.srt.model_executor.runner.prefill_cuda_graph_runner import PrefillCudaGraphRunner
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    # the attribute can_run_graph compares with, on the real class
    assert "self.capture_hidden_mode" in __import__("inspect").getsource(PrefillCudaGraphRunner.can_run_graph)
    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", **PLAIN_PREFILL))
    seen = record_target_forwards(worker)
    graphed = types.SimpleNamespace(capture_hidden_mode=CaptureHiddenMode.FULL)
    worker.target_worker.model_runner = types.SimpleNamespace(prefill_cuda_graph_runner=graphed)

    def prefill():
        batch = types.SimpleNamespace(_as_plain=True, spec_algorithm=SpeculativeAlgorithm.NONE, forward_mode=ForwardMode.EXTEND,
                                      is_extend_in_batch=False, req_pool_indices=torch.tensor([4]), reqs=[object()])
        hooks_offpath.around_forward_batch_generation(lambda *a, **k: None, worker, batch)

    prefill()
    worker.target_worker.model_runner.prefill_cuda_graph_runner = None  # --cuda-graph-backend-prefill disabled
    prefill()
    assert seen == [(False, "FULL"), (False, "NULL")]
