"""`--warmups adaptive_spec_switch` (opt-in): short requests decoded with drafting forced to
flap at 1 / 3 / 16 requests, so a switch back on's kernels are built at start (GPU, session 64:
the first two switches on took 99 and 92 ms while Triton built SGLang's catch-up kernels). The
tokenizer manager here is a FAKE (the real one needs a running scheduler); the numbers it is
sent are the ones SGLang's set_internal_state carries to our scheduler hook."""
import asyncio
import types

from adaptive_spec.config import ENV_VAR, AdaptiveSpecConfig
from adaptive_spec.sglang_plugin import switch_warmup

FORCE = "adaptive_spec.force"
RELEARN = "adaptive_spec.relearn"  # the restore's: the policy forgets the flaps


class FakeTokenizerManager:
    """Records the settings sent to the schedulers and the requests, in order; `fail_at`: the
    request index whose generation raises; `reject`: set_internal_state answers not updated
    (from the `reject`-th call on, when a number)."""

    def __init__(self, max_running=None, fail_at=None, reject=False):
        self.server_args = types.SimpleNamespace(max_running_requests=max_running)
        self.model_config = types.SimpleNamespace(vocab_size=50)
        self.events = []
        self.fail_at, self.reject = fail_at, reject

    async def set_internal_state(self, obj):
        calls = sum(1 for e in self.events if e[0] == "set")
        self.events.append(("set", dict(obj.server_args)))
        if isinstance(self.reject, bool):
            return [not self.reject]
        return [calls < self.reject]

    async def generate_request(self, req, request):
        index = sum(1 for e in self.events if e[0] == "request")
        self.events.append(("request", req))
        if index == self.fail_at:
            raise RuntimeError("the scheduler went away")
        yield {"text": ""}


def run(tm, monkeypatch, force=None):
    monkeypatch.setenv(ENV_VAR, AdaptiveSpecConfig(policy="goodput", force=force).to_json())
    asyncio.run(switch_warmup.warm_switch_shapes("null", tm))
    sets = [e[1] for e in tm.events if e[0] == "set"]
    requests = [e[1] for e in tm.events if e[0] == "request"]
    return sets, requests


def test_it_flaps_drafting_at_three_batch_sizes_then_restores_the_setting(monkeypatch):
    tm = FakeTokenizerManager()
    sets, requests = run(tm, monkeypatch)
    # flap:4, then none again, and the policy starts afresh
    assert sets == [{FORCE: switch_warmup.FLAP_STEPS}, {FORCE: 0, RELEARN: 1}]
    assert tm.events[0][0] == "set" and tm.events[-1][0] == "set"  # around every request
    assert len(requests) == 1 + 3 + 16
    # two switches on at least, however many tokens a drafting step gives (3 steps: up to 4)
    assert all(r.sampling_params == {"max_new_tokens": 2 * (4 + 4 * 4) + 4,
                                     "temperature": 0.0, "ignore_eos": True} for r in requests)
    assert all(len(r.input_ids) == switch_warmup.PROMPT_TOKENS for r in requests)


def test_longer_chains_decode_longer_requests():
    assert switch_warmup.new_tokens(AdaptiveSpecConfig(max_steps=7)) == 2 * (4 + 4 * 8) + 4


def test_a_forced_server_gets_its_own_setting_back(monkeypatch):
    sets, _ = run(FakeTokenizerManager(), monkeypatch, force="on")
    assert sets[-1] == {FORCE: -2, RELEARN: 1}


def test_a_failed_request_stops_it_and_the_setting_is_still_restored(monkeypatch, caplog):
    caplog.set_level("INFO", logger="adaptive_spec")
    sets, requests = run(FakeTokenizerManager(fail_at=1), monkeypatch)  # in the 3-request wave
    assert len(requests) == 1 + 3 and sets[-1] == {FORCE: 0, RELEARN: 1}
    assert "switch warm-up stopped at 3 requests flapping" in caplog.text
    assert "flapped every 4 steps at 1 requests" in caplog.text and "restored" in caplog.text


def test_nothing_is_sent_when_the_schedulers_refuse_the_setting(monkeypatch, caplog):
    sets, requests = run(FakeTokenizerManager(reject=True), monkeypatch)
    # the setting sent back as it was (data parallel: some may have taken the flapping)
    assert requests == [] and sets == [{FORCE: 4}] + [{FORCE: 0}] * switch_warmup.RESTORE_TRIES
    assert "rejected by a scheduler" in caplog.text


def test_batch_sizes_above_the_servers_running_cap_are_left_out(monkeypatch):
    _, requests = run(FakeTokenizerManager(max_running=8), monkeypatch)
    assert len(requests) == 1 + 3


def test_it_runs_only_where_asked_and_after_the_extend_warm_up(monkeypatch):
    args = types.SimpleNamespace(warmups="adaptive_spec_extend")
    monkeypatch.delenv(switch_warmup.ENV, raising=False)
    assert not switch_warmup.add_if_asked(args) and args.warmups == "adaptive_spec_extend"
    monkeypatch.setenv(switch_warmup.ENV, "1")
    assert switch_warmup.add_if_asked(args) and switch_warmup.add_if_asked(args)
    assert args.warmups == "adaptive_spec_extend,adaptive_spec_switch"


def test_it_is_registered_with_sglangs_warm_up_hook_and_skips_a_server_without_our_flags(
        monkeypatch):
    from sglang.srt.entrypoints import warmup as sglang_warmup

    assert switch_warmup.register()
    assert sglang_warmup._warmup_registry[switch_warmup.NAME] is switch_warmup.warm_switch_shapes
    monkeypatch.delenv(ENV_VAR, raising=False)
    tm = FakeTokenizerManager()
    asyncio.run(sglang_warmup.execute_warmups("null", [switch_warmup.NAME], tm))
    assert tm.events == []



def test_a_setting_that_cannot_be_restored_is_retried_then_said_in_an_error_line(monkeypatch,
                                                                                  caplog):
    caplog.set_level("INFO", logger="adaptive_spec")
    sets, requests = run(FakeTokenizerManager(reject=1), monkeypatch)  # only the first applies
    assert len(requests) == 1 + 3 + 16
    assert sets[1:] == [{FORCE: 0, RELEARN: 1}] * switch_warmup.RESTORE_TRIES
    assert "could not restore force=None" in caplog.text and "NOT restored" in caplog.text


def test_an_unexpected_error_stops_it_without_stopping_the_server(monkeypatch, caplog):
    tm = FakeTokenizerManager()
    tm.model_config = None  # no vocabulary size to read
    sets, requests = run(tm, monkeypatch)
    assert requests == [] and sets[-1] == {FORCE: 0, RELEARN: 1}
    assert "switch warm-up stopped" in caplog.text


def test_through_the_real_scheduler_hook_the_server_ends_on_its_setting_with_a_fresh_policy(
        monkeypatch):
    """The numbers the warm-up sends, taken by our real scheduler hook (status.py) and a real
    controller: flapping while the requests run, then the configured setting and a policy
    that has learned nothing from them (`Controller.relearn`)."""
    from adaptive_spec.sglang_plugin import state, status

    class HookedTokenizerManager(FakeTokenizerManager):
        async def set_internal_state(self, obj):
            self.events.append(("set", dict(obj.server_args)))
            out = status.around_set_internal_state(lambda *a: None, None, obj)
            return [out.updated]

        async def generate_request(self, req, request):
            self.events.append(("request", state.get_controller().cfg.force))
            yield {"text": ""}

    state.reset_for_tests()
    try:
        ctl = state.init_controller(AdaptiveSpecConfig(policy="goodput"), rank=0)
        relearned = []
        monkeypatch.setattr(ctl, "relearn", lambda: relearned.append(ctl.cfg.force))
        tm = HookedTokenizerManager()
        _, forces_seen = run(tm, monkeypatch)
        assert set(forces_seen) == {f"flap:{switch_warmup.FLAP_STEPS}"}
        assert ctl.cfg.force is None and relearned == [None]  # after the setting came back
    finally:
        state.reset_for_tests()
