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
import threading

_TRITON_ALREADY_IMPORTED = "triton.language" in sys.modules
os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402


def _interpreted(fn) -> bool:
    return type(fn).__name__ == "InterpretedFunction"


def _patch_the_language_once_a_launch() -> bool:
    """Triton's interpreter patches ``triton.language`` (``inspect.getmembers`` over five
    modules) for a launch, and again at every call of a ``@triton.jit`` helper inside it,
    though the launch's patches stay in place until its grid ends and a helper's are never
    undone. A helper whose language modules the launch has patched skips it: session 56, CPU
    seconds of one call, Triton's path -> this: the chi-square test's top-p slice case at 200
    requests 57.1 / 57.5 -> 34.7 / 34.1, the top-p edge case 5.3-5.5 -> 3.5-4.2 (its 24,230
    patches of a module -> 10, its outputs equal). False (Triton's own path) where the
    interpreter's internals differ."""
    try:
        from triton.runtime import interpreter as itp

        patch_lang, scope_class, tl = itp._patch_lang, itp._LangPatchScope, itp.tl
    except (ImportError, AttributeError):
        return False
    if getattr(patch_lang, "once_a_launch", False):
        return True
    launch = threading.local()  # the language modules the running launch patched

    def langs_of(fn):
        return {v for v in fn.__globals__.values() if v is tl or v is tl.core}

    def patched_once(fn):
        patched, langs = getattr(launch, "langs", None), langs_of(fn)
        if patched is not None and langs <= patched:
            return scope_class()  # nothing of its own to undo
        scope = patch_lang(fn)
        if patched is not None:  # a helper of other modules (Triton's own `tl.sum` reads
            patched |= langs  # `core`): patched for the rest of the launch
        else:  # a launch (a helper runs only inside one): its grid's patches
            launch.langs = langs
            undo = scope.restore

            def restore():
                launch.langs = None
                undo()

            scope.restore = restore
        return scope

    patched_once.once_a_launch = True
    itp._patch_lang = patched_once
    return True


@pytest.fixture(scope="session")
def cv():
    """``adaptive_spec.kernels.chain_verify``, with interpreted kernels."""
    _patch_the_language_once_a_launch()
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
