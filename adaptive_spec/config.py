"""adaptive-spec settings: one dataclass, validated with messages that name the flag.

Pure Python (never imports sglang). The launcher builds an `AdaptiveSpecConfig` from the
command line and an optional JSON file, then carries it to every scheduler process as JSON
in the environment variable `ENV_VAR` (scheduler processes are spawned, not forked).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Optional

ENV_VAR = "ADAPTIVE_SPEC_CONFIG_JSON"

POLICIES = ("threshold", "goodput")
FALLBACKS = ("static", "plain")
VERIFY_BACKENDS = ("sglang", "triton", "triton-greedy")
# plain (default since session 13): the off step is a plain decode batch in the scheduler too
# (sglang_plugin/hooks_plain.py; lossless on the GPU in sessions 12-13, at TP = 2 too; in one
# H200 run beside decode-lean under the goodput policy, 1.02-1.14x of it at 1-256 requests);
# where it does not apply (no overlap scheduler, page size > 1, ...) off steps run decode-lean:
# decode, and the off step also skips SGLang's planning of the verify graph it never replays
# (the default of sessions 7-12); direct: the target's plain decode forward and sampler called
# outside SGLang's verify step (lossless on the GPU, session 6)
OFF_PATHS = ("decode", "sglang", "decode-lean", "direct", "plain")  # status carries the index: append only
# How the scheduler orders its next GPU work after an off step (SGLang's WAR barrier, scheduler.py
# `_apply_war_barrier`): "coarse" = what SGLang does after a step without draft-extend, a wait for
# the whole forward; "fast" = the plain server's wait, on the event the target's decode graph
# records once it has read the shared KV pool (session 8, from reading SGLang 0.5.16; measured
# on the H200 in session 9: no gain, so "coarse" stays the default)
OFF_BARRIERS = ("coarse", "fast")
# The plain off path's KV from a batch's second plain step on (sglang_plugin/hooks_plain.py):
# "reserve" keeps each request's spec reserve topped up by SGLang's spec preparation
# (session 12); "release" gives it back and allocates as the plain server does, one slot per
# request per step. H200, session 13 (MoE layout, 1 and 4 requests, 3 pairs each): release
# prepares a step at plain's cost (0.19-0.24 ms vs reserve's 0.28-0.42) but its steps were no
# faster (paired medians 0.91x / 0.97x of plain vs reserve's 1.02x / 1.00x); lossless there
# and in session 13's four-way tables, flapping included. "lazy" (session 14) keeps the reserve
# but tops it up only when a request has used it up (SGLang's top-up fills it to 2 x the draft
# tokens, so most plain steps allocate nothing): a step prepared without SGLang's per-request
# loop, host tensors and slot-assignment kernel. The default since session 14: on the H200 it
# prepared a step at plain's cost (0.20-0.26 ms vs reserve's 0.35-0.47 at 1-4 MoE requests),
# lossless in every sweep, throughput within the noise of reserve's.
PLAIN_KV = ("reserve", "release", "lazy")  # appended: the status wire codes are indices
# With the plain off path, how a prefill runs while drafting is off (sglang_plugin/hooks_plain.py,
# session 14): "spec" (SGLang's: the target with its hidden states captured, then the draft's
# own prefill) or "plain" (the plain server's prefill of short prompts: no draft work; the full
# catch-up at re-entry writes those prompts' draft KV; the default since session 15, when forced
# off with it made 1.00-1.06x of plain at 64-256 requests and, with the catch-up, acceptance
# after re-entry came back to 3.94-3.99 of 4.00 instead of 3.48-3.62 without it).
OFF_PREFILLS = ("spec", "plain")
# What the first drafting step after off steps rewrites of the draft KV (session 15,
# sglang_plugin/catchup.py): "newest" (SGLang's catch-up step alone: the newest position),
# "full" (instead, the target and the draft re-run, eager, over every position decoded while
# off and every prompt prefilled plain, then the step drafts at once; plain off path only; one
# eager prefill of those positions per re-entry) or "auto" (full when the requests have 32
# stale positions or more on average, else newest: the default).
CATCHUPS = ("newest", "full", "auto")  # appended: the status wire codes are indices
# How the goodput policy reads its cost model (session 40, policy/realized.py): "realized" (each
# step count's modelled goodput scaled by what it delivered at that batch size: the default) or
# "parts" (the model's parts alone, as before session 40).
GOODPUT_MODELS = ("realized", "parts")

# Upper bounds that catch typos ("--adaptive-spec-threshold 1e9") without limiting real use.
MAX_BATCH_LEVEL = 1 << 20
MAX_STEPS = 16


class ConfigError(ValueError):
    """Bad setting. `flag` is the command-line spelling of the offending key."""

    def __init__(self, flag: str, problem: str):
        super().__init__(f"{flag}: {problem}")
        self.flag = flag
        self.problem = problem


def flag_name(key: str) -> str:
    return "--adaptive-spec-" + key.replace("_", "-")


@dataclass(frozen=True)
class AdaptiveSpecConfig:
    policy: str = "threshold"
    # Draft steps when drafting is on (the largest step count we may choose).
    max_steps: int = 3
    # Running batch size at or above which drafting is off.
    threshold: int = 32
    # Waiting requests at or above which drafting is off (None: queue ignored).
    queue_threshold: Optional[int] = 4
    # Drafting comes back on only below (threshold - hysteresis) and (queue_threshold -
    # queue hysteresis). None: max(1, threshold // 4).
    hysteresis: Optional[int] = None
    # Drafting off while the recent mean accept length (bonus included, >= 1; per request-round,
    # signals.AcceptanceStats.recent_accept_len) is confidently below this (its upper bound is)
    # (None: no floor). 1.5 since session 14: on the H200 a 3-step chain at one request costs
    # 1.36x a plain step (always-wrong draft: 6.4 vs 4.7 ms per token, 2026-11-30-s14-threshold-
    # random.json), so a draft below ~1.4 only costs; without a floor the threshold policy
    # made 0.74x / 0.69x of plain at 1 / 16 requests there.
    min_accept_len: Optional[float] = 1.5
    # While off for low acceptance: `reprobe_interval` decode steps later, draft for
    # `reprobe_steps` steps so a draft that became good again is noticed; each re-probe that
    # leaves drafting off doubles the gap, up to 8x (policy/threshold.py).
    reprobe_interval: int = 256
    reprobe_steps: int = 4
    # Accept-length EMA per drafting result: the logs and the status (since session 16 no policy
    # decides on it: the threshold floor reads AcceptanceStats.recent_accept_len_upper).
    accept_ema_alpha: float = 0.1
    log_decisions: bool = False
    # Test/benchmark aid: "off", "on", or "flap:N" (alternate every N decode steps).
    force: Optional[str] = None
    # What a failing hook or policy falls back to for the rest of the run.
    fallback: str = "static"
    verify_backend: str = "sglang"
    # How a step with drafting off runs: "plain" (the scheduler runs the off step as a plain
    # decode batch; decode-lean where that does not apply), "decode-lean" (the target's plain
    # decode graph inside SGLang's spec step, no draft work, no verify-graph planning),
    # "decode" (the same with SGLang's verify-graph planning), "sglang" (SGLang's built-in
    # 0-step state, kept for comparison) or "direct".
    off_path: str = "plain"
    off_barrier: str = "coarse"
    plain_kv: str = "lazy"
    off_prefill: str = "plain"
    catchup: str = "auto"
    goodput_model: str = "realized"
    # Goodput policy: optional TPOT target in milliseconds.
    tpot_slo_ms: Optional[float] = None

    # ---- construction -------------------------------------------------------------
    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> "AdaptiveSpecConfig":
        if not isinstance(data, dict):
            raise ConfigError("--adaptive-spec-config", f"{source} must hold a JSON object")
        known = set(cls.keys())
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                "--adaptive-spec-config",
                f"{source} has unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})",
            )
        values = {}
        for f in dataclasses.fields(cls):
            if f.name in data:
                values[f.name] = _coerce(f.name, data[f.name], f.default)
        cfg = cls(**values)
        cfg.validate()
        return cfg

    @classmethod
    def from_json_file(cls, path: str) -> dict[str, Any]:
        """Read a config file into a raw dict (validated later, merged with CLI values)."""
        flag = "--adaptive-spec-config"
        if not os.path.exists(path):
            raise ConfigError(flag, f"file {path!r} does not exist")
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ConfigError(flag, f"file {path!r} is not valid JSON ({exc.msg}, line {exc.lineno})")
        except OSError as exc:
            raise ConfigError(flag, f"cannot read {path!r}: {exc.strerror}")
        if not isinstance(data, dict):
            raise ConfigError(flag, f"file {path!r} must hold a JSON object")
        unknown = sorted(set(data) - set(cls.keys()))
        if unknown:
            raise ConfigError(flag, f"file {path!r} has unknown key(s) {', '.join(unknown)}")
        return data

    def replace(self, **changes) -> "AdaptiveSpecConfig":
        cfg = dataclasses.replace(self, **changes)
        cfg.validate()
        return cfg

    # ---- derived ------------------------------------------------------------------
    @property
    def effective_hysteresis(self) -> int:
        if self.hysteresis is not None:
            return self.hysteresis
        return max(1, self.threshold // 4)

    @property
    def queue_hysteresis(self) -> int:
        if self.queue_threshold is None:
            return 0
        return min(self.effective_hysteresis, self.queue_threshold - 1)

    def candidate_steps(self) -> list[int]:
        """Step counts SGLang must build runtime states (and CUDA graphs) for."""
        if self.policy == "goodput":
            return list(range(0, self.max_steps + 1))
        return [0, self.max_steps]

    def forced_pattern(self) -> Optional[tuple[str, int]]:
        """("off"|"on", 0) or ("flap", period) or None."""
        if self.force is None:
            return None
        if self.force in ("off", "on"):
            return (self.force, 0)
        return ("flap", int(self.force.split(":", 1)[1]))

    # ---- validation ---------------------------------------------------------------
    def validate(self) -> None:
        if self.policy not in POLICIES:
            raise ConfigError(flag_name("policy"), f"unknown policy {self.policy!r} (choose from {', '.join(POLICIES)})")
        _check_int("max_steps", self.max_steps, 1, MAX_STEPS)
        _check_int("threshold", self.threshold, 1, MAX_BATCH_LEVEL)
        if self.queue_threshold is not None:
            _check_int("queue_threshold", self.queue_threshold, 1, MAX_BATCH_LEVEL)
        if self.hysteresis is not None:
            _check_int("hysteresis", self.hysteresis, 0, MAX_BATCH_LEVEL)
            if self.hysteresis >= self.threshold:
                raise ConfigError(
                    flag_name("hysteresis"),
                    f"{self.hysteresis} must be below --adaptive-spec-threshold ({self.threshold}), "
                    "or drafting could never turn back on",
                )
        if self.min_accept_len is not None:
            _check_float("min_accept_len", self.min_accept_len, 1.0, float(MAX_STEPS + 1))
            if self.min_accept_len > self.max_steps + 1:
                raise ConfigError(
                    flag_name("min_accept_len"),
                    f"{self.min_accept_len} exceeds the largest possible accept length "
                    f"{self.max_steps + 1} (max steps + 1): drafting would never stay on",
                )
        _check_int("reprobe_interval", self.reprobe_interval, 1, 1 << 30)
        _check_int("reprobe_steps", self.reprobe_steps, 1, 1 << 20)
        if self.reprobe_steps >= self.reprobe_interval:
            raise ConfigError(
                flag_name("reprobe_steps"),
                f"{self.reprobe_steps} must be below --adaptive-spec-reprobe-interval ({self.reprobe_interval})",
            )
        _check_float("accept_ema_alpha", self.accept_ema_alpha, 1e-6, 1.0)
        if not isinstance(self.log_decisions, bool):
            raise ConfigError(flag_name("log_decisions"), f"must be true or false, got {self.log_decisions!r}")
        if self.force is not None:
            _check_force(self.force)
        if self.fallback not in FALLBACKS:
            raise ConfigError(flag_name("fallback"), f"unknown fallback {self.fallback!r} (choose from {', '.join(FALLBACKS)})")
        if self.verify_backend not in VERIFY_BACKENDS:
            raise ConfigError(
                flag_name("verify_backend"),
                f"unknown backend {self.verify_backend!r} (choose from {', '.join(VERIFY_BACKENDS)})",
            )
        if self.off_path not in OFF_PATHS:
            raise ConfigError(flag_name("off_path"), f"unknown off path {self.off_path!r} (choose from {', '.join(OFF_PATHS)})")
        if self.off_barrier not in OFF_BARRIERS:
            raise ConfigError(flag_name("off_barrier"),
                              f"unknown barrier {self.off_barrier!r} (choose from {', '.join(OFF_BARRIERS)})")
        if self.plain_kv not in PLAIN_KV:
            raise ConfigError(flag_name("plain_kv"), f"unknown choice {self.plain_kv!r} (choose from {', '.join(PLAIN_KV)})")
        if self.off_prefill not in OFF_PREFILLS:
            raise ConfigError(flag_name("off_prefill"),
                              f"unknown choice {self.off_prefill!r} (choose from {', '.join(OFF_PREFILLS)})")
        if self.catchup not in CATCHUPS:
            raise ConfigError(flag_name("catchup"), f"unknown choice {self.catchup!r} (choose from {', '.join(CATCHUPS)})")
        if self.goodput_model not in GOODPUT_MODELS:
            raise ConfigError(flag_name("goodput_model"), f"unknown choice {self.goodput_model!r} "
                              f"(choose from {', '.join(GOODPUT_MODELS)})")
        if self.tpot_slo_ms is not None:
            _check_float("tpot_slo_ms", self.tpot_slo_ms, 0.01, 1e6)

    # ---- transport to scheduler processes -----------------------------------------
    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "AdaptiveSpecConfig":
        return cls.from_dict(json.loads(text), source=ENV_VAR)

    @classmethod
    def from_env(cls, environ=None) -> Optional["AdaptiveSpecConfig"]:
        text = (environ if environ is not None else os.environ).get(ENV_VAR)
        return cls.from_json(text) if text else None


def _coerce(key: str, value: Any, default: Any) -> Any:
    """JSON values to field types; bools are never numbers here."""
    flag = flag_name(key)
    if value is None:
        return None
    if key in ("log_decisions",):
        if isinstance(value, bool):
            return value
        raise ConfigError(flag, f"must be true or false, got {value!r}")
    if key in ("policy", "force", "fallback", "verify_backend", "off_path", "off_barrier", "plain_kv", "off_prefill", "catchup",
               "goodput_model"):
        if isinstance(value, str):
            return value
        raise ConfigError(flag, f"must be a string, got {value!r}")
    if isinstance(value, bool):
        raise ConfigError(flag, f"must be a number, got {value!r}")
    if key in ("min_accept_len", "accept_ema_alpha", "tpot_slo_ms"):
        if isinstance(value, (int, float)):
            return float(value)
        raise ConfigError(flag, f"must be a number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ConfigError(flag, f"must be an integer, got {value!r}")


def _check_int(key: str, value: Any, lo: int, hi: int) -> None:
    flag = flag_name(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(flag, f"must be an integer, got {value!r}")
    if value < lo:
        raise ConfigError(flag, f"must be >= {lo}, got {value}")
    if value > hi:
        raise ConfigError(flag, f"must be <= {hi}, got {value}")


def _check_float(key: str, value: Any, lo: float, hi: float) -> None:
    flag = flag_name(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(flag, f"must be a finite number, got {value!r}")
    if value < lo:
        raise ConfigError(flag, f"must be >= {lo}, got {value}")
    if value > hi:
        raise ConfigError(flag, f"must be <= {hi}, got {value}")


def _check_force(value: str) -> None:
    flag = flag_name("force")
    if value in ("off", "on"):
        return
    if value.startswith("flap:"):
        period = value.split(":", 1)[1]
        # isascii: '²' is a digit to isdigit() but not to int()
        if period.isascii() and period.isdigit() and 1 <= int(period) <= 1_000_000:
            return
    raise ConfigError(flag, f"must be 'off', 'on' or 'flap:N' with N >= 1, got {value!r}")
