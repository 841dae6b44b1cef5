"""adaptive_spec.bench: the measuring instrument of adaptive-spec.

Installed from the repository's ``benchmarks/`` folder as ``adaptive_spec.bench``; the
command is ``adaptive-spec-bench`` (see ``README.md`` here).  Modules:

- ``loadgen``: asyncio/aiohttp client for SGLang's ``/generate`` with ``input_ids``
  (closed loop, open loop, load patterns; loopback only, bounded)
- ``stats``: tok/s, TPOT/ITL/TTFT percentiles, accept length, ratios, envelope (pure Python)
- ``servers``: start/stop SGLang servers (process groups), the system -> flags table
- ``sweep``: the side-by-side sweep writing ``adaptive-spec-bench/1`` JSON
- ``plot``: throughput/TPOT vs concurrency PNG (matplotlib, optional)
- ``schema``: validation of the four result schemas
- ``models``: synthetic target + EAGLE-3 draft with an acceptance dial
"""
