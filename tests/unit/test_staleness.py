"""The stale-draft ledger: off steps since each request's last drafting step, at re-entry."""
from adaptive_spec.staleness import RECENT_REENTRIES, StalenessLedger


def test_stale_positions_are_the_off_steps_since_each_requests_last_drafting_step():
    led = StalenessLedger()
    led.on_drafting_step(["a", "b"])
    for _ in range(5):
        led.on_off_step()
    # "b" finished while off; "c" was admitted while off and decoded 3 tokens after its first
    r = led.on_reentry([("a", 40), ("c", 4)])
    assert (r.requests, r.stale_positions, r.max_stale) == (2, 5 + 3, 5)
    assert r.mean_stale == 4.0
    assert set(led.noted) == {"a", "c"}  # "b" forgotten
    led.on_drafting_step(["a", "c"])
    led.on_off_step()
    led.on_off_step()
    r = led.on_reentry([("a", 50), ("c", 14)])
    assert (r.stale_positions, r.max_stale) == (4, 2)
    st = led.status()
    assert st["reentries"] == 2 and st["stale_positions_max"] == 5
    assert st["stale_positions_per_request"] == (8 + 4) / 4
    assert st["recent"] == [{"requests": 2, "mean": 4.0, "max": 5}, {"requests": 2, "mean": 2.0, "max": 2}]


def test_reentry_without_off_steps_has_nothing_stale_and_counts_reset_keeps_the_notes():
    led = StalenessLedger()
    led.on_drafting_step(["a"])
    assert led.on_reentry([("a", 10)]).stale_positions == 0
    led.reset_counts()
    assert led.status()["reentries"] == 0 and led.status()["stale_positions_per_request"] is None
    led.on_off_step()
    assert led.on_reentry([("a", 11)]).stale_positions == 1  # the note survived the reset
    for _ in range(RECENT_REENTRIES + 3):
        led.on_reentry([("a", 11)])
    assert len(led.status()["recent"]) == RECENT_REENTRIES


def test_a_server_that_never_turns_drafting_off_keeps_only_its_current_batch():
    """The notes are the last drafting batch's: 10,000 requests served while always drafting
    leave one batch's worth (found in session 8: the notes grew with every request)."""
    led = StalenessLedger()
    for step in range(10_000):
        led.on_drafting_step([f"r{step}", f"r{step + 1}"])  # each request drafts twice, then ends
    assert set(led.noted) == {"r9999", "r10000"}


def test_acceptance_is_kept_per_drafting_round_since_the_last_reentry():
    """G0 of NOTES-reentry-catchup.md from the status: a server whose drafts accept less right
    after a re-entry (stale draft KV) shows it as early columns below the last one; the
    controller feeds the ledger from the results it already processes (catch-up, drafting,
    off), per step count."""
    from adaptive_spec.config import AdaptiveSpecConfig
    from adaptive_spec.controller import Controller
    from adaptive_spec.staleness import ACCEPT_WINDOW

    ctl = Controller(AdaptiveSpecConfig())
    for _ in range(3):  # drafting before any re-entry: steady state
        ctl.on_result(3, [3, 3], "on")
    for period in range(4):
        for _ in range(5):
            ctl.on_result(0, [0, 0, 0], "off")
        ctl.on_result(0, [0, 0, 0], "catchup")
        for i in range(ACCEPT_WINDOW + 4):
            ctl.on_result(3, [1, 2, 3] if i < 2 else [3, 3, 3], "on")  # the first two rounds stale
        ctl.on_result(1, [1, 0, 1], "on")  # another step count keeps its own columns
    row = ctl.status()["reentry"]["accept_len_by_round_since_reentry"]["3"]
    assert row["accept_len"][:3] == [3.0, 3.0, 4.0] and row["accept_len"][-1] == 4.0
    assert row["request_rounds"][:2] == [12, 12]  # 4 re-entries x 3 requests
    assert row["request_rounds"][-1] == 3 * 2 + 4 * 3 * 5  # before any re-entry + rounds 15..19
    one = ctl.status()["reentry"]["accept_len_by_round_since_reentry"]["1"]
    assert one["request_rounds"][-1] == 12 and one["accept_len"][-1] == round(1 + 2 / 3, 3)
