"""Triton chain-verify kernels (installed as ``adaptive_spec.kernels``).

- ``chain_verify_greedy``: fused argmax + greedy verification of topk=1 draft chains.
- ``chain_verify_sampling``: fused temperature/top-k/top-p/min-p + target-only or classic
  speculative sampling of topk=1 draft chains.
- ``reference``: plain-torch references with the same contracts.
"""

from .chain_verify import chain_verify_greedy, chain_verify_sampling, describe

__all__ = ["chain_verify_greedy", "chain_verify_sampling", "describe"]
