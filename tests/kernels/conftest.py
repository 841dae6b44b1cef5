"""Kernel tests run the Triton kernels on CPU tensors through Triton's interpreter.

TRITON_INTERPRET must be set before ``triton`` is imported (Triton's own library functions
such as ``tl.max`` are decorated then) and before a kernel is decorated.  It is set here, which
is early enough as long as no test module collected before this folder imports triton at module
level; a kernel module imported earlier is reloaded.  If triton was imported without the flag,
the tests fail with instructions (run them as ``TRITON_INTERPRET=1 pytest tests/kernels``).
"""
import importlib
import os
import sys

_TRITON_ALREADY_IMPORTED = "triton.language" in sys.modules
os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402


def _interpreted(fn) -> bool:
    return type(fn).__name__ == "InterpretedFunction"


@pytest.fixture(scope="session")
def cv():
    """``adaptive_spec.kernels.chain_verify``, with interpreted kernels."""
    if _TRITON_ALREADY_IMPORTED:
        import triton.language as tl

        if not _interpreted(tl.standard.max):
            pytest.fail("triton was imported before TRITON_INTERPRET=1 was set; run the kernel "
                        "tests as: TRITON_INTERPRET=1 python -m pytest tests/kernels")
    mod = importlib.import_module("adaptive_spec.kernels.chain_verify")
    if not _interpreted(mod._greedy_chain_kernel):
        mod = importlib.reload(mod)
    assert _interpreted(mod._greedy_chain_kernel)
    return mod


@pytest.fixture(scope="session")
def ref():
    return importlib.import_module("adaptive_spec.kernels.reference")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
