"""Entry point (group `sglang.srt.plugins`): SGLang calls `register()` in every process.

Hooks are registered only when the launcher passed our settings (environment variable);
a plain `python -m sglang.launch_server` with this package installed is untouched, unless
ADAPTIVE_SPEC_PHASE_TIMING=1 asks for the phase clocks (`phase_timing.py`) or
ADAPTIVE_SPEC_SYNC_PROBE=1 for the sync counter (`sync_probe.py`) or ADAPTIVE_SPEC_STACK_SAMPLER=1
for the scheduler thread's stack samples (`stack_sampler.py`): diagnostics.
"""

from __future__ import annotations

import logging

from ..config import AdaptiveSpecConfig

logger = logging.getLogger("adaptive_spec")

SCHEDULER = "sglang.srt.managers.scheduler.Scheduler"
RESULT_PROCESSOR = "sglang.srt.managers.scheduler_components.batch_result_processor.SchedulerBatchResultProcessor"
EAGLE_WORKER = "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2"
TP_WORKER = "sglang.srt.managers.tp_worker.TpModelWorker"

# (target, hook function name in our modules, hook type name)
HOOKS = (
    (f"{EAGLE_WORKER}.__init__", "hooks_worker.after_eagle_worker_init", "AFTER"),
    (f"{SCHEDULER}.get_next_batch_to_run", "hooks_scheduler.after_get_next_batch_to_run", "AFTER"),
    (f"{RESULT_PROCESSOR}._resolve_spec_v2_tokens", "hooks_scheduler.after_resolve_spec_v2_tokens", "AFTER"),
    (f"{RESULT_PROCESSOR}.process_batch_result_prefill", "hooks_scheduler.after_process_batch_result_prefill", "AFTER"),
    (f"{EAGLE_WORKER}.init_cuda_graphs", "hooks_offpath.after_init_cuda_graphs", "AFTER"),
    (f"{EAGLE_WORKER}.forward_batch_generation", "hooks_offpath.around_forward_batch_generation", "AROUND"),
    (f"{TP_WORKER}.forward_batch_generation", "hooks_offpath.around_target_forward", "AROUND"),
    (f"{SCHEDULER}.get_internal_state", "status.after_get_internal_state", "AFTER"),
    ("sglang.srt.mem_cache.allocation.alloc_for_spec_decode", "hooks_alloc.around_alloc_for_spec_decode", "AROUND"),
    (f"{SCHEDULER}.set_internal_state", "status.around_set_internal_state", "AROUND"),
)

# `--adaptive-spec-off-path plain` only (hooks_plain): hot scheduler paths, so not registered otherwise
OVERLAP = "sglang.srt.managers.overlap_utils"
PLAIN_HOOKS = (
    (f"{SCHEDULER}.init_overlap", "hooks_plain.after_init_overlap", "AFTER"),
    (f"{SCHEDULER}.update_running_batch", "hooks_plain.before_update_running_batch", "BEFORE"),
    ("sglang.srt.managers.schedule_batch.ScheduleBatch.prepare_for_decode", "hooks_plain.around_prepare_for_decode", "AROUND"),
    ("sglang.srt.managers.schedule_batch.ScheduleBatch.prepare_for_extend", "hooks_plain.after_prepare_for_extend", "AFTER"),
    ("sglang.srt.managers.schedule_batch.ScheduleBatch.merge_batch", "hooks_plain.before_merge_batch", "BEFORE"),
    (f"{OVERLAP}.resolve_forward_inputs", "hooks_plain.around_resolve_forward_inputs", "AROUND"),
    (f"{OVERLAP}.FutureMap.publish", "hooks_plain.around_publish", "AROUND"),
    (f"{OVERLAP}.FutureMap.stash", "hooks_plain.around_stash", "AROUND"),
    (f"{RESULT_PROCESSOR}.process_batch_result_decode", "hooks_plain.around_process_batch_result_decode", "AROUND"),
)


def register() -> None:
    try:
        cfg = AdaptiveSpecConfig.from_env()
    except Exception as exc:  # a broken carried config must not take the process down
        logger.error("adaptive_spec: ignoring unreadable settings (%s); SGLang runs unchanged", exc)
        cfg = None
    from importlib import import_module

    from . import phase_timing, stack_sampler, sync_probe

    diagnostics = [m for m in (phase_timing, sync_probe, stack_sampler) if m.enabled()]
    if cfg is None and not diagnostics:
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    if cfg is not None:
        for target, hook_path, hook_type in HOOKS + (PLAIN_HOOKS if cfg.off_path == "plain" else ()):
            module_name, fn_name = hook_path.rsplit(".", 1)
            fn = getattr(import_module(f"{__package__}.{module_name}"), fn_name)
            HookRegistry.register(target, fn, getattr(HookType, hook_type))
        if cfg.verify_backend != "sglang":
            from .verify_backend import install_verify_backend

            install_verify_backend(cfg.verify_backend)
    for diagnostic in diagnostics:  # plain servers included: after ours, outermost
        for target, fn, hook_type in diagnostic.hooks():
            HookRegistry.register(target, fn, getattr(HookType, hook_type))
