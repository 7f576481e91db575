"""The Grafana dashboard: every query names metrics the operator exports, and the chart ships it in a
ConfigMap only when asked."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.unit.chart.chart import CHART, of_kind, one, render

DASHBOARD = CHART / "dashboards" / "dbuser-operator.json"

# PromQL words that are not metric names: aggregations, functions (followed by "("), keywords.
KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
COMPLIANCE_METRICS = {
    "dbuser_operator_oldest_password_age_seconds",
    "dbuser_operator_passwords_over_max_lifetime",
    "dbuser_operator_rotations_overdue",
    "dbuser_operator_accounts_without_tls",
    "dbuser_operator_accounts_with_global_privileges",
    "dbuser_operator_accounts_with_grant_option",
    "dbuser_operator_retained_passwords_past_grace",
    "dbuser_operator_server_orphaned_accounts",
    "dbuser_operator_accounts_locked",
    "dbuser_operator_accounts_expiring",
    "dbuser_operator_passwords_expired",
}


def exported_names() -> set[str]:
    """Every series name the operator's registry can expose, after importing the whole operator."""
    import dbuser_operator.app  # noqa: F401, PLC0415 - registers every metric of the operator
    from dbuser_operator.runtime.metrics import REGISTRY  # noqa: PLC0415

    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix for family in REGISTRY.collect() for suffix in suffixes.get(family.type, ("",))
    }


def expressions(node: Any) -> Iterator[str]:
    """Every PromQL expression of the dashboard: panel targets and template variable queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"expr", "definition"} and isinstance(value, str):
                yield value
            else:
                yield from expressions(value)
    elif isinstance(node, list):
        for item in node:
            yield from expressions(item)


def metric_names(expr: str) -> set[str]:
    """The metric names of a PromQL expression (or of a label_values() query)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # label values
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)  # label lists
    expr = re.sub(r"\blabel_values\(([^,()]*),[^)]*\)", r"\1", expr)  # label_values(metric, label)
    words = re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\()?)", expr)
    return {word.group(0) for word in words if word.group(1) is None and word.group(0) not in KEYWORDS}


def test_the_name_parser() -> None:
    assert metric_names('sum by (a, b) (rate(x_total{c="d e"}[5m])) / on (a) y > 0') == {"x_total", "y"}
    assert metric_names('label_values(m{server=~"$server"}, namespace)') == {"m"}


def test_every_query_names_a_metric_the_operator_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exported = exported_names()
    used: set[str] = set()
    for expr in expressions(dashboard):
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= exported, f"{sorted(names - exported)} (in {expr!r}) are not exported by the operator"
        used |= names
    assert used >= COMPLIANCE_METRICS  # every compliance metric has a panel
    assert {"dbuser_operator_mysql_server_up", "dbuser_operator_mysql_server_pool_size"} <= used


def test_a_misspelt_name_would_be_found() -> None:
    assert not metric_names("dbuser_operator_password_age_secs") <= exported_names()


def test_the_chart_ships_the_dashboard_only_when_asked(helm: Path, tmp_path: Path) -> None:
    assert of_kind(render(helm, tmp_path), "ConfigMap") == []
    folder = {"grafana_folder": "Databases"}
    values = {"metrics": {"grafanaDashboard": {"enabled": True, "annotations": folder}}}
    configmap = one(render(helm, tmp_path, values, release="dbu", namespace="ops"), "ConfigMap")
    assert configmap["metadata"]["name"] == "dbu-dbuser-operator-dashboard"
    assert configmap["metadata"]["namespace"] == "ops"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["annotations"] == folder
    assert json.loads(configmap["data"]["dbuser-operator.json"]) == json.loads(DASHBOARD.read_text())
