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


def test_the_largest_is_the_token_cap_or_the_context_whichever_is_smaller():
    args = types.SimpleNamespace(chunked_prefill_size=2048)
    assert extend_warmup.largest_size(args, 4096) == 2048
    assert extend_warmup.largest_size(args, 1024) == 1016
    assert extend_warmup.largest_size(types.SimpleNamespace(chunked_prefill_size=None), 65536) == 8192


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
    n = len(extend_warmup.ladder(192))
    fresh, prefix, after = tm.seen[:n], tm.seen[n], tm.seen[n + 1:]
    assert [len(r.input_ids) for r in fresh] == extend_warmup.ladder(192)
    # then the ladder again after a cached prefix: the path a full catch-up's extend takes
    assert len(prefix.input_ids) == extend_warmup.SMALLEST
    assert [len(r.input_ids) - 16 for r in after] == extend_warmup.ladder(176)
    assert all(r.input_ids[:16] == prefix.input_ids for r in after)
    assert all(len(r.input_ids) <= 192 for r in tm.seen)
    assert all(isinstance(r, GenerateReqInput) and r.sampling_params["max_new_tokens"] == 1 for r in tm.seen)
    assert all(0 < t < 50 for r in tm.seen for t in r.input_ids)
    assert "extend kernels warmed for" in caplog.text
    assert "lengths after a cached 16-token prefix" in caplog.text


def test_a_context_too_short_for_a_prefix_and_a_length_warms_fresh_prompts_only():
    tm = FakeTokenizerManager(context_len=30)  # largest 22: no length fits after 16 tokens
    asyncio.run(extend_warmup.warm_extend_shapes("null", tm))
    assert [len(r.input_ids) for r in tm.seen] == extend_warmup.ladder(22) == [15, 16, 22]


def test_without_a_radix_cache_no_prompt_is_sent_after_a_prefix_that_cannot_be_cached():
    tm = FakeTokenizerManager()
    tm.server_args.disable_radix_cache = True
    asyncio.run(extend_warmup.warm_extend_shapes("null", tm))
    assert [len(r.input_ids) for r in tm.seen] == extend_warmup.ladder(192)


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
