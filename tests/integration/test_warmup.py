"""FlashInfer's sampling module is built at start (a JIT compile stalled every request for
87 s at the first top-p request on the GPU, session 6), once, and never at the cost of serving."""
import logging
import sys
import types

import pytest

from adaptive_spec.sglang_plugin import warmup


@pytest.fixture
def fake_flashinfer(monkeypatch):
    """A FAKE flashinfer.sampling (the real one needs a GPU to build) and a CUDA that exists."""
    calls = []
    mod = types.ModuleType("flashinfer.sampling")
    mod.get_sampling_module = lambda: calls.append(1) or object()
    pkg = types.ModuleType("flashinfer")
    pkg.sampling = mod
    monkeypatch.setitem(sys.modules, "flashinfer", pkg)
    monkeypatch.setitem(sys.modules, "flashinfer.sampling", mod)
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv(warmup.ENV, raising=False)
    return mod, calls


@pytest.mark.parametrize("backend", ["sglang", "triton-greedy"])  # both verify sampling with SGLang's
def test_the_sampling_module_is_built_at_start(fake_flashinfer, caplog, backend):
    _, calls = fake_flashinfer
    with caplog.at_level(logging.INFO, logger="adaptive_spec"):
        assert warmup.warm_sampling_kernels(backend) is not None
    assert calls == [1]
    assert "sampling kernels ready" in caplog.text


@pytest.mark.parametrize("backend, env", [("triton", None), ("sglang", "0")])
def test_not_built_for_our_verify_kernels_or_when_switched_off(fake_flashinfer, monkeypatch, backend, env):
    _, calls = fake_flashinfer
    if env is not None:
        monkeypatch.setenv(warmup.ENV, env)
    assert warmup.warm_sampling_kernels(backend) is None
    assert calls == []


def test_a_failed_build_only_logs(fake_flashinfer, caplog):
    mod, _ = fake_flashinfer

    def broken():
        raise RuntimeError("nvcc not found")

    mod.get_sampling_module = broken
    with caplog.at_level(logging.WARNING, logger="adaptive_spec"):
        assert warmup.warm_sampling_kernels("sglang") is None
    assert "nvcc not found" in caplog.text and "first top-k/top-p request" in caplog.text


def test_the_module_warmed_is_the_one_sgl_kernel_renormalises_with():
    # sgl_kernel 0.5.16's top-k/top-p renorm calls flashinfer.sampling when FlashInfer is there
    # (read as text: sgl_kernel does not import without CUDA libraries)
    import importlib.util
    import inspect
    from pathlib import Path

    spec = importlib.util.find_spec("sgl_kernel")
    text = (Path(spec.submodule_search_locations[0]) / "sampling.py").read_text()
    assert "return _flashinfer_sampling.top_p_renorm_probs(probs, top_p)" in text
    assert "return _flashinfer_sampling.top_k_renorm_probs(probs, top_k)" in text
    import flashinfer.sampling as fs

    assert "get_sampling_module()" in inspect.getsource(fs.top_p_renorm_probs)
