"""adaptive-spec: load-adaptive speculative decoding for SGLang.

The core (config, signals, policy) never imports sglang; `adaptive_spec.sglang_plugin`
is the only door into SGLang.
"""

__version__ = "0.1.0"
