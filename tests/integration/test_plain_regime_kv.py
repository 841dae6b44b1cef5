"""The plain off path's KV bookkeeping over many steps, on the CPU, with SGLang 0.5.16's own
decode preparation and allocator: a real ScheduleBatch, ReqToTokenPool, TokenToKVPoolAllocator,
ChunkCache and FutureMap, SGLang's `prepare_for_decode` (its spec branch: the KV top-up; its
Triton slot-assignment kernel replaced by `assign_slots`), its `resolve_seq_lens_cpu`.

What a GPU would do between the calls is played by `Sim` (the scheduler's side of one overlap
iteration: prepare step i, launch it, process the result of step i-1): each spec step writes KV
for its k + 1 verify tokens and accepts 1..k+1 of them, each plain step writes one token; every
write must land in a slot the request holds. At the end every request is released as SGLang
releases a finished one, and the pool must be whole again (no leak)."""

import random
import types

import pytest
import torch

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import hooks_plain, state

from .test_hooks_sglang import make_req
from .test_offpath_bookkeeping import install

K = 3  # draft steps; a spec step writes K + 1 tokens
RESERVE = 2 * (K + 1)  # SGLang's get_alloc_reserve_per_decode for topk = 1
POOL = 4000


def assign_slots(req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, batch_size):
    """Stands in for SGLang's Triton `assign_req_to_token_pool` (mem_cache/allocation.py, 0.5.16;
    no Triton on this CPU): row i's positions [start, end) get the next slots of out_cache_loc."""
    at = 0
    for i in range(batch_size):
        start, end = int(start_offset[i]), int(end_offset[i])
        req_to_token[req_pool_indices[i], start:end] = out_cache_loc[at:at + end - start].to(req_to_token.dtype)
        at += end - start


class Sim:
    def __init__(self, monkeypatch, n_reqs=4, prompt=12, seed=0):
        import sglang.srt.mem_cache.allocation as allocation
        import sglang.srt.speculative.eagle_utils as eagle_utils
        import sglang.srt.speculative.spec_utils as spec_utils
        from sglang.srt.managers.overlap_utils import FutureMap
        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from sglang.srt.mem_cache.allocator import TokenToKVPoolAllocator
        from sglang.srt.mem_cache.cache_init_params import CacheInitParams
        from sglang.srt.mem_cache.chunk_cache import ChunkCache
        from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
        from sglang.srt.speculative.eagle_info import EagleDraftInput
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        monkeypatch.setattr(allocation, "assign_req_to_token_pool_func", assign_slots)  # a Triton kernel
        monkeypatch.setattr(eagle_utils, "get_alloc_reserve_per_decode", lambda *a: RESERVE)  # reads server args
        monkeypatch.setattr(spec_utils, "spec_need_hidden_states", lambda *a, **k: True)
        import sglang.srt.managers.schedule_batch as schedule_batch

        args = types.SimpleNamespace(page_size=1, speculative_eagle_topk=1, enable_mamba_extra_buffer=lambda: False)
        monkeypatch.setattr(schedule_batch, "get_server_args", lambda: args)  # not set outside a server
        self.rng = random.Random(seed)
        self.allocator = TokenToKVPoolAllocator(POOL, torch.bfloat16, "cpu", None, False)
        self.pool = ReqToTokenPool(size=n_reqs + 1, max_context_len=4096, device="cpu", enable_memory_saver=False)
        self.tree_cache = ChunkCache(CacheInitParams(disable=True, req_to_token_pool=self.pool,
                                                     token_to_kv_pool_allocator=self.allocator, page_size=1))
        self.free_at_start = self.allocator.available_size()
        self.fm = FutureMap("cpu", SpeculativeAlgorithm.EAGLE3, self.pool, needs_cpu_seq_lens=False)
        monkeypatch.setattr(hooks_plain, "_state", types.SimpleNamespace(
            future_map=self.fm, spec_algorithm=SpeculativeAlgorithm.EAGLE3, publish_as_length=None))
        reqs = [make_req(f"r{i}", prompt) for i in range(n_reqs)]
        rows = list(range(1, n_reqs + 1))
        for req, row in zip(reqs, rows):  # a prefill: the prompt's slots, committed = allocated = L
            req.req_pool_idx = row
            slots = self.allocator.alloc(prompt)
            self.pool.req_to_token[row, :prompt] = slots.to(torch.int32)
            req.kv = types.SimpleNamespace(kv_allocated_len=prompt, swa_evicted_seqlen=0)
            req.kv_committed_len = prompt
        idx = torch.tensor(rows, dtype=torch.int64)
        self.batch = ScheduleBatch(
            reqs=reqs, req_to_token_pool=self.pool, token_to_kv_pool_allocator=self.allocator,
            tree_cache=self.tree_cache, req_pool_indices=idx, spec_algorithm=SpeculativeAlgorithm.EAGLE3, device="cpu",
            seq_lens=torch.full((n_reqs,), prompt), seq_lens_cpu=torch.full((n_reqs,), prompt),
            orig_seq_lens=torch.full((n_reqs,), prompt), model_config=types.SimpleNamespace(is_encoder_decoder=False),
            sampling_info=types.SimpleNamespace(penalizer_orchestrator=types.SimpleNamespace(is_required=False)),
        )
        self.true_len = [prompt] * n_reqs  # KV length on the "GPU"
        self.fm.publish(idx, torch.tensor(self.true_len))  # the prefill's publish
        self.batch.spec_info = EagleDraftInput(future_indices=idx)
        self.pending = None  # the launched step whose result is not processed yet
        self.draft_input_cls = EagleDraftInput
        self.plain_steps = self.spec_steps = 0
        self.plain_headroom = POOL  # least (allocated - committed) seen at a plain step

    def held_slots(self, req):
        return self.pool.req_to_token[req.req_pool_idx, :req.kv.kv_allocated_len]

    def step(self):
        """One overlap iteration: prepare and launch a decode step, process the previous result."""
        from sglang.srt.managers.overlap_utils import FutureMap, resolve_forward_inputs
        from sglang.srt.managers.schedule_batch import ScheduleBatch

        b = self.batch
        hooks_plain.before_update_running_batch(None, b)
        hooks_plain.around_prepare_for_decode(ScheduleBatch.prepare_for_decode, b)
        # launch: what scheduler.run_batch and the GPU do
        if b.spec_algorithm.is_none():
            hooks_plain.around_resolve_forward_inputs(resolve_forward_inputs, b, self.fm)
            for i, req in enumerate(b.reqs):
                t = self.true_len[i]
                assert b.seq_lens[i].item() == t + 1, "a plain step decodes at the KV length"
                assert b.out_cache_loc[i].item() == self.pool.req_to_token[req.req_pool_idx, t].item()
                assert t < req.kv.kv_allocated_len, "a plain step writes a slot the request holds"
                self.plain_headroom = min(self.plain_headroom, req.kv.kv_allocated_len - req.kv_committed_len)
                self.true_len[i] = t + 1
            hooks_plain.publish_next_as_length(b)
            hooks_plain.around_publish(FutureMap.publish, self.fm, b.req_pool_indices, b.seq_lens + 1)
            self.pending = ("plain", None)
            self.plain_steps += 1
            b.input_ids = None
        else:
            self.fm.resolve_seq_lens_cpu(b)
            assert b.seq_lens.tolist() == self.true_len, "a spec step starts at the true lengths"
            accepts = []
            for i, req in enumerate(b.reqs):
                t = self.true_len[i]
                assert t + K < req.kv.kv_allocated_len, "a verify writes K + 1 slots the request holds"
                a = self.rng.randint(1, K + 1)
                accepts.append(a)
                self.true_len[i] = t + a
            self.fm.publish(b.req_pool_indices, torch.tensor(self.true_len))
            b.spec_info = self.draft_input_cls(future_indices=b.req_pool_indices)
            self.pending = ("spec", accepts)
            self.spec_steps += 1
        hooks_plain.planned_steps(b)  # the worker reads the decision
        return self.pending

    def process(self, result):
        """The result processor, one iteration late: a spec step commits its accepted tokens."""
        kind, accepts = result
        if kind == "spec":
            for req, a in zip(self.batch.reqs, accepts):
                req.kv_committed_len += a

    def run(self, n_steps):
        last = None
        for _ in range(n_steps):
            launched = self.step()
            if last is not None:
                self.process(last)
            last = launched
            held = torch.cat([self.held_slots(r) for r in self.batch.reqs])
            assert held.unique().numel() == held.numel(), "no slot is held by two positions"
        self.process(last)

    def release_all(self):
        """SGLang's release of a finished request (mem_cache/common.py, 0.5.16): the committed
        prefix (ChunkCache with the cache off frees it) and the over-allocated tail."""
        for req in self.batch.reqs:
            assert req.kv_committed_len == self.true_len[self.batch.reqs.index(req)]
            self.allocator.free(self.held_slots(req))
        return self.allocator.available_size()


@pytest.mark.parametrize("plain_kv", ["reserve", "release", "lazy"])
@pytest.mark.parametrize("force", ["flap:1", "flap:8", "off", "flap:3"])
def test_no_slot_is_lost_or_shared_over_many_switching_steps(monkeypatch, force, plain_kv):
    install(monkeypatch, AdaptiveSpecConfig(force=force, off_path="plain", plain_kv=plain_kv))
    sim = Sim(monkeypatch, seed=sum(map(ord, force)))
    sim.run(400)
    assert sim.plain_steps > 0 and (force == "off" or sim.spec_steps > 0)
    assert sim.release_all() == sim.free_at_start


def test_released_reserve_a_long_plain_run_holds_what_the_plain_server_holds(monkeypatch):
    """`--adaptive-spec-plain-kv release`: from the second plain step on a request holds exactly
    its KV (the plain server's allocation), and the next drafting step gets its reserve back."""
    install(monkeypatch, AdaptiveSpecConfig(force="flap:8", off_path="plain", plain_kv="release"))
    sim = Sim(monkeypatch)
    sim.run(8 + 4)  # 8 drafting steps, then 4 plain ones (the last launched, not yet processed)
    assert [r.kv.kv_allocated_len - r.kv_committed_len for r in sim.batch.reqs] == [0] * 4
    assert sim.batch.seq_lens_cpu.tolist() == sim.batch.seq_lens.tolist() == sim.true_len
    sim.run(4 + 1)  # the first drafting step after them
    assert all(r.kv.kv_allocated_len - r.kv_committed_len >= K + 1 for r in sim.batch.reqs)
    assert sim.release_all() == sim.free_at_start


def test_plain_steps_keep_the_spec_reserve_and_decide_once_per_step(monkeypatch):
    """While plain, SGLang's top-up keeps each request's spec reserve (what the scheduler's KV
    check counts, and what the first drafting step after them writes into); one decision per
    step, made at the batch's preparation."""
    install(monkeypatch, AdaptiveSpecConfig(force="flap:8", off_path="plain", plain_kv="reserve"))
    sim = Sim(monkeypatch)
    sim.run(40)
    assert sim.plain_steps == 16 and sim.plain_headroom >= RESERVE - 1
    assert sim.release_all() == sim.free_at_start
    assert state.get_controller().decision_count == 40


def count_top_ups(monkeypatch):
    """Counts SGLang's spec KV top-ups (alloc_for_spec_decode calls from its spec preparation)."""
    import sglang.srt.speculative.eagle_utils as eagle_utils

    calls = []
    real = eagle_utils.alloc_for_spec_decode
    monkeypatch.setattr(eagle_utils, "alloc_for_spec_decode", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_lazy_reserve_tops_up_only_when_a_request_has_used_it_up(monkeypatch):
    """`--adaptive-spec-plain-kv lazy`: a long plain run writes every token into a slot its
    request holds while SGLang's top-up runs about once per RESERVE - 1 steps (reserve: every
    step); the first drafting step after it gets the full reserve back; nothing leaks."""
    install(monkeypatch, AdaptiveSpecConfig(force="flap:64", off_path="plain", plain_kv="lazy"))
    top_ups = count_top_ups(monkeypatch)
    sim = Sim(monkeypatch)
    sim.run(64)  # drafting steps
    before = len(top_ups)
    assert before == 64, "every drafting step tops up (SGLang's own preparation)"
    sim.run(63)  # plain steps (the first is prepared by SGLang's spec preparation)
    plain_top_ups = len(top_ups) - before
    assert sim.plain_steps == 63 and sim.plain_headroom == 0  # the last held slot written, none past it
    assert 63 // RESERVE <= plain_top_ups <= 63 // (RESERVE - 1) + 1, plain_top_ups
    sim.run(1 + 1)  # the last plain step, then the first drafting step after them
    assert all(r.kv.kv_allocated_len - r.kv_committed_len >= K + 1 for r in sim.batch.reqs)
    assert sim.release_all() == sim.free_at_start


def test_lazy_reserve_tops_up_a_request_that_holds_none(monkeypatch):
    """A request that joins a plain batch holds exactly its KV (a prefill's allocation): the
    next plain step is prepared by SGLang's top-up, not from the reserve; nothing leaks."""
    install(monkeypatch, AdaptiveSpecConfig(force="off", off_path="plain", plain_kv="lazy"))
    top_ups = count_top_ups(monkeypatch)
    sim = Sim(monkeypatch)
    sim.run(3)
    req = sim.batch.reqs[2]  # as if it had just been prefilled and merged: no reserve
    sim.allocator.free(sim.pool.req_to_token[req.req_pool_idx, req.kv_committed_len:req.kv.kv_allocated_len])
    req.kv.kv_allocated_len = req.kv_committed_len
    before = len(top_ups)
    sim.run(1)
    assert len(top_ups) == before + 1 and req.kv.kv_allocated_len > req.kv_committed_len
    sim.run(20)
    assert sim.release_all() == sim.free_at_start
