"""Where the host's CPU went during one sweep level: the load generator's own process and each
process of a server the sweep launched, as the share of one core each used over the level.

Why: at 256 requests the same plain server ran 132 requests on average in one MoE sweep and
209 in another (session 16), with a 1.3 s median time to first token in the first and no
requests queued at the scheduler: requests were stuck before the scheduler, in the load
generator (one asyncio process parsing every stream event) or in the server's HTTP front-end
(one process: the HTTP server and SGLang's tokenizer manager). Both cost per stream event, and a
drafting server sends ~2.5 tokens per event where a plain one sends 1, so a saturated process
there favours drafting at high load. A single-threaded process near 1.0 here was the
bottleneck; the rows carry this so a later run can tell a GPU result from a CPU-bound one.

Processes are named from their titles (SGLang sets ``sglang::scheduler...`` and
``sglang::detokenizer``); the server's main process is ``frontend``. Several schedulers (tensor
parallel) report the busiest. Reads /proc through psutil; without psutil, or for a server
not launched here (attached), only the client is reported.
"""

from __future__ import annotations

import asyncio
import time
from typing import Dict, List, Optional

try:
    import psutil
except ImportError:  # pragma: no cover - psutil ships with sglang
    psutil = None


def _cpu_seconds(proc) -> Optional[float]:
    try:
        t = proc.cpu_times()
        return t.user + t.system
    except Exception:  # noqa: BLE001 - the process ended or cannot be read
        return None


def _role(proc) -> str:
    try:
        title = " ".join(proc.cmdline()) or proc.name()
    except Exception:  # noqa: BLE001
        return "other"
    for role in ("scheduler", "detokenizer"):
        if f"sglang::{role}" in title:
            return role
    return "other"


class CpuMeter:
    """``start()`` at a level's start, ``stop()`` at its end: {role: share of one core}."""

    def __init__(self, server_pid: Optional[int] = None):
        self.server_pid = server_pid
        self._t0 = 0.0
        self._client0 = 0.0
        self._procs: List[tuple] = []  # (role, process, cpu seconds at start)

    def _server_processes(self) -> List[tuple]:
        if psutil is None or self.server_pid is None:
            return []
        try:
            main = psutil.Process(self.server_pid)
            kids = main.children(recursive=True)
        except Exception:  # noqa: BLE001 - the server is gone: the client alone
            return []
        return [("frontend", main)] + [(_role(p), p) for p in kids]

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._client0 = time.process_time()
        self._procs = [(role, p, c) for role, p in self._server_processes()
                       if (c := _cpu_seconds(p)) is not None]

    def stop(self) -> Dict[str, float]:
        wall = max(1e-6, time.perf_counter() - self._t0)
        out = {"client": round((time.process_time() - self._client0) / wall, 3)}
        for role, p, c0 in self._procs:
            c1 = _cpu_seconds(p)
            if c1 is None:
                continue
            share = round((c1 - c0) / wall, 3)
            out[role] = max(out.get(role, 0.0), share)
        return out


class LoopLag:
    """How late the client's event loop wakes a 10 ms timer: a loop busy with stream events
    (or anything else) delays every request's next read and its next send alike."""

    def __init__(self, interval_s: float = 0.01, cap: int = 100_000):
        self.interval_s = interval_s
        self.cap = cap  # bounded: one sample per interval, at most this many
        self.lags_ms: List[float] = []
        self._task: Optional[asyncio.Task] = None

    async def _run(self) -> None:
        while len(self.lags_ms) < self.cap:
            t = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            self.lags_ms.append(1000.0 * max(0.0, time.perf_counter() - t - self.interval_s))

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> Dict[str, float]:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        lags = sorted(self.lags_ms)
        if not lags:
            return {}
        return {"client_loop_lag_ms_p50": round(lags[len(lags) // 2], 2),
                "client_loop_lag_ms_p99": round(lags[min(len(lags) - 1, int(0.99 * len(lags)))], 2)}


class CorePlacement:
    """Which CPU the server's scheduler process is on, and that CPU's clock, every
    `interval_s` over a level (bounded count): {"scheduler_cpus": {cpu: samples},
    "scheduler_cpu_mhz": mean MHz of the CPUs it was seen on}.

    Why: at one request on the MoE layout the same plain server's TPOT read 1.4 ms in some
    levels and 2.2 ms in others (session 27), with the GPU's SM clock at 1,980 MHz in all of
    them and the GPU idle more in the slow ones: the host set the pace. Whether the scheduler
    sat on another core (a hyperthread sibling of a busy one, another socket) or the same core
    ran slower is what a slow level's row can then tell. Without psutil, or for an attached
    server, nothing."""

    def __init__(self, server_pid: Optional[int] = None, interval_s: float = 0.25, cap: int = 4000):
        self.server_pid = server_pid
        self.interval_s = interval_s
        self.cap = cap
        self.cpus: Dict[int, int] = {}
        self.mhz: List[float] = []
        self._task: Optional[asyncio.Task] = None

    def _scheduler(self):
        if psutil is None or self.server_pid is None:
            return None
        try:
            kids = psutil.Process(self.server_pid).children(recursive=True)
        except Exception:  # noqa: BLE001 - the server is gone
            return None
        return next((p for p in kids if _role(p) == "scheduler"), None)

    def sample(self, proc) -> None:
        try:
            cpu = proc.cpu_num()
        except Exception:  # noqa: BLE001 - ended, or a platform without it
            return
        self.cpus[cpu] = self.cpus.get(cpu, 0) + 1
        try:
            freqs = psutil.cpu_freq(percpu=True) or []
        except Exception:  # noqa: BLE001 - no cpufreq on this host
            freqs = []
        if cpu < len(freqs) and freqs[cpu].current:
            self.mhz.append(float(freqs[cpu].current))

    async def _run(self, proc) -> None:
        for _ in range(self.cap):
            self.sample(proc)
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        proc = self._scheduler()
        if proc is not None:
            self._task = asyncio.ensure_future(self._run(proc))

    async def stop(self) -> Dict[str, object]:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if not self.cpus:
            return {}
        out: Dict[str, object] = {"scheduler_cpus": {str(c): n for c, n in sorted(self.cpus.items())}}
        if self.mhz:
            out["scheduler_cpu_mhz"] = round(sum(self.mhz) / len(self.mhz), 1)
        return out


def server_pid(sp) -> Optional[int]:
    """The pid of a server the sweep launched (None when attached or not running)."""
    proc = getattr(sp, "proc", None)
    if getattr(sp, "attached", True) or proc is None or proc.poll() is not None:
        return None
    return proc.pid
