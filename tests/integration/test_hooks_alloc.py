"""The spec-v2 allocation hook (hooks_alloc): SGLang 0.5.16's real `alloc_for_spec_decode` gets
the per-request lengths as a list and updates the requests exactly as with the tensor."""
import types

import torch

from adaptive_spec.sglang_plugin import hooks_alloc


def _call(fn, lengths, n, page_size=1):
    from sglang.srt.mem_cache.allocation import alloc_for_spec_decode

    reqs = [types.SimpleNamespace(kv=types.SimpleNamespace(kv_allocated_len=5 + (i % 3))) for i in range(n)]
    tree_cache = types.SimpleNamespace(token_to_kv_pool_allocator=types.SimpleNamespace(page_size=page_size))
    args = dict(reqs=reqs, req_pool_indices=None, cur_kv_lens=None, cur_kv_lens_cpu=None,
                nxt_kv_lens=None, nxt_kv_lens_cpu=lengths, num_needed_tokens=0)  # nothing to allocate
    if fn is None:
        alloc_for_spec_decode(tree_cache, None, **args)
    else:
        fn(alloc_for_spec_decode, tree_cache, None, **args)
    return [r.kv.kv_allocated_len for r in reqs]


def test_the_requests_get_the_same_lengths_through_the_hook():
    lengths = torch.tensor([6, 4, 9, 7, 5, 12], dtype=torch.int32)
    plain = _call(None, lengths, 6)
    hooked = _call(hooks_alloc.around_alloc_for_spec_decode, lengths, 6)
    assert hooked == plain == [6, 6, 9, 7, 6, 12]


def test_other_page_sizes_pass_the_tensor_through_and_a_tolist_caller_still_works():
    seen = {}

    def spy(tree_cache, pool, **kw):
        seen["lengths"] = kw["nxt_kv_lens_cpu"]

    lengths = torch.tensor([3, 4])
    tree = types.SimpleNamespace(token_to_kv_pool_allocator=types.SimpleNamespace(page_size=16))
    hooks_alloc.around_alloc_for_spec_decode(spy, tree, None, nxt_kv_lens_cpu=lengths)
    assert seen["lengths"] is lengths
    tree.token_to_kv_pool_allocator.page_size = 1
    hooks_alloc.around_alloc_for_spec_decode(spy, tree, None, nxt_kv_lens_cpu=lengths)
    assert seen["lengths"] == [3, 4] and seen["lengths"].tolist() == [3, 4]  # SGLang 0.5.23 calls tolist()
