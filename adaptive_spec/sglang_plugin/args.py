"""Our command-line flags on SGLang's parser, and the checks that tie them to SGLang's flags.

The flags live in their own argparse group ("adaptive-spec"), so `--help` lists them next
to SGLang's. All default to None so we can tell "not given" from "given": when none of them
is given the launcher behaves exactly like `python -m sglang.launch_server`.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Optional

from ..config import CATCHUPS, GOODPUT_MODELS, OFF_BARRIERS, OFF_PATHS, OFF_PREFILLS, PLAIN_KV, AdaptiveSpecConfig, ConfigError, FALLBACKS, POLICIES, VERIFY_BACKENDS

def _or_off(convert, what: str):
    """An argparse type: `convert(text)`, or the word 'off' (the check disabled)."""
    def parse(text: str):
        if text == "off":
            return "off"
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} or 'off', got {text!r}")
    return parse


_int_or_off = _or_off(int, "an integer")
_float_or_off = _or_off(float, "a number")


# Config key -> (argparse type, metavar, help).
_FLAGS = {
    "threshold": (int, "N", "Running batch size at or above which drafting is off (default 32)."),
    "queue_threshold": (
        _int_or_off,
        "Q",
        "Waiting requests at or above which drafting is off (default 4; 'off' disables the queue check).",
    ),
    "hysteresis": (
        int,
        "H",
        "Drafting comes back on only below threshold-H running requests (and queue-H waiting); "
        "default threshold/4.",
    ),
    "min_accept_len": (
        _float_or_off,
        "L",
        "Drafting off while the recent mean accept length (bonus token included, over about the "
        "last 64 request-rounds) is confidently below L (its upper 2-sigma bound is); re-probed "
        "for a few steps every "
        "--adaptive-spec-reprobe-interval steps (default 1.5; "
        "'off' drafts whatever the acceptance).",
    ),
    "reprobe_interval": (int, "M", "Decode steps before the first acceptance re-probe while off for low acceptance (default 256); the gap doubles after each re-probe that leaves drafting off, up to 8x."),
    "reprobe_steps": (int, "P", "Drafting steps per acceptance re-probe, threshold and goodput policies (default 4)."),
    "max_steps": (
        int,
        "K",
        "Draft steps when drafting is on (the largest the policy may choose); "
        "defaults to --speculative-num-steps, else 3.",
    ),
    "tpot_slo_ms": (float, "MS", "Goodput policy: TPOT target in milliseconds."),
}
_CHOICE_FLAGS = {
    "policy": (POLICIES, "Which policy decides the draft steps per decode step (default threshold)."),
    "fallback": (
        FALLBACKS,
        "If our hook or policy fails at run time: keep serving with static speculation "
        "(static, default) or with drafting off (plain).",
    ),
    "verify_backend": (
        VERIFY_BACKENDS,
        "Chain verification kernels: SGLang's (default), ours (triton) or ours for greedy "
        "batches only (triton-greedy); ours are experimental.",
    ),
    "off_path": (
        OFF_PATHS,
        "How a step runs with drafting off: plain (default: the scheduler runs the step as a plain "
        "decode batch, no spec-v2 bookkeeping; where it does not apply, without the overlap "
        "scheduler or with page size > 1, steps run decode-lean), decode-lean (the target's own "
        "decode CUDA graph inside SGLang's spec step, no draft work, SGLang's planning of the unused "
        "verify graph skipped), decode (the same with that planning), sglang (SGLang's built-in "
        "0-step state, for comparison) or direct (the target's plain decode forward and sampler "
        "called directly, outside SGLang's verify step; experimental).",
    ),
    "off_barrier": (
        OFF_BARRIERS,
        "After an off step the scheduler's next GPU work waits for the whole forward (coarse, "
        "default: what SGLang does after a step without draft-extend) or, like the plain "
        "server's, only until the target's decode graph has read the shared KV pool (fast; "
        "experimental).",
    ),
    "plain_kv": (
        PLAIN_KV,
        "With the plain off path, from a batch's second plain step on: keep each request's spec KV "
        "reserve topped up by SGLang's spec preparation every step (reserve), only when a request "
        "has used it up (lazy, default: most plain steps allocate nothing), or give it back and "
        "allocate as the plain server does (release).",
    ),
    "off_prefill": (
        OFF_PREFILLS,
        "With the plain off path, a prefill once drafting has been off 32 decode steps in a row: "
        "SGLang's spec prefill (spec: the target keeps its hidden states and the draft prefills "
        "too) or, for prompts of 256 tokens or fewer on average, the plain server's (plain, "
        "default: no draft work; the catch-up at re-entry writes those prompts' draft KV, see "
        "--adaptive-spec-catchup). Lossless either way.",
    ),
    "catchup": (
        CATCHUPS,
        "With the plain off path, what the first drafting step after off steps rewrites of the "
        "draft KV: the newest position (newest: SGLang's catch-up step), every position decoded "
        "while off and every prompt prefilled plain (full: the target and the draft re-run eager "
        "over them, then the step drafts at once; one prefill's cost per re-entry), or full when "
        "the requests have 32 stale positions or more on average (auto, default). Lossless either way.",
    ),
    "goodput_model": (
        GOODPUT_MODELS,
        "Goodput policy: each step count's modelled goodput scaled by the tokens it delivered in "
        "the wall time it took at that batch size (realized, default), or the model's parts "
        "alone (parts: step times, prefills, acceptance).",
    ),
}


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (no usage dump), exit code 2."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def make_parser(prog: str = "adaptive-spec-server") -> argparse.ArgumentParser:
    from sglang.srt.server_args import ServerArgs

    parser = _ArgumentParser(prog=prog)
    ServerArgs.add_cli_args(parser)
    add_adaptive_spec_args(parser)
    return parser


def add_adaptive_spec_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "adaptive-spec",
        "Load-adaptive speculative decoding (needs --speculative-algorithm EAGLE|EAGLE3, topk 1).",
    )
    for key, (typ, metavar, help_text) in _FLAGS.items():
        group.add_argument(_flag(key), dest=_dest(key), type=typ, metavar=metavar, default=None, help=help_text)
    for key, (choices, help_text) in _CHOICE_FLAGS.items():
        # Validated by AdaptiveSpecConfig (one message style for CLI and config file).
        group.add_argument(_flag(key), dest=_dest(key), default=None, metavar="{" + ",".join(choices) + "}", help=help_text)
    group.add_argument(
        _flag("force"),
        dest=_dest("force"),
        default=None,
        metavar="{off,on,flap:N}",
        help="Benchmark/test aid: hold drafting off, on, or alternate every N decode steps.",
    )
    group.add_argument(
        _flag("config"),
        dest=_dest("config"),
        default=None,
        metavar="FILE",
        help="JSON file with the same keys as these flags (e.g. {\"threshold\": 32}); flags win.",
    )
    group.add_argument(
        _flag("log_decisions"),
        dest=_dest("log_decisions"),
        action="store_const",
        const=True,
        default=None,
        help="Log one structured line per change of decision (rate-limited).",
    )


def config_from_namespace(ns: argparse.Namespace) -> Optional[AdaptiveSpecConfig]:
    """Our settings from parsed args; None when no adaptive-spec flag was given."""
    given = {k: getattr(ns, _dest(k)) for k in [*_FLAGS, *_CHOICE_FLAGS, "force", "log_decisions"]}
    given = {k: v for k, v in given.items() if v is not None}
    cfg_path = getattr(ns, _dest("config"))
    if not given and cfg_path is None:
        return None
    data = AdaptiveSpecConfig.from_json_file(cfg_path) if cfg_path is not None else {}
    data.update(given)
    for key in ("queue_threshold", "min_accept_len"):  # "off" (a flag or the config file): no check
        if data.get(key) == "off":
            data[key] = None
    if "max_steps" not in data:
        data["max_steps"] = ns.speculative_num_steps if ns.speculative_num_steps is not None else 3
    return AdaptiveSpecConfig.from_dict(data, source="settings")


def check_sglang_setup(ns: argparse.Namespace, cfg: AdaptiveSpecConfig) -> None:
    """Refuse setups our per-step switching cannot serve (one line each, exit 2 upstream)."""
    algo = (ns.speculative_algorithm or "").upper()
    if algo not in ("EAGLE", "EAGLE3", "NEXTN"):
        raise ConfigError(
            "--speculative-algorithm",
            f"adaptive-spec needs EAGLE or EAGLE3 (got {ns.speculative_algorithm or 'none'})",
        )
    if ns.speculative_eagle_topk not in (None, 1):
        raise ConfigError(
            "--speculative-eagle-topk",
            f"adaptive-spec drafts topk=1 chains only (got {ns.speculative_eagle_topk})",
        )
    if getattr(ns, "speculative_adaptive", False):
        raise ConfigError(
            "--speculative-adaptive",
            "SGLang's built-in adaptive mode and adaptive-spec exclude each other; drop one",
        )
    refused = {
        "enable_dp_attention": "--enable-dp-attention",
        "enable_two_batch_overlap": "--enable-two-batch-overlap",
        "enable_pdmux": "--enable-pdmux",
        "enable_multi_layer_eagle": "--enable-multi-layer-eagle",
    }
    for dest, flag in refused.items():
        if getattr(ns, dest, False):
            raise ConfigError(flag, "is not supported with adaptive-spec (SGLang cannot switch draft steps per step there)")
    if ns.speculative_num_steps is not None and ns.speculative_num_steps != cfg.max_steps:
        raise ConfigError(
            "--adaptive-spec-max-steps",
            f"{cfg.max_steps} conflicts with --speculative-num-steps {ns.speculative_num_steps}; "
            "give one of them (drafting-on steps)",
        )
    if ns.speculative_num_draft_tokens is not None and ns.speculative_num_draft_tokens != cfg.max_steps + 1:
        raise ConfigError(
            "--speculative-num-draft-tokens",
            f"must be max steps + 1 = {cfg.max_steps + 1} for a topk=1 chain (got {ns.speculative_num_draft_tokens})",
        )


def apply_to_namespace(ns: argparse.Namespace, cfg: AdaptiveSpecConfig, config_dir: Optional[str] = None) -> str:
    """Turn on SGLang's adaptive state machinery sized for our candidate steps.

    SGLang then reserves KV for the largest step count and builds one runtime state (with
    CUDA graphs) per candidate; our policy replaces its decision-maker. Starting at the
    largest candidate avoids the built-in mode's start-up crash (its shared logits buffer is
    sized by the start step). Returns the path of the generated SGLang config file.
    """
    ns.speculative_num_steps = cfg.max_steps
    ns.speculative_eagle_topk = 1
    ns.speculative_num_draft_tokens = cfg.max_steps + 1
    ns.speculative_adaptive = True
    fd, path = tempfile.mkstemp(prefix="adaptive-spec-sglang-", suffix=".json", dir=config_dir)
    with os.fdopen(fd, "w") as fh:
        json.dump({"1": {"candidate_steps": cfg.candidate_steps()}}, fh)
    ns.speculative_adaptive_config = path
    return path


def _flag(key: str) -> str:
    return "--adaptive-spec-" + key.replace("_", "-")


def _dest(key: str) -> str:
    return "adaptive_spec_" + key
