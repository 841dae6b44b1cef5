"""`--warmups adaptive_spec_extend` (SGLang's custom warm-up hook, run before the server
listens): one-token prefills of a ladder of prompt lengths, so the target's and the draft's
extend kernels are built for the sizes a full catch-up forwards, at start-up instead of at a
re-entry while requests wait.

Why: a full catch-up (`catchup.py`) is one eager extend forward over every stale position of
the batch, up to a chunked prefill's worth of tokens: sizes a server that only sees short
prompts never runs. On the MoE layout (Triton fused-MoE kernels, one build per block
configuration, chosen by the token count) a re-entry at one request stalled the server for
~2 s, twice (GPU, sessions 16 and 26: 0.66x / 0.67x of plain in a 6-s level, off on all but a
refresh); a kernel built on first use runs on the scheduler's thread, and every request in
flight waits. Prefilling each length once builds what those forwards need; later starts find
the builds in Triton's cache.

On by default wherever a full catch-up can run (our flags given, off path `plain`, catch-up
`auto` or `full`, a server `catchup.ineligible` accepts): the launcher appends the name to
SGLang's `--warmups`. `ADAPTIVE_SPEC_WARM_EXTEND=0` leaves it out. GPU, session 27 (MoE
layout, empty kernel caches, one request, always-wrong draft): without it each of four full
catch-ups of 62-214 tokens held the host 0.75-1.43 s, in the target's forward, while Triton
built fused-MoE kernels (their cache entries are stamped at those seconds), and goodput made
0.571x / 0.843x of plain; with it the same catch-ups took 35-42 ms, no kernel was built after
the server was ready, and goodput made 1.037x / 0.974x. The warm-up took 24 s on a cold
machine (session 27's `ms`).

The ladder: powers of two and their 1.5x midpoints from 16 tokens, each also one token
shorter (Triton specialises integer arguments on divisibility by 16), up to the token cap
(one chunked prefill), each prompt no longer than the context allows (below). Random token
ids; greedy; one new token, so no decode step runs.

Since session 61 the ladder runs twice: once as fresh prompts, once after a cached prefix (a
SMALLEST-token prompt prefilled first, then that prompt followed by each length, which the
radix cache turns into an extend with a prefix). A full catch-up always extends with a prefix,
and some models take another path then: SGLang's DeepSeek-V3 attention on the Triton backend
runs the MHA form for a prefill without a prefix and the MLA form with one
(`handle_attention_triton`), so the fresh ladder never built the MLA extend kernel. GPU,
session 61 (DeepSeek-V3 layout, H100): the first full catch-up, 1,240 tokens over 16
requests, held the host 1.27 s while Triton built `_fwd_kernel` (the extend attention),
named by the slow-result line. Without a radix cache (`--disable-radix-cache`) no prompt
finds a cached prefix, so the second ladder is left out there.

Since session 63 the ladder reaches the token cap even where one prompt cannot (the context is
shorter): a length above the longest prompt is sent as the fewest near-equal prompts at once,
which the scheduler prefills as one extend of that many tokens, as a catch-up over many
requests forwards. GPU, session 62 (Qwen3-MoE layout, H100, context 4,096): the ladder stopped
at 4,088 tokens, and a full catch-up of 7,009 tokens over 211 requests held the host 1.61 s
while Triton built `fused_moe_kernel` twice. Session 63 (H100, both MoE layouts and the dense
pair, five servers with this ladder): each server's slowest full catch-up took 30-54 ms, over
5,252-8,128 tokens.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from typing import Callable, List

logger = logging.getLogger("adaptive_spec")

NAME = "adaptive_spec_extend"
ENV = "ADAPTIVE_SPEC_WARM_EXTEND"
SMALLEST = 16
MOST_PROMPTS = 16  # a length that needs more prompts at once is left to its first use


def ladder(largest: int) -> List[int]:
    """The prompt lengths warmed, ascending: 15, 16, 23, 24, 31, 32, ... and `largest`."""
    sizes, base = set(), SMALLEST
    while base <= largest:
        for n in (base, base * 3 // 2):
            if n <= largest:
                sizes.update((n, n - 1))
        base *= 2
    sizes.add(largest)
    return sorted(sizes)


def longest_prompt(server_args, context_len: int) -> int:
    """The longest one prompt warmed: the token cap or, if shorter, what the context holds."""
    from .catchup import token_cap

    return max(SMALLEST, min(token_cap(server_args), context_len - 8))


def largest_size(server_args, longest: int) -> int:
    """The largest extend warmed: the token cap, unless it needs more than MOST_PROMPTS prompts
    of at most `longest` tokens."""
    from .catchup import token_cap

    return max(longest, min(token_cap(server_args), MOST_PROMPTS * longest))


def split(size: int, longest: int) -> List[int]:
    """`size` tokens as the fewest near-equal prompts of at most `longest` tokens each."""
    parts = -(-size // longest)
    return [size // parts + (1 if i < size % parts else 0) for i in range(parts)]


async def warm_extend_shapes(disaggregation_mode: str, tokenizer_manager) -> None:
    if disaggregation_mode != "null":  # a PD server's prefills need a bootstrap peer
        logger.warning("adaptive_spec: extend warm-up skipped on a disaggregated server")
        return
    longest = longest_prompt(tokenizer_manager.server_args, tokenizer_manager.context_len)
    largest = largest_size(tokenizer_manager.server_args, longest)
    prompt = prompt_maker(tokenizer_manager, seed=0)

    async def warm(sizes: List[int], most: int, prefix: List[int], what: str) -> bool:
        """Each length of `sizes` as prompts of at most `most` tokens after `prefix`."""
        for size in sizes:
            if not await send_at_once(tokenizer_manager,
                                      [prefix + prompt(n) for n in split(size, most)],
                                      f"{size} tokens{what}"):
                return False
        return True

    sizes = ladder(largest)
    if not await warm(sizes, longest, [], ""):
        return
    prefix_cached = not getattr(tokenizer_manager.server_args, "disable_radix_cache", False)
    after_longest = longest - SMALLEST  # each prompt: the prefix, then up to this many tokens
    after = (ladder(largest_size(tokenizer_manager.server_args, after_longest))
             if prefix_cached and after_longest >= SMALLEST else [])
    prefix = prompt(SMALLEST)  # cached by its own prefill, then the prefix of every length
    if after and not await send_at_once(tokenizer_manager, [prefix], "the cached prefix"):
        return
    if not await warm(after, after_longest, prefix, " after a cached prefix"):
        return
    together = f" (above {longest} as prompts sent at once)" if largest > longest else ""
    logger.info("adaptive_spec: extend kernels warmed for %d lengths, %d to %d tokens%s, and %d "
                "lengths after a cached %d-token prefix", len(sizes), sizes[0], sizes[-1],
                together, len(after), SMALLEST)


def prompt_maker(tokenizer_manager, seed: int) -> Callable[[int], List[int]]:
    """`prompt(n)`: n random token ids of the model's vocabulary (its first 32,000 at most),
    the same ones for the same seed."""
    vocab = max(2, min(int(tokenizer_manager.model_config.vocab_size), 32000))
    rng = random.Random(seed)
    return lambda n: [rng.randrange(1, vocab) for _ in range(n)]


async def send_at_once(tokenizer_manager, prompts: List[List[int]], what: str,
                       new_tokens: int = 1, warmup: str = "extend") -> bool:
    """Greedy requests of `prompts`, sent at once so that the scheduler can batch them (one
    extend; with `new_tokens` > 1 also one decode batch, the end of text ignored). False: one
    failed (logged): the warm-up stops there, and what it did not reach builds its kernels at
    first use."""
    from sglang.srt.managers.io_struct import GenerateReqInput

    params = {"max_new_tokens": new_tokens, "temperature": 0.0}
    if new_tokens > 1:
        params["ignore_eos"] = True

    async def one(input_ids: List[int]) -> None:
        req = GenerateReqInput(input_ids=input_ids, sampling_params=dict(params))
        async for _ in tokenizer_manager.generate_request(req, None):
            pass

    results = await asyncio.gather(*(one(p) for p in prompts), return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:  # a warm-up must never keep the server from starting
        logger.warning("adaptive_spec: %s warm-up stopped at %s (%r); the rest builds its "
                       "kernels at first use", warmup, what, failed[0])
        return False
    return True


def add_by_default(server_args, cfg) -> bool:
    """Append NAME to SGLang's `warmups` when this server can run a full catch-up (True: it
    was added or was already there)."""
    from .catchup import ineligible

    if (os.environ.get(ENV, "1") == "0" or cfg.catchup == "newest" or cfg.off_path != "plain"
            or ineligible(server_args) is not None):
        return False
    append_warmup(server_args, NAME)
    return True


def append_warmup(server_args, name: str) -> None:
    """`name` appended to SGLang's comma-separated `warmups`, unless already there."""
    names = [n for n in (getattr(server_args, "warmups", None) or "").split(",") if n]
    if name not in names:
        server_args.warmups = ",".join(names + [name])


def register() -> bool:
    """Make `--warmups adaptive_spec_extend` known to SGLang (the HTTP server's process). An
    SGLang without the hook (not 0.5.16 or 0.5.23) only logs: its warm-up then skips the name."""
    return register_warmup(NAME, warm_extend_shapes, "extend")


def register_warmup(name: str, fn, what: str) -> bool:
    """`fn` as SGLang's custom warm-up `name` (False, logged, where SGLang has no such hook)."""
    try:
        from sglang.srt.entrypoints.warmup import warmup
    except ImportError as exc:
        logger.warning("adaptive_spec: no SGLang warm-up hook (%r); the %s warm-up does not "
                       "run", exc, what)
        return False
    warmup(name)(fn)
    return True
