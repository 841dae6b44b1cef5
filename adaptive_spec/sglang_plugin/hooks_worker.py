"""Worker-side hooks: our policy decides the draft steps of every decode batch.

SGLang's `--speculative-adaptive` machinery (one pre-built runtime state, with CUDA graphs,
per candidate step count; KV reserved for the largest) is reused; its decision-maker
(`AdaptiveController.params`) is replaced by `PolicyParams`, which asks our Controller.
"""

from __future__ import annotations

import logging

from ..config import AdaptiveSpecConfig
from .hooks_offpath import register_spec_worker
from .slow_results import install_slow_results
from .state import init_controller
from .warmup import warm_sampling_kernels

logger = logging.getLogger("adaptive_spec")


class PolicyParams:
    """Stands in for SGLang's AdaptiveSpeculativeParams (same duck-typed interface)."""

    def __init__(self, controller, candidate_steps: list[int]):
        self.controller = controller
        self.candidate_steps = sorted(candidate_steps)
        self._cuda_graph_bs = None

    def set_cuda_graph_bs(self, cuda_graph_bs):
        self._cuda_graph_bs = sorted(cuda_graph_bs) if cuda_graph_bs else None

    def cuda_graph_bs_for_step(self, step: int):
        # Any batch size may run with any step count: graphs for all of them.
        return None if self._cuda_graph_bs is None else list(self._cuda_graph_bs)

    def get_steps_for_batch(self, batch_size: int) -> int:
        return self.controller.decide(batch_size).steps

    def on_verify_complete(self, num_correct_drafts_per_req, batch_size):
        # Acceptance arrives through the result hook, attributed to the step count the
        # batch ran with; switching happens only at the next launch.
        return None


def tp_mean_reducer():
    """Mean over the TP ranks on the CPU (gloo) group; None with one rank.

    The goodput policy merges measured step times through it at fixed decision counts, so
    every rank decides from the same cost table.
    """
    try:
        from sglang.srt.distributed import get_tp_group

        group = get_tp_group()
    except Exception:
        return None
    if group.world_size <= 1:
        return None
    return MeanReducer(group.cpu_group, group.world_size)


class MeanReducer:
    """All-reduce mean of a list of floats over a torch.distributed group: `reducer(values)`
    blocks; `reducer.start(values).wait()` lets the caller go on meanwhile (the goodput policy
    merges the result a few decisions later, `GoodputPolicy.sync_lag`). Every rank must start
    its all-reduces in the same order, which the policy's fixed decision counts give."""

    def __init__(self, cpu_group, world_size: int):
        self.cpu_group = cpu_group
        self.world_size = world_size

    def __call__(self, values):
        return self.start(values).wait()

    def start(self, values) -> "_PendingMean":
        import torch

        t = torch.tensor(values, dtype=torch.float64)
        work = torch.distributed.all_reduce(t, group=self.cpu_group, async_op=True)
        return _PendingMean(work, t, self.world_size)


class _PendingMean:
    def __init__(self, work, summed, world_size: int):
        self.work, self.summed, self.world_size = work, summed, world_size

    def wait(self) -> list:
        self.work.wait()
        return (self.summed / self.world_size).tolist()


def tp_rank_of(worker) -> int:
    """The tensor-parallel rank of a spec worker (0.5.16 keeps it in `worker.ps`; the GPU run
    of 2026-11-29 showed both TP ranks labelled 0 when it was read from the target worker)."""
    for holder in (getattr(worker, "ps", None), getattr(worker, "_target_worker", None)):
        rank = getattr(holder, "tp_rank", None)
        if isinstance(rank, int):
            return rank
    return 0


class _SwitchLineFilter(logging.Filter):
    """Drops SGLang's INFO line for every runtime-state switch ("Switch adaptive runtime state:
    steps 3 -> 0 ...", EAGLEWorkerV2.apply_runtime_state): our policy may switch several times
    a second, and our own decision log (--adaptive-spec-log-decisions, rate-limited) says the
    same with the reason."""

    def __init__(self):
        super().__init__()
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and str(record.msg).startswith("Switch adaptive runtime state"):
            self.dropped += 1
            return False
        return True


SWITCH_LINE_FILTER = _SwitchLineFilter()
SGLANG_WORKER_LOGGER = "sglang.srt.speculative.eagle_worker_v2"


def after_eagle_worker_init(ret, worker, *args, **kwargs):
    """AFTER hook on EAGLEWorkerV2.__init__: install our policy into SGLang's controller."""
    cfg = AdaptiveSpecConfig.from_env()
    if cfg is None:
        return None
    controller = getattr(worker, "adaptive_controller", None)
    if controller is None:
        logger.error("adaptive_spec: SGLang adaptive machinery is off; static speculation only")
        return None
    rank = tp_rank_of(worker)
    ctl = init_controller(cfg, rank, reducer=tp_mean_reducer())
    register_spec_worker(worker)
    if getattr(getattr(worker, "server_args", None), "enable_metrics", False):
        try:
            from .metrics import install_metrics

            install_metrics(ctl, rank)
        except Exception as exc:  # metrics must never stop serving
            logger.warning("adaptive_spec: Prometheus series unavailable: %r", exc)
    install_slow_results(ctl)
    controller.params = PolicyParams(ctl, cfg.candidate_steps())
    switch_logger = logging.getLogger(SGLANG_WORKER_LOGGER)
    if SWITCH_LINE_FILTER not in switch_logger.filters:
        switch_logger.addFilter(SWITCH_LINE_FILTER)
    logger.info("adaptive_spec: policy %s installed, candidate steps %s", cfg.policy, cfg.candidate_steps())
    warm_sampling_kernels(cfg.verify_backend)  # a JIT compile at start, not in a serving step
    return None
