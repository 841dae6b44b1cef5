"""Version matrix: our plugin against SGLang 0.5.23 (latest), import level.

scripts/test.sh installs sglang 0.5.23 (no dependencies) into a side folder and exports its
path; every hook target must still exist and be patched through SGLang's own plugin loader.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SIDE = os.environ.get("ADAPTIVE_SPEC_SGLANG_0523")


@pytest.mark.skipif(not SIDE and os.environ.get("CI") != "true", reason="run through scripts/test.sh (installs sglang 0.5.23 aside)")
def test_hooks_resolve_on_sglang_0523():
    assert SIDE and Path(SIDE, "sglang").is_dir(), "scripts/test.sh should have installed sglang 0.5.23 aside"
    env = dict(os.environ, PYTHONPATH=SIDE)
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("sglang_0523_probe.py"))],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["version"] == "0.5.23"
    assert report["patched"] == sorted(report["targets"])
    assert report["controller_uses_params"]


def test_unsupported_version_is_refused():
    from adaptive_spec.sglang_plugin.compat import UnsupportedVersion, check_sglang_version

    assert check_sglang_version("0.5.16") == "0.5.16"
    with pytest.raises(UnsupportedVersion, match="sglang 0.4.9 is not supported by adaptive-spec"):
        check_sglang_version("0.4.9")
