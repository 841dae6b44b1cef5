"""Launch a compiled Triton kernel without the JIT's per-call dispatch (the default since session
25; ``ADAPTIVE_SPEC_TRITON_LAUNCH=jit`` sends every call through the JIT).

``kernel[grid](*args, **meta)`` binds the arguments, computes each one's specialisation,
builds a cache key, looks the compiled kernel up, then calls its launcher. At small batches a
verify call costs its host time, so that dispatch is most of a call: on the H200 host
(session 25, verify_host_profile.py, B = 1, k = 3, outputs passed in) the greedy verify took
27.6 us a call through the JIT, 16.7 us launched directly, 9.8 us for the compiled launcher
alone, SGLang's path 39.8 us; with the C launch below Triton's wrapper (another run, a slower
host) 35.5 / 19.1 / 6.5 us against SGLang's 63.3. Sessions 11-24 measured no gain because the
direct path never ran: Triton 3.6's launch hooks are `HookChain` objects, never None, and were read as set
(`_hook_active`).

Two ways in. `DirectLauncher.planned` (the wrappers' path): the caller names a launch plan
that fixes everything Triton specialises on but tensor alignment (shapes, strides, dtypes,
constexprs) and says whether every tensor is 16-byte aligned; the compiled kernel is kept per
plan after its first (JIT) launch. `DirectLauncher.__call__`: a key per argument, a superset
of Triton's specialisation (per tensor its dtype and 16-byte alignment; per integer whether it
is 1, a multiple of 16, and 32-bit; the constexpr values). Either then calls the compiled
kernel's launcher as Triton's own ``CompiledKernel[grid]`` runner does, or, for Triton 3.6's
CUDA launcher without scratch memory, the C function beneath it. A launch hook (profilers),
non-CUDA tensors (the CPU interpreter), an unaligned tensor in a planned launch (through
`__call__`) and any error of the direct path (logged once, then the JIT for good) use the JIT.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Dict, Sequence, Tuple

import torch

log = logging.getLogger(__name__)

_INT32 = (-(2 ** 31), 2 ** 31)


def launch_mode() -> str:
    mode = os.environ.get("ADAPTIVE_SPEC_TRITON_LAUNCH", "direct")
    return mode if mode in ("direct", "jit") else "direct"


def _arg_key(a: Any):
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.data_ptr() % 16 == 0)
    if isinstance(a, bool):
        return a
    if isinstance(a, int):
        return (a == 1, a % 16 == 0, _INT32[0] <= a < _INT32[1])
    if isinstance(a, float):
        return float
    # anything else (None, objects): by identity, so an unknown argument never shares a kernel
    return (type(a), id(a))


_runtime_knobs: Any = None  # triton.knobs.runtime, looked up once (an import per call cost ~1 us)


def _launch_hooks_set() -> bool:
    global _runtime_knobs
    if _runtime_knobs is None:
        try:
            from triton import knobs

            _runtime_knobs = knobs.runtime
        except Exception:  # noqa: BLE001 - older Triton: no knobs, no hooks to honour
            _runtime_knobs = False
    return bool(_runtime_knobs) and (_hook_active(_runtime_knobs.launch_enter_hook)
                                     or _hook_active(_runtime_knobs.launch_exit_hook))


def _hook_active(hook: Any) -> bool:
    """Triton 3.6's hooks are `HookChain`s, never None: set when their `calls` are not empty
    (read as None, every launch counted as hooked and the direct path never ran, sessions
    21-24's "launched directly" rows included; found in session 25)."""
    return hook is not None and bool(getattr(hook, "calls", True))


def _current_stream(device_index: int):
    return torch.cuda.current_stream(device_index).cuda_stream


try:  # the raw stream handle, as Triton's CUDA driver gets it (no Stream object)
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - torch without it
    _raw_stream = _current_stream


def _launch_entry(kernel, consts: Tuple) -> Tuple:
    """(call, function, the arguments between the function and the kernel's own, constexpr
    values) of a compiled kernel: `call(gx, gy, gz, stream, function, *middle, *args,
    *consts)` launches it. Triton 3.6's CUDA launcher is a Python object whose `__call__`
    allocates the global and profile scratch (none for our kernels) and then calls its C
    `launch` with the cooperative-grid and PDL flags in front; with no scratch to allocate,
    that C function is called directly (a Python frame and two closures a call fewer)."""
    run = kernel.run
    below = getattr(run, "launch", None)
    if (type(run).__name__ == "CudaLauncher" and callable(below)
            and getattr(run, "global_scratch_size", 1) == 0
            and getattr(run, "profile_scratch_size", 1) == 0
            and hasattr(run, "launch_cooperative_grid") and hasattr(run, "launch_pdl")):
        middle = (run.launch_cooperative_grid, run.launch_pdl, None, None,
                  kernel.packed_metadata, None, None, None)
        return (below, kernel.function, middle, consts)
    return (run, kernel.function, (kernel.packed_metadata, None, None, None), consts)


def _grid3(grid: Sequence[int]) -> Tuple[int, int, int]:
    return grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1


class DirectLauncher:
    """``launcher(grid, args, meta)``: ``args`` the kernel's positional arguments in signature
    order (everything but the constexprs), ``meta`` the constexprs and launch options
    (num_warps) by name, constexprs last in the signature."""

    def __init__(self, fn):
        self.fn = fn
        self.names = list(fn.arg_names)
        self._compiled: Dict[Tuple, Tuple] = {}
        self._planned: Dict[Any, Tuple] = {}  # the caller's plan key -> what `planned` launches
        self._lock = threading.Lock()
        self.disabled = False

    def __call__(self, grid: Sequence[int], args: Sequence[Any], meta: Dict[str, Any]):
        first = args[0]
        if (self.disabled or launch_mode() != "direct" or first.device.type != "cuda"
                or _launch_hooks_set()):
            return self.fn[grid](*args, **meta)
        key = (first.device.index, tuple(meta.values()), tuple(map(_arg_key, args)))
        return self._launch(self._compiled, key, first.device.index, grid, args, meta)

    def _launch(self, cache: Dict, key: Any, device_index: int, grid: Sequence[int],
                args: Sequence[Any], meta: Dict[str, Any]):
        entry = cache.get(key)
        if entry is None:
            kernel = self.fn[grid](*args, **meta)  # compiles (or finds) and launches
            if getattr(kernel, "packed_metadata", None) is not None:
                consts = tuple(meta[n] for n in self.names[len(args):])
                with self._lock:
                    cache[key] = _launch_entry(kernel, consts)
            return kernel
        call, function, middle, consts = entry
        try:
            call(*_grid3(grid), _raw_stream(device_index), function, *middle, *args, *consts)
        except Exception as exc:  # noqa: BLE001 - a Triton whose launcher differs: use the JIT
            self.disabled = True
            log.warning("direct Triton launch of %s failed (%s: %s); using the JIT launch from "
                        "now on", getattr(self.fn, "__name__", self.fn), type(exc).__name__, exc)
            return self.fn[grid](*args, **meta)
        return None

    def planned(self, key: Any, device_index: int, aligned: bool, grid: Sequence[int],
                args: Sequence[Any], meta: Dict[str, Any]):
        """A launch whose specialisation the caller has fixed: `key` names everything Triton
        specialises it on but tensor alignment (shapes, strides, dtypes, constexprs: a
        wrapper's per-shape launch plan), `aligned` says whether every tensor argument is
        16-byte aligned (the wrapper ORs their addresses). No per-argument key, so the direct
        path costs the launcher's own time; unaligned tensors, the JIT mode, hooks and the
        first launch of a key go through `__call__` / the JIT."""
        if (not aligned or device_index < 0 or self.disabled or launch_mode() != "direct"
                or _launch_hooks_set()):
            return self(grid, args, meta)
        return self._launch(self._planned, key, device_index, grid, args, meta)
