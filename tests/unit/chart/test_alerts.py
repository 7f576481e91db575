"""The chart's PrometheusRule: off by default; when on, the four alerts of docs/metrics.md, every expression
naming metrics the operator registers, scoped to the release's scrape job (its metrics Service)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.chart.chart import of_kind, one, render
from tests.unit.chart.test_dashboard import exported_names, metric_names

ALERTS = {
    "DBUserOperatorMySQLServerDown",
    "DBUserOperatorRotationsOverdue",
    "DBUserOperatorResourcesDegraded",
    "DBUserOperatorLeaderChanges",
}


def test_the_rule_is_off_by_default(helm: Path, tmp_path: Path) -> None:
    assert of_kind(render(helm, tmp_path), "PrometheusRule") == []


def test_every_alert_names_metrics_the_operator_registers(helm: Path, tmp_path: Path) -> None:
    values = {"metrics": {"prometheusRule": {"enabled": True, "labels": {"release": "prom"}}}}
    rule = one(render(helm, tmp_path, values, release="dbu", namespace="ops"), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "prom"
    rules = [rule for group in rule["spec"]["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} == ALERTS
    exported = exported_names()
    for alert in rules:
        names = metric_names(alert["expr"])
        assert names, alert["expr"]
        assert names <= exported, f"{sorted(names - exported)} in {alert['alert']} are not registered"
        assert 'job="dbu-dbuser-operator-metrics"' in alert["expr"]
        assert alert["labels"]["severity"] in {"critical", "warning"}
    degraded = next(rule for rule in rules if rule["alert"] == "DBUserOperatorResourcesDegraded")
    assert degraded["for"] == "10m"


def test_alert_labels_go_on_every_alert(helm: Path, tmp_path: Path) -> None:
    values = {"metrics": {"prometheusRule": {"enabled": True, "alertLabels": {"team": "databases"}}}}
    rule = one(render(helm, tmp_path, values), "PrometheusRule")
    assert all(
        rule["labels"]["team"] == "databases" for group in rule["spec"]["groups"] for rule in group["rules"]
    )
