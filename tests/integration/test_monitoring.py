"""The Grafana dashboard and the alert rules read series that exist: ours as the real `Metrics`
exports them, SGLang's as 0.5.16 declares them (its own source file)."""

import importlib.util
import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from adaptive_spec import monitoring
from adaptive_spec.config import AdaptiveSpecConfig
from adaptive_spec.controller import Controller
from adaptive_spec.sglang_plugin.metrics import install_metrics
from adaptive_spec.signals import LoadSnapshot

# Labels an expression may group by: our series' own, and those Prometheus adds to every target
LABELS = {"tp_rank", "reason", "steps", "position", "le", "instance", "job"}


def exported_samples():
    """(family name -> kind, sample names) of a goodput server's series after a few decisions,
    a result and a slow update: every series has a child then."""
    ctl = Controller(AdaptiveSpecConfig(policy="goodput", max_steps=3))
    reg = CollectorRegistry()
    metrics = install_metrics(ctl, rank=0, registry=reg)
    snap = LoadSnapshot(running=4, kv_used=100, kv_total=10**6)
    ctl.on_snapshot(snap)
    for _ in range(3):
        ctl.decide(4)
    ctl.on_result(3, [2, 1, 3, 0])
    metrics.on_result(3, 0.012)
    metrics._slow_update(snap)
    families = {f.name: f.type for f in reg.collect()}
    samples = {s.name for f in reg.collect() for s in f.samples}
    return families, samples


def sglang_declared_series():
    spec = importlib.util.find_spec("sglang")
    root = Path(spec.origin).parent / "srt" / "observability" / "metrics_collector.py"
    return set(re.findall(r'name="(sglang:[a-z_]+)"', root.read_text()))


def test_our_metrics_register_exactly_the_series_the_dashboard_knows():
    families, _ = exported_samples()
    assert families == monitoring.SERIES


def test_every_expression_reads_series_that_are_exported():
    _, samples = exported_samples()
    sglang = sglang_declared_series()
    assert set(monitoring.SGLANG_SERIES) <= sglang
    exprs = monitoring.expressions()
    assert len(exprs) >= 20
    for expr in exprs:
        names = monitoring.series_in(expr)
        assert names, expr
        for name in names:
            assert name in samples or name in sglang, (name, expr)


def test_expressions_group_by_labels_the_series_carry_and_are_balanced():
    for expr in monitoring.expressions():
        for group in re.findall(r"\b(?:by|without) \(([^)]*)\)", expr):
            assert {g.strip() for g in group.split(",")} <= LABELS, expr
        for open_, close in ("()", "{}", "[]"):
            depth = 0
            for ch in expr:
                depth += (ch == open_) - (ch == close)
                assert depth >= 0, expr
            assert depth == 0, expr


def test_the_dashboard_is_grafana_json_with_a_data_source_variable_and_a_tidy_grid():
    out = io.StringIO()
    with redirect_stdout(out):
        assert monitoring.main(["grafana"]) == 0
    board = json.loads(out.getvalue())
    assert board["templating"]["list"][0]["type"] == "datasource"
    panels = board["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
        refs = [t["refId"] for t in p["targets"]]
        assert len(set(refs)) == len(refs) and all(t["expr"] for t in p["targets"])
        assert all(t["datasource"]["uid"] == "${datasource}" for t in p["targets"])


def test_the_rules_file_is_prometheus_yaml_with_severity_and_summary():
    out = io.StringIO()
    with redirect_stdout(out):
        assert monitoring.main(["rules"]) == 0
    rules = yaml.safe_load(out.getvalue())
    assert rules == monitoring.alert_rules()
    (group,) = rules["groups"]
    names = [r["alert"] for r in group["rules"]]
    assert names == ["AdaptiveSpecFallback", "AdaptiveSpecRanksDisagree", "AdaptiveSpecFlapping",
                     "AdaptiveSpecDecideSlow", "AdaptiveSpecHostStalls", "AdaptiveSpecCostModelOff"]
    for r in group["rules"]:
        assert re.fullmatch(r"\d+m", r["for"])
        assert r["labels"]["severity"] in ("warning", "critical")
        assert r["annotations"]["summary"] and r["annotations"]["description"]


def test_an_unknown_output_is_refused_with_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        monitoring.main(["dashboards"])
    assert exc.value.code == 2
    assert "invalid choice: 'dashboards'" in capsys.readouterr().err
