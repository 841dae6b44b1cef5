"""A Grafana dashboard and Prometheus alert rules for adaptive-spec's series (and SGLang's load).

    python -m adaptive_spec.monitoring grafana > adaptive-spec-dashboard.json
    python -m adaptive_spec.monitoring rules > adaptive-spec-rules.yml

The dashboard imports into Grafana (a Prometheus data source is asked for at import); the rules
file goes into Prometheus' `rule_files`. Both are generated here, from `SERIES`, so that a
renamed series fails a test instead of leaving an empty panel
(`tests/integration/test_monitoring.py` checks every expression against the series our
`Metrics` registers and those SGLang 0.5.16 declares). Every rank of a tensor-parallel server
exports the same decisions (`tp_rank` label), so the expressions take the max over ranks, not
the sum. Core module: never imports SGLang.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Dict, List, Tuple

from .policy.realized import RealizedRate

# Our series on SGLang's /metrics (sglang_plugin/metrics.py registers them), name -> kind.
SERIES: Dict[str, str] = {
    "adaptive_spec_drafting": "gauge",
    "adaptive_spec_steps": "gauge",
    "adaptive_spec_fallback": "gauge",
    "adaptive_spec_decisions": "counter",
    "adaptive_spec_switches": "counter",
    "adaptive_spec_decide_seconds": "counter",
    "adaptive_spec_step_seconds": "histogram",
    "adaptive_spec_accept_rate_position": "gauge",
    "adaptive_spec_predicted_step_seconds": "gauge",
    "adaptive_spec_realized_ratio": "gauge",
    "adaptive_spec_slow_decode_results": "counter",
}
# SGLang's series the dashboard reads beside ours (all exported by 0.5.16 with --enable-metrics)
SGLANG_SERIES = ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
                 "sglang:gen_throughput", "sglang:spec_accept_length")

RANKS = "max without (tp_rank)"  # every rank decides the same: one line per server, not per rank
RATE = "$__rate_interval"
DECISIONS = f"{RANKS} (rate(adaptive_spec_decisions_total[{RATE}]))"
DRAFTING_DECISIONS = f'{RANKS} (rate(adaptive_spec_decisions_total{{steps!="0"}}[{RATE}]))'

# Alert thresholds. A switch on costs a catch-up step, so the policies switch rarely (hysteresis,
# the goodput policy's switch margin and priced switch cost); one switch in 4 decisions for 15
# minutes is flapping. The decision's budget is 20 us (issue 5; 5-12 us on the H200 servers).
FLAP_SHARE = 0.25
DECIDE_SLOW_S = 50e-6
# Decode results of 80 ms or more (sglang_plugin/slow_results.py): one now and then is a kernel
# built on first use; more than one a minute for 10 minutes is a server that keeps stalling.
STALLS_PER_10M = 10
# The goodput policy's realized ratio is clipped (policy/realized.py): a step count at a bound
# delivered a quarter less, or a third more, than the cost model said, which the policy reads as
# a broken input (its correction stops there), not a model error.
REALIZED_LOW, REALIZED_HIGH = RealizedRate.LOW, RealizedRate.HIGH


def _target(expr: str, legend: str, ref: str) -> dict:
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
            "legendFormat": legend, "refId": ref}


def _panel(pid: int, title: str, targets: List[Tuple[str, str]], pos: Tuple[int, int, int, int],
           unit: str = "short", kind: str = "timeseries", description: str = "",
           stacked: bool = False) -> dict:
    x, y, w, h = pos
    panel = {
        "id": pid, "type": kind, "title": title, "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": [_target(e, legend, chr(ord("A") + i)) for i, (e, legend) in enumerate(targets)],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
    }
    if stacked:
        panel["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal"},
                                                      "fillOpacity": 60}
    return panel


def _panels() -> List[dict]:
    step_q = ("histogram_quantile({q}, sum by (instance, steps, le) ({ranks} "
              "(rate(adaptive_spec_step_seconds_bucket[{rate}]))))")
    decisions_by_rank = (f"sum without (reason, steps) "
                         f"(rate(adaptive_spec_decisions_total[{RATE}]))")
    specs = [
        # row 1: the state now
        ("Draft steps now", [(f"{RANKS} (adaptive_spec_steps)", "{{instance}}")],
         (0, 0, 6, 4), "short", "stat", "The step count the policy chose for the latest decode "
         "step (0: drafting off)."),
        ("Drafting share", [(f"sum by (instance) ({DRAFTING_DECISIONS}) / "
                             f"sum by (instance) ({DECISIONS})", "{{instance}}")],
         (6, 0, 6, 4), "percentunit", "stat", "Share of decode steps that drafted."),
        ("Switches / decision", [(f"sum by (instance) ({RANKS} "
                                  f"(rate(adaptive_spec_switches_total[{RATE}]))) / "
                                  f"sum by (instance) ({DECISIONS})", "{{instance}}")],
         (12, 0, 6, 4), "percentunit", "stat", "Changes of the chosen step count per decision: "
         "each switch on costs a catch-up step."),
        ("Fallback", [("max by (instance) (adaptive_spec_fallback)", "{{instance}}")],
         (18, 0, 6, 4), "short", "stat", "1 once a hook or the policy failed: the server keeps "
         "serving with --adaptive-spec-fallback; the reason is in /adaptive_spec/status."),
        # row 2: the choice against the load
        ("Draft steps chosen", [(f"{RANKS} (adaptive_spec_steps)", "{{instance}}")],
         (0, 4, 12, 8), "short", "timeseries",
         "Follows the load: more steps when the GPU is idle."),
        ("Load (SGLang)", [(f"{RANKS} (sglang:num_running_reqs)", "running {{instance}}"),
                           (f"{RANKS} (sglang:num_queue_reqs)", "waiting {{instance}}")],
         (12, 4, 12, 8), "short", "timeseries", "Running and waiting requests."),
        # row 3: why
        ("Decisions by reason", [(f"sum by (instance, reason) ({DECISIONS})",
                                  "{{reason}} {{instance}}")],
         (0, 12, 12, 8), "ops", "timeseries", "cost_model / threshold / queue / acceptance / "
         "probe / refresh / reprobe / slo / idle / forced / fallback (README, Prometheus).",
         True),
        ("Decisions by step count", [(f"sum by (instance, steps) ({DECISIONS})",
                                      "k={{steps}} {{instance}}")],
         (12, 12, 12, 8), "ops", "timeseries", "", True),
        # row 4: the cost model
        ("Measured step time by step count", [
            (step_q.format(q=0.5, ranks=RANKS, rate=RATE), "p50 k={{steps}} {{instance}}"),
            (step_q.format(q=0.9, ranks=RANKS, rate=RATE), "p90 k={{steps}} {{instance}}")],
         (0, 20, 12, 8), "s", "timeseries", "Wall time between processed decode results."),
        ("Predicted step time (goodput policy)", [
            (f"{RANKS} (adaptive_spec_predicted_step_seconds)", "k={{steps}} {{instance}}")],
         (12, 20, 12, 8), "s", "timeseries", "The cost model's t(batch bucket, k) at the "
         "current batch, prefills included; empty under the threshold policy."),
        # row 5: acceptance and output
        ("Acceptance per draft position", [
            (f"{RANKS} (adaptive_spec_accept_rate_position)",
             "position {{position}} {{instance}}")],
         (0, 28, 12, 8), "percentunit", "timeseries",
         "P(draft j right | drafts before it right), pooled and decayed."),
        ("Output (SGLang)", [("sum by (instance) (max without (tp_rank) (sglang:gen_throughput))",
                              "tok/s {{instance}}"),
                             ("max by (instance) (sglang:spec_accept_length)",
                              "accept length {{instance}}")],
         (12, 28, 12, 8), "short", "timeseries", ""),
        # row 6: health
        ("Decision cost per rank", [(f"rate(adaptive_spec_decide_seconds_total[{RATE}]) / "
                                     f"{decisions_by_rank}", "{{instance}} rank {{tp_rank}}")],
         (0, 36, 8, 8), "s", "timeseries", "Wall time of one decision (budget 20 us)."),
        ("Ranks disagreeing", [("max by (instance) (adaptive_spec_steps) - "
                                "min by (instance) (adaptive_spec_steps)", "{{instance}}")],
         (8, 36, 8, 8), "short", "timeseries", "0 when every tensor-parallel rank runs the same "
         "step count, as they must."),
        ("KV use (SGLang)", [("max without (tp_rank) (sglang:token_usage)", "{{instance}}")],
         (16, 36, 8, 8), "percentunit", "timeseries", ""),
        # row 7: the cost model against what each k delivered
        ("Delivered over predicted (goodput policy)", [
            (f"{RANKS} (adaptive_spec_realized_ratio)", "k={{steps}} {{instance}}")],
         (0, 44, 24, 8), "short", "timeseries", "What each step count delivered at the current "
         "batch bucket over the cost model's prediction (1 = as modelled; below 1: the model "
         "overrates it). Empty under the threshold policy."),
        # row 8: host stalls
        ("Slow decode results", [(f"{RANKS} (increase(adaptive_spec_slow_decode_results_total"
                                  f"[{RATE}]))", "{{instance}}")],
         (0, 52, 24, 6), "short", "timeseries", "Decode results of 80 ms or more: every request "
         "in flight waited. The server log's 'a decode result took' lines give each one's batch, "
         "k and the Triton kernels built meanwhile."),
    ]
    return [_panel(i + 1, title, targets, pos, unit, kind, description, *rest)
            for i, (title, targets, pos, unit, kind, description, *rest) in enumerate(specs)]


def dashboard() -> dict:
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
                      "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "title": "adaptive-spec", "uid": "adaptive-spec", "tags": ["sglang", "adaptive-spec"],
        "timezone": "browser", "schemaVersion": 39, "version": 1, "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus",
                                 "current": {}, "hide": 0, "label": "Prometheus"}]},
        "panels": _panels(),
    }


def alert_rules() -> dict:
    per_server = "by (instance, job)"
    decisions = (f"max without (tp_rank) (sum without (reason, steps) "
                 f"(rate(adaptive_spec_decisions_total[15m])))")
    rules = [
        {"alert": "AdaptiveSpecFallback",
         "expr": (f"max {per_server} (adaptive_spec_fallback) > 0 or sum {per_server} "
                  f'(increase(adaptive_spec_decisions_total{{reason="fallback"}}[5m])) > 0'),
         "for": "1m", "labels": {"severity": "warning"},
         "annotations": {
             "summary": "adaptive-spec fell back to static behaviour on {{ $labels.instance }}",
             "description": ("A hook or the policy failed; the server keeps serving with "
                             "--adaptive-spec-fallback (static EAGLE-3 or drafting off) for the "
                             "rest of the run. The reason: GET /adaptive_spec/status (`fallback`) "
                             "or the log line 'adaptive_spec: ... failed; falling back'.")}},
        {"alert": "AdaptiveSpecRanksDisagree",
         "expr": (f"max {per_server} (adaptive_spec_steps) != "
                  f"min {per_server} (adaptive_spec_steps)"),
         "for": "2m", "labels": {"severity": "critical"},
         "annotations": {
             "summary": ("tensor-parallel ranks run different draft step counts on "
                         "{{ $labels.instance }}"),
             "description": ("Every rank must decide the same each step (rank-identical inputs, "
                             "the step-time table merged across ranks); ranks that disagree "
                             "launch different kernels and the server hangs. Compare the ranks' "
                             "`adaptive_spec rank_check` log lines (a digest per 1,024 "
                             "decisions).")}},
        {"alert": "AdaptiveSpecFlapping",
         "expr": (f"sum {per_server} (max without (tp_rank) "
                  f"(rate(adaptive_spec_switches_total[15m]))) / sum {per_server} ({decisions})"
                  f" > {FLAP_SHARE}"),
         "for": "15m", "labels": {"severity": "warning"},
         "annotations": {
             "summary": ("the chosen step count changes on more than 1 in 4 decisions on "
                         "{{ $labels.instance }}"),
             "description": ("Each switch on costs a catch-up step. Threshold policy: widen "
                             "--adaptive-spec-hysteresis; goodput: the decisions by reason "
                             "(probe / refresh) and the status's `follow` show what moves it.")}},
        {"alert": "AdaptiveSpecDecideSlow",
         "expr": (f"max {per_server} (rate(adaptive_spec_decide_seconds_total[15m]) / "
                  f"sum without (reason, steps) (rate(adaptive_spec_decisions_total[15m])))"
                  f" > {DECIDE_SLOW_S:g}"),
         "for": "15m", "labels": {"severity": "warning"},
         "annotations": {
             "summary": "a drafting decision takes over 50 us on {{ $labels.instance }}",
             "description": ("Budget 20 us (5-12 us on the H200 servers). The status's "
                             "decide_us_p50 against decide_cpu_us_p50 tells a waiting scheduler "
                             "thread (GIL, preemption) from a slow one; policy_decide_us_p50 is "
                             "the same policy timed at start.")}},
        {"alert": "AdaptiveSpecHostStalls",
         "expr": (f"sum {per_server} (max without (tp_rank) "
                  f"(increase(adaptive_spec_slow_decode_results_total[10m]))) > {STALLS_PER_10M}"),
         "for": "10m", "labels": {"severity": "warning"},
         "annotations": {
             "summary": ("decode steps of 80 ms or more keep coming on {{ $labels.instance }}"),
             "description": ("Each held every request in flight. The log lines 'adaptive_spec: "
                             "a decode result took ...' (and 'full catch-up of ...') give the "
                             "batch size, step count and the Triton kernels built meanwhile: "
                             "builds point at first-use compiles (the extend warm-up covers a "
                             "catch-up's sizes), none at the host (CPU contention, GC) or the "
                             "GPU.")}},
        {"alert": "AdaptiveSpecCostModelOff",
         "expr": (f"count {per_server} (adaptive_spec_realized_ratio <= {REALIZED_LOW:g} or "
                  f"adaptive_spec_realized_ratio >= {REALIZED_HIGH:g}) > 0"),
         "for": "30m", "labels": {"severity": "warning"},
         "annotations": {
             "summary": ("a step count delivers far from what the goodput cost model predicts on "
                         "{{ $labels.instance }}"),
             "description": (f"Its realized ratio sits at the bound of its correction "
                             f"({REALIZED_LOW:g} or {REALIZED_HIGH:g}) at the current batch "
                             "size, so the policy may choose wrong "
                             "there. The status's cost_model (step_ms, "
                             "prefill_ms_admitted_tokens_per_step, realized_ratio) shows which "
                             "part is off; ADAPTIVE_SPEC_SAMPLE_LOG=1 and `python -m "
                             "adaptive_spec.bench.sample_summary --realized` show what each step "
                             "count delivered.")}},
    ]
    return {"groups": [{"name": "adaptive-spec", "rules": rules}]}


def series_in(expr: str) -> List[str]:
    """The metric names an expression reads (ours and SGLang's)."""
    return re.findall(r"\b(adaptive_spec_[a-z_]+|sglang:[a-z_]+)", expr)


def expressions() -> List[str]:
    """Every PromQL expression of the dashboard and the rules."""
    exprs = [t["expr"] for p in dashboard()["panels"] for t in p["targets"]]
    return exprs + [r["expr"] for g in alert_rules()["groups"] for r in g["rules"]]


def _rules_text() -> str:
    try:
        import yaml  # SGLang's dependency, so present wherever the server is
    except ImportError:  # JSON is YAML too
        return json.dumps(alert_rules(), indent=2) + "\n"
    return yaml.safe_dump(alert_rules(), sort_keys=False, width=100)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m adaptive_spec.monitoring",
                                 description="Print adaptive-spec's Grafana dashboard (JSON) "
                                             "or Prometheus alert rules (YAML).")
    ap.add_argument("what", choices=("grafana", "rules"))
    a = ap.parse_args(argv)
    sys.stdout.write(json.dumps(dashboard(), indent=1) + "\n" if a.what == "grafana"
                     else _rules_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
