"""`--warmups adaptive_spec_extend`: one-token prefills of a ladder of prompt lengths through
SGLang's own warm-up hook, so a full catch-up's extend sizes find their kernels built (GPU,
sessions 16 and 26: a ~2-s stall at a re-entry on the MoE layout)."""
import asyncio
import types

from adaptive_spec.sglang_plugin import extend_warmup

# SGLang is imported inside the tests: importing it here, at collection, would import Triton
# before tests/kernels/conftest.py sets TRITON_INTERPRET=1 for the kernel tests of this run.


def test_the_ladder_covers_both_sides_of_each_multiple_of_16_up_to_the_largest():
    sizes = extend_warmup.ladder(4088)
    assert sizes[:6] == [15, 16, 23, 24, 31, 32]
    assert sizes[-3:] == [3071, 3072, 4088] and sizes == sorted(set(sizes))
    assert all(n - 1 in sizes for n in (64, 512, 2048))
    assert extend_warmup.ladder(16) == [15, 16]


def test_the_longest_prompt_is_the_token_cap_or_the_context_whichever_is_smaller():
    args = types.SimpleNamespace(chunked_prefill_size=2048)
    assert extend_warmup.longest_prompt(args, 4096) == 2048
    assert extend_warmup.longest_prompt(args, 1024) == 1016
    no_cap = types.SimpleNamespace(chunked_prefill_size=None)
    assert extend_warmup.longest_prompt(no_cap, 65536) == 8192


def test_the_largest_extend_is_the_token_cap_in_at_most_16_prompts():
    # session 62: a 7,009-token catch-up outran the 4,088-token prompts of a 4,096 context
    args = types.SimpleNamespace(chunked_prefill_size=8192)
    assert extend_warmup.largest_size(args, 4088) == 8192
    assert extend_warmup.largest_size(args, 192) == 3072  # 16 prompts of 192
    assert extend_warmup.largest_size(args, 8192) == 8192


def test_a_length_above_the_longest_prompt_is_the_fewest_near_equal_prompts():
    assert extend_warmup.split(4088, 4088) == [4088]
    assert extend_warmup.split(4095, 4088) == [2048, 2047]
    assert extend_warmup.split(8192, 4088) == [2731, 2731, 2730]
    assert all(sum(extend_warmup.split(n, 192)) == n and max(extend_warmup.split(n, 192)) <= 192
               for n in extend_warmup.ladder(3072))


class FakeTokenizerManager:
    """A FAKE TokenizerManager (the real one needs a running scheduler): records each request."""

    def __init__(self, context_len=200, vocab=50):
        self.server_args = types.SimpleNamespace(chunked_prefill_size=8192)
        self.context_len = context_len
        self.model_config = types.SimpleNamespace(vocab_size=vocab)
        self.seen = []

    async def generate_request(self, req, request):
        self.seen.append(req)
        yield {"text": ""}


def test_it_is_registered_and_prefills_each_length_fresh_then_after_a_cached_prefix(caplog):
    from sglang.srt.entrypoints import warmup as sglang_warmup
    from sglang.srt.managers.io_struct import GenerateReqInput

    assert extend_warmup.register()
    fn = sglang_warmup._warmup_registry[extend_warmup.NAME]
    tm = FakeTokenizerManager()
    caplog.set_level("INFO", logger="adaptive_spec")
    asyncio.run(sglang_warmup.execute_warmups("null", [extend_warmup.NAME], tm))
    assert fn is extend_warmup.warm_extend_shapes
    fresh = extend_warmup.ladder(3072)  # 16 prompts of at most 192 tokens
    n = sum(len(extend_warmup.split(size, 192)) for size in fresh)
    assert [len(r.input_ids) for r in tm.seen[:n]] == [
        part for size in fresh for part in extend_warmup.split(size, 192)]
    # then the ladder again after a cached prefix: the path a full catch-up's extend takes
    prefix, after = tm.seen[n], tm.seen[n + 1:]
    assert len(prefix.input_ids) == extend_warmup.SMALLEST
    assert [len(r.input_ids) - 16 for r in after] == [
        part for size in extend_warmup.ladder(2816) for part in extend_warmup.split(size, 176)]
    assert all(r.input_ids[:16] == prefix.input_ids for r in after)
    assert all(len(r.input_ids) <= 192 for r in tm.seen)
    assert all(isinstance(r, GenerateReqInput) and r.sampling_params["max_new_tokens"] == 1 for r in tm.seen)
    assert all(0 < t < 50 for r in tm.seen for t in r.input_ids)
    assert "extend kernels warmed for" in caplog.text
    assert "15 to 3072 tokens (above 192 as prompts sent at once)" in caplog.text
    assert "lengths after a cached 16-token prefix" in caplog.text


class ConcurrencyRecordingTokenizerManager(FakeTokenizerManager):
    """FAKE: each prompt yields to the event loop before it is answered, so prompts sent at once
    are all in flight together; records the largest such group."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.in_flight, self.most_at_once = 0, 0

    async def generate_request(self, req, request):
        self.in_flight += 1
        self.most_at_once = max(self.most_at_once, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1
        self.seen.append(req)
        yield {"text": ""}


def test_the_prompts_of_one_length_are_in_flight_together_so_the_scheduler_can_batch_them():
    tm = ConcurrencyRecordingTokenizerManager()
    asyncio.run(extend_warmup.warm_extend_shapes("null", tm))
    assert tm.most_at_once == extend_warmup.MOST_PROMPTS  # 3,072 tokens: 16 prompts of 192


def test_a_context_too_short_for_a_prefix_and_a_length_warms_fresh_prompts_only():
    tm = FakeTokenizerManager(context_len=30)  # longest 22: no length fits after 16 tokens
    asyncio.run(extend_warmup.warm_extend_shapes("null", tm))
    assert all(len(r.input_ids) <= 22 for r in tm.seen)
    assert len(tm.seen) == sum(len(extend_warmup.split(n, 22)) for n in extend_warmup.ladder(352))


def test_without_a_radix_cache_no_prompt_is_sent_after_a_prefix_that_cannot_be_cached():
    tm = FakeTokenizerManager()
    tm.server_args.disable_radix_cache = True
    asyncio.run(extend_warmup.warm_extend_shapes("null", tm))
    assert sum(len(r.input_ids) for r in tm.seen) == sum(extend_warmup.ladder(3072))


def test_a_disaggregated_server_skips_it():
    tm = FakeTokenizerManager()
    asyncio.run(extend_warmup.warm_extend_shapes("prefill", tm))
    assert tm.seen == []


class FailingTokenizerManager(FakeTokenizerManager):
    """FAKE: refuses prompts over 40 tokens, as a server with a short context would."""

    async def generate_request(self, req, request):
        if len(req.input_ids) > 40:
            raise ValueError("too long")
        self.seen.append(req)
        yield {"text": ""}


def test_a_failing_prefill_ends_the_warmup_without_failing_the_start(caplog):
    tm = FailingTokenizerManager()
    caplog.set_level("WARNING", logger="adaptive_spec")
    asyncio.run(extend_warmup.warm_extend_shapes("null", tm))  # does not raise
    assert [len(r.input_ids) for r in tm.seen] == [15, 16, 23, 24, 31, 32]
    assert "extend warm-up stopped at 47 tokens" in caplog.text
