"""A restart over a converged fleet writes nothing: ``python -m bench --servers 2 --n 300 --scenarios
fleet,restart --restart-general-log``.

300 users over two local servers (MySQL 9.7 as a ClusterMySQLServer, MariaDB 11.8 as a MySQLServer) that
the harness starts itself, a fifth with connection Secrets, a tenth with a DatabaseRole; all Ready, then the
operator stopped and started again (the users and roles seeded under the chart's finalizer policy: the
operator converges them without a patch of their metadata). Counted, never timed, from the new operator's
start until its first pass over every resource ended and 10 s after: **0 writes** by the API server's own
counters (``apiserver_request_total``), by the operator's (``rest_client_requests_total``) and by the audit
log; **0 SQL writes** by the servers' ``Com_*`` counters and by their general logs (no DDL either); and every
resource was looked at in that first pass, every one found converged from one inventory per server and the
caches (connection Secrets included), so none reconciled.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.envtest import KubeCluster
from tests.integration.bench_support import bench_env, run_bench

pytestmark = pytest.mark.integration

N = 300
SERVERS = 2
# Statements per server, whatever N: 2 inventories, role grants, the server and role controllers' first
# passes, health probes, the harness's counter reads (45 measured with all 300 users found converged). One
# statement per user would be 300 more.
PER_SERVER = 50


def audited_writes(kube: KubeCluster, window: list[str]) -> list[str]:
    """The writes (other than Leases) the audit log has within ``window`` (ISO times, UTC)."""
    assert kube.control_plane is not None
    start, end = (datetime.fromisoformat(moment) for moment in window)
    found = []
    for line in kube.control_plane.audit_log.read_text().splitlines():
        event = json.loads(line)
        received = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if event.get("stage") != "ResponseComplete" or not start <= received <= end:
            continue
        if event["objectRef"].get("resource") != "leases":
            found.append(f"{event['verb']} {event['requestURI']}")
    return found


@pytest.mark.timeout(1200)
def test_a_restart_over_a_converged_fleet_writes_nothing(
    kube: KubeCluster, crds: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = ["--servers", str(SERVERS), "--n", str(N), "--scenarios", "fleet,restart", "--restart-general-log"]
    argv += ["--clean-last-fleet"]  # the session's API server: nothing left with the operator's finalizers
    argv += ["--time-limit", "900", "--out", str(out), "--workdir", str(tmp_path / "work")]
    argv += ["--no-settled-after-pass"]  # the restart's counts, not the settled RSS: no wait for a period
    run_bench("bench", argv, bench_env(kube), timeout=1140)
    results = json.loads((out / "results.json").read_text())
    assert "errors" not in results
    (row,) = results["fleet"]
    assert row["converged"]
    assert row["ready"] == N
    assert row["logins_ok"] == row["logins_checked"] == 5
    assert row["ready_servers"] == 2  # a ClusterMySQLServer and a MySQLServer
    assert row["ready_roles"] == row["roles"] > 0
    assert row["connection_secrets"] == N // 5
    assert row["role_users"] > 0
    # Seeded under the chart's finalizer policy: held from their creation, no finalizer patch to converge.
    assert row["finalizer_policy"]
    writes = row["apiserver_writes_by_resource"]
    assert writes.get("databaseusers", 0) == writes.get("databaseroles", 0) == 0, writes

    restart: dict[str, Any] = row["restart"]
    # Every resource was looked at in the restarted operator's first pass.
    assert set(restart["first_pass_seconds"]) >= {"databaseuser", "databaserole", "mysqlserver"}
    assert restart["reconciles"]["databaseuser"] >= N
    assert restart["reconciles"]["databaserole"] >= row["roles"]
    # Nothing written to the API server: by its own counters, the operator's, and the audit log.
    assert restart["apiserver_writes"] == 0, restart["apiserver_writes_by_resource"]
    assert restart["operator_api_writes"] == 0, restart["operator_requests_by_method"]
    if kube.control_plane is not None:
        assert audited_writes(kube, restart["window_utc"]) == []
    # Nothing written to MySQL: by the servers' counters and their general logs (DDL included).
    assert restart["sql_writes"] == 0, restart["sql"]
    assert restart["general_log"]["writes"] == {"s0": [], "s1": []}
    assert all(count > 0 for count in restart["general_log"]["statements"].values())  # the log was on

    # Found converged: every user, those with a connection Secret too (rendered in memory and compared with
    # the cached Secret).
    converged = restart["converged_at_start"]
    reconciled = restart["reconciles"]["databaseuser"] - converged
    assert converged == N, restart
    # Statements: a constant per server, and per reconciled user no more than a creation took.
    per_reconcile = math.ceil(row["sql_statements_per_user"])
    assert restart["sql"]["Questions"] <= PER_SERVER * SERVERS + per_reconcile * reconciled, restart["sql"]
