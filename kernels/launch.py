"""Launch a compiled Triton kernel without the JIT's per-call dispatch (opt-in: greedy measured
no faster in session 11; the top-p verify 17% faster a call in session 21, one reading; over
session 22's whole kernel grid no faster: JIT / direct time 0.975 greedy, 0.986 sampling).

``kernel[grid](*args, **meta)`` binds the arguments, computes their specialisation, builds a
cache key (``str`` of the options included), looks the compiled kernel up, then calls its
launcher. On the H200 host the greedy verify took 65-77 us per call back to back while its
GPU time was 11-29 us (2026-11-30-s11-kernels-host-gpu*.json, us_graph): one Triton launch
and a few tensor allocations. `DirectLauncher` keeps the compiled kernel per launch signature
after the first (JIT) call and then calls the launcher itself, as Triton's own
``CompiledKernel[grid]`` runner does. Measured on the H200 (2026-11-30-s11-kernels-direct-gpu0
vs -jit-gpu1, each against SGLang's path in the same process): greedy 0.72x of SGLang's time
either way at B = 64, so the host cost is not the JIT's dispatch; the default stays the JIT.
Session 21 measured the top-p verify both ways in one process (verify_host_profile.py --op
sampling, B = 64): 151.7 us a call through the JIT, 126.5 us launched directly.

The signature key is a superset of what Triton specialises on: per tensor its dtype and
whether its address is 16-byte aligned; per integer whether it is 1, a multiple of 16, and
32-bit; the constexpr values. A launch whose key was seen gets the kernel the JIT compiled
for it. ``ADAPTIVE_SPEC_TRITON_LAUNCH=direct`` turns it on (default ``jit``: every call
through the JIT); a launch hook (profilers), non-CUDA tensors (the CPU interpreter) and any
error of the direct path (logged once, then the JIT for good) use the JIT anyway.
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
    mode = os.environ.get("ADAPTIVE_SPEC_TRITON_LAUNCH", "jit")
    return mode if mode in ("direct", "jit") else "jit"


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
        entry = self._compiled.get(key)
        if entry is None:
            kernel = self.fn[grid](*args, **meta)  # compiles (or finds) and launches
            consts = tuple(meta[n] for n in self.names[len(args):])
            if getattr(kernel, "packed_metadata", None) is not None:
                with self._lock:
                    self._compiled[key] = (kernel, consts)
            return kernel
        kernel, consts = entry
        try:
            kernel.run(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
                       _raw_stream(first.device.index), kernel.function, kernel.packed_metadata,
                       None, None, None, *args, *consts)
        except Exception as exc:  # noqa: BLE001 - a Triton whose launcher differs: use the JIT
            self.disabled = True
            log.warning("direct Triton launch of %s failed (%s: %s); using the JIT launch from "
                        "now on", getattr(self.fn, "__name__", self.fn), type(exc).__name__, exc)
            return self.fn[grid](*args, **meta)
        return kernel

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
        entry = self._planned.get(key)
        if entry is None:
            kernel = self.fn[grid](*args, **meta)  # compiles (or finds) and launches
            if getattr(kernel, "packed_metadata", None) is not None:
                consts = tuple(meta[n] for n in self.names[len(args):])
                grid3 = (grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1)
                with self._lock:
                    self._planned[key] = (kernel.run, kernel.function, kernel.packed_metadata,
                                          consts, grid3)
            return kernel
        run, function, packed, consts, (g0, g1, g2) = entry
        try:
            run(g0, g1, g2, _raw_stream(device_index), function, packed, None, None, None,
                *args, *consts)
        except Exception as exc:  # noqa: BLE001 - a Triton whose launcher differs: use the JIT
            self.disabled = True
            log.warning("direct Triton launch of %s failed (%s: %s); using the JIT launch from "
                        "now on", getattr(self.fn, "__name__", self.fn), type(exc).__name__, exc)
            return self.fn[grid](*args, **meta)
        return None
