"""`Controller.relearn`: the configured policy afresh and the acceptance zeroed, the settings
and the counters kept. The switch warm-up asks for it as it restores the setting: GPU, session
65 (H100, Qwen3-MoE layout), its flaps had left the goodput policy step cells of 34-56 ms and
switch prices of 71-146 ms at 4 and 16 requests. Simulated step times, no GPU."""

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.policy.step_table import bucket_of

from .test_switch_cost import SeenSwitches

FLAP = ((0, "off"), (0, "off"), (3, "catchup"), (3, "on"), (3, "on"))


def flapped(ctl, rounds=8, dt=0.040):
    """`rounds` off-and-on cycles at 16 running, every result `dt` long, every draft right."""
    ctl.timer.tick = lambda steps, now=None: dt
    for _ in range(rounds):
        for steps, mode in FLAP:
            ctl.decide(batch_size=16)
            ctl.on_result(steps, [steps] * 16, mode)


def learned(ctl):
    policy = ctl.policy
    bucket = bucket_of(16)
    return ([policy.table.samples(bucket, k) for k in (0, 3)], policy.switch.cost(bucket),
            sum(ctl.acceptance.pos_tries))


def after_the_warm_up(relearn):
    """Flaps at 16 running, the force lifted as the warm-up's restore does (with a relearn or
    not), then 64 decisions at one request: the policy's syncs merge what it holds."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", force="flap:4"))
    flapped(ctl)
    counts = ctl.status()["decisions"], ctl.status()["rank_check"]
    ctl.update_settings(AdaptiveSpecConfig(policy="goodput"))
    if relearn:
        ctl.relearn()
    for _ in range(64):
        ctl.decide(batch_size=1)
    return ctl, counts


def test_what_the_flaps_taught_is_forgotten_and_the_rest_kept():
    ctl, _ = after_the_warm_up(relearn=False)
    samples, price, tries = learned(ctl)
    assert min(samples) > 0 and price > 0 and tries > 0  # without it, the flaps were learned
    ctl, (decisions, check) = after_the_warm_up(relearn=True)
    assert learned(ctl) == ([0, 0], 0.0, 0)
    assert ctl.cfg == AdaptiveSpecConfig(policy="goodput")
    assert type(ctl.policy).__name__ == "GoodputPolicy"  # no forced overlay left
    # the counters stay (the metrics' running totals): the warm-up's decisions, then 64 more
    assert ctl.status()["rank_check"]["decisions"] == check["decisions"] + 64
    assert sum(ctl.status()["decisions"].values()) == sum(decisions.values()) + 64


def test_a_forced_overlay_stays_over_the_fresh_policy():
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", force="on"))
    flapped(ctl, rounds=2)
    ctl.relearn()
    assert ctl.decide(batch_size=16).steps == 3 and ctl.cfg.force == "on"


def test_a_switch_begun_before_it_is_not_priced_after_it():
    ctl = Controller(AdaptiveSpecConfig(policy="goodput"))
    ctl.timer.tick = lambda steps, now=None: 0.040
    for steps, mode in FLAP[:3]:  # off, off, the catch-up: a switch's price being gathered
        ctl.on_result(steps, [steps] * 4, mode)
    ctl.relearn()
    seen = SeenSwitches(ctl)
    for steps, mode in FLAP[3:]:
        ctl.on_result(steps, [steps] * 4, mode)
    assert seen.calls == []
    for steps, mode in FLAP:  # the next switch is priced as ever
        ctl.on_result(steps, [steps] * 4, mode)
    assert [size for size, _ in seen.calls] == [4]
