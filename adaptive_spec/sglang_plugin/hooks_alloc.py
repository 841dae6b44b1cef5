"""A host-time fix in SGLang 0.5.16's spec-v2 decode preparation (every drafting, catch-up and
off step of our server, and of a static EAGLE-3 server).

`alloc_for_spec_decode` (mem_cache/allocation.py, 0.5.16) ends with a loop over the batch's
requests that reads `int(nxt_kv_lens_cpu[i])`, one CPU-tensor index per request: the call
took 103 us at 64 requests on the 2-core CPU machine, 24 us through this hook
(benchmarks/decision_cost.py, results/2026-11-30-s8-decision-and-bookkeeping-cost.json). SGLang 0.5.23 reads
`nxt_kv_lens_cpu.tolist()` there itself. With page size 1 that loop is the tensor's only use, so
this AROUND hook hands the function the same lengths as a list (one `tolist()`), a list that
also answers `tolist()` for versions that call it. Other page sizes are passed through.
"""

from __future__ import annotations


class _Lengths(list):
    """The per-request lengths as a list; `tolist()` for callers that convert themselves."""

    def tolist(self):
        return self


def around_alloc_for_spec_decode(orig, tree_cache, req_to_token_pool, *args, **kwargs):
    lengths = kwargs.get("nxt_kv_lens_cpu")
    try:
        if lengths is not None and hasattr(lengths, "tolist") and not isinstance(lengths, list) \
                and tree_cache.token_to_kv_pool_allocator.page_size == 1:
            kwargs["nxt_kv_lens_cpu"] = _Lengths(lengths.tolist())
    except Exception:  # never stand between SGLang and its allocation: pass the call as it came
        pass
    return orig(tree_cache, req_to_token_pool, *args, **kwargs)
