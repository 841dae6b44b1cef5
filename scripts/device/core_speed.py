"""How fast each CPU this process may use runs a scheduler-like Python workload, a few rounds in
rotated order, with the host's steal time over the probe: do the GPU machine's vCPUs differ?

Why (session 32): every server's scheduler is CPU-bound at 128-256 requests and sat on one vCPU
of its own for a whole run, so a slower vCPU would bias a run's ratios (benchmarks/cpu_pin.py).
The workload is dict, list and attribute work over a few MB, as a scheduler step is: pure
interpreter speed plus cache misses. Usage: python core_speed.py [--rounds 3] [--ms 150] [--out F]
"""
import argparse
import json
import os
import time


class _Req:
    __slots__ = ("rid", "seq_len", "out", "done")

    def __init__(self, rid):
        self.rid, self.seq_len, self.out, self.done = rid, 0, [], False


def _work(reqs, table, budget_s):
    """Scheduler-like passes over `reqs` until `budget_s`; passes per second."""
    passes, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget_s:
        for r in reqs:
            r.seq_len += 1
            r.out.append(r.seq_len & 1023)
            if len(r.out) > 64:
                del r.out[:32]
            table[r.rid] = table.get(r.rid, 0) + r.seq_len
        passes += 1
    return passes / (time.perf_counter() - t0)


def _steal():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = [int(x) for x in parts]
    return vals[7] if len(vals) > 7 else 0, sum(vals)


def _siblings(cpu):
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
            return f.read().strip()
    except OSError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ms", type=float, default=150.0, help="per CPU per round")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    reqs = [_Req(i) for i in range(256)]
    table = {i: 0 for i in range(20000)}
    speed = {c: [] for c in cpus}
    s0, t0 = _steal()
    for rnd in range(min(a.rounds, 10)):
        order = cpus[rnd % len(cpus):] + cpus[:rnd % len(cpus)]
        if rnd % 2:
            order.reverse()
        for c in order:
            os.sched_setaffinity(0, {c})
            _work(reqs, table, 0.02)  # settle on the CPU
            speed[c].append(_work(reqs, table, a.ms / 1000.0))
    os.sched_setaffinity(0, set(cpus))
    s1, t1 = _steal()
    best = max(max(v) for v in speed.values())
    rows = {str(c): {"passes_per_s": [round(x, 1) for x in v],
                     "vs_fastest": round(sum(v) / len(v) / best, 3),
                     "siblings": _siblings(c)} for c, v in speed.items()}
    res = {"cpus": rows, "steal_share": round((s1 - s0) / max(1, t1 - t0), 4),
           "rounds": a.rounds, "ms": a.ms}
    for c, r in rows.items():
        print(f"cpu {c:>3}: {r['vs_fastest']:.3f} of the fastest  {r['passes_per_s']}  siblings {r['siblings']}")
    print(f"steal share over the probe: {res['steal_share']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
