"""Settings under random input: a config file or environment JSON, and a run-time change posted to
/adaptive_spec/config. Bad input must end in our one error type (the launcher turns it into one
line and exit 2, the route into a 400), never another exception (a traceback at start, a 500
or a half-applied change while serving); a change that is accepted must reach the scheduler as
it was validated (settings travel as numbers, `status.encode_changes`). Bounded: a fixed number
of cases per seed."""

import random

import pytest

from adaptive_spec.config import AdaptiveSpecConfig, ConfigError
from adaptive_spec.controller import Controller
from adaptive_spec.sglang_plugin.status import (RUNTIME_KEYS, SettingsError, decode_changes,
                                                encode_changes, validate_changes)

CASES = 3000
# Values a hand-written file or a script could hold: the right types near and past their bounds,
# the wrong types, text that reads as a number in some scripts but not to int(), non-finite floats
NUMBERS = (0, 1, 2, 3, 4, 7, 8, 31, 32, 64, 512, 10 ** 9, 10 ** 30, -1, -64, 0.0, 0.5, 1.0, 1.5,
           2.5, 3.0, 8.0, 1e-9, 1e300, -1e300, float("nan"), float("inf"), float("-inf"))
TEXT = ("", "off", "on", "flap:1", "flap:8", "flap:0", "flap:-3", "flap:", "flap:x", "flap: 3",
        "flap:\u00b2", "flap:\u0663", "flap:1e3", "goodput", "threshold", "plain", "static",
        "sglang", "triton", "lazy", "auto", "full", "parts", "realized", "coarse", "fast",
        "decode-lean", "spec", "\u2603", "32")
OTHER = (None, True, False, [], [3], {}, {"threshold": 8})


def random_value(rng: random.Random, key: str):
    """Mostly a value of the key's own kind, else anything."""
    if rng.random() < 0.3:
        return rng.choice(rng.choice((NUMBERS, TEXT, OTHER)))
    default = getattr(AdaptiveSpecConfig, key)
    if isinstance(default, bool):
        return rng.choice(OTHER)
    if isinstance(default, str) or key == "force":
        return rng.choice(TEXT)
    return rng.choice(NUMBERS + (None,))


def random_settings(rng: random.Random, keys) -> dict:
    return {key: random_value(rng, key) for key in rng.sample(list(keys), rng.randint(1, 3))}


@pytest.mark.parametrize("seed", [0, 1])
def test_any_config_dict_gives_a_working_config_or_one_config_error(seed):
    rng = random.Random(seed)
    accepted = 0
    for _ in range(CASES):
        data = random_settings(rng, AdaptiveSpecConfig.keys())
        try:
            cfg = AdaptiveSpecConfig.from_dict(data)
        except ConfigError:
            continue
        accepted += 1
        cfg.forced_pattern(), cfg.candidate_steps(), cfg.effective_hysteresis
        assert AdaptiveSpecConfig.from_json(cfg.to_json()) == cfg  # what the schedulers get
        Controller(cfg)  # every accepted config builds its policy
    assert accepted > CASES // 20  # the generator reaches the accepting side too


@pytest.mark.parametrize("seed", [0, 1])
def test_any_run_time_change_is_refused_in_one_error_or_arrives_as_validated(seed):
    rng = random.Random(seed)
    current = AdaptiveSpecConfig(policy="goodput")
    accepted = 0
    for _ in range(CASES):
        changes = random_settings(rng, RUNTIME_KEYS)
        try:
            new = validate_changes(current, changes)
        except SettingsError:
            continue
        accepted += 1
        wire = encode_changes(new, changes.keys())
        assert all(type(v) in (int, float) for v in wire.values()), wire  # numbers only
        arrived = decode_changes(wire)
        assert arrived == {key: getattr(new, key) for key in changes}, changes
    assert accepted > CASES // 20


def test_a_flap_period_in_digits_int_cannot_read_is_a_config_error():
    """`str.isdigit` holds for '²', which int() refuses: found by the fuzz above, the flag
    `--adaptive-spec-force flap:²` ended in a traceback and the run-time route in a 500."""
    with pytest.raises(ConfigError, match="flap:N"):
        AdaptiveSpecConfig.from_dict({"force": "flap:\u00b2"})


def test_a_hysteresis_of_zero_set_at_run_time_stays_zero():
    """Found by the fuzz above: 0 went on the wire as 'unset', so a change to no hysteresis
    arrived as the default, threshold / 4."""
    new = validate_changes(AdaptiveSpecConfig(), {"hysteresis": 0})
    assert decode_changes(encode_changes(new, ["hysteresis"])) == {"hysteresis": 0}
    unset = validate_changes(AdaptiveSpecConfig(hysteresis=5), {"hysteresis": None})
    assert decode_changes(encode_changes(unset, ["hysteresis"])) == {"hysteresis": None}


CLI_CASES = 150


def test_any_value_of_our_flags_gives_a_server_config_or_one_line_and_exit_2(tiny_models, capsys):
    """The same values as command-line text through the launcher's real parser (SGLang's flags
    and ours): a config, or argparse's one-line exit 2, or our UsageError, nothing else."""
    from adaptive_spec.sglang_plugin.args import _CHOICE_FLAGS, _FLAGS
    from adaptive_spec.sglang_plugin.launch import UsageError, parse_args

    target, draft = tiny_models
    base = ["--model-path", target, "--device", "cpu", "--skip-tokenizer-init",
            "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", draft]
    rng, outcomes = random.Random(2), {"config": 0, "usage": 0, "exit": 0}
    for _ in range(CLI_CASES):
        argv = list(base)
        for key in rng.sample([*_FLAGS, *_CHOICE_FLAGS, "force"], rng.randint(1, 3)):
            value = random_value(rng, key)
            argv += ["--adaptive-spec-" + key.replace("_", "-"), str(value).lower()
                     if isinstance(value, bool) else str(value)]
        capsys.readouterr()  # SGLang's own log lines of the last case
        try:
            parse_args(argv)
            outcomes["config"] += 1
        except UsageError as exc:
            assert "\n" not in str(exc)
            outcomes["usage"] += 1
        except SystemExit as exc:
            assert exc.code == 2
            err = capsys.readouterr().err
            assert err.strip().splitlines()[-1].startswith("adaptive-spec-server: error: ")
            assert "Traceback" not in err
            outcomes["exit"] += 1
    assert min(outcomes.values()) > 0, outcomes
