"""Fixtures for the benchmark tool's CPU tests (fake SGLang server, import bootstrap)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def ensure_bench_importable() -> None:
    """``adaptive_spec.bench`` comes from the installed package (pip install -e .); without an
    install, map it onto the repo's benchmarks/ folder the same way the install does."""
    try:
        importlib.import_module("adaptive_spec.bench")
        return
    except ImportError:
        pass
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    importlib.import_module("adaptive_spec")
    spec = importlib.util.spec_from_file_location(
        "adaptive_spec.bench", REPO / "benchmarks" / "__init__.py",
        submodule_search_locations=[str(REPO / "benchmarks")])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["adaptive_spec.bench"] = mod
    spec.loader.exec_module(mod)


ensure_bench_importable()

# what a subprocess runs to get the same import path (used by the CLI tests)
BOOT = (
    "import sys; sys.path.insert(0, {here!r}); import conftest; "
    "from adaptive_spec.bench.cli import main; sys.exit(main(sys.argv[1:]))"
).format(here=str(HERE))


@pytest.fixture
def cli_cmd():
    return [sys.executable, "-c", BOOT]


@pytest.fixture
def fake_env(monkeypatch):
    """Environment in which `python -m fake_sglang_server` works (for started servers)."""
    pp = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", str(HERE) + (os.pathsep + pp if pp else ""))
    return HERE


@pytest.fixture
def model_dirs(tmp_path):
    """Tiny target/draft folders with just a config.json (the sweep reads vocab from it)."""
    import json

    t = tmp_path / "target"
    d = tmp_path / "draft"
    t.mkdir()
    d.mkdir()
    (t / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
        "vocab_size": 1000, "max_position_embeddings": 4096}))
    (d / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64,
        "num_hidden_layers": 1, "vocab_size": 1000, "draft_vocab_size": 1000}))
    return t, d


def fake_attached(*extra):
    """A FAKE SGLang server (fake_sglang_server.py) started and ready, for --attach runs;
    the caller stops it."""
    from adaptive_spec.bench.servers import ServerProcess, free_port

    port = free_port()
    sp = ServerProcess("x", cmd=[sys.executable, str(HERE / "fake_sglang_server.py"),
                                 "--port", str(port), *extra], port=port)
    sp.start()
    sp.wait_ready(30, poll_s=0.2)
    return sp
