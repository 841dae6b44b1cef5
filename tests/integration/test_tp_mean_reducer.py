"""The server's TP reducer (`MeanReducer`) over a real two-process gloo group on loopback: an
all-reduce started asynchronously and waited for later gives the mean, also with a blocking
all-reduce issued in between (the order every rank keeps), and two goodput policies fed
different local step times through it make the same decisions."""

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

RANK_SCRIPT = textwrap.dedent("""
    import datetime, json, os, sys
    import torch.distributed as dist
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from adaptive_spec.sglang_plugin.hooks_worker import MeanReducer

    rank, port = int(sys.argv[1]), int(sys.argv[2])
    sys.path.insert(0, sys.argv[3])  # tests/unit: draft_sim.run_rank drives the controller
    import draft_sim
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    reducer = MeanReducer(dist.group.WORLD, 2)
    pending = reducer.start([float(rank), 1.0])
    blocking = reducer([10.0 * rank])
    started = pending.wait()

    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3), rank=rank, reducer=reducer)
    # a plain step 5 ms + 0.02 ms a request; each draft step adds 30%; rank 1 runs 10% slower
    chosen = draft_sim.run_rank(
        ctl, [8] * 300 + [128] * 300,
        lambda bs, k: (0.005 + 0.00002 * bs) * (1 + 0.3 * k * (bs / 16) ** 0.5),
        skew=1.1 if rank else 1.0, time_seed=100 + rank)
    print(json.dumps({"started": started, "blocking": blocking, "chosen": chosen}), flush=True)
    # no process-group teardown: on a loaded CI machine one rank's teardown racing the other's
    # (the store lives in rank 0) aborted a process after its result was out
    dist.barrier()
    os._exit(0)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_mean_reducer_over_two_gloo_ranks(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    port = _free_port()
    unit = str(Path(__file__).resolve().parents[1] / "unit")
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(port), unit],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, err[-2000:]
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            p.kill()
    for o in outs:
        assert o["started"] == [0.5, 1.0]  # the asynchronous one, waited for after the other
        assert o["blocking"] == [5.0]
    assert outs[0]["chosen"] == outs[1]["chosen"]
    assert len(set(outs[0]["chosen"])) > 1  # it adapted between the two loads
