"""Run with PYTHONPATH pointing at an sglang 0.5.23 install: loads our plugin through SGLang's
own load_plugins() and prints, as JSON, which hook targets were patched and the signatures."""

import inspect
import json
import os
import warnings

warnings.filterwarnings("ignore")

from adaptive_spec.config import ENV_VAR, AdaptiveSpecConfig  # noqa: E402

os.environ[ENV_VAR] = AdaptiveSpecConfig(threshold=16, off_path="plain").to_json()  # all our hooks

from sglang.srt.plugins import load_plugins  # noqa: E402
from sglang.srt.plugins.hook_registry import HookRegistry  # noqa: E402

from adaptive_spec.sglang_plugin import plugin  # noqa: E402
from adaptive_spec.sglang_plugin.compat import check_sglang_version, sglang_version  # noqa: E402

load_plugins()
targets = [t for t, _, _ in plugin.HOOKS + plugin.PLAIN_HOOKS]
sigs = {}
for target in targets:
    from pkgutil import resolve_name

    obj = resolve_name(target)
    fn = getattr(obj, "__wrapped__", obj)
    try:
        sigs[target] = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        sigs[target] = None
from sglang.srt.speculative import adaptive_runtime_state  # noqa: E402

print(json.dumps({
    "version": sglang_version(),
    "supported": check_sglang_version() is not None,
    "patched": sorted(t for t in targets if t in HookRegistry._patched),
    "targets": targets,
    "controller_uses_params": "self.params" in inspect.getsource(adaptive_runtime_state.AdaptiveController),
}))
