"""``python -m bench --kind Database``: Databases created and timed to Ready (floor and operator).

A smoke test, not a timed gate: N=10 against the test environment's API server and MySQL server. The
databases are counted by the server (``Com_create_db``), the writes by the API server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.integration.bench_support import bench_env, run_bench

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_databases_converge_under_the_floor_and_the_operator(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = ["--kind", "Database", "--n", "10", "--scenarios", "convergence,floor", "--no-peer"]
    argv += ["--out", str(out), "--workdir", str(tmp_path / "work")]
    run_bench("bench", argv, bench_env(kube, mysql), timeout=240)
    results = json.loads((out / "results.json").read_text())
    assert results["options"]["kind"] == "Database"
    rows = {row["implementation"]: row for row in results["convergence"]}
    assert rows.keys() == {"floor", "operator"}
    for row in rows.values():
        assert row["ready"] == 10
        assert row["sql"]["Com_create_db"] == 10  # one CREATE DATABASE per Database, none for Secrets
        assert row["apiserver_writes_by_resource"]["databases/status"] == 10
        assert row["logins_ok"] == row["logins_checked"] == 5  # the databases exist in the server
    assert rows["floor"]["api_writes_per_user"] == 2  # finalizer and status
    assert rows["operator"]["apiserver_writes_by_resource"]["events"] == 10  # and DatabaseCreated
    assert rows["operator"]["reconciles"] >= 10  # the Database controller's, counted
    assert "Databases, one CREATE DATABASE each" in (out / "results.md").read_text()
