"""Runs in a spawned child (like SGLang's scheduler processes): load plugins, report patches."""


def probe(queue):
    import warnings

    warnings.filterwarnings("ignore")
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.managers.scheduler_components.batch_result_processor import SchedulerBatchResultProcessor
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry
    from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2

    before = {
        "init": EAGLEWorkerV2.__init__,
        "next": Scheduler.get_next_batch_to_run,
        "resolve": SchedulerBatchResultProcessor._resolve_spec_v2_tokens,
    }
    load_plugins()
    after = {
        "init": EAGLEWorkerV2.__init__,
        "next": Scheduler.get_next_batch_to_run,
        "resolve": SchedulerBatchResultProcessor._resolve_spec_v2_tokens,
    }
    queue.put(
        {
            "patched": sorted(k for k in before if before[k] is not after[k]),
            "registry": sorted(t for t in HookRegistry._patched if "adaptive" in t or "eagle_worker_v2" in t
                               or "Scheduler" in t or "batch_result_processor" in t),  # fmt: skip
        }
    )
