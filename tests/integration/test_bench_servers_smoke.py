"""The benchmark harness over three servers (``python -m bench --servers 3``) runs end to end.

A smoke test, not a timed gate: N=12 users spread by ``spec.serverRef`` over three local servers of
different flavours (MySQL 9.7, MariaDB 11.8, MariaDB 10.11) that the harness starts itself, a MySQLServer
each; the floor with one pool per server; the operator's cold start. It checks that every account was made
on the server its user names, and that a restart over them writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster
from tests.integration.bench_support import bench_env, run_bench

pytestmark = pytest.mark.integration


@pytest.mark.timeout(600)
def test_bench_over_three_servers(kube: KubeCluster, crds: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["--servers", "3", "--n", "12", "--scenarios", "convergence,floor,coldstart"]
    run_bench("bench", [*argv, "--out", str(out), "--workdir", str(tmp_path / "work")], bench_env(kube))
    results = json.loads((out / "results.json").read_text())
    assert "errors" not in results
    assert results["options"]["servers"] == 3
    servers = results["machine"]["servers"]
    assert [server["flavour"] for server in servers] == ["mysql-9.7", "mariadb-11.8", "mariadb-10.11"]
    assert servers[0]["version"].startswith("9.7.")
    assert servers[1]["version"].startswith("11.8.")
    assert servers[2]["version"].startswith("10.11.")

    rows = {row["implementation"]: row for row in results["convergence"]}
    assert set(rows) == {"operator", "floor"}
    for kind, row in rows.items():
        assert row["converged"], kind
        assert row["ready"] == 12, kind
        # Summed over the three servers: one CREATE USER and one GRANT per user, whichever server it names.
        assert row["sql"]["Com_create_user"] == 12, kind
        assert row["sql"]["Com_grant"] >= 12, kind
        assert row["logins_ok"] == row["logins_checked"] == 5, kind  # on the server each user names
    assert 1.9 <= rows["floor"]["api_writes_per_user"] <= 2.5
    # The servers' own CPU is measured: kube-apiserver, etcd and each of the three servers.
    assert {"mysqld-s0", "mysqld-s1", "mysqld-s2"} <= set(rows["operator"]["server_cpu_seconds"])

    cold = results["coldstart"]
    assert cold["n"] == 15  # 12 users and a warm-up user per server
    assert cold["reconciles"] >= 15
    assert cold["operator_api_writes"] == 0
    assert cold["sql_writes"] == 0
    target = next(t for t in results["targets"] if t["name"] == "convergence N=12 vs floor")
    assert target["target"].startswith("≤ 1.2x floor")
