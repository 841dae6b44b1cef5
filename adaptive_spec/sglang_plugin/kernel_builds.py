"""How many Triton kernels were built on this machine since a moment: a host-stall diagnostic.

Triton keeps one directory per compiled kernel in its cache (`TRITON_CACHE_DIR`, else
`~/.triton/cache`), written when the kernel is built. A kernel built on first use runs on the
scheduler's thread, and every request in flight waits for it. A slow full catch-up (`catchup.py`)
and a slow decode result (`slow_results.py`) say how many cache entries were written while they ran,
so their log lines tell such a build from other stalls. GPU, session 27 (MoE layout, empty caches):
four catch-ups took 0.75-1.43 s while Triton built fused-MoE kernels, read then by hand from the
cache's timestamps. Session 59 (H100, warm caches): one catch-up of 5,057 tokens over 64 requests
held the host 1.72 s in the target's forward, and nothing could say whether a build was in it.

Since session 60 a slow decode result's line is followed by the names of the kernels built
(`names_since`: each entry's `__grp__<kernel>.json`), where any were.

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


GROUP_PREFIX = "__grp__"  # Triton's per-entry file naming the kernel: __grp__<kernel>.json


def entry_name(path: str) -> str:
    """The kernel a cache entry holds (from its `__grp__<kernel>.json`), else its first file's
    name (a launcher or utility module Triton built), else the entry's own directory name."""
    try:
        files = sorted(os.listdir(path))
    except OSError:
        return os.path.basename(path)
    for f in files:
        if f.startswith(GROUP_PREFIX) and f.endswith(".json"):
            return f[len(GROUP_PREFIX):-len(".json")]
    return files[0] if files else os.path.basename(path)


def _written_since(since_wall_s: float, root: Optional[str]) -> Optional[list]:
    """The cache entries written at or after `since_wall_s` (time.time() seconds, less
    FILE_CLOCK_SLACK_S); None when there is no cache directory to read."""
    root = root or cache_dir()
    try:
        entries = os.scandir(root)
    except OSError:
        return None
    written = []
    with entries:
        for read, entry in enumerate(entries):
            if read >= MAX_ENTRIES_READ:
                break
            try:
                if entry.stat().st_mtime >= since_wall_s - FILE_CLOCK_SLACK_S:
                    written.append(entry.path)
            except OSError:  # removed while we read: not a build of this span
                continue
    return written


def dir_written_since(since_wall_s: float, root: Optional[str] = None) -> bool:
    """Whether the cache directory itself was written at or after `since_wall_s` (less
    FILE_CLOCK_SLACK_S): a new entry is a new subdirectory, which moves the directory's time.
    One stat, so a caller asked often can skip the walk of every entry; False without a cache."""
    try:
        return os.stat(root or cache_dir()).st_mtime >= since_wall_s - FILE_CLOCK_SLACK_S
    except OSError:
        return False


def built_since(since_wall_s: float, root: Optional[str] = None) -> Optional[int]:
    """Cache entries written at or after `since_wall_s` (time.time() seconds, less
    FILE_CLOCK_SLACK_S); None when there is no cache directory to read."""
    written = _written_since(since_wall_s, root)
    return None if written is None else len(written)


def names_since(since_wall_s: float, root: Optional[str] = None, limit: int = 8) -> list:
    """The names (`entry_name`) of the cache entries written since `since_wall_s`, sorted, at
    most `limit`; [] when none or no cache to read. Session 60 (H100, MoE layout): goodput's
    cold start at 128 requests met 1-2 builds in each of its slow results, and the count could
    not say which kernels they were."""
    return sorted(entry_name(path) for path in (_written_since(since_wall_s, root) or [])[:limit])
