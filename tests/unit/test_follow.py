"""The follow log: how many decisions after the batch entered its size class the choice moved
(issue 5's step load: within 5 decode steps each way)."""

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.follow import FollowLog

from .draft_sim import run_rank


def test_a_switch_records_the_decisions_since_the_batch_changed_size():
    log = FollowLog()
    for n, (running, steps) in enumerate([(1, 3)] * 10 + [(40, 3)] * 3 + [(40, 0)] * 5, start=1):
        log.on_decision(n, running, steps, "threshold")
    # the batch reached 40 at decision 11; the choice moved at decision 14: 3 decisions later
    assert log.status() == [{"decision": 14, "running": 40, "from": 3, "to": 0, "reason": "threshold",
                             "decisions_at_size": 3}]


def test_probes_and_the_return_from_them_are_not_switches():
    log = FollowLog()
    seq = [(3, "cost_model")] * 5 + [(1, "probe")] * 7 + [(3, "cost_model")] * 5 + [(0, "refresh")] * 7 \
        + [(3, "cost_model")] * 3 + [(1, "reprobe")] * 4 + [(3, "cost_model")]
    for n, (steps, reason) in enumerate(seq, start=1):
        log.on_decision(n, 8, steps, reason)
    assert log.status() == []


def test_a_probe_that_already_ran_the_new_choice_counts_as_following():
    """GPU, session 26 (step load, warm-up wave): a k = 0 probe begun at 2 requests ran on as the
    batch grew to 125, then the cost model chose 0 there: plain from the first decision at 125."""
    log = FollowLog()
    seq = [(4, 3, "cost_model")] * 5 + [(2, 0, "probe")] * 2 + [(125, 0, "probe")] * 5 \
        + [(125, 0, "cost_model")] * 3
    for n, (running, steps, reason) in enumerate(seq, start=1):
        log.on_decision(n, running, steps, reason)
    (event,) = log.status()
    assert (event["from"], event["to"], event["running"], event["decisions_at_size"]) == (3, 0, 125, 0)
    # a probe of another k in between restarts the run: the lag counts from the new run
    log = FollowLog()
    seq = [(4, 3, "cost_model")] * 5 + [(125, 3, "cost_model")] * 2 + [(125, 1, "probe")] * 3 \
        + [(125, 0, "cost_model")]
    for n, (running, steps, reason) in enumerate(seq, start=1):
        log.on_decision(n, running, steps, reason)
    assert log.status()[0]["decisions_at_size"] == 5


def test_the_log_keeps_the_latest_switches_only():
    log = FollowLog()
    for n in range(1, 200):
        log.on_decision(n, 1 if n % 2 else 64, 3 if n % 2 else 0, "threshold")
    events = log.status()
    assert len(events) == FollowLog.KEEP and events[-1]["decision"] == 199
    assert all(e["decisions_at_size"] == 0 for e in events)  # each switch on its first decision


def test_goodput_on_a_step_load_follows_within_five_decisions_each_way():
    """1 -> 128 -> 1 requests (in one step each way, as the batch sees a burst admitted at once):
    after its first visit of each size (probes fill the table), the choice moves on the first
    decisions at the new size. A simulated cost model (draft_sim), not a GPU measurement."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    loads = ([1] * 400 + [128] * 400) * 3 + [1] * 400
    chosen = run_rank(ctl, loads, lambda bs, k: 0.006 + 0.00008 * bs * (k + 1) + 0.0008 * k, accept=0.6)
    assert chosen[-1] > 0 and chosen[2399] == 0  # drafting at 1 request, plain at 128
    events = ctl.status()["follow"]
    # the last two load steps each way, once the table is filled
    last = [e for e in events if e["decision"] > 1200]
    ups = [e for e in last if e["running"] == 128 and e["to"] == 0]
    downs = [e for e in last if e["running"] == 1 and e["from"] == 0]
    assert ups and downs
    assert all(e["decisions_at_size"] <= 5 for e in ups + downs), last
