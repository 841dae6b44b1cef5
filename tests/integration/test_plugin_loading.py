"""SGLang's own load_plugins() finds our entry point in a spawned process and hooks real classes."""

import multiprocessing as mp
import os


from adaptive_spec.config import ENV_VAR, AdaptiveSpecConfig

from .spawn_probe import probe


def run_probe(env_value, extra_env=None):
    ctx = mp.get_context("spawn")  # SGLang spawns its scheduler processes
    old = os.environ.get(ENV_VAR)
    extra_env = extra_env or {}
    old_extra = {k: os.environ.get(k) for k in extra_env}
    os.environ.update(extra_env)
    try:
        if env_value is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = env_value
        queue = ctx.Queue()
        proc = ctx.Process(target=probe, args=(queue,))
        proc.start()
        result = queue.get(timeout=240)
        proc.join(timeout=60)
        assert proc.exitcode == 0
        return result
    finally:
        os.environ.pop(ENV_VAR, None)
        if old is not None:
            os.environ[ENV_VAR] = old
        for k, v in old_extra.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_entry_point_is_declared():
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="sglang.srt.plugins")}
    assert names.get("adaptive_spec") == "adaptive_spec.sglang_plugin.plugin:register"


def test_spawned_scheduler_process_gets_our_hooks():
    result = run_probe(AdaptiveSpecConfig(threshold=16).to_json())
    assert result["patched"] == ["init", "next", "resolve"]
    assert "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2.__init__" in result["registry"]


def test_without_our_settings_sglang_is_untouched():
    result = run_probe(None)
    assert result["patched"] == []


def test_phase_timing_alone_clocks_a_plain_server_and_nothing_else():
    # ADAPTIVE_SPEC_PHASE_TIMING without our settings (a plain server measured beside ours):
    # only the phase clocks, none of our policy hooks
    result = run_probe(None, {"ADAPTIVE_SPEC_PHASE_TIMING": "1"})
    assert result["patched"] == ["next"]
    assert "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2.__init__" not in result["registry"]
    assert "sglang.srt.managers.scheduler.Scheduler.run_batch" in result["registry"]


def test_sync_probe_alone_counts_a_plain_server_and_hooks_nothing_else():
    result = run_probe(None, {"ADAPTIVE_SPEC_SYNC_PROBE": "1"})
    registry = result["registry"]
    assert "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2.__init__" not in registry
    assert ("sglang.srt.managers.scheduler_components.batch_result_processor."
            "SchedulerBatchResultProcessor.process_batch_result_decode") in registry


def test_stack_sampler_alone_brings_the_phase_clocks_and_none_of_our_policy_hooks():
    result = run_probe(None, {"ADAPTIVE_SPEC_STACK_SAMPLER": "1"})
    registry = result["registry"]
    assert "sglang.srt.speculative.eagle_worker_v2.EAGLEWorkerV2.__init__" not in registry
    assert "sglang.srt.managers.scheduler.Scheduler.run_batch" in registry  # the windows' clocks
    assert ("sglang.srt.managers.scheduler_components.batch_result_processor."
            "SchedulerBatchResultProcessor.process_batch_result_decode") in registry
