"""How many Triton kernels were built on this machine since a moment: a host-stall diagnostic.

Triton keeps one directory per compiled kernel in its cache (`TRITON_CACHE_DIR`, else
`~/.triton/cache`), written when the kernel is built. A kernel built on first use runs on the
scheduler's thread, and every request in flight waits for it. A slow full catch-up (`catchup.py`)
and a slow decode result (`slow_results.py`) say how many cache entries were written while they ran,
so their log lines tell such a build from other stalls. GPU, session 27 (MoE layout, empty caches):
four catch-ups took 0.75-1.43 s while Triton built fused-MoE kernels, read then by hand from the
cache's timestamps. Session 59 (H100, warm caches): one catch-up of 5,057 tokens over 64 requests
held the host 1.72 s in the target's forward, and nothing could say whether a build was in it.

The count covers any process on the machine (servers side by side share the cache) and reads
the entries' modification times, so it needs a file system that keeps them finer than the stall.
"""

from __future__ import annotations

import os
from typing import Optional

# A cache holds a few thousand entries after a sweep; the walk stops here whatever it holds.
MAX_ENTRIES_READ = 100_000
# File times come from the kernel's coarse clock, up to a tick (1-10 ms) behind time.time(): an
# entry written just after the moment can read a few ms before it.
FILE_CLOCK_SLACK_S = 0.05


def cache_dir() -> str:
    """Where this process's Triton writes its kernels (Triton's own answer when importable)."""
    configured = os.environ.get("TRITON_CACHE_DIR")
    if configured:
        return configured
    try:  # newer Triton (3.6, SGLang 0.5.16's, has it)
        from triton import knobs

        return str(knobs.cache.dir)
    except Exception:
        pass
    try:  # earlier Triton
        from triton.runtime.cache import default_cache_dir

        return default_cache_dir()
    except Exception:  # no Triton: its documented default
        return os.path.join(os.path.expanduser("~"), ".triton", "cache")


def built_since(since_wall_s: float, root: Optional[str] = None) -> Optional[int]:
    """Cache entries written at or after `since_wall_s` (time.time() seconds, less
    FILE_CLOCK_SLACK_S); None when there is no cache directory to read."""
    root = root or cache_dir()
    try:
        entries = os.scandir(root)
    except OSError:
        return None
    built = 0
    with entries:
        for read, entry in enumerate(entries):
            if read >= MAX_ENTRIES_READ:
                break
            try:
                if entry.stat().st_mtime >= since_wall_s - FILE_CLOCK_SLACK_S:
                    built += 1
            except OSError:  # removed while we read: not a build of this span
                continue
    return built
