"""`--adaptive-spec-catchup full` (sglang_plugin/catchup.py) against real SGLang 0.5.16 objects on
the CPU: the stale marks the plain regime leaves, the plan (which positions, which tokens), the
prefill-shaped view as SGLang's ForwardBatch reads it, and the two forwards' inputs: the target's
run through recorders, the draft's through SGLang's own `_draft_extend_for_prefill` with a
recording draft runner (no model runs; what the forwards compute is the GPU's, not tested here)."""

import dataclasses
import os
import types

import pytest
import torch

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import catchup, hooks_offpath, hooks_plain, state

from .test_hooks_sglang import make_req
from .test_offpath_bookkeeping import install
from .test_plain_regime import SLOTS, future_map, spec_batch, spec_forward_done  # noqa: F401 (future_map: a fixture)

FULL = dict(off_path="plain", catchup="full", plain_kv="lazy")


@pytest.fixture(autouse=True)
def one_process():
    """SGLang's parallel topology as one process has it (no expert parallelism; ForwardBatch asks)."""
    from sglang.srt.runtime_context import get_parallel

    with get_parallel().override(moe_ep_size=1):
        yield


def req_with(rid, prompt_len, outputs, committed, stale_from=None):
    """A request whose prompt is 1..prompt_len and whose outputs are 101, 102, ..."""
    req = make_req(rid, prompt_len)
    req.output_ids = list(range(101, 101 + outputs))
    req.kv_committed_len = committed
    setattr(req, catchup.STALE_FROM, stale_from)
    return req


def test_plain_steps_mark_where_each_requests_stale_run_starts(monkeypatch, future_map):
    """The first plain step marks the committed length (the host's, which may lag the last spec
    step's accepts: a few valid positions redone); later plain steps keep the first mark; the
    way back to spec says the host lengths are exact (FROM_PLAIN)."""
    install(monkeypatch, AdaptiveSpecConfig(force="off", **FULL))
    batch = spec_batch(future_map, rows=[1, 3], committed=[10, 20])
    spec_forward_done(future_map, batch, lengths=[12, 23], bonus=[5, 6])
    hooks_plain.around_prepare_for_decode(lambda b: None, batch)
    assert [getattr(r, catchup.STALE_FROM) for r in batch.reqs] == [10, 20]
    hooks_plain._to_plain_step(batch, lengths_on_batch=True)  # a second plain step
    assert [getattr(r, catchup.STALE_FROM) for r in batch.reqs] == [10, 20]
    hooks_plain._back_to_spec(batch)
    assert getattr(batch, catchup.FROM_PLAIN)


def test_a_plain_prefill_marks_its_uncached_prompt_and_a_spec_prefill_clears_the_mark(monkeypatch, future_map):
    from sglang.srt.model_executor.forward_batch_info import ForwardMode

    install(monkeypatch, AdaptiveSpecConfig(force="off", off_prefill="plain", **FULL))
    ctl = state.get_controller()
    for _ in range(hooks_plain.PLAIN_PREFILL_AFTER_OFF_STEPS):
        ctl.decide(4)
    batch = spec_batch(future_map, rows=[2, 5], committed=[8, 8])
    batch.spec_info, batch.forward_mode, batch.prefix_lens = None, ForwardMode.EXTEND, [0, 6]
    hooks_plain.after_prepare_for_extend(None, batch)
    assert [getattr(r, catchup.STALE_FROM) for r in batch.reqs] == [0, 6]  # 6 cached: its draft KV stays

    worker = install(monkeypatch, AdaptiveSpecConfig(force="off", **FULL))
    spec_prefill = types.SimpleNamespace(reqs=batch.reqs, forward_mode=ForwardMode.EXTEND, is_extend_in_batch=False,
                                         spec_algorithm=hooks_plain._state.spec_algorithm)
    hooks_offpath.around_forward_batch_generation(lambda w, b, *a, **k: types.SimpleNamespace(), worker, spec_prefill)
    assert [getattr(r, catchup.STALE_FROM) for r in batch.reqs] == [None, None]


def test_the_plan_covers_each_stale_run_and_the_newest_position_of_the_rest():
    reqs = [req_with("a", 5, outputs=6, committed=10, stale_from=7),  # positions 7, 8, 9 = outputs 3..5
            req_with("b", 4, outputs=3, committed=6),  # nothing stale: its newest position, 5
            req_with("c", 6, outputs=2, committed=7, stale_from=2)]  # prompt admitted plain: 2..6
    plan = catchup.make_plan(reqs, token_cap=100)
    assert plan.prefix_lens == [7, 5, 2] and plan.extend_lens == [3, 1, 5] and plan.seq_lens == [10, 6, 7]
    assert plan.tokens == [103, 104, 105] + [102] + [3, 4, 5, 6, 101]
    assert plan.stale_positions == 3 + 5


def test_over_the_token_cap_each_request_keeps_its_newest_positions():
    reqs = [req_with("a", 5, outputs=30, committed=34, stale_from=5), req_with("b", 5, outputs=30, committed=34, stale_from=30)]
    plan = catchup.make_plan(reqs, token_cap=16)
    assert plan.prefix_lens == [26, 30] and plan.extend_lens == [8, 4] and sum(plan.extend_lens) <= 16


@pytest.mark.parametrize("gap", ["outputs not yet known", "empty request"])
def test_a_bookkeeping_gap_gives_no_plan(gap):
    req = req_with("a", 5, outputs=2, committed=9, stale_from=5) if gap == "outputs not yet known" else \
        req_with("a", 0, outputs=0, committed=0)
    assert catchup.make_plan([req], token_cap=100) is None


def cpu_runner():
    """What ForwardBatch.init_new reads of a model runner (torch-native positions on the CPU)."""
    return types.SimpleNamespace(
        device="cpu", server_args=types.SimpleNamespace(attention_backend="torch_native", enable_lora=False),
        ngram_embedding_manager=types.SimpleNamespace(enabled=False), model_config=types.SimpleNamespace(model_is_mrope=False))


def decode_batch_at_reentry(fm):
    """The running batch at the catch-up step: spec again, lengths T = 10 / 6, bonus tokens at T."""
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.srt.speculative.eagle_info import EagleDraftInput

    batch = spec_batch(fm, rows=[1, 3], committed=[10, 6])
    batch.forward_mode = ForwardMode.DECODE
    batch.reqs = [req_with("a", 5, outputs=6, committed=10, stale_from=7), req_with("b", 4, outputs=3, committed=6)]
    for req, row in zip(batch.reqs, [1, 3]):
        req.req_pool_idx = row
    batch.spec_info = EagleDraftInput(bonus_tokens=torch.tensor([900, 901]), future_indices=batch.req_pool_indices)
    return batch


def test_the_view_is_sglangs_prefill_of_a_chunk_with_a_prefix_and_leaves_the_batch_alone(future_map):
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardBatch

    batch = decode_batch_at_reentry(future_map)
    before = dict(batch.__dict__)
    plan = catchup.make_plan(batch.reqs, token_cap=100)
    view = catchup.extend_view(batch, plan)
    fb = ForwardBatch.init_new(view, cpu_runner(), capture_hidden_mode=CaptureHiddenMode.FULL,
                               return_hidden_states_before_norm=False)
    assert fb.forward_mode.is_extend() and fb.capture_hidden_mode == CaptureHiddenMode.FULL
    assert fb.positions.tolist() == [7, 8, 9, 5]
    assert fb.extend_prefix_lens_cpu == [7, 5] and fb.extend_seq_lens_cpu == [3, 1]
    assert fb.seq_lens.tolist() == [10, 6] and fb.seq_lens_sum == 16
    assert fb.input_ids.tolist() == [103, 104, 105, 102]
    assert fb.out_cache_loc.tolist() == [0, 0, 0, 0]  # the target writes slot 0 only
    assert fb.spec_info is None and not fb.return_logprob
    assert {k: v for k, v in batch.__dict__.items()} == before


class RecordingDraftRunner:
    """The draft model runner as a recorder: the ForwardBatch it gets, a LAST-mode output back."""

    def __init__(self, hidden=8, vocab=16):
        self.seen = []
        self.canary_manager = None
        self.tp_group = None
        self.hidden, self.vocab = hidden, vocab
        self.__dict__.update(vars(cpu_runner()))

    def forward(self, fb):
        self.seen.append(fb)
        bs = len(fb.seq_lens)
        return types.SimpleNamespace(logits_output=types.SimpleNamespace(
            next_token_logits=torch.zeros(bs, self.vocab), hidden_states=torch.zeros(bs, self.hidden)))


def reentry_worker(monkeypatch, fm, fail_target=False):
    """A worker whose target worker records its forward and whose draft worker runs SGLang's own
    `_draft_extend_for_prefill` on a recording draft runner."""
    import contextlib

    import sglang.srt.layers.moe.utils as moe_utils
    from sglang.srt.speculative.eagle_worker_v2 import EagleDraftWorker
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    for name in ("speculative_moe_backend_context", "speculative_moe_a2a_backend_context"):  # need the EP group
        monkeypatch.setattr(moe_utils, name, contextlib.nullcontext)

    worker = install(monkeypatch, AdaptiveSpecConfig(force="on", **FULL))
    worker.server_args = types.SimpleNamespace(attention_backend="triton", chunked_prefill_size=64, page_size=1,
                                               speculative_use_rejection_sampling=False)
    worker.req_to_token_pool = fm.pool_for_tests
    target_seen = []

    def target_forward(view, is_verify=False, capture_hidden_mode=None):
        if fail_target:
            raise RuntimeError("target extend failed")
        target_seen.append(dict(is_verify=is_verify, capture=capture_hidden_mode.name, out_cache_loc=view.out_cache_loc.tolist(),
                                input_ids=view.input_ids.tolist(), prefix=list(view.prefix_lens)))
        n = view.input_ids.shape[0]
        return types.SimpleNamespace(logits_output=types.SimpleNamespace(hidden_states=torch.arange(n * 3.0).reshape(n, 3)))

    worker.target_worker = types.SimpleNamespace(forward_batch_generation=target_forward)
    runner = RecordingDraftRunner()
    draft = types.SimpleNamespace(draft_runner=runner, speculative_algorithm=SpeculativeAlgorithm.EAGLE3, topk=1,
                                  seed_dsa_topk_from_draft_extend=False, server_args=worker.server_args,
                                  draft_tp_context=lambda group: contextlib.nullcontext())
    draft._draft_extend_for_prefill = lambda *a, **k: EagleDraftWorker._draft_extend_for_prefill(draft, *a, **k)
    worker.draft_worker = draft
    return worker, target_seen, runner.seen


def test_the_target_runs_into_slot_0_and_the_draft_writes_each_position_at_its_own_slot(monkeypatch, future_map):
    """Target: the stale tokens, no sampling (is_verify), every hidden state (FULL), K/V to slot 0.
    Draft (SGLang's prefill extend): the same positions fed each position's next token, the bonus
    token at T last, the target's hidden states, K/V at req_to_token[row, s:T]."""
    worker, target_seen, draft_seen = reentry_worker(monkeypatch, future_map)
    batch = decode_batch_at_reentry(future_map)
    plan = catchup.run_full_catchup(worker, batch)
    assert plan.stale_positions == 3
    assert target_seen == [dict(is_verify=True, capture="FULL", out_cache_loc=[0, 0, 0, 0],
                                input_ids=[103, 104, 105, 102], prefix=[7, 5])]
    (fb,) = draft_seen
    assert fb.input_ids.tolist() == [104, 105, 900, 901]  # rotated: next tokens, bonus at T last
    assert fb.out_cache_loc.tolist() == [SLOTS * 1 + 7, SLOTS * 1 + 8, SLOTS * 1 + 9, SLOTS * 3 + 5]
    assert fb.positions.tolist() == [7, 8, 9, 5]
    assert fb.spec_info.hidden_states.shape == (4, 3) and fb.capture_hidden_mode.name == "LAST"
    assert batch.spec_info.bonus_tokens.tolist() == [900, 901] and batch.forward_mode.is_decode()


def catchup_step(worker, batch):
    """One catch-up step through the worker hook; SGLang's own step is a recorder."""
    worker._as_draft_stale = True
    return hooks_offpath.around_forward_batch_generation(lambda w, b, *a, **k: types.SimpleNamespace(), worker, batch)


def test_after_plain_steps_the_reentry_step_catches_up_in_full_and_drafts_at_once(monkeypatch, future_map):
    """The step SGLang's catch-up would have been (0 steps, one token) drafts with the decided
    steps from the draft state the full catch-up leaves (the draft's guess and hidden state at
    the last row of each request)."""
    worker, target_seen, _ = reentry_worker(monkeypatch, future_map)
    batch = decode_batch_at_reentry(future_map)
    setattr(batch, catchup.FROM_PLAIN, True)
    seen_steps = []

    def sglang_step(w, b, *a, **k):
        seen_steps.append(w.speculative_num_steps)
        return types.SimpleNamespace()

    worker._as_draft_stale = True
    result = hooks_offpath.around_forward_batch_generation(sglang_step, worker, batch)
    assert result.adaptive_spec_mode == "reentry" and seen_steps == [3] and not worker._as_draft_stale
    assert len(target_seen) == 1
    assert batch.spec_info.topk_index.shape == (2, 1) and batch.spec_info.hidden_states.shape == (2, 8)
    assert batch.spec_info.bonus_tokens.tolist() == [900, 901]
    full = state.get_controller().status()["reentry"]["full_catchup"]
    host_ms = full.pop("host_ms_mean")
    assert 0 < host_ms == full.pop("host_ms_max")
    assert full == {"runs": 1, "stale_positions": 3, "tokens": 4, "skipped": {}, "tokens_of_slowest": 4}
    assert [getattr(r, catchup.STALE_FROM) for r in batch.reqs] == [None, None]
    assert not getattr(batch, catchup.FROM_PLAIN)


@pytest.mark.parametrize("slow", [False, True])
def test_a_slow_full_catchup_is_logged_with_its_size(monkeypatch, future_map, caplog, tmp_path,
                                                     slow):
    """GPU, sessions 16 and 26 (MoE layout, one request): a re-entry stalled the server for ~2 s;
    session 27's log lines put it in the target's forward (Triton building fused-MoE kernels).
    Since session 59 (a 1.72-s catch-up at 64 requests, its cause unread) the line also counts
    the Triton cache entries written while it ran: here the target's forward writes one (a
    kernel built on first use) beside an entry from long before."""
    worker, _, _ = reentry_worker(monkeypatch, future_map)
    cache = tmp_path / "triton-cache"
    (cache / "built-long-before").mkdir(parents=True)
    os.utime(cache / "built-long-before", (1.0, 1.0))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    forward = worker.target_worker.forward_batch_generation

    def forward_that_builds_a_kernel(view, **kwargs):
        (cache / "built-in-this-forward").mkdir()
        return forward(view, **kwargs)

    worker.target_worker.forward_batch_generation = forward_that_builds_a_kernel
    batch = decode_batch_at_reentry(future_map)
    setattr(batch, catchup.FROM_PLAIN, True)
    monkeypatch.setattr(catchup, "SLOW_CATCHUP_S", -1.0 if slow else 60.0)
    assert catchup_step(worker, batch).adaptive_spec_mode == "reentry"
    assert ("full catch-up of 4 tokens over 2 requests took" in caplog.text) == slow
    assert ("(target forward " in caplog.text and "draft forward " in caplog.text) == slow
    assert ("Triton kernels built meanwhile, any process: 1)" in caplog.text) == slow


@pytest.mark.parametrize("why", ["last step not plain", "newest asked", "logprobs", "multimodal request"])
def test_other_catchup_steps_run_sglangs_alone(monkeypatch, future_map, why):
    worker, target_seen, _ = reentry_worker(monkeypatch, future_map)
    batch = decode_batch_at_reentry(future_map)
    setattr(batch, catchup.FROM_PLAIN, why != "last step not plain")
    ctl = state.get_controller()
    if why == "newest asked":
        ctl.update_settings(dataclasses.replace(ctl.cfg, catchup="newest"))
    batch.return_logprob = why == "logprobs"
    if why == "multimodal request":
        batch.reqs[0].multimodal_inputs = object()
    catchup_step(worker, batch)
    assert target_seen == []
    skipped = ctl.status()["reentry"]["full_catchup"]["skipped"]
    assert skipped == ({} if why == "newest asked" else {"grammar, logprobs or hidden states" if why == "logprobs" else why: 1})
    assert [getattr(r, catchup.STALE_FROM) for r in batch.reqs] == [None, None]


def test_a_failed_full_catchup_is_logged_turned_off_and_sglangs_step_still_runs(monkeypatch, future_map, caplog):
    worker, _, _ = reentry_worker(monkeypatch, future_map, fail_target=True)
    batch = decode_batch_at_reentry(future_map)
    setattr(batch, catchup.FROM_PLAIN, True)
    assert catchup_step(worker, batch).adaptive_spec_mode == "catchup"
    ctl = state.get_controller()
    assert ctl.cfg.catchup == "newest" and ctl.status()["reentry"]["full_catchup"]["skipped"] == {"failed": 1}
    assert "full catch-up failed" in caplog.text


def test_servers_it_cannot_serve_are_named():
    ok = types.SimpleNamespace(attention_backend="triton", page_size=1)
    assert catchup.ineligible(ok) is None
    assert "attention backend" in catchup.ineligible(types.SimpleNamespace(attention_backend="fa3"))
    assert "deterministic" in catchup.ineligible(types.SimpleNamespace(attention_backend="triton", enable_deterministic_inference=True))
    assert catchup.token_cap(types.SimpleNamespace(chunked_prefill_size=-1)) == catchup.DEFAULT_TOKEN_CAP


def test_a_debug_run_checks_the_host_lengths_against_the_gpus(monkeypatch, future_map, caplog):
    """ADAPTIVE_SPEC_CATCHUP_CHECK=1 (GPU runs): lengths that differ skip the catch-up, logged."""
    monkeypatch.setenv(catchup.CHECK_ENV, "1")
    worker, target_seen, _ = reentry_worker(monkeypatch, future_map)
    batch = decode_batch_at_reentry(future_map)
    batch.seq_lens = torch.tensor([11, 6])  # the GPU's lengths: one more token than the host knows
    setattr(batch, catchup.FROM_PLAIN, True)
    assert catchup_step(worker, batch).adaptive_spec_mode == "catchup" and target_seen == []
    assert state.get_controller().status()["reentry"]["full_catchup"]["skipped"] == {"length mismatch": 1}
    assert "lengths differ" in caplog.text


@pytest.mark.parametrize("stale_from, runs", [((7, None), False), ((0, 0), True)])
def test_auto_catches_up_in_full_only_past_32_stale_positions_a_request(monkeypatch, future_map, stale_from, runs):
    """The default: a few stale positions are SGLang's catch-up step's (the full one costs an eager
    prefill's host time whatever its size); a long off period or a prompt prefilled plain is ours."""
    worker, target_seen, _ = reentry_worker(monkeypatch, future_map)
    ctl = state.get_controller()
    ctl.update_settings(dataclasses.replace(ctl.cfg, catchup="auto"))
    batch = decode_batch_at_reentry(future_map)
    batch.reqs = [req_with("a", 40, outputs=10, committed=50, stale_from=stale_from[0]),
                  req_with("b", 40, outputs=10, committed=50, stale_from=stale_from[1])]
    for req, row in zip(batch.reqs, [1, 3]):
        req.req_pool_idx = row
    batch.seq_lens = torch.tensor([50, 50])
    setattr(batch, catchup.FROM_PLAIN, True)
    assert catchup_step(worker, batch).adaptive_spec_mode == ("reentry" if runs else "catchup")
    full = ctl.status()["reentry"]["full_catchup"]
    assert (full["runs"], full["skipped"]) == ((1, {}) if runs else (0, {"few stale positions": 1}))
    assert len(target_seen) == int(runs)


@pytest.mark.parametrize("plain_kv", ["lazy", "release", "reserve"])
@pytest.mark.parametrize("force", ["flap:1", "flap:3", "flap:8"])
def test_at_every_reentry_the_marks_cover_every_position_without_draft_kv(monkeypatch, force, plain_kv):
    """Over 300 switching steps through SGLang's own decode preparation (test_plain_regime_kv's
    Sim, one overlap iteration at a time): a position has draft KV once a spec step's draft
    extend wrote it (the verify's accepted positions) and loses it when a plain step writes it.
    At every re-entry after plain steps the host's committed length is the true one and every
    position without draft KV lies in [stale mark, T): what the full catch-up rewrites (played
    here: those positions get draft KV, the marks are cleared, as catchup.at_reentry does)."""
    from .test_plain_regime_kv import Sim

    install(monkeypatch, AdaptiveSpecConfig(force=force, off_path="plain", plain_kv=plain_kv))
    sim = Sim(monkeypatch, seed=sum(map(ord, force + plain_kv)))
    reqs = sim.batch.reqs
    has_draft_kv = [set(range(r.kv_committed_len)) for r in reqs]  # the prefill wrote the prompt's
    reentries, last = 0, None
    for _ in range(300):
        before = list(sim.true_len)
        kind, accepts = sim.step()
        if kind == "plain":
            for i in range(len(reqs)):
                has_draft_kv[i].discard(before[i])
        else:
            if getattr(sim.batch, catchup.FROM_PLAIN, False):
                reentries += 1
                for i, req in enumerate(reqs):
                    start = getattr(req, catchup.STALE_FROM)
                    assert req.kv_committed_len == before[i], "the host's length is the true one at re-entry"
                    missing = set(range(before[i])) - has_draft_kv[i]
                    assert missing and start is not None and missing <= set(range(start, before[i]))
                    has_draft_kv[i] |= set(range(start, before[i]))
                catchup.clear_stale(reqs)
                setattr(sim.batch, catchup.FROM_PLAIN, False)
            else:
                assert all(getattr(r, catchup.STALE_FROM, None) is None for r in reqs)
            for i, a in enumerate(accepts):
                has_draft_kv[i] |= set(range(before[i], before[i] + a))
        if last is not None:
            sim.process(last)
        last = (kind, accepts)
    assert reentries >= 300 // (2 * int(force.split(":")[1])) - 1
