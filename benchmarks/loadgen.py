"""Load generator for SGLang's native ``/generate`` endpoint with ``input_ids`` (asyncio + aiohttp).

- Requests carry token ids only (servers run with ``--skip-tokenizer-init``), ``ignore_eos``,
  and are streamed (``stream: true``) so every chunk's arrival time is recorded.
- Loopback only: any other host is refused before a connection is made.  The aiohttp session
  ignores proxy settings from the environment (``trust_env=False``).
- Every loop is bounded in count (``max_requests``) and in time (``time_budget_s``: no new
  request after it; ``drain_s`` later the requests still running are cut off).
- Closed loop at a fixed concurrency or one that follows a schedule (step, sawtooth, bursty
  load patterns); open loop with Poisson arrivals at a rate under a concurrency cap.

SGLang's stream (0.5.16, ``tokenizer_manager.py``): ``data: {"output_ids": [...],
"meta_info": {...}}`` events, ``data: [DONE]`` at the end.  By default ``output_ids`` is
cumulative (the whole output so far); with ``--incremental-streaming-output`` it is the new
tokens only.  Both are handled: ``meta_info.completion_tokens`` (cumulative) gives the tokens
per chunk, and once the stream is known to be cumulative only the last event is parsed in
full (keeps the client cheap at 10k+ tokens/s).  ``meta_info.spec_verify_ct`` and
``spec_accept_histogram`` are present for speculative servers.
"""
from __future__ import annotations

import asyncio
import ipaddress
import itertools
import json
import math
import random
import re
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from .stats import RequestRecord

try:  # orjson ships with sglang; fall back to the stdlib
    import orjson as _orjson

    def _loads(b):
        return _orjson.loads(b)

    def _dumps(o) -> bytes:
        return _orjson.dumps(o)
except ImportError:  # pragma: no cover - depends on the environment
    def _loads(b):
        return json.loads(b)

    def _dumps(o) -> bytes:
        return json.dumps(o).encode()


class BenchError(Exception):
    """A problem to report to the user in one line (bad input, refused host, ...)."""


class RunError(BenchError):
    """The run itself failed (a server died, nothing could be measured): exit status 1."""


now = time.perf_counter

# ------------------------------------------------------------------------------------------
# addresses


def check_loopback(url: str) -> str:
    """Return ``url`` normalised (no trailing slash) if it is http on a loopback host."""
    try:
        u = urlsplit(url)
    except ValueError as e:
        raise BenchError(f"bad URL {url!r}: {e}") from None
    if u.scheme != "http":
        raise BenchError(f"refusing {url!r}: only http://<loopback>:<port> is allowed")
    host = u.hostname or ""
    ok = host == "localhost"
    if not ok:
        try:
            ok = ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = False
    if not ok:
        raise BenchError(f"refusing non-loopback host {host!r} in {url!r} (loopback only)")
    try:
        u.port
    except ValueError as e:
        raise BenchError(f"bad port in {url!r}: {e}") from None
    return url.rstrip("/")


# ------------------------------------------------------------------------------------------
# prompts


def make_prompt(seed: int, level_key: str, idx: int, prompt_lens: Sequence[int], vocab: int) -> List[int]:
    """Random token ids in [100, vocab - 100), the same for every system (same seed/level/idx)."""
    lo, hi = 100, vocab - 100
    if hi <= lo:
        raise BenchError(f"vocab {vocab} too small for prompts drawn from [100, vocab-100)")
    n = prompt_lens[idx % len(prompt_lens)]
    rng = random.Random(f"{seed}:{level_key}:{idx}")
    return [rng.randrange(lo, hi) for _ in range(n)]


def spread_new_tokens(seed: int, level_key: str, idx: int, new_tokens: int, spread: float) -> int:
    """max_new_tokens of request idx: uniform in new_tokens * [1 - spread, 1 + spread], the same
    for every system (same seed/level/idx). A spread keeps a closed loop's streams from ending
    together: without one, N equal requests start, decode and finish in lockstep waves, and a
    short level measures mostly the waves' edges."""
    if spread <= 0:
        return new_tokens
    rng = random.Random(f"len:{seed}:{level_key}:{idx}")
    return max(1, round(new_tokens * (1.0 + spread * (2.0 * rng.random() - 1.0))))


# ------------------------------------------------------------------------------------------
# schedules (concurrency over time)


@dataclass
class Schedule:
    """Piecewise-constant target concurrency: segments (t_start, t_end, concurrency)."""

    segments: List[Tuple[float, float, int]]
    kind: str = "steady"

    @property
    def duration(self) -> float:
        return self.segments[-1][1]

    @property
    def max(self) -> int:
        return max(c for _, _, c in self.segments)

    def at(self, t: float) -> int:
        for a, b, c in self.segments:
            if a <= t < b:
                return c
        return 0 if t >= self.duration else self.segments[0][2]

    def describe(self) -> list:
        return [[round(a, 3), round(b, 3), c] for a, b, c in self.segments]


def steady(concurrency: int, duration: float) -> Schedule:
    return Schedule([(0.0, float(duration), int(concurrency))], "steady")


def step_pattern(low: int, high: int, duration: float) -> Schedule:
    d = duration / 3.0
    return Schedule([(0.0, d, low), (d, 2 * d, high), (2 * d, duration, low)], "step")


def sawtooth_pattern(low: int, high: int, period: float, duration: float, steps: int = 8) -> Schedule:
    """Concurrency ramps from low to high in ``steps`` equal steps each period, then drops."""
    segs = []
    dt = period / steps
    t = 0.0
    while t < duration - 1e-9:
        for i in range(steps):
            a = t + i * dt
            if a >= duration - 1e-9:
                break
            c = round(low + (high - low) * i / max(steps - 1, 1))
            segs.append((a, min(a + dt, duration), int(c)))
        t += period
    return Schedule(segs, "sawtooth")


def pattern_schedule(name: str, low: int, high: int, duration: float, period: float,
                     burst: float) -> Schedule:
    """The named load pattern: step, sawtooth or bursty."""
    if name == "step":
        return step_pattern(low, high, duration)
    if name == "sawtooth":
        return sawtooth_pattern(low, high, period, duration)
    if name == "bursty":
        return bursty_pattern(low, high, period, burst, duration)
    raise BenchError(f"unknown load pattern {name!r}")


def bursty_pattern(low: int, high: int, period: float, burst: float, duration: float) -> Schedule:
    """``low`` most of the time; for ``burst`` seconds at the end of every period: ``high``."""
    segs = []
    t = 0.0
    while t < duration - 1e-9:
        a = min(t + period - burst, duration)
        b = min(t + period, duration)
        if a > t:
            segs.append((t, a, low))
        if b > a:
            segs.append((a, b, high))
        t += period
    return Schedule(segs, "bursty")


# ------------------------------------------------------------------------------------------
# the client

_CT_RE = re.compile(rb'"completion_tokens"\s*:\s*(\d+)')


class _Stream:
    """Parses one request's SSE events into its RequestRecord."""

    __slots__ = ("rec", "n", "mode", "last", "last_parsed", "ids")

    def __init__(self, rec: RequestRecord):
        self.rec = rec
        self.n = 0            # tokens so far
        self.mode = None      # None (unknown), "cum" (cumulative ids), "inc" (delta ids)
        self.last = None      # raw bytes of the last event
        self.last_parsed = False
        self.ids: List[int] = []

    def _apply_meta(self, obj: dict) -> None:
        meta = obj.get("meta_info") or {}
        rec = self.rec
        v = meta.get("spec_verify_ct")
        if v is not None:
            rec.verify_ct = int(v)
        h = meta.get("spec_accept_histogram", meta.get("spec_correct_drafts_histogram"))
        if h is not None:
            rec.accept_histogram = h
        fr = meta.get("finish_reason")
        if fr is not None:
            rec.finish_reason = fr.get("type") if isinstance(fr, dict) else str(fr)

    def event(self, data: bytes, t: float) -> None:
        rec = self.rec
        if data.startswith(b'{"error"'):
            try:
                err = _loads(data).get("error")
            except ValueError:
                err = data[:200].decode(errors="replace")
            msg = err.get("message") if isinstance(err, dict) else err
            rec.error = f"server error: {str(msg)[:200]}"
            return
        self.last = data
        m = _CT_RE.search(data) if self.mode == "cum" else None
        if m is not None:  # fast path: cumulative stream, count only
            ct = int(m.group(1))
            self.last_parsed = False
        else:
            try:
                obj = _loads(data)
            except ValueError:
                rec.error = f"unparsable stream event: {data[:120]!r}"
                return
            self.last_parsed = True
            if isinstance(obj, dict) and "error" in obj:
                rec.error = f"server error: {str(obj['error'])[:200]}"
                return
            ids = obj.get("output_ids")
            meta = obj.get("meta_info") or {}
            ct = meta.get("completion_tokens")
            if ids is None:
                ids = []
            if ct is None:  # no counter: decide by the ids themselves
                if self.mode == "inc" or (self.ids and ids[: len(self.ids)] != self.ids):
                    self.mode = "inc"
                    ct = self.n + len(ids)
                else:
                    ct = len(ids)
            else:
                ct = int(ct)
            if self.mode is None and ct > self.n:
                if len(ids) < ct:
                    self.mode = "inc"
                elif self.n >= 1 and len(ids) == ct:
                    self.mode = "cum"
            if self.mode == "inc":
                self.ids.extend(ids)
            else:
                self.ids = ids
            self._apply_meta(obj)
        new = ct - self.n
        if new > 0:
            rec.chunk_times.append(t)
            rec.chunk_tokens.append(new)
            self.n = ct

    def finish(self) -> None:
        rec = self.rec
        if self.mode == "cum" and self.last is not None and not self.last_parsed:
            try:
                obj = _loads(self.last)
                self.ids = obj.get("output_ids") or self.ids
                self._apply_meta(obj)
            except ValueError:
                pass
        rec.output_ids = self.ids
        rec.completion_tokens = self.n


# SGLang's HTTP server closes a keep-alive connection idle for 5 s (SGLANG_TIMEOUT_KEEP_ALIVE);
# aiohttp keeps one for 15 s by default, so a request sent on a connection the server is just
# closing fails with "Server disconnected" (one of 14,031 soak requests, session 6). The client
# drops idle connections first.
IDLE_KEEPALIVE_S = 3.0


class Client:
    """One aiohttp session against one server (``base`` = http://127.0.0.1:PORT)."""

    def __init__(self, base: str, *, new_tokens: int, temperature: float = 0.0,
                 top_p: Optional[float] = None, top_k: Optional[int] = None,
                 stream: bool = True, request_timeout_s: float = 300.0,
                 max_connections: int = 1024, extra_sampling: Optional[dict] = None,
                 keepalive_s: float = IDLE_KEEPALIVE_S):
        self.base = check_loopback(base)
        self.new_tokens = int(new_tokens)
        self.sp = {"max_new_tokens": int(new_tokens), "temperature": float(temperature),
                   "ignore_eos": True}
        if top_p is not None:
            self.sp["top_p"] = float(top_p)
        if top_k is not None:
            self.sp["top_k"] = int(top_k)
        if extra_sampling:
            self.sp.update(extra_sampling)
        self.stream = stream
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        self.keepalive_s = keepalive_s
        self.session = None

    async def __aenter__(self):
        import aiohttp

        conn = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0,
                                    force_close=False, enable_cleanup_closed=True,
                                    keepalive_timeout=self.keepalive_s)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10,
                                        sock_read=self.request_timeout_s)
        self.session = aiohttp.ClientSession(connector=conn, timeout=timeout, trust_env=False,
                                             auto_decompress=False)
        return self

    async def __aexit__(self, *exc):
        if self.session is not None:
            await self.session.close()
            self.session = None

    # -- small GETs -------------------------------------------------------------------
    async def _get(self, path: str, timeout: float, headers: Optional[dict] = None):
        """(status, body bytes when 200); (None, None) when the server could not be reached."""
        import aiohttp

        try:
            async with self.session.get(self.base + path, headers=headers,
                                        timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                return r.status, (await r.read() if r.status == 200 else None)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            return None, None

    async def get_json(self, path: str, timeout: float = 5.0):
        """(status, json-or-None); (None, None) when the server could not be reached."""
        code, body = await self._get(path, timeout)
        if body is None:
            return code, None
        try:
            return code, _loads(body)
        except ValueError:
            return code, None

    async def post_json(self, path: str, obj: dict, timeout: float = 10.0):
        """(status, body text); (None, None) when the server could not be reached."""
        import aiohttp

        try:
            async with self.session.post(self.base + path, data=_dumps(obj),
                                         headers={"Content-Type": "application/json"},
                                         timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                return r.status, (await r.read()).decode(errors="replace")
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            return None, None

    async def get_text(self, path: str, timeout: float = 5.0) -> Optional[str]:
        """The body as text when the server answers 200, else None."""
        # the session does not decompress (token streams), and prometheus_client gzips
        # /metrics for any client that accepts it: ask for the plain body
        _, body = await self._get(path, timeout, headers={"Accept-Encoding": "identity"})
        return None if body is None else body.decode(errors="replace")

    # -- one request ------------------------------------------------------------------
    async def request(self, rec: RequestRecord, input_ids: List[int],
                      new_tokens: Optional[int] = None, *, sampling: Optional[dict] = None,
                      extra: Optional[dict] = None, stream: Optional[bool] = None) -> RequestRecord:
        """One /generate call; `sampling` overrides sampling parameters, `extra` adds body
        fields (e.g. logprobs), `stream` overrides the client's streaming mode."""
        import aiohttp

        sp = self.sp if new_tokens is None else dict(self.sp, max_new_tokens=int(new_tokens))
        if sampling:
            sp = dict(sp, **sampling)
        streaming = self.stream if stream is None else bool(stream)
        body = _dumps({"input_ids": input_ids, "sampling_params": sp, "stream": streaming,
                       **(extra or {})})
        rec.prompt_len = len(input_ids)
        st = _Stream(rec)
        rec.start = now()
        try:
            async with self.session.post(self.base + "/generate", data=body,
                                         headers={"Content-Type": "application/json"}) as resp:
                if resp.status != 200:
                    txt = (await resp.read())[:300].decode(errors="replace")
                    rec.error = f"HTTP {resp.status}: {txt}"
                    return rec
                if not streaming:
                    data = await resp.read()
                    t = now()
                    obj = _loads(data)
                    if isinstance(obj, list):
                        obj = obj[0]
                    if "error" in obj:
                        rec.error = f"server error: {str(obj['error'])[:200]}"
                        return rec
                    ids = obj.get("output_ids") or []
                    ct = (obj.get("meta_info") or {}).get("completion_tokens", len(ids))
                    st.ids = ids
                    st.n = int(ct)
                    st._apply_meta(obj)
                    if ct:
                        rec.chunk_times.append(t)
                        rec.chunk_tokens.append(int(ct))
                    rec.end = t
                    return rec
                buf = b""
                done = False
                async for piece in resp.content.iter_any():
                    t = now()
                    buf += piece
                    while True:
                        i = buf.find(b"\n\n")
                        if i < 0:
                            break
                        ev = buf[:i]
                        buf = buf[i + 2:]
                        for line in ev.split(b"\n"):
                            if not line.startswith(b"data:"):
                                continue
                            data = line[5:].strip()
                            if data == b"[DONE]":
                                done = True
                                break
                            st.event(data, t)
                            if rec.error:
                                done = True
                                break
                        if done:
                            break
                    if done:
                        break
                rec.end = now()
                if not done and rec.error is None:
                    rec.error = "stream ended without [DONE]"
        except asyncio.CancelledError:
            rec.cancelled = True
            raise
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as e:
            rec.error = f"{type(e).__name__}: {str(e)[:200]}"
        finally:
            st.finish()
        return rec


# ------------------------------------------------------------------------------------------
# loops

PromptFn = Callable[[int], List[int]]


def first_streaming(records: Sequence[RequestRecord], n: int) -> Optional[List[RequestRecord]]:
    """The first `n` requests issued, once every one of them has its first token; else None."""
    first = sorted(records, key=lambda r: r.idx)[:n]
    if len(first) < n or any(not r.chunk_times for r in first):
        return None
    return first


@dataclass
class LoopResult:
    records: List[RequestRecord]
    t0: float            # first request could be sent
    t_stop_issue: float  # no new requests after this
    t_end: float         # all requests finished or were cut off
    cut_off: int         # requests cut off at the hard limit

    def steady_window(self, concurrency: int, min_s: float = 1.0) -> Optional[Tuple[float, float]]:
        """[every one of the first `concurrency` requests has its first token, issuing stops]:
        the span in which a closed loop really holds `concurrency` requests in flight, without
        the ramp-up (a burst of prefills) or the drain. None when that span is under `min_s`
        (a level too short for its concurrency)."""
        first = first_streaming(self.records, concurrency)
        if first is None:
            return None
        a = max(r.chunk_times[0] for r in first)
        return (a, self.t_stop_issue) if self.t_stop_issue - a >= min_s else None

    @property
    def window(self) -> Tuple[float, float]:
        lasts = [r.last_token for r in self.records if r.last_token is not None]
        end = max(lasts) if lasts else self.t_end
        if self.cut_off:
            end = max(end, self.t_end)
        return (self.t0, end)


async def _finish(tasks: list, hard: float) -> int:
    """Wait for ``tasks`` until the hard deadline, then cancel the rest.  Returns #cancelled."""
    if not tasks:
        return 0
    _, pending = await asyncio.wait(tasks, timeout=max(0.0, hard - now()))
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    # surface unexpected exceptions from workers (programming errors)
    for t in tasks:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()
    return len(pending)


async def run_closed(client: Client, prompt_fn: PromptFn, schedule: Schedule, *,
                     max_requests: int, time_budget_s: float, drain_s: float,
                     on_request: Optional[Callable[[RequestRecord], None]] = None,
                     new_tokens_fn: Optional[Callable[[int], int]] = None,
                     records: Optional[List[RequestRecord]] = None,
                     stop: Optional[asyncio.Event] = None) -> LoopResult:
    """Closed loop: worker w issues requests back-to-back while w < schedule.at(t).

    Stops issuing at ``min(time_budget_s, schedule.duration)``, after ``max_requests`` or once
    ``stop`` is set; requests still running ``drain_s`` after the budget's end are cut off
    (their tokens so far are kept). ``new_tokens_fn(idx)``: request idx's max_new_tokens
    (default: the client's). ``records``: the list the requests go into as they are issued
    (a caller watching the loop while it runs), else a new one.
    """
    if max_requests < 1 or time_budget_s <= 0:
        raise BenchError("max_requests must be >= 1 and the time budget > 0")
    records = [] if records is None else records
    counter = itertools.count()
    t0 = now()
    stop_issue = t0 + min(time_budget_s, schedule.duration)
    hard = stop_issue + max(0.0, drain_s)
    stopped_at: List[float] = []

    async def worker(w: int):
        while True:
            t = now()
            if stop is not None and stop.is_set():
                stopped_at.append(t)
                return
            if t >= stop_issue:
                return
            if w >= schedule.at(t - t0):
                await asyncio.sleep(min(0.02, stop_issue - t))
                continue
            idx = next(counter)
            if idx >= max_requests:
                return
            rec = RequestRecord(idx=idx)
            records.append(rec)
            await client.request(rec, prompt_fn(idx), new_tokens_fn(idx) if new_tokens_fn else None)
            if on_request is not None:
                on_request(rec)

    tasks = [asyncio.ensure_future(worker(w)) for w in range(schedule.max)]
    await _finish(tasks, hard)
    n_cut = sum(1 for r in records if r.cancelled)
    return LoopResult(records, t0, min(stopped_at + [stop_issue]), now(), n_cut)


async def run_open(client: Client, prompt_fn: PromptFn, *, rate: float, max_concurrency: int,
                   max_requests: int, time_budget_s: float, drain_s: float,
                   seed: int = 0, new_tokens_fn: Optional[Callable[[int], int]] = None) -> LoopResult:
    """Open loop: Poisson arrivals at ``rate`` req/s; at most ``max_concurrency`` in flight
    (arrivals beyond that wait; ``scheduled`` keeps their intended time)."""
    if rate <= 0 or max_concurrency < 1 or max_requests < 1 or time_budget_s <= 0:
        raise BenchError("open loop needs rate > 0, concurrency cap >= 1, max_requests >= 1, "
                         "time budget > 0")
    rng = random.Random(f"arrivals:{seed}:{rate}")
    sem = asyncio.Semaphore(max_concurrency)
    records: List[RequestRecord] = []
    tasks = []
    t0 = now()
    stop_issue = t0 + time_budget_s
    hard = stop_issue + max(0.0, drain_s)

    async def go(rec: RequestRecord, ids: List[int]):
        try:
            async with sem:
                await client.request(rec, ids, new_tokens_fn(rec.idx) if new_tokens_fn else None)
        except asyncio.CancelledError:
            rec.cancelled = True
            raise

    t_next = t0
    for idx in range(max_requests):
        t_next += rng.expovariate(rate)
        if t_next >= stop_issue:
            break
        delay = t_next - now()
        while delay > 0:  # the event loop's timer may wake a little early: never send early
            await asyncio.sleep(delay)
            delay = t_next - now()
        rec = RequestRecord(idx=idx, scheduled=t_next, start=t_next)
        records.append(rec)
        tasks.append(asyncio.ensure_future(go(rec, prompt_fn(idx))))
    await _finish(tasks, hard)
    n_cut = sum(1 for r in records if r.cancelled)
    return LoopResult(records, t0, stop_issue, now(), n_cut)


# ------------------------------------------------------------------------------------------
# server-side sampling (load and our plugin's status)

STATUS_PATH = "/adaptive_spec/status"
_STEPS_KEYS = ("steps", "current_steps", "num_steps", "k")
_HIST_KEYS = ("steps_histogram", "step_histogram", "histogram")


def parse_status(obj) -> Tuple[Optional[int], Optional[dict]]:
    """(current steps, cumulative {steps: count} histogram) from our plugin's status JSON."""
    if not isinstance(obj, dict):
        return None, None
    steps = None
    for k in _STEPS_KEYS:
        v = obj.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            steps = int(v)
            break
    hist = None
    for k in _HIST_KEYS:
        v = obj.get(k)
        if isinstance(v, dict):
            hist = {str(a): b for a, b in v.items()}
            break
    return steps, hist


def rank0_counters(obj) -> Tuple[Optional[dict], Optional[dict]]:
    """Rank 0's cumulative decision counts by "<steps>:<reason>" (how often the policy probed)
    and its decode steps by the mode the worker ran them in (off / on / catchup / reentry /
    prefill-plain), from our status JSON; (None, None) where absent."""
    keys = ("decisions", "step_modes")
    first = (status_ranks(obj, keys) or [{}])[0]
    return tuple(first.get(k) if isinstance(first.get(k), dict) else None for k in keys)


def loads_sum(obj, key: str) -> Optional[int]:
    """One ``GET /v1/loads`` field (e.g. ``num_used_tokens``) summed over ranks."""
    if not isinstance(obj, dict) or not isinstance(obj.get("loads"), list):
        return None
    return sum(int(d.get(key, 0) or 0) for d in obj["loads"])


def status_ranks(obj, keys: Sequence[str]) -> List[dict]:
    """Per-rank entries of our ``/adaptive_spec/status``, each cut to ``keys`` (those present)."""
    ranks = obj.get("ranks") if isinstance(obj, dict) else None
    return [{k: r[k] for k in keys if k in r} for r in ranks or [] if isinstance(r, dict)]


def parse_loads(obj) -> Tuple[Optional[int], Optional[int], Optional[float]]:
    """(running, waiting, gen_throughput) summed over ranks from ``GET /v1/loads``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("loads"), list):
        return None, None, None
    run = wait = 0
    thr = 0.0
    for d in obj["loads"]:
        run += int(d.get("num_running_reqs", 0) or 0)
        wait += int(d.get("num_waiting_reqs", 0) or 0)
        thr += float(d.get("gen_throughput", 0.0) or 0.0)
    return run, wait, thr


class Poller:
    """Samples ``/v1/loads`` and ``/adaptive_spec/status`` every ``interval`` seconds.

    A 404 (or unreachable) endpoint is asked once and then left alone.
    """

    def __init__(self, client: Client, interval: float = 0.5):
        self.client = client
        self.interval = interval
        self.samples: List[dict] = []
        self.has_status: Optional[bool] = None
        self.has_loads: Optional[bool] = None
        self._task = None
        self._stop = None

    async def sample(self) -> dict:
        s = {"t": now(), "running": None, "waiting": None, "gen_throughput": None,
             "steps": None, "steps_histogram": None, "decisions": None, "step_modes": None}
        if self.has_loads is not False:
            code, obj = await self.client.get_json("/v1/loads?include=core", timeout=2.0)
            if code == 200:
                self.has_loads = True
                s["running"], s["waiting"], s["gen_throughput"] = parse_loads(obj)
            elif self.has_loads is None:
                self.has_loads = False
        if self.has_status is not False:
            code, obj = await self.client.get_json(STATUS_PATH, timeout=2.0)
            if code == 200:
                self.has_status = True
                s["steps"], s["steps_histogram"] = parse_status(obj)
                s["decisions"], s["step_modes"] = rank0_counters(obj)
            elif self.has_status is None:
                self.has_status = False
        return s

    async def _run(self):
        while not self._stop.is_set():
            s = await self.sample()
            self.samples.append(s)
            try:
                await asyncio.wait_for(self._stop.wait(), self.interval)
            except asyncio.TimeoutError:
                pass

    def start(self):
        self.samples = []
        self._stop = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())

    async def stop(self, final: bool = True) -> List[dict]:
        """Stop sampling; with ``final`` take one more sample marked ``"final": True`` (it
        closes cumulative histograms; averages over the run should skip it)."""
        if self._task is not None:
            self._stop.set()
            try:
                await asyncio.wait_for(self._task, 5.0)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
            self._task = None
            if final:
                s = await self.sample()
                s["final"] = True
                self.samples.append(s)
        return self.samples


async def wait_idle(client: Client, timeout_s: float = 30.0, poll_s: float = 0.25) -> bool:
    """Wait (bounded) until the server reports no running or waiting requests.

    True when idle was seen; also True at once when ``/v1/loads`` is not there (after a pause).
    """
    deadline = now() + timeout_s
    while now() < deadline:
        code, obj = await client.get_json("/v1/loads?include=core", timeout=2.0)
        if code != 200:
            await asyncio.sleep(0.5)
            return True
        run, wait, _ = parse_loads(obj)
        if not run and not wait:
            return True
        await asyncio.sleep(poll_s)
    return False


async def end_level(client: Client, timeout_s: float = 30.0) -> dict:
    """After a level's cut-off: abort what the server still runs for it and wait (bounded) until
    it is idle. A streamed request cut off by the client keeps decoding until SGLang notices the
    disconnect (its abort task sleeps 2 s after the stream ends), and the sweep's servers share
    one GPU: GPU, session 31, the built-in adaptive server still decoded 48-59 cut-off requests
    of its 128-request level, at 28-45 ms a step, inside the next system's level. Returns what
    was left ({"running", "waiting"} at the cut-off, "aborted", "settle_s"; {} when the server
    has no ``/v1/loads``)."""
    t0 = now()
    code, obj = await client.get_json("/v1/loads?include=core", timeout=2.0)
    run, wait, _ = parse_loads(obj) if code == 200 else (None, None, None)
    if run is None:
        return {}
    out = {"running": run, "waiting": wait, "aborted": False}
    if run or wait:
        code, _ = await client.post_json("/abort_request", {"abort_all": True}, timeout=5.0)
        out["aborted"] = code == 200
        out["idle"] = await wait_idle(client, timeout_s)
    out["settle_s"] = round(now() - t0, 2)
    return out


def timeline_from(samples: List[dict], records: List[RequestRecord], t0: float,
                  schedule: Optional[Schedule] = None, system: Optional[str] = None) -> List[dict]:
    """Timeline entries {t_s, running, waiting, steps, output_tok_s, ...}; ``output_tok_s`` is
    measured at the client: tokens that arrived since the previous sample / elapsed time."""
    times = sorted((t, k) for r in records for t, k in zip(r.chunk_times, r.chunk_tokens))
    out = []
    j = 0
    prev = t0
    for s in samples:
        if s.get("final"):
            continue
        t = s["t"]
        n = 0
        while j < len(times) and times[j][0] <= t:
            if times[j][0] > prev:
                n += times[j][1]
            j += 1
        dt = t - prev
        in_flight = sum(1 for r in records if r.start <= t and (r.end is None or r.end > t)
                        and not (r.error and r.end is not None and r.end <= t))
        e = {"t_s": round(t - t0, 3), "running": s.get("running"), "waiting": s.get("waiting"),
             "steps": s.get("steps"),
             "output_tok_s": round(n / dt, 1) if dt > 0 and t > t0 else None,
             "in_flight": in_flight}
        if schedule is not None:
            e["target_concurrency"] = schedule.at(t - t0)
        if system is not None:
            e["system"] = system
        out.append(e)
        prev = max(prev, t)
    return out


def run_async(coro: Awaitable):
    """asyncio.run with uvloop when it is installed (it ships with sglang)."""
    try:
        import uvloop  # noqa: F401

        if hasattr(asyncio, "Runner"):
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as r:
                return r.run(coro)
        uvloop.install()  # pragma: no cover - python 3.10
    except ImportError:
        pass
    return asyncio.run(coro)


def level_requests(concurrency: int, lo: int = 8, factor: int = 2, cap: int = 512) -> int:
    """Default request count for a closed-loop level: max(factor*N, lo), capped."""
    return int(min(max(factor * concurrency, lo), cap))


def open_requests(rate: float, budget_s: float, cap: int = 512) -> int:
    return int(min(max(math.ceil(rate * budget_s * 1.5), 8), cap))


__all__ = [
    "BenchError", "RunError", "Client", "LoopResult", "Poller", "Schedule", "check_loopback",
    "make_prompt", "run_closed", "run_open", "steady", "step_pattern", "sawtooth_pattern",
    "bursty_pattern", "wait_idle", "timeline_from", "run_async", "parse_status", "rank0_counters", "parse_loads",
    "level_requests", "open_requests",
]
