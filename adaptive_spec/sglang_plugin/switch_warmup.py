"""`--warmups adaptive_spec_switch` (opt-in: `ADAPTIVE_SPEC_WARM_SWITCH=1`): a few short
requests decoded with drafting forced to flap (off and on every FLAP_STEPS decode steps), at
batch sizes 1, 3 and 16, so that the kernels of a switch back on (SGLang's catch-up step and
our full catch-up) are built at start-up instead of in the first switch while requests wait.
The server's own setting (`force`) is restored afterwards.

Why: GPU, session 64 (H100, Qwen3-MoE layout, one request): goodput's first two switches on
took 99 and 92 ms while Triton built `assign_draft_cache_locs_contiguous` and
`fill_bonus_tokens` (5.6-11.3 ms a switch in the session's other calls); session 63 saw such
first-use builds of `assign_extend_cache_locs` and `assign_req_to_token_pool` in 110-590-ms
results in a server's first seconds. Triton specialises integer arguments on being 1 and on
divisibility by 16, hence the three sizes. An off run gives FLAP_STEPS tokens and an on run at
most FLAP_STEPS x (max steps + 1), all drafts accepted: each request decodes enough for two
such cycles and an off run (`new_tokens`), so it meets at least two switches on whatever its
draft's acceptance.

Not on by default. GPU, session 65 (H100, Qwen3-MoE layout): it ran (22 kernels built during it,
none in a slow result of the level after it), and its flaps had taught the goodput policy step
cells of 34-56 ms and switch prices of 71-146 ms at 4 and 16 requests; since, the restore makes
the policy start afresh (`Controller.relearn`), not run on a GPU yet.
"""

from __future__ import annotations

import logging
import os
import time
from typing import List, Optional

from . import kernel_builds
from .extend_warmup import append_warmup, prompt_maker, register_warmup, send_at_once

logger = logging.getLogger("adaptive_spec")

NAME = "adaptive_spec_switch"
ENV = "ADAPTIVE_SPEC_WARM_SWITCH"
FLAP_STEPS = 4
BATCH_SIZES = (1, 3, 16)
PROMPT_TOKENS = 24
RESTORE_TRIES = 3


async def warm_switch_shapes(disaggregation_mode: str, tokenizer_manager) -> None:
    from ..config import AdaptiveSpecConfig

    cfg = AdaptiveSpecConfig.from_env()
    if cfg is None:  # a server without our flags has no switches to warm
        return
    if disaggregation_mode != "null":
        logger.warning("adaptive_spec: switch warm-up skipped on a disaggregated server")
        return
    if not await _set_force(tokenizer_manager, cfg, f"flap:{FLAP_STEPS}"):
        await _restore(tokenizer_manager, cfg)  # where some schedulers took it and others not
        return
    began = time.time()
    warmed: List[int] = []
    try:
        prompt = prompt_maker(tokenizer_manager, seed=1)
        for n in _sizes(tokenizer_manager):
            prompts = [prompt(PROMPT_TOKENS) for _ in range(n)]
            if not await send_at_once(tokenizer_manager, prompts, f"{n} requests flapping",
                                      new_tokens=new_tokens(cfg), warmup="switch"):
                break
            warmed.append(n)
    except Exception as exc:  # noqa: BLE001 - a warm-up must never keep the server from starting
        logger.warning("adaptive_spec: switch warm-up stopped (%r)", exc)
    finally:  # the policy forgets the flaps (`Controller.relearn`) as the setting comes back
        restored = await _restore(tokenizer_manager, cfg, relearn=True)
    built = kernel_builds.built_since(began)
    logger.info("adaptive_spec: switch warm-up: drafting flapped every %d steps at %s requests "
                "(%s kernels built meanwhile, any process); the configured force (%s) %s",
                FLAP_STEPS, " / ".join(map(str, warmed)) or "no", "?" if built is None else built,
                cfg.force or "none", "restored" if restored else "NOT restored")


async def _restore(tokenizer_manager, cfg, tries: int = RESTORE_TRIES,
                   relearn: bool = False) -> bool:
    """The configured `force` back (a server left flapping would serve at the cost of a switch
    every FLAP_STEPS steps): a few tries, then an error line that says so. `relearn`: in the
    same request, the policy starts afresh (what it learned from the flaps is not the load)."""
    for _ in range(tries):
        if await _set_force(tokenizer_manager, cfg, cfg.force, relearn):
            return True
    logger.error("adaptive_spec: switch warm-up could not restore force=%s: drafting flaps every "
                 "%d steps until POST /adaptive_spec/config sets it", cfg.force, FLAP_STEPS)
    return False


def new_tokens(cfg) -> int:
    """Tokens a request decodes: two off + on cycles at the most tokens an on run can give,
    then an off run (max steps 3: 44)."""
    cycle = FLAP_STEPS + FLAP_STEPS * (cfg.max_steps + 1)
    return 2 * cycle + FLAP_STEPS


def _sizes(tokenizer_manager) -> List[int]:
    """BATCH_SIZES that the server runs at once (its `max_running_requests`, when set)."""
    most = getattr(tokenizer_manager.server_args, "max_running_requests", None) or max(BATCH_SIZES)
    return [n for n in BATCH_SIZES if n <= most]


async def _set_force(tokenizer_manager, cfg, force: Optional[str], relearn: bool = False) -> bool:
    """Set `force` on every scheduler (SGLang's set_internal_state, our numbers: status.py),
    with `relearn` (`Controller.relearn`) in the same request when asked."""
    from sglang.srt.managers.io_struct import SetInternalStateReq

    from .status import PREFIX, encode_changes, validate_changes

    try:
        numbers = encode_changes(validate_changes(cfg, {"force": force}), ["force"])
        if relearn:
            numbers[PREFIX + "relearn"] = 1
        updated = await tokenizer_manager.set_internal_state(
            SetInternalStateReq(server_args=numbers))
    except Exception as exc:  # a warm-up must never keep the server from starting
        logger.warning("adaptive_spec: switch warm-up could not set force=%s (%r)", force, exc)
        return False
    if not updated or not all(updated):
        logger.warning("adaptive_spec: switch warm-up: force=%s rejected by a scheduler", force)
        return False
    return True


def add_if_asked(server_args) -> bool:
    """Append NAME to SGLang's `warmups` (after the extend warm-up, whose kernels a full catch-up
    also runs) when ENV is "1"."""
    if os.environ.get(ENV, "0") != "1":
        return False
    append_warmup(server_args, NAME)
    return True


def register() -> bool:
    """Make `--warmups adaptive_spec_switch` known to SGLang (the HTTP server's process)."""
    return register_warmup(NAME, warm_switch_shapes, "switch")
