"""What must differ per supported SGLang version.

0.5.16 (GPU-tested) and 0.5.23 (import-level) share every hook target and signature our plugin
uses (tests/integration/test_sglang_0523.py loads the plugin through 0.5.23's own plugin loader
and checks every target is patched), so nothing is version-specific yet. Code that has to
differ goes here, keyed by `adaptive_spec.sglang_plugin.compat.sglang_version()`.
"""
