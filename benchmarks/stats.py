"""Statistics over recorded request traces (pure Python, no third-party imports).

A trace is one :class:`RequestRecord` per request.  Times are seconds on one monotonic clock
(``time.perf_counter()`` in the load generator); the helpers here never look at the clock.

Definitions (the same for every system, so ratios between rows are meaningful):

- output tok/s: output tokens received inside the measured window / the window's length.
  The window of a closed-loop level is [first request sent, last token received (or the
  moment the level was cut off)].
- TTFT: first token-bearing chunk - request start.
- TPOT (per request): (time of last token - time of first token) / (tokens - 1); for a request
  that completed this is (e2e - TTFT) / (n - 1).  Requests cut off at a level's hard limit
  still give a TPOT over the tokens they received.  Requests with fewer than 2 tokens give none.
- ITL: gaps between consecutive token-bearing chunks of one request, pooled over requests.
  With speculative decoding one chunk usually carries several tokens, so ITL is the time
  between deliveries, not between tokens (TPOT is the per-token figure).
- mean accept length: sum of completion tokens / sum of verify counts over the requests whose
  server reported ``spec_verify_ct`` (None when no request did, e.g. the plain server).
- percentiles: linear interpolation between closest ranks (numpy's default "linear" method).
- output tok/s +- (``output_tok_s_ci95``): half-width of a 95% interval by batch means: the
  window cut into consecutive slices of ``CI_SLICE_S``, tok/s per slice, Student's t over the
  slices (at least ``CI_MIN_SLICES``, else None). Adjacent slices are correlated (requests span
  several), so read it as a lower bound on the uncertainty; it tells a 5% difference from
  noise, which a single number cannot.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence


@dataclass
class RequestRecord:
    """What the load generator recorded for one request."""

    idx: int = 0                       # request index inside its level (prompt identity)
    prompt_len: int = 0
    start: float = 0.0                 # request sent
    scheduled: Optional[float] = None  # open loop: the arrival time it was meant to start at
    end: Optional[float] = None        # response finished (None: cut off or failed)
    chunk_times: List[float] = field(default_factory=list)   # arrival of token-bearing chunks
    chunk_tokens: List[int] = field(default_factory=list)    # tokens in each of those chunks
    output_ids: Optional[Sequence[int]] = None
    completion_tokens: int = 0
    verify_ct: Optional[int] = None    # spec_verify_ct from meta_info (speculative servers)
    accept_histogram: Optional[List[int]] = None
    finish_reason: Optional[str] = None
    error: Optional[str] = None
    cancelled: bool = False            # cut off at the level's hard time limit

    # ---- derived values -------------------------------------------------------------
    @property
    def n_tokens(self) -> int:
        return sum(self.chunk_tokens)

    @property
    def first_token(self) -> Optional[float]:
        return self.chunk_times[0] if self.chunk_times else None

    @property
    def last_token(self) -> Optional[float]:
        return self.chunk_times[-1] if self.chunk_times else None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def completed(self) -> bool:
        return self.error is None and not self.cancelled and self.end is not None

    def ttft(self) -> Optional[float]:
        if self.first_token is None:
            return None
        return self.first_token - self.start

    def tpot(self) -> Optional[float]:
        n = self.n_tokens
        if n < 2 or self.first_token is None:
            return None
        return (self.last_token - self.first_token) / (n - 1)

    def itls(self) -> List[float]:
        t = self.chunk_times
        return [t[i] - t[i - 1] for i in range(1, len(t))]

    def e2e(self) -> Optional[float]:
        if self.end is None:
            return None
        return self.end - self.start

    def to_dict(self, with_ids: bool = False) -> dict:
        d = {
            "idx": self.idx, "prompt_len": self.prompt_len, "start": self.start,
            "scheduled": self.scheduled, "end": self.end,
            "chunk_times": self.chunk_times, "chunk_tokens": self.chunk_tokens,
            "completion_tokens": self.completion_tokens, "verify_ct": self.verify_ct,
            "accept_histogram": self.accept_histogram, "finish_reason": self.finish_reason,
            "error": self.error, "cancelled": self.cancelled,
        }
        if with_ids:
            d["output_ids"] = list(self.output_ids) if self.output_ids is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RequestRecord":
        keys = cls.__dataclass_fields__.keys()
        return cls(**{k: v for k, v in d.items() if k in keys})


def percentile(values: Sequence[float], p: float) -> Optional[float]:
    """p in [0, 100]; linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} outside [0, 100]")
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    rank = (len(xs) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    frac = rank - lo
    return float(xs[lo] + (xs[hi] - xs[lo]) * frac)


def _ms(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x * 1000.0, 3)


def tokens_in_window(records: Iterable[RequestRecord], t0: float, t1: float) -> int:
    """Output tokens whose chunk arrived in [t0, t1]."""
    n = 0
    for r in records:
        for t, k in zip(r.chunk_times, r.chunk_tokens):
            if t0 <= t <= t1:
                n += k
    return n


CI_SLICE_S = 1.0
CI_MIN_SLICES = 4
# Student's t, two-sided 95%, by degrees of freedom (1.96 beyond the table)
_T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04, 60: 2.00}


def _t95(dof: int) -> float:
    if dof >= 120:
        return 1.96
    return _T95[max(k for k in _T95 if k <= dof)]  # the next smaller dof: conservative


def output_tok_s_ci95(records: Sequence[RequestRecord], windows: Sequence[tuple],
                      slice_s: float = CI_SLICE_S) -> Optional[float]:
    """Half-width of the 95% batch-means interval of output tok/s over ``windows``."""
    rates = []
    for a, b in windows:
        counts = [0] * int((b - a) // slice_s)  # whole slices only; the remainder is dropped
        for r in records:
            for t, k in zip(r.chunk_times, r.chunk_tokens):
                i = int((t - a) // slice_s)
                if t >= a and i < len(counts):
                    counts[i] += k
        rates += [c / slice_s for c in counts]
    if len(rates) < CI_MIN_SLICES:
        return None
    mean = sum(rates) / len(rates)
    sd = math.sqrt(sum((x - mean) ** 2 for x in rates) / (len(rates) - 1))
    return round(_t95(len(rates) - 1) * sd / math.sqrt(len(rates)), 2)


def output_tok_s(records: Iterable[RequestRecord], window: tuple) -> Optional[float]:
    """Output tokens received in the window / its length (None for an empty window)."""
    a, b = window
    return round(tokens_in_window(records, a, b) / (b - a), 2) if b > a else None


def measured_window(records: Sequence[RequestRecord]) -> Optional[tuple]:
    """[first request start, last token arrival] over the records; when no token arrived,
    [first start, last end]; None for no records."""
    starts = [r.start for r in records]
    if not starts:
        return None
    lasts = [r.last_token for r in records if r.last_token is not None]
    if not lasts:
        lasts = [r.end if r.end is not None else r.start for r in records]
    return (min(starts), max(lasts))


def mean_accept_len(records: Iterable[RequestRecord]) -> Optional[float]:
    """Tokens per speculative round (verify step). From a request's per-round histogram where
    the server sends one: with `--adaptive-spec-off-path plain` an off step is a plain decode
    step, not a round, so tokens / verify count would count its tokens too (session 12 read
    30 tokens per round that way). Else tokens / verify count."""
    tok = 0
    ver = 0
    for r in records:
        hist = r.accept_histogram
        if hist and sum(hist):
            tok += sum((k + 1) * n for k, n in enumerate(hist))
            ver += sum(hist)
        elif r.verify_ct:
            tok += r.completion_tokens
            ver += r.verify_ct
    if ver == 0:
        return None
    return tok / ver


def summarize(records: Sequence[RequestRecord], window: Optional[tuple] = None,
              windows: Optional[Sequence[tuple]] = None, stream: bool = True) -> Dict:
    """Row statistics for one level of one system.

    ``window`` = (t0, t1) on the records' clock (default :func:`measured_window`), or
    ``windows`` = several such spans taken together (tokens and time added up).  Latency
    percentiles use the requests that started inside the window(s).  ``stream=False``
    (non-streamed responses): no TTFT/ITL, and TPOT is e2e / tokens.
    """
    records = list(records)
    if windows is None:
        if window is None:
            window = measured_window(records)
        windows = [window] if window is not None else []
    windows = [w for w in windows if w is not None]
    dur = sum(b - a for a, b in windows)
    ntok = sum(tokens_in_window(records, a, b) for a, b in windows)

    def inside(t):
        return any(a <= t <= b for a, b in windows)

    in_win = [r for r in records if inside(r.start)]
    oks = [r for r in in_win if r.ok]
    if stream:
        ttfts = [x for x in (r.ttft() for r in oks) if x is not None]
        tpots = [x for x in (r.tpot() for r in oks) if x is not None]
        itls: List[float] = []
        for r in oks:
            itls.extend(r.itls())
    else:
        ttfts, itls = [], []
        tpots = [r.e2e() / r.n_tokens for r in oks if r.completed and r.n_tokens > 0]
    e2es = [x for x in (r.e2e() for r in in_win if r.completed) if x is not None]
    mal = mean_accept_len(oks)
    return {
        "output_tok_s": round(ntok / dur, 2) if dur > 0 else None,
        "output_tok_s_ci95": output_tok_s_ci95(records, windows),
        "tpot_ms_p50": _ms(percentile(tpots, 50)),
        "tpot_ms_p99": _ms(percentile(tpots, 99)),
        "itl_ms_p50": _ms(percentile(itls, 50)),
        "itl_ms_p99": _ms(percentile(itls, 99)),
        "ttft_ms_p50": _ms(percentile(ttfts, 50)),
        "ttft_ms_p99": _ms(percentile(ttfts, 99)),
        "e2e_ms_p50": _ms(percentile(e2es, 50)),
        "mean_accept_len": round(mal, 4) if mal is not None else None,
        "requests": len(in_win),
        "completed": sum(1 for r in in_win if r.completed),
        "cancelled": sum(1 for r in in_win if r.cancelled and r.error is None),
        "errors": sum(1 for r in in_win if r.error is not None),
        "output_tokens": ntok,
        "duration_s": round(dur, 4),
    }


def first_error(records: Iterable[RequestRecord]) -> Optional[str]:
    for r in records:
        if r.error:
            return r.error
    return None


# ---- comparisons between systems ------------------------------------------------------
def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """a / b, None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def level_key(row: dict):
    """(concurrency, request_rate, phase, repeat): with --repeat, ratios pair the k-th
    measurement of a system with plain's k-th at the same level; [:3] is the level alone."""
    return (row.get("concurrency"), row.get("request_rate"), row.get("phase"), row.get("repeat"))


def envelope(rows: Sequence[dict], systems=("plain", "eagle3"),
             key: str = "output_tok_s") -> Dict[tuple, float]:
    """Per level (concurrency, request_rate, phase): max of ``key`` over ``systems``."""
    env: Dict[tuple, float] = {}
    for r in rows:
        if r.get("system") in systems and r.get(key) is not None:
            k = level_key(r)
            env[k] = max(env.get(k, float("-inf")), r[key])
    return env


def add_ratios(rows: List[dict]) -> None:
    """Add ``tok_s_vs_plain`` and ``tok_s_vs_envelope`` (envelope = max(plain, eagle3))."""
    plain = {level_key(r): r.get("output_tok_s") for r in rows if r.get("system") == "plain"}
    env = envelope(rows)
    for r in rows:
        k = level_key(r)
        v = r.get("output_tok_s")
        rp = ratio(v, plain.get(k))
        re_ = ratio(v, env.get(k))
        r["tok_s_vs_plain"] = round(rp, 4) if rp is not None else None
        r["tok_s_vs_envelope"] = round(re_, 4) if re_ is not None else None


def _var(xs: Sequence[float]) -> float:
    """Sample variance (n - 1 in the denominator; needs two values)."""
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _mean_ci95(qs: Sequence[float]) -> tuple:
    """(mean, half-width of its 95% t interval; None with one value)."""
    m = sum(qs) / len(qs)
    if len(qs) < 2:
        return m, None
    return m, _t95(len(qs) - 1) * (_var(qs) / len(qs)) ** 0.5


def paired_ratios(rows: Sequence[dict], reference: Sequence[str] = ("plain",)) -> List[dict]:
    """Per system and level measured more than once (--repeat): output tok/s over plain's in
    the same repeat (`reference` ("plain", "eagle3"): over the better of the two in that repeat,
    the envelope), with the mean and the half-width of its 95% t interval. Repeats run back
    to back, so slow drift (clocks, fragmentation, the machine's other GPU) hits both sides of
    a pair alike; the interval is over repeats, not over requests."""
    out = []
    groups: Dict[tuple, List[float]] = {}
    ref = envelope(rows, systems=tuple(reference))
    for r in rows:
        if r.get("system") in reference or r.get("repeat") is None:
            continue
        q = ratio(r.get("output_tok_s"), ref.get(level_key(r)))
        if q is not None:
            groups.setdefault((r["system"], r.get("concurrency"), r.get("request_rate")), []).append(q)
    for (system, n, rate), qs in groups.items():
        m, ci = _mean_ci95(qs)
        row = {"system": system, "concurrency": n, "repeats": len(qs),
               "ratios": [round(q, 4) for q in qs], "mean": round(m, 4),
               "ci95": round(ci, 4) if ci is not None else None}
        if rate is not None:
            row["request_rate"] = rate
        out.append(row)
    return out


def means_vs_envelope(rows: Sequence[dict], reference: Sequence[str] = ("plain", "eagle3")
                      ) -> List[dict]:
    """Per system and level measured more than once: its mean output tok/s over the repeats
    divided by the larger of the `reference` systems' means (the envelope of means), with an
    approximate 95% interval (delta method on the log ratio, t with the smaller repeat count).

    Why beside `paired_ratios`: the per-repeat envelope max(plain_k, eagle3_k) picks whichever
    of two noisy readings came out high, so it sits above max(mean plain, mean eagle3) when the
    two are close; a system exactly as fast as the better one then scores below 1 on average
    (two systems of equal speed with a 10% spread per reading: E[max] ~ 1.056x the mean)."""
    per: Dict[tuple, List[float]] = {}
    for r in rows:
        if r.get("repeat") is None or r.get("output_tok_s") is None:
            continue
        per.setdefault((r["system"],) + level_key(r)[:3], []).append(r["output_tok_s"])
    out = []
    for (system, n, rate, phase), vals in per.items():
        refs = [(sum(v) / len(v), v, s) for s in reference
                for v in [per.get((s, n, rate, phase))] if v]
        if system in reference or not refs or len(vals) < 2:
            continue
        ref_mean, ref_vals, ref_name = max(refs, key=lambda x: x[0])
        mean = sum(vals) / len(vals)
        if ref_mean <= 0 or mean <= 0:
            continue
        q = mean / ref_mean
        ci = None
        if len(ref_vals) >= 2:
            rel_var = sum(_var(x) / (len(x) * (sum(x) / len(x)) ** 2) for x in (vals, ref_vals))
            half = _t95(min(len(vals), len(ref_vals)) - 1) * rel_var ** 0.5
            ci = [round(q * math.exp(-half), 4), round(q * math.exp(half), 4)]
        row = {"system": system, "concurrency": n, "repeats": len(vals), "ratio": round(q, 4),
               "ci95": ci, "mean_tok_s": round(mean, 1), "envelope_tok_s": round(ref_mean, 1),
               "envelope_system": ref_name}
        if rate is not None:
            row["request_rate"] = rate
        out.append(row)
    return out


def _one_pass_as_repeat_0(rows: Sequence[dict]) -> Sequence[dict]:
    """A sweep run with one pass writes no `repeat` (session 47's runs): its rows measured every
    system once per level in the same run, one pair each, so they count as repeat 0. Rows of
    a run that has repeats, or that holds a (system, level) twice, are left as they are."""
    if any(r.get("repeat") is not None for r in rows):
        return rows
    seen = {(r.get("system"),) + level_key(r)[:3] for r in rows}
    if len(seen) < len(rows):
        return rows
    return [dict(r, repeat=0) for r in rows]


def pooled_pairs(runs: Sequence[Sequence[dict]], systems: Sequence[str],
                 reference: Sequence[str] = ("plain",)) -> List[dict]:
    """Paired ratios (``paired_ratios``, over `reference`) of any of `systems` (one system under
    the names different runs gave it) pooled over several runs' rows, per concurrency: every
    pair is one sample, the interval is over all of them. A run of one pass gives one pair a
    level."""
    wanted = set(systems)
    per_n: Dict[int, List[float]] = {}
    for rows in runs:
        for p in paired_ratios(_one_pass_as_repeat_0(rows), reference):
            if p["system"] in wanted and p.get("request_rate") is None:
                per_n.setdefault(p["concurrency"], []).extend(p["ratios"])
    out = []
    for n in sorted(per_n):
        qs = per_n[n]
        m, ci = _mean_ci95(qs)
        out.append({"concurrency": n, "pairs": len(qs), "mean": round(m, 4),
                    "ci95": round(ci, 4) if ci is not None else None,
                    "ratios": [round(q, 4) for q in qs]})
    return out


def mean_over_repeats(rows: Sequence[dict], keys=("output_tok_s", "tpot_ms_p50")) -> List[dict]:
    """One row per (system, level): the mean of `keys` over its repeats (for plots)."""
    merged: Dict[tuple, dict] = {}
    counts: Dict[tuple, int] = {}
    for r in rows:
        k = (r.get("system"),) + level_key(r)[:3]
        if k not in merged:
            merged[k] = {kk: v for kk, v in r.items() if kk != "repeat"}
            counts[k] = 1
            continue
        counts[k] += 1
        for key in keys:
            a, b = merged[k].get(key), r.get(key)
            if a is not None and b is not None:
                merged[k][key] = a + (b - a) / counts[k]  # running mean
    return list(merged.values())


def common_prefix_equal(a: Sequence[int], b: Sequence[int]) -> bool:
    n = min(len(a), len(b))
    return list(a[:n]) == list(b[:n])


def lossless_check(outputs: Dict[str, Dict[tuple, Sequence[int]]], ref: str = "plain") -> Dict:
    """Compare every system's greedy outputs with the reference system's.

    ``outputs[system][(level_key, idx)] = output ids``.  Requests cut off early are compared
    on their common prefix.  Returns {system: {"identical_to_plain", "requests", "tokens",
    "mismatches", "first_mismatch"}} for every system other than ``ref``.
    """
    res: Dict[str, Dict] = {}
    base = outputs.get(ref)
    if base is None:
        return res
    for sysname, outs in outputs.items():
        if sysname == ref:
            continue
        n = ntok = bad = 0
        first = None
        for key, ids in outs.items():
            b = base.get(key)
            if b is None or not ids or not b:
                continue
            n += 1
            m = min(len(ids), len(b))
            ntok += m
            if not common_prefix_equal(ids, b):
                bad += 1
                if first is None:
                    pos = next(i for i in range(m) if ids[i] != b[i])
                    first = {"request": str(key), "position": pos,
                             "got": int(ids[pos]), "plain": int(b[pos])}
        res[sysname] = {"identical_to_plain": bad == 0 and n > 0, "requests": n,
                        "tokens": ntok, "mismatches": bad, "first_mismatch": first}
    return res


def histogram_diff(after: Optional[dict], before: Optional[dict]) -> Optional[dict]:
    """Difference of two cumulative {str(k): count} histograms (keys with 0 dropped)."""
    if not isinstance(after, dict):
        return None
    before = before if isinstance(before, dict) else {}
    out = {}
    for k, v in after.items():
        try:
            d = int(v) - int(before.get(k, 0))
        except (TypeError, ValueError):
            return None
        if d:
            out[str(k)] = d
    return out


def histogram_of(samples: Iterable[Optional[int]]) -> Optional[dict]:
    out: Dict[str, int] = {}
    for s in samples:
        if s is None:
            continue
        out[str(s)] = out.get(str(s), 0) + 1
    return out or None
