"""Build the sampling kernels of SGLang's speculative verify at start, not at the first
sampling request.

Why: with FlashInfer installed, SGLang 0.5.16's sampling verify (`eagle_sample`) renormalises
top-k / top-p through `sgl_kernel.top_k_renorm_prob` / `top_p_renorm_prob`, which call
`flashinfer.sampling`, a module FlashInfer JIT-compiles (nvcc) the first time it is used in a
process whose cache lacks it. That compile runs inside the scheduler's step, so every request
in flight waits: the soaks on the GPU machine saw the first top-p request take 87 s (session 6)
and the whole server stall ~100 s (session 3). Building the module once while the server
starts moves that wait to start-up (nothing once FlashInfer's cache holds the module).

`ADAPTIVE_SPEC_WARM_SAMPLING=0` skips it. Not done with our Triton verify backend `triton`, which
does not use these kernels (`triton-greedy` does, for sampling batches), nor without FlashInfer
(sgl_kernel's own compiled ops then run).
Failure only logs: the first sampling request then compiles, as it would have.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Optional

logger = logging.getLogger("adaptive_spec")

ENV = "ADAPTIVE_SPEC_WARM_SAMPLING"


def warm_sampling_kernels(verify_backend: str) -> Optional[float]:
    """Seconds spent building/loading FlashInfer's sampling module, or None when skipped."""
    if os.environ.get(ENV, "1") == "0" or verify_backend == "triton":
        return None
    try:
        import torch

        if not torch.cuda.is_available():  # nothing to build kernels for
            return None
        import flashinfer.sampling as fi_sampling
    except Exception:
        return None
    build = getattr(fi_sampling, "get_sampling_module", None)
    if build is None:  # another FlashInfer layout: nothing we know how to warm
        return None
    t0 = time.perf_counter()
    try:
        build()  # functools.cache: the verify path's own later call finds it built
    except Exception as exc:
        logger.warning("adaptive_spec: FlashInfer's sampling kernels not built at start (%r); "
                       "the first top-k/top-p request will build them", exc)
        return None
    seconds = time.perf_counter() - t0
    logger.info("adaptive_spec: FlashInfer sampling kernels ready in %.1f s (built at start, "
                "not at the first top-k/top-p request)", seconds)
    return seconds
