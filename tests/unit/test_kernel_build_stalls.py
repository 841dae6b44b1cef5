"""A decode result that held a Triton kernel build is no sample (controller `stall_judge`,
sglang_plugin/slow_results.py `KernelBuildStall`): not of a step count, not of the tokens a
second a k delivers, not of a switch's price. Simulated costs, no GPU, no performance claim."""

import os

import pytest

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.sglang_plugin.slow_results import KernelBuildStall, install_slow_results

from .test_switch_cost import SeenSwitches, run_switching


def switch_around(ctl, dts, stalled=()):
    """Two off steps, a catch-up, two drafting steps at 4 running; `stalled`: the indices of
    the results (0-4) the judge calls stalled."""
    seen = SeenSwitches(ctl)
    ctl.timer.tick = lambda steps, now=None: dts.pop(0)
    results, judged = iter(range(5)), []
    if stalled is not None:
        ctl.stall_judge = lambda seconds: judged.append(seconds) or next(results) in stalled
    for steps, mode in ((0, "off"), (0, "off"), (3, "catchup"), (3, "on"), (3, "on")):
        ctl.on_result(steps, [1] * 4, mode)
    return seen.calls, judged


def test_a_switch_whose_results_held_a_kernel_build_is_not_priced():
    dts = [0.008, 0.008, 0.095, 0.020, 0.020]
    calls, judged = switch_around(Controller(AdaptiveSpecConfig(policy="goodput")), list(dts))
    assert calls == [(4, [(0, 0.008), (0, 0.095), (3, 0.020)])]  # no build: priced
    assert judged == dts  # every timed result is judged
    ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
    calls, _ = switch_around(ctl, list(dts), stalled={2})  # the catch-up built a kernel
    assert calls == [] and ctl.stalled_results == 1
    assert ctl.status()["stalled_results"] == 1


def test_a_drafting_result_that_held_a_kernel_build_is_no_step_sample():
    taken = {}
    for name, stalled in (("unjudged", None), ("judged", {4})):
        ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
        taken[name] = []
        ctl.policy.observe_step_time = lambda *sample, out=taken[name]: out.append(sample)
        switch_around(ctl, [0.008, 0.008, 0.020, 0.020, 0.021], stalled=stalled)
    # (batch size, k, seconds): the catch-up's result is never one; the last held a build
    assert taken["unjudged"] == [(4, 0, 0.008), (4, 3, 0.020), (4, 3, 0.021)]
    assert taken["judged"] == [(4, 0, 0.008), (4, 3, 0.020)]


def test_the_judge_reads_the_kernel_cache_only_for_slow_results_and_counts_builds_only():
    asked, stats = [], []
    builds = {"n": 0, "dir": True}
    judge = KernelBuildStall(clock=lambda: 1000.0,
                             built_since=lambda t: asked.append(t) or builds["n"],
                             dir_written_since=lambda t: stats.append(t) or builds["dir"])
    assert not judge(0.004) and asked == stats == []  # a steady step: the cache is not read
    assert not judge(0.150)  # slow, nothing built: a full catch-up's own cost, say
    builds["n"] = 2
    assert judge(0.150)
    assert asked == stats == [pytest.approx(999.85)] * 2  # from when the result began
    builds["dir"] = False  # the directory did not move: no walk of its entries
    assert not judge(0.150) and len(asked) == 2 and len(stats) == 3
    assert not KernelBuildStall(built_since=lambda t: None,
                                dir_written_since=lambda t: True)(0.5)  # no cache to read


def test_on_a_real_cache_directory_only_an_entry_written_during_the_result_counts(
        tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    now = {"t": 1000.0}
    judge = KernelBuildStall(clock=lambda: now["t"])
    os.utime(tmp_path, (900.0, 900.0))  # the directory last written long before
    assert not judge(0.2)
    (tmp_path / "abc123").mkdir()  # Triton's new entry: a subdirectory
    os.utime(tmp_path / "abc123", (999.9, 999.9))
    os.utime(tmp_path, (999.9, 999.9))
    assert judge(0.2)  # the result began at 999.8
    now["t"] = 1010.0
    assert not judge(0.2)  # a later result, nothing new


def test_the_plugin_installs_the_judge_with_the_slow_results_listener_once():
    ctl = Controller(AdaptiveSpecConfig(force="on"))
    assert ctl.stall_judge is None  # the core alone judges nothing
    install_slow_results(ctl)
    judge = ctl.stall_judge
    assert isinstance(judge, KernelBuildStall)
    install_slow_results(ctl)
    assert ctl.stall_judge is judge


def test_a_judge_that_fails_is_dropped_and_the_policy_keeps_deciding():
    ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
    taken = []
    ctl.policy.observe_step_time = lambda *sample: taken.append(sample)

    def judge(seconds):
        raise OSError("the kernel cache went away")

    ctl.stall_judge = judge
    ctl.timer.tick = lambda steps, now=None: 0.008
    for _ in range(3):
        ctl.on_result(0, [0] * 4, "off")
    assert ctl.stall_judge is None and ctl.fallback_reason is None
    assert ctl.stalled_results == 0 and len(taken) == 2  # the last off sample waits its verdict


def slow_start_costs(slow_decisions: int, factor: float):
    """Step seconds at one request shaped like the GPU's (session 64, H100, Qwen3-MoE layout,
    dial 0.7): plain 1.6 ms, k = 3 3.6 ms, every step `factor` x slower for the first
    `slow_decisions` decisions (that run's first second of decoding: forced-on's k = 3 steps
    read 4.7 ms there, 3.6 after)."""
    made = [0]

    def cost(bs):
        made[0] += 1
        f = factor if made[0] <= slow_decisions else 1.0
        return (0.0016 * f, 0.0025 * f, 0.0030 * f, 0.0036 * f)
    return cost


@pytest.mark.parametrize("seed", range(8))
def test_first_switches_slowed_by_kernel_builds_do_not_keep_one_request_plain(seed):
    """Session 64's one-request run: the first two switches on took ~95 ms while SGLang's
    catch-up kernels were built (later ones ~8 ms), the early probes met a slow second, and
    the price (73 ms) kept every later probe of a drafting k away: plain ran all 3,034 decisions
    of the level where forced-on made 1.09x. With those results judged stalled, the price rests
    on the clean switches and the policy drafts through the second half. (Without the judge 4 of
    these 8 seeds stay plain there.)"""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    building, flagged = [0.095, 0.095], []

    def switch_s(bs):
        if building:
            flagged.extend([True, True])  # the two results the catch-up's time lands in
            return building.pop(0)
        return 0.008

    ctl.stall_judge = lambda seconds: flagged.pop(0) if flagged else False
    n = 3000
    chosen, _, _ = run_switching(ctl, [1] * n, slow_start_costs(250, 1.3), switch_s, seed)
    late = chosen[n // 2:]
    assert sum(1 for k in late if k > 0) >= 0.95 * len(late), seed
    assert ctl.policy.switch.cost(0) < 0.02  # the clean switches' price, not the builds'
