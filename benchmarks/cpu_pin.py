"""Pin the server under measurement to the same CPUs in every level (`--pin-scheduler-cpus`).

Why: at 128-256 requests the servers are host-bound (session 32's torch profiles at 128: the
GPU busy 35% of the span, the scheduler thread at 1.00 of a core in every row since session
28), so a server's throughput is the speed of the CPU its scheduler runs on. On the GPU machine (a
Firecracker VM, 16 vCPUs) each server's scheduler stayed on one vCPU of its own for the whole
run (the rows' `scheduler_cpus`: in one run plain on vCPUs 6-8 in every repeat, goodput on 15),
and a vCPU the host runs slower biases every repeat of that server alike: paired repeats do not
average it out. Pinned, every system's scheduler runs on the same vCPUs, one system at a time
(the sweep measures one server at a time; idle servers sleep, `--sleep-on-idle`).

At each level's start: each scheduler process's main thread (the one that runs the event loop
and launches the GPU work) gets one of the listed CPUs; the scheduler's other threads (ZMQ's
I/O, torch's) the listed CPUs left over, or all listed ones when none is left; every other
process of the server (the HTTP front-end, the detokenizer) and the load generator itself the
CPUs not listed, so nothing else lands on the scheduler's. Linux only (`os.sched_setaffinity`
per thread id); psutil finds the processes.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Set

from .cpu_usage import _role

try:
    import psutil
except ImportError:  # pragma: no cover - psutil ships with sglang
    psutil = None

MAX_THREADS = 1024  # per process: a bound on the loop, far above SGLang's ~40 threads


def parse_cpus(text: str, allowed: Optional[Set[int]] = None) -> List[int]:
    """'3' / '3,4' / '2-3' -> sorted CPU ids; ValueError naming the problem (the CLI turns it
    into one line). Each must be one this process may run on, and one must be left over."""
    allowed = set(os.sched_getaffinity(0)) if allowed is None else set(allowed)
    cpus: Set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"--pin-scheduler-cpus: expected CPU ids like 3,4 or 2-3, got {text!r}")
        if a < 0 or b < a or b - a > 4096:
            raise ValueError(f"--pin-scheduler-cpus: bad range {part!r}")
        cpus.update(range(a, b + 1))
    if not cpus:
        raise ValueError("--pin-scheduler-cpus: no CPU given")
    missing = sorted(cpus - allowed)
    if missing:
        raise ValueError(f"--pin-scheduler-cpus: CPU {missing[0]} is not one this process may "
                         f"use ({_span(allowed)})")
    if not allowed - cpus:
        raise ValueError("--pin-scheduler-cpus: leave at least one CPU for the front-end and the "
                         "load generator")
    return sorted(cpus)


def _span(cpus: Set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def _set_threads(pid: int, cpus: Set[int], skip: Sequence[int] = ()) -> int:
    """Every thread of `pid` (but `skip`) onto `cpus`; how many took it (a thread may end)."""
    try:
        tids = [t.id for t in psutil.Process(pid).threads()][:MAX_THREADS]
    except Exception:  # noqa: BLE001 - the process ended or cannot be read
        return 0
    n = 0
    for tid in tids:
        if tid in skip:
            continue
        try:
            os.sched_setaffinity(tid, cpus)
            n += 1
        except OSError:  # ended meanwhile
            pass
    return n


class SchedulerPin:
    """`pin(server_pid)` before a level: the placement above; returns what the row records."""

    def __init__(self, cpus: Sequence[int], allowed: Optional[Set[int]] = None):
        self.cpus = sorted(cpus)
        allowed = set(os.sched_getaffinity(0)) if allowed is None else set(allowed)
        self.others = allowed - set(self.cpus)

    def pin(self, server_pid: Optional[int]) -> Dict[str, object]:
        if psutil is None or server_pid is None:
            return {}
        try:
            main = psutil.Process(server_pid)
            kids = main.children(recursive=True)
        except Exception:  # noqa: BLE001 - the server is gone: nothing to pin
            return {}
        procs = [main] + kids  # the main process is the front-end, as CpuMeter counts it
        scheds = sorted(p.pid for p in kids if _role(p) == "scheduler")
        if not scheds:
            return {"pin_error": "no scheduler process found"}
        mains = self.cpus[:len(scheds)] or self.cpus
        rest = set(self.cpus[len(scheds):]) or set(self.cpus)
        threads = 0
        for i, pid in enumerate(scheds):
            try:
                os.sched_setaffinity(pid, {mains[i % len(mains)]})  # the thread whose id is the pid
                threads += 1
            except OSError:
                continue
            threads += _set_threads(pid, rest, skip=(pid,))
        others = [p.pid for p in procs if p.pid not in scheds] + [os.getpid()]
        for pid in others:
            threads += _set_threads(pid, self.others)
        return {"scheduler_pin": {"main": [mains[i % len(mains)] for i in range(len(scheds))],
                                  "threads": threads}}
