"""The count guard: a short convergence run (``python -m bench --n 200 --scenarios convergence``) may not
cost more per user than ``bench/results/counts.json`` records.

Counted, never timed: SQL statements per user (the server's own ``Questions`` counter), API writes per user
(the operator's ``rest_client_requests_total``), reconcile passes and requeues per user (its
``controller_runtime_reconcile_total`` by result). None of them depends on the machine's speed but for the
few passes a busy machine adds or saves (a watch event that arrives while a pass runs), which the recorded
ceilings allow for. A change that adds a statement, a write, a pass or a requeue says why in the same commit
and updates the file (bench/README.md, "The count guard").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.conftest import REPO
from tests.integration.bench_support import bench_env, run_bench
from tests.integration.operator.support.mysql import mysql_query

pytestmark = pytest.mark.integration

RECORDED = REPO / "bench" / "results" / "counts.json"


def per_user(row: dict[str, Any]) -> dict[str, float]:
    """The guarded figures of one convergence row of ``results.json``."""
    n, by_result = row["n"], row["reconciles_by_result"]
    return {
        "sql_statements_per_user": row["sql_statements_per_user"],
        "api_writes_per_user": row["operator_api_writes_per_user"],
        "reconciles_per_user": row["reconciles"] / n,
        "requeues_per_user": (by_result.get("requeue_after", 0) + by_result.get("error", 0)) / n,
    }


@pytest.mark.timeout(600)
def test_a_new_user_costs_no_more_than_recorded(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> None:
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    flavour = "mariadb" if "mariadb" in str(version).lower() else "mysql"
    recorded = json.loads(RECORDED.read_text())
    if flavour not in recorded["ceilings"]:
        pytest.skip(f"no counts recorded for {flavour}")
    ceilings: dict[str, float] = recorded["ceilings"][flavour]
    n = recorded["n"]

    out = tmp_path / "out"
    argv = ["--n", str(n), "--scenarios", "convergence", "--no-peer", "--time-limit", "400"]
    argv += ["--out", str(out), "--workdir", str(tmp_path / "work")]
    run_bench("bench", argv, bench_env(kube, mysql))
    (row,) = json.loads((out / "results.json").read_text())["convergence"]
    assert row["implementation"] == "operator"
    assert row["ready"] == n
    assert row["logins_ok"] == row["logins_checked"]
    assert row["events_dropped"] == 0

    measured = per_user(row)
    print(f"{flavour} N={n}: " + ", ".join(f"{name} {value:.3f}" for name, value in measured.items()))
    over = {name: f"{measured[name]:.3f} > {top}" for name, top in ceilings.items() if measured[name] > top}
    assert not over, f"more per user than {RECORDED.relative_to(REPO)} records: {over}"
