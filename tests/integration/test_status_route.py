"""Our HTTP routes on a FastAPI app, with SGLang's scheduler RPC answered by real hooks.

The tokenizer manager (which would talk to scheduler processes over ZMQ) is a named fake;
what it forwards to is our real scheduler-side hooks and a real Controller.
"""

import json
import types

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import state, status


class FakeTokenizerManager:
    """Stands in for SGLang's TokenizerManager: calls the scheduler-side hooks in-process."""

    async def get_internal_state(self):
        ret = types.SimpleNamespace(internal_state={"max_running_requests": 8})
        status.after_get_internal_state(ret, None)
        return [ret.internal_state]

    async def set_internal_state(self, req):
        out = status.around_set_internal_state(lambda *a: pytest.fail("SGLang path taken"), None, req)
        return [out.updated]


@pytest.fixture
def client(monkeypatch):
    from sglang.srt.entrypoints import http_server

    state.reset_for_tests()
    state.init_controller(AdaptiveSpecConfig(threshold=32), rank=0)
    monkeypatch.setattr(http_server, "_global_state", types.SimpleNamespace(tokenizer_manager=FakeTokenizerManager()), raising=False)
    app = FastAPI()
    status.install_routes(app)
    yield TestClient(app)
    state.reset_for_tests()


def test_status_route_returns_json(client):
    state.get_controller().decide(4)
    body = client.get("/adaptive_spec/status").json()
    assert body["steps"] == 3
    assert body["steps_histogram"] == {"3": 1}
    assert body["ranks"][0]["settings"]["threshold"] == 32


def test_the_status_carries_the_slow_results_once_they_are_listened_to(client):
    from adaptive_spec.sglang_plugin.slow_results import install_slow_results

    assert "slow_results" not in client.get("/adaptive_spec/status").json()["ranks"][0]
    install_slow_results(state.get_controller())
    rank = client.get("/adaptive_spec/status").json()["ranks"][0]
    assert rank["slow_results"] == {"count": 0, "threshold_ms": 80.0, "last_logged": None}


def test_runtime_change_applies_and_bad_value_is_rejected(client):
    ok = client.post("/adaptive_spec/config", json={"threshold": 8, "force": "flap:2", "reset_stats": True})
    assert ok.status_code == 200 and ok.json()["ok"] is True
    ctl = state.get_controller()
    assert (ctl.cfg.threshold, ctl.cfg.force) == (8, "flap:2")
    bad = client.post("/adaptive_spec/config", json={"threshold": -1})
    assert bad.status_code == 400 and "--adaptive-spec-threshold: must be >= 1" in bad.json()["error"]
    assert ctl.cfg.threshold == 8
    fixed = client.post("/adaptive_spec/config", json={"max_steps": 5})
    assert fixed.status_code == 400 and "cannot change max_steps" in fixed.json()["error"]
    conflict = client.post("/adaptive_spec/config", json={"hysteresis": 8})  # not below threshold 8
    assert conflict.status_code == 400
    assert client.post("/adaptive_spec/config", content=b"{nope").status_code == 400


def test_an_operator_can_make_the_policy_learn_afresh(client):
    """{"relearn": true}: the configured policy restarts from its settings (after a change of
    model, draft or hardware under a running server, say), alone or with settings."""
    ctl = state.get_controller()
    old = ctl.policy
    ok = client.post("/adaptive_spec/config", json={"relearn": True})
    assert ok.status_code == 200 and ok.json()["relearn"] is True
    assert ctl.policy is not old and ctl.cfg == AdaptiveSpecConfig(threshold=32)
    old = ctl.policy
    ok = client.post("/adaptive_spec/config", json={"force": "off", "relearn": True})
    assert ok.status_code == 200 and ctl.cfg.force == "off" and ctl.policy is not old
    assert ctl.decide(4).steps == 0  # the force stays over the fresh policy


@pytest.mark.parametrize("key, value", [("off_path", "sglang"), ("off_path", "decode-lean"), ("off_path", "decode"),
                                        ("off_barrier", "fast"), ("plain_kv", "release"), ("off_prefill", "spec"),
                                        ("catchup", "full"), ("catchup", "newest")])
def test_choice_changes_travel_to_the_scheduler_intact(client, key, value):
    """Choices cross to the scheduler as their index in the choice tuple (status._CHOICES)."""
    ok = client.post("/adaptive_spec/config", json={key: value})
    assert ok.status_code == 200, ok.json()
    assert getattr(state.get_controller().cfg, key) == value


def test_sglang_keys_still_reach_sglang():
    from sglang.srt.managers.io_struct import SetInternalStateReq

    called = []
    status.around_set_internal_state(lambda *a: called.append(a), "sched", SetInternalStateReq(server_args={"pp_max_micro_batch_size": 4}))
    assert len(called) == 1


def test_policy_switch_only_to_built_step_counts(monkeypatch):
    from sglang.srt.entrypoints import http_server

    for started, switch_to, ok in (("goodput", "threshold", True), ("threshold", "goodput", False)):
        state.reset_for_tests()
        state.init_controller(AdaptiveSpecConfig(policy=started, max_steps=3), rank=0)
        monkeypatch.setattr(http_server, "_global_state", types.SimpleNamespace(tokenizer_manager=FakeTokenizerManager()), raising=False)
        app = FastAPI()
        status.install_routes(app)
        resp = TestClient(app).post("/adaptive_spec/config", json={"policy": switch_to})
        assert (resp.status_code == 200) is ok, resp.json()
        assert state.get_controller().cfg.policy == (switch_to if ok else started)
    state.reset_for_tests()


def test_random_bodies_get_200_or_400_and_only_accepted_changes_apply(client):
    """The route under random bodies (random settings of random types, and bodies that are not
    settings at all): every answer is 200 or 400 with a JSON verdict, never a 500; a refused
    body changes nothing; an accepted one arrives at the controller as validated."""
    import random

    from adaptive_spec.sglang_plugin.status import validate_changes

    from unit.test_config_fuzz import random_settings  # tests/ is on the path (no __init__)

    rng, ctl, applied = random.Random(3), state.get_controller(), 0
    odd = ([], [1], "threshold", 3, None, {"max_steps": 4}, {"turbo": 1}, {"reset_stats": True})
    for _ in range(300):
        body = rng.choice(odd) if rng.random() < 0.1 else random_settings(rng, status.RUNTIME_KEYS)
        before = ctl.cfg
        try:
            expected = validate_changes(before, dict(body)) if isinstance(body, dict) else None
        except status.SettingsError:
            expected = None
        # a change to goodput needs step counts this threshold server did not build
        if expected is not None and set(expected.candidate_steps()) - set(before.candidate_steps()):
            expected = None
        answer = client.post("/adaptive_spec/config", content=json.dumps(body),  # NaN as Python writes it
                             headers={"Content-Type": "application/json"})
        assert answer.status_code in (200, 400), (body, answer.text)
        assert answer.json()["ok"] is (answer.status_code == 200)
        if expected is None and body != {"reset_stats": True}:
            assert answer.status_code == 400 and ctl.cfg == before, body
        elif expected is not None:
            assert answer.status_code == 200 and ctl.cfg == expected, body
            applied += 1
    assert applied > 20


def test_the_interleaved_benchmarks_switches_keep_the_goodput_policy(monkeypatch):
    """benchmarks/interleave.py posts {"force": "off" | "on" | null} between windows: through the
    route each keeps the one goodput policy (and its cost model) under the forced overlay."""
    from sglang.srt.entrypoints import http_server

    from adaptive_spec.bench.interleave import ARM_SETTINGS, CONFIG_PATH
    from adaptive_spec.policy.base import configured_policy

    state.reset_for_tests()
    state.init_controller(AdaptiveSpecConfig(policy="goodput", max_steps=3), rank=0)
    monkeypatch.setattr(http_server, "_global_state",
                        types.SimpleNamespace(tokenizer_manager=FakeTokenizerManager()),
                        raising=False)
    app = FastAPI()
    status.install_routes(app)
    client = TestClient(app)
    ctl = state.get_controller()
    learned = ctl.policy
    try:
        for arm, steps in (("off", 0), ("on", 3), ("policy", None), ("off", 0), ("policy", None)):
            resp = client.post(CONFIG_PATH, json=ARM_SETTINGS[arm])
            assert resp.status_code == 200, resp.json()
            assert configured_policy(ctl.policy) is learned
            d = ctl.decide(64)
            if steps is None:  # the policy decides again
                assert d.reason != "forced"
            else:
                assert (d.steps, d.reason) == (steps, "forced")
    finally:
        state.reset_for_tests()
