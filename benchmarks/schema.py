"""Validation of result files (``../shared/design/results-schema.md``).

Four schemas: ``adaptive-spec-bench/1`` (serving sweeps), ``adaptive-spec-kernels/1``,
``adaptive-spec-dial/1`` (acceptance dial), ``adaptive-spec-soak/1``.  The checks are the
required keys and their types, the system-name pattern, the date format and, for files named
in a results folder, the ``YYYY-MM-DD-<what>.json`` name and a size limit.  Extra keys are
allowed everywhere (a result may carry more than the schema names).

``validate_file(path) -> [problem, ...]`` (empty: valid); ``adaptive-spec-bench validate``
prints one line per problem and exits 2 when there is any.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, List, Optional

SYSTEM_RE = re.compile(r"^(plain|eagle3|builtin-adaptive|adaptive-spec:[a-z0-9][a-z0-9._-]*)$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
NAME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}-[A-Za-z0-9][A-Za-z0-9._-]*\.json$")
MAX_BYTES = 512 * 1024

WORKLOAD_KINDS = ("closed", "open", "step", "sawtooth", "bursty")

NUM = (int, float)


def _is_num(v) -> bool:
    return isinstance(v, NUM) and not isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _V:
    def __init__(self):
        self.problems: List[str] = []

    def err(self, where: str, msg: str):
        self.problems.append(f"{where}: {msg}" if where else msg)

    def need(self, obj: dict, key: str, where: str, check, what: str, nullable=False) -> Any:
        if not isinstance(obj, dict):
            return None
        if key not in obj:
            self.err(where, f"missing key {key!r}")
            return None
        return self.typed(obj, key, where, check, what, nullable)

    def typed(self, obj: dict, key: str, where: str, check, what: str, nullable=False) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            return None
        v = obj[key]
        if v is None and nullable:
            return None
        if not check(v):
            self.err(f"{where}.{key}" if where else key,
                     f"expected {what}{' or null' if nullable else ''}, got {v!r:.60}")
            return None
        return v


def _str(v):
    return isinstance(v, str) and v != ""


def _common(v: _V, d: dict, version_required: bool = True):
    v.need(d, "command", "", _str, "non-empty string")
    date = v.need(d, "date", "", lambda x: isinstance(x, str), "string")
    if isinstance(date, str) and not DATE_RE.match(date):
        v.err("date", f"expected YYYY-MM-DD, got {date!r}")
    v.need(d, "machine", "", _str, "non-empty string")
    if version_required:
        v.need(d, "sglang_version", "", _str, "non-empty string")
    else:
        v.typed(d, "sglang_version", "", _str, "non-empty string", nullable=True)


def _rows(v: _V, d: dict) -> list:
    rows = v.need(d, "rows", "", lambda x: isinstance(x, list), "list")
    if rows is None:
        return []
    good = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            v.err(f"rows[{i}]", "expected an object")
        else:
            good.append((i, r))
    return good


def _validate_bench(v: _V, d: dict):
    _common(v, d)
    v.need(d, "model", "", _str, "non-empty string")
    v.need(d, "draft", "", _str, "non-empty string", nullable=True)
    acc = v.need(d, "acceptance", "", lambda x: isinstance(x, str), "string")
    if isinstance(acc, str) and acc not in ("real", "simulated", "none"):
        v.err("acceptance", f"expected 'real', 'simulated' or 'none', got {acc!r}")
    wl = v.need(d, "workload", "", lambda x: isinstance(x, dict), "object")
    kind = None
    if isinstance(wl, dict):
        kind = v.need(wl, "kind", "workload", lambda x: x in WORKLOAD_KINDS,
                      "one of " + "/".join(WORKLOAD_KINDS))
        v.need(wl, "new_tokens", "workload", lambda x: _is_int(x) and x > 0, "positive int")
        v.need(wl, "prompt_tokens", "workload",
               lambda x: (_is_int(x) and x > 0) or (isinstance(x, list) and x and all(
                   _is_int(y) and y > 0 for y in x)), "positive int or list of them")
        v.need(wl, "temperature", "workload", lambda x: _is_num(x) and x >= 0, "number >= 0")
    for i, r in _rows(v, d):
        w = f"rows[{i}]"
        name = v.need(r, "system", w, lambda x: isinstance(x, str), "string")
        if isinstance(name, str) and not SYSTEM_RE.match(name):
            v.err(f"{w}.system", f"{name!r} is not plain|eagle3|builtin-adaptive|"
                                 f"adaptive-spec:<variant>")
        v.need(r, "concurrency", w, lambda x: _is_int(x) and x >= 0, "int >= 0")
        v.need(r, "output_tok_s", w, lambda x: _is_num(x) and x >= 0, "number >= 0",
               nullable=True)
        for k in ("tpot_ms_p50", "tpot_ms_p99", "itl_ms_p50", "itl_ms_p99", "ttft_ms_p50",
                  "ttft_ms_p99", "e2e_ms_p50"):
            v.typed(r, k, w, lambda x: _is_num(x) and x >= 0, "number >= 0", nullable=True)
        v.typed(r, "mean_accept_len", w, lambda x: _is_num(x) and x > 0, "number > 0",
                nullable=True)
        v.typed(r, "request_rate", w, lambda x: _is_num(x) and x > 0, "number > 0")
        v.typed(r, "steps_histogram", w,
                lambda x: isinstance(x, dict) and all(
                    isinstance(a, str) and re.match(r"^\d+$", a) and _is_int(b) and b >= 0
                    for a, b in x.items()),
                "object {\"<steps>\": count}", nullable=True)
        for k in ("requests", "completed", "errors", "cancelled", "output_tokens"):
            v.typed(r, k, w, lambda x: _is_int(x) and x >= 0, "int >= 0")
    tl = d.get("timeline")
    if kind == "step" and "timeline" not in d:
        v.err("timeline", "missing for workload.kind 'step'")
    if tl is not None:
        if not isinstance(tl, list):
            v.err("timeline", "expected a list")
        else:
            for i, e in enumerate(tl):
                w = f"timeline[{i}]"
                if not isinstance(e, dict):
                    v.err(w, "expected an object")
                    continue
                v.need(e, "t_s", w, _is_num, "number")
                for k in ("running", "waiting", "steps"):
                    v.need(e, k, w, lambda x: _is_int(x) and x >= 0, "int >= 0", nullable=True)
                v.need(e, "output_tok_s", w, lambda x: _is_num(x) and x >= 0, "number >= 0",
                       nullable=True)
                if "system" in e and not (isinstance(e["system"], str)
                                          and SYSTEM_RE.match(e["system"])):
                    v.err(f"{w}.system", f"bad system name {e['system']!r}")
    ll = d.get("lossless")
    if ll is not None:
        if not isinstance(ll, dict):
            v.err("lossless", "expected an object")
        else:
            for name, e in ll.items():
                w = f"lossless[{name!r}]"
                if not SYSTEM_RE.match(str(name)):
                    v.err(w, "bad system name")
                if not isinstance(e, dict):
                    v.err(w, "expected an object")
                    continue
                v.need(e, "identical_to_plain", w, lambda x: isinstance(x, bool), "bool")
                v.need(e, "requests", w, lambda x: _is_int(x) and x >= 0, "int >= 0")
    systems = d.get("systems")
    if systems is not None:
        if not isinstance(systems, dict):
            v.err("systems", "expected an object")
        else:
            for name in systems:
                if not SYSTEM_RE.match(str(name)):
                    v.err(f"systems[{name!r}]", "bad system name")


def _validate_kernels(v: _V, d: dict):
    _common(v, d, version_required=False)
    for i, r in _rows(v, d):
        w = f"rows[{i}]"
        v.need(r, "op", w, _str, "non-empty string")
        v.need(r, "impl", w, _str, "non-empty string")
        v.need(r, "us_median", w, lambda x: _is_num(x) and x >= 0, "number >= 0")
        v.typed(r, "us_p90", w, lambda x: _is_num(x) and x >= 0, "number >= 0")
        for k in ("bs", "k", "vocab"):
            v.typed(r, k, w, lambda x: _is_int(x) and x >= 0, "int >= 0")
        v.typed(r, "dtype", w, _str, "non-empty string")


def _validate_dial(v: _V, d: dict):
    _common(v, d, version_required=False)
    for i, r in _rows(v, d):
        w = f"rows[{i}]"
        v.need(r, "mode", w, lambda x: x in ("greedy", "sampling"), "'greedy' or 'sampling'")
        v.need(r, "steps", w, lambda x: _is_int(x) and x >= 1, "int >= 1")
        # A calibration point (acceptance measured at a given temperature) has no request.
        v.need(r, "requested", w, lambda x: _is_num(x) and 0 <= x <= 1, "number in [0, 1]",
               nullable="temperature" in r)
        v.need(r, "measured", w, lambda x: _is_num(x) and 0 <= x <= 1, "number in [0, 1]",
               nullable=True)
        v.need(r, "mean_accept_len", w, lambda x: _is_num(x) and x >= 0, "number >= 0",
               nullable=True)
        v.need(r, "requests", w, lambda x: _is_int(x) and x >= 0, "int >= 0")


def _validate_soak(v: _V, d: dict):
    _common(v, d)
    v.need(d, "duration_s", "", lambda x: _is_num(x) and x >= 0, "number >= 0")
    v.need(d, "requests", "", lambda x: _is_int(x) and x >= 0, "int >= 0")
    v.need(d, "failed", "", lambda x: _is_int(x) and x >= 0, "int >= 0")
    v.need(d, "patterns", "", lambda x: isinstance(x, list), "list")
    for k in ("kv_free_start", "kv_free_end", "rss_mb_start", "rss_mb_end"):
        v.need(d, k, "", lambda x: _is_num(x) and x >= 0, "number >= 0", nullable=True)
    v.need(d, "probe_prompts", "", lambda x: _is_int(x) and x >= 0, "int >= 0")
    v.need(d, "probe_identical_to_plain", "", lambda x: isinstance(x, bool), "bool")
    v.need(d, "tp_size", "", lambda x: _is_int(x) and x >= 1, "int >= 1")


def _validate_decision_cost(v: _V, d: dict):
    _common(v, d, version_required=False)
    for i, r in _rows(v, d):
        w = f"rows[{i}]"
        # a decision (`policy`) or a piece of per-step bookkeeping (`op`)
        v.need(r, "op" if "op" in r else "policy", w, _str, "non-empty string")
        v.need(r, "us_median", w, lambda x: _is_num(x) and x >= 0, "number >= 0")
        v.need(r, "calls", w, lambda x: _is_int(x) and x > 0, "int > 0")


VALIDATORS = {
    "adaptive-spec-bench/1": _validate_bench,
    "adaptive-spec-kernels/1": _validate_kernels,
    "adaptive-spec-dial/1": _validate_dial,
    "adaptive-spec-decision-cost/1": _validate_decision_cost,
    "adaptive-spec-soak/1": _validate_soak,
}


def validate_obj(d: Any) -> List[str]:
    v = _V()
    if not isinstance(d, dict):
        return ["top level: expected a JSON object"]
    s = d.get("schema")
    if not isinstance(s, str) or s not in VALIDATORS:  # a list or an object is unhashable
        return [f"schema: expected one of {', '.join(VALIDATORS)}, got {s!r:.60}"]
    VALIDATORS[s](v, d)
    return v.problems


def validate_file(path, check_name: Optional[bool] = None) -> List[str]:
    """Problems of one result file, each prefixed with the path.  ``check_name``: check the
    ``YYYY-MM-DD-<what>.json`` name and the size limit (default: when the file sits in a
    folder named ``results``)."""
    p = Path(path)
    if check_name is None:
        check_name = p.parent.name == "results"
    try:
        raw = p.read_bytes()
    except OSError as e:
        return [f"{p}: cannot read: {e.strerror or e}"]
    probs: List[str] = []
    if check_name:
        if not NAME_RE.match(p.name):
            probs.append(f"name {p.name!r} is not YYYY-MM-DD-<what>.json")
        if len(raw) > MAX_BYTES:
            probs.append(f"{len(raw)} bytes, more than the {MAX_BYTES} allowed")
    try:
        d = json.loads(raw)
    except ValueError as e:
        return [f"{p}: not valid JSON: {e}"]
    probs += validate_obj(d)
    return [f"{p}: {x}" for x in probs]
