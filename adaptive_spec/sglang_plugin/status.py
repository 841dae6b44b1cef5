"""Our state in /server_info, a JSON status route, and validated run-time setting changes.

Scheduler side: an AFTER hook on `Scheduler.get_internal_state` adds `adaptive_spec` (the
controller's status) to what /server_info shows per rank; an AROUND hook on
`Scheduler.set_internal_state` takes our keys. SGLang's request carries numbers only, so
settings travel as `adaptive_spec.<key>` numbers (see `encode_changes`).
HTTP side (main process): `GET /adaptive_spec/status` and `POST /adaptive_spec/config`.
"""

from __future__ import annotations

import logging

from fastapi import Request  # resolved from module globals by FastAPI (annotations are strings)

from ..config import CATCHUPS, OFF_BARRIERS, OFF_PATHS, OFF_PREFILLS, PLAIN_KV, AdaptiveSpecConfig, ConfigError
from . import slow_results
from .state import get_controller

logger = logging.getLogger("adaptive_spec")

PREFIX = "adaptive_spec."
# Settings that may change while serving. The step counts SGLang built states and CUDA
# graphs for are fixed at start: max_steps is not here, and `policy` may change only to one
# whose step counts were built (a server started with goodput can switch to threshold).
RUNTIME_KEYS = ("policy",
    "threshold", "queue_threshold", "hysteresis", "min_accept_len", "reprobe_interval",
    "reprobe_steps", "log_decisions", "force", "fallback", "tpot_slo_ms", "off_path", "off_barrier", "plain_kv", "off_prefill",
    "catchup",
)  # fmt: skip
# Keys whose value is one of a tuple of choices: on the wire, the index in the tuple.
_CHOICES = {"off_path": OFF_PATHS, "off_barrier": OFF_BARRIERS, "plain_kv": PLAIN_KV, "off_prefill": OFF_PREFILLS,
            "catchup": CATCHUPS}
# Optional keys: the number that means "unset" on the wire, one that is not a valid value (a
# hysteresis of 0 is valid: no hysteresis)
_UNSET_ON_WIRE = {"queue_threshold": 0, "min_accept_len": 0, "tpot_slo_ms": 0, "hysteresis": -1}
_FORCE_CODES = {None: 0, "off": -1, "on": -2}
# What a settings request may also ask of the controller: each the name of its method, run in
# this order after the settings changed
ACTIONS = ("relearn", "reset_stats")


class SettingsError(ValueError):
    pass


def validate_changes(current: AdaptiveSpecConfig, changes: dict) -> AdaptiveSpecConfig:
    """The config after `changes`, checked like the command line. Raises SettingsError."""
    if not isinstance(changes, dict) or not changes:
        raise SettingsError("expected a non-empty JSON object of settings")
    unknown = sorted(set(changes) - set(RUNTIME_KEYS))
    if unknown:
        raise SettingsError(
            f"cannot change {', '.join(unknown)} at run time (changeable: {', '.join(RUNTIME_KEYS)})"
        )
    data = {k: getattr(current, k) for k in current.keys()}
    data.update(changes)
    if data.get("queue_threshold") == "off":
        data["queue_threshold"] = None
    try:
        return AdaptiveSpecConfig.from_dict(data, source="run-time settings")
    except ConfigError as exc:
        raise SettingsError(str(exc)) from None


def encode_changes(new: AdaptiveSpecConfig, keys) -> dict:
    """Numbers for SGLang's set_internal_state request."""
    out = {}
    for key in keys:
        value = getattr(new, key)
        if key == "force":
            value = _FORCE_CODES.get(value) if value in _FORCE_CODES else int(value.split(":")[1])
        elif key == "fallback":
            value = 1 if value == "plain" else 0
        elif key in _CHOICES:
            value = _CHOICES[key].index(value)
        elif key == "policy":
            value = 1 if value == "goodput" else 0
        elif key == "log_decisions":
            value = int(bool(value))
        elif value is None:
            value = _UNSET_ON_WIRE.get(key, 0)
        out[PREFIX + key] = value
    return out


def decode_changes(numbers: dict) -> dict:
    changes = {}
    for wire_key, value in numbers.items():
        key = wire_key[len(PREFIX):]
        if key == "force":
            value = {0: None, -1: "off", -2: "on"}.get(int(value), f"flap:{int(value)}")
        elif key == "fallback":
            value = "plain" if value else "static"
        elif key in _CHOICES:
            value = _CHOICES[key][int(value)]
        elif key == "policy":
            value = "goodput" if value else "threshold"
        elif key == "log_decisions":
            value = bool(value)
        elif key in _UNSET_ON_WIRE and value == _UNSET_ON_WIRE[key]:
            value = None
        changes[key] = value
    return changes


# ---- scheduler-side hooks -----------------------------------------------------------
def after_get_internal_state(ret, sched, *args, **kwargs):
    ctl = get_controller()
    if ctl is not None:
        try:
            st = ctl.status()
            slow = slow_results.installed(ctl)
            if slow is not None:
                st["slow_results"] = slow.status()
            ret.internal_state["adaptive_spec"] = st
        except Exception as exc:  # status must never break /server_info
            logger.warning("adaptive_spec: status unavailable: %r", exc)
    return None


def around_set_internal_state(orig, sched, recv_req, *args, **kwargs):
    numbers = getattr(recv_req, "server_args", None) or {}
    ours = {k: v for k, v in numbers.items() if k.startswith(PREFIX)}
    if not ours:
        return orig(sched, recv_req, *args, **kwargs)
    from sglang.srt.managers.io_struct import SetInternalStateReqOutput

    ctl = get_controller()
    if ctl is None or len(ours) != len(numbers):
        logger.warning("adaptive_spec: rejected settings change %s (no controller, or mixed with SGLang keys)", numbers)
        return SetInternalStateReqOutput(updated=False)
    changes = decode_changes(ours)
    actions = [a for a in ACTIONS if changes.pop(a, None)]
    try:
        if changes:
            ctl.update_settings(validate_changes(ctl.cfg, changes))
        for action in actions:
            getattr(ctl, action)()
    except (SettingsError, ValueError) as exc:
        logger.warning("adaptive_spec: rejected settings change %s: %s", changes, exc)
        return SetInternalStateReqOutput(updated=False)
    return SetInternalStateReqOutput(updated=True)


# ---- HTTP routes (main process) -------------------------------------------------------
def install_routes(app) -> None:
    from fastapi.responses import JSONResponse

    async def _rank_states():
        from sglang.srt.entrypoints import http_server

        states = await http_server._global_state.tokenizer_manager.get_internal_state()
        return [s.get("adaptive_spec") for s in states]

    @app.get("/adaptive_spec/status")
    async def adaptive_spec_status():
        ranks = await _rank_states()
        first = next((r for r in ranks if r), None)
        body = {
            "ranks": ranks,
            "steps": (first or {}).get("decision", {}).get("steps") if first and first.get("decision") else None,
            "steps_histogram": (first or {}).get("steps_histogram"),
        }
        return JSONResponse(body)

    @app.post("/adaptive_spec/config")
    async def adaptive_spec_config(request: Request):
        from sglang.srt.entrypoints import http_server
        from sglang.srt.managers.io_struct import SetInternalStateReq

        try:
            changes = await request.json()
        except Exception:
            return JSONResponse({"ok": False, "error": "body is not JSON"}, status_code=400)
        asked = {a: bool(isinstance(changes, dict) and changes.pop(a, False)) for a in ACTIONS}
        ranks = await _rank_states()
        if not ranks or not ranks[0]:
            return JSONResponse({"ok": False, "error": "adaptive-spec is not active"}, status_code=409)
        current = AdaptiveSpecConfig.from_dict(ranks[0]["settings"], source="status")
        numbers = {}
        if changes:
            try:
                new = validate_changes(current, changes)
                built = ranks[0].get("built_steps") or current.candidate_steps()
                if not set(new.candidate_steps()) <= set(built):
                    raise SettingsError(f"policy {new.policy} needs step counts {new.candidate_steps()}; built at start: {built}")
            except SettingsError as exc:
                return JSONResponse({"ok": False, "error": str(exc)}, status_code=400)
            numbers = encode_changes(new, changes.keys())
        numbers.update({PREFIX + a: 1 for a in ACTIONS if asked[a]})
        if not numbers:
            return JSONResponse({"ok": False, "error": "expected a non-empty JSON object of settings"}, status_code=400)
        updated = await http_server._global_state.tokenizer_manager.set_internal_state(
            SetInternalStateReq(server_args=numbers)
        )
        ok = bool(updated) and all(updated)
        logger.info("adaptive_spec: settings change %s -> %s", changes, "applied" if ok else "rejected")
        return JSONResponse({"ok": ok, "changed": changes, **asked}, status_code=200 if ok else 400)
