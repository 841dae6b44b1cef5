"""Read a server's adaptive-spec status as a page a person can scan: what it chose and why.

    python -m adaptive_spec.status_view                       # http://127.0.0.1:30000
    python -m adaptive_spec.status_view --url http://HOST:PORT --watch 2 --count 30
    python -m adaptive_spec.status_view RESULT.json --system adaptive-spec:goodput

The source is `GET /adaptive_spec/status` (every rank's controller status), a saved copy of
it, one controller status, or a sweep result's `final_status` (benchmarks/results/). Shown: the
decision and its reason against the load, the acceptance per draft position, the decisions by
step count and reason, the decision cost, and for the goodput policy its cost model (step time
by batch bucket and k with sample counts, the prefill and switch terms, the goodput each k
promised at the last decision); other ranks in one line each, flagged where their decision
digest differs at the same decision count (tensor-parallel ranks must agree). Core module:
never imports SGLang.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import urllib.error
import urllib.request
from typing import List, Optional

from .policy.step_table import bucket_label, bucket_of

DEFAULT_URL = "http://127.0.0.1:30000"
ROUTE = "/adaptive_spec/status"
MAX_WATCH = 100_000  # refreshes at most, whatever --count says (every loop is bounded)


class ViewError(Exception):
    """One line for the user; exit status `code`."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def _shape_checked(read):
    """A status or file of another shape (a server of another version, a hand-edited file) is
    one ViewError, not a traceback."""
    @functools.wraps(read)
    def checked(*args, **kwargs):
        try:
            return read(*args, **kwargs)
        except (AttributeError, TypeError, ValueError, IndexError, KeyError) as exc:
            raise ViewError(f"the status has a shape this viewer does not read "
                            f"({type(exc).__name__}: {exc}); a server of another version?",
                            2) from None
    return checked


@_shape_checked
def rank_statuses(body, system: Optional[str] = None) -> List[Optional[dict]]:
    """The controller statuses in any of the accepted shapes (see the module docstring)."""
    if isinstance(body, dict) and "ranks" in body:
        return list(body["ranks"])
    if isinstance(body, dict) and "systems" in body:  # a sweep result
        ours = {n: s for n, s in body["systems"].items()
                if isinstance(s, dict) and s.get("final_status")}
        if not ours:
            raise ViewError("the result file holds no system with a final status", 2)
        if system is None and len(ours) > 1:
            raise ViewError(f"several systems have a status: pick one with --system "
                            f"({', '.join(sorted(ours))})", 2)
        name = system or next(iter(ours))
        if name not in ours:
            raise ViewError(f"no final status for system {name!r} "
                            f"(have: {', '.join(sorted(ours))})", 2)
        return list(ours[name]["final_status"])
    if isinstance(body, dict) and ("decision" in body or "cost_model" in body):
        return [body]
    raise ViewError("not an adaptive-spec status (expected the status route's JSON, a "
                    "controller status or a sweep result)", 2)


def _bucket_label(key: str) -> str:
    """The table's bucket keys are their largest batch (1, 2, 4, ...): bucket 8 holds 5-8."""
    return bucket_label(bucket_of(int(key)))


def _by_bucket(rows: dict) -> list:
    return sorted(rows.items(), key=lambda item: int(item[0]))


def _cells(rows: dict, fmt) -> List[str]:
    ks = sorted({int(k) for row in rows.values() for k in row if k.isdigit()})
    lines = ["  batch    " + "".join(f"{'k=' + str(k):>14}" for k in ks)]
    for key, row in _by_bucket(rows):
        lines.append(f"  {_bucket_label(key):<9}" + "".join(
            f"{fmt(row[str(k)]) if str(k) in row else '-':>14}" for k in ks))
    return lines


def _cost_model(cm: dict, chosen: Optional[int]) -> List[str]:
    out = []
    ms, n = cm.get("step_ms") or {}, cm.get("step_samples") or {}
    if ms:
        joined = {b: {k: (v, n.get(b, {}).get(k, 0)) for k, v in row.items()}
                  for b, row in ms.items()}
        out.append("step time by running-batch bucket, ms (samples):")
        out += _cells(joined, lambda c: f"{c[0]:.2f} ({c[1]:.0f})")
    goodput = cm.get("last_goodput_tok_per_s_per_req") or {}
    if goodput:
        out.append("goodput at the last decision, tok/s per request: " + "  ".join(
            f"{'*' if int(k) == chosen else ''}k={k} {v:g}" for k, v in sorted(goodput.items())))
    choices = cm.get("choice_by_bucket") or {}
    if choices:
        out.append("the model would run now: " + "  ".join(
            f"{_bucket_label(b)}: " + (f"k={k} ({gain:g}x plain)" if k else "plain")
            for b, (k, gain) in _by_bucket(choices)))
        if cm.get("threshold_suggestion"):
            out.append(f"as the threshold policy: --adaptive-spec-threshold "
                       f"{cm['threshold_suggestion']} (drafting off from that batch size)")
    realized = cm.get("realized_ratio") or {}
    if any(r != 1.0 for row in realized.values() for r, _ in row.values()):
        out.append("delivered over the model's prediction, by bucket (steps; 1 = as modelled):")
        out += _cells(realized, lambda c: f"{c[0]:.3f} ({c[1]:.0f})")
    prefill = cm.get("prefill_ms_admitted_tokens_per_step") or {}
    if prefill:
        out.append("prefill per decode step, ms: " + "  ".join(
            f"{_bucket_label(b)}: {v[0]:g}" for b, v in _by_bucket(prefill)))
    length = cm.get("prefill_request_length")
    if length is not None:  # session 52: what the arrivals at each k are predicted from
        out.append(f"decode tokens a request (arrivals = batch x tokens a step / it): {length:g}")
    kinds = cm.get("prefill_kind_ms") or {}
    if kinds:
        out.append("a prefill batch, ms, plain / with the draft's (batches): " + "  ".join(
            f"{_bucket_label(b)}: {_ms(v[0])} ({v[1]:g}) / {_ms(v[2])} ({v[3]:g})"
            for b, v in _by_bucket(kinds)))
        ratio = cm.get("prefill_kind_ratio")
        if ratio is not None:
            out.append(f"plain over with the draft's, pooled (an unseen kind's price): {ratio:g}"
                       f"; prefills left out as waves of arrivals: {cm.get('prefill_waves', 0)}")
    launch = cm.get("prefill_launch_ms") or {}
    if any(len(row) > 1 for row in launch.values()):
        out.append("a prefill's launch in the decode step beside it, extra ms (launches):")
        out += _cells({b: row for b, row in launch.items() if len(row) > 1},
                      lambda c: f"{c[0]:.2f} ({c[1]:.0f})")
    switch = cm.get("switch_on_ms") or {}
    if switch:
        out.append("a switch on, ms (switches): " + "  ".join(
            f"{_bucket_label(b)}: {v[0]:g} ({v[1]:g})"
            for b, v in _by_bucket(switch)))
    for name, by_bucket in (cm.get("preferred_runs_ms") or {}).items():
        if by_bucket:
            out.append(f"{name}-preferred runs by the bucket they began at, mean ms (runs): "
                       + "  ".join(f"{_bucket_label(b)}: {ms:g} ({n})"
                                   for b, (ms, n) in _by_bucket(by_bucket)))
    return out


def _ms(value) -> str:
    return "-" if value is None else f"{value:g}"


def _decisions(st: dict) -> str:
    items = sorted((st.get("decisions") or {}).items(), key=lambda i: -i[1])
    return "  ".join(f"k={key.replace(':', ' ')} {n}" for key, n in items[:8]) or "none yet"


def _slow_results(slow: dict) -> str:
    """One line: the decode results over the threshold (sglang_plugin/slow_results.py)."""
    line = (f"stalls     {slow.get('count', 0)} decode results of {_ms(slow.get('threshold_ms'))} "
            f"ms or more")
    last = slow.get("last_logged")
    if last:
        built = last.get("kernels_built")
        line += (f"; last logged {_ms(last.get('ms'))} ms at {last.get('running')} running, "
                 f"k = {last.get('steps')} ({last.get('mode') or '-'}), Triton kernels built "
                 f"meanwhile: {'unknown' if built is None else built}")
    return line


@_shape_checked
def render(ranks: List[Optional[dict]]) -> str:
    live = [r for r in ranks if r]
    if not live:
        raise ViewError("adaptive-spec is not active on this server (no rank reports a status)")
    st = live[0]
    settings = st.get("settings") or {}
    decision = st.get("decision") or {}
    load = st.get("load") or {}
    acc = st.get("acceptance") or {}
    per_position = [p for p in acc.get("per_position") or []]
    lines = [
        "adaptive-spec  " + (f"policy {settings.get('policy')}, up to {settings.get('max_steps')} "
                             f"steps  " if settings else "")
        + f"rank {st.get('rank', 0)} of {len(ranks)}"]
    if decision or load:  # a sweep's final status keeps neither
        lines.append(
            f"now        k = {decision.get('steps', '-')} "
            f"({decision.get('reason', 'no decision yet')})"
            + (f"   running {load.get('running')}  waiting {load.get('waiting')} "
               f"({load.get('waiting_tokens')} tokens)  KV {100 * (load.get('kv_usage') or 0):.1f}%"
               if load else ""))
    lines += [
        f"fallback   {st.get('fallback') or 'none'}",
        "acceptance per draft position: " + (" ".join(
            "-" if p is None else f"{p:.2f}" for p in per_position) or "not measured yet")
        + (f"   accept length {acc['mean_accept_len']:.2f}" if acc.get("mean_accept_len") else ""),
        f"decisions  {_decisions(st)}",
        f"switches   {st.get('switches', 0)}   decide p50 {st.get('decide_us_p50', '-')} us, "
        f"p99 {st.get('decide_us_p99', '-')} us",
    ]
    if st.get("slow_results"):
        lines.append(_slow_results(st["slow_results"]))
    if st.get("cost_model"):
        lines += _cost_model(st["cost_model"], decision.get("steps"))
    check = st.get("rank_check") or {}
    for other in live[1:]:
        theirs = other.get("rank_check") or {}
        same_count = theirs.get("decisions") == check.get("decisions")
        flag = ("  DIGEST DIFFERS" if same_count and theirs.get("digest") != check.get("digest")
                else "")
        steps = (other.get("decision") or {}).get("steps")
        lines.append(f"rank {other.get('rank')}     k = {steps}  decisions "
                     f"{theirs.get('decisions')}  digest {theirs.get('digest')}{flag}")
    return "\n".join(lines)


def _fetch(url: str, timeout_s: float):
    full = url.rstrip("/") + ROUTE if not url.rstrip("/").endswith(ROUTE) else url
    try:
        with urllib.request.urlopen(full, timeout=timeout_s) as resp:
            return json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ViewError(f"cannot read {full}: {reason}") from None


def _load(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as exc:
        raise ViewError(f"cannot read {path}: {exc.strerror}", 2) from None
    except ValueError as exc:
        raise ViewError(f"{path} is not JSON: {exc}", 2) from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m adaptive_spec.status_view",
                                 description="Show an adaptive-spec server's status.")
    ap.add_argument("file", nargs="?", help="a saved status or sweep result (default: the server)")
    ap.add_argument("--url", default=DEFAULT_URL, help=f"server address (default {DEFAULT_URL})")
    ap.add_argument("--system", help="with a sweep result: the system whose final status to show")
    ap.add_argument("--watch", type=float, default=0.0, metavar="S",
                    help="refresh every S seconds (from the server)")
    ap.add_argument("--count", type=int, default=1, help="refreshes with --watch (default 1)")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the server")
    a = ap.parse_args(argv)
    try:
        if a.watch < 0 or a.timeout <= 0:
            raise ViewError("--watch must be >= 0 and --timeout > 0 seconds", 2)
        if a.file:
            print(render(rank_statuses(_load(a.file), a.system)))
            return 0
        for i in range(min(max(1, a.count), MAX_WATCH)):
            if i:
                time.sleep(a.watch)
                print()
            print(render(rank_statuses(_fetch(a.url, a.timeout))), flush=True)
            if a.watch <= 0:
                break
        return 0
    except ViewError as exc:
        print(f"status_view: {exc}", file=sys.stderr)
        return exc.code


if __name__ == "__main__":
    sys.exit(main())
