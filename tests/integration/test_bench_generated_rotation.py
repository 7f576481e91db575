"""The rotation bench (``python -m bench.generated_rotation``) runs end to end on the session's servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.integration.bench_support import bench_env, run_bench

pytestmark = pytest.mark.integration


@pytest.mark.timeout(600)
def test_generated_rotation_bench_smoke(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "generated-rotation.json"
    arguments = ["--n", "8", "--samples", "3", "--clients", "4", "--grace", "2s", "--out", str(out)]
    run_bench("bench.generated_rotation", arguments, bench_env(kube, mysql))
    figures = json.loads(out.read_text())
    assert (figures["n"], figures["samples"]) == (8, 3)
    if figures["mysql_version"].startswith(("8.", "9.")) and "MariaDB" not in figures["mysql_version"]:
        assert figures["strategies"] == ["DualPassword"]
        assert figures["failed_logins"] == 0
    else:  # Immediate (MariaDB): a client still holding the old password may be refused (counted)
        assert figures["strategies"] == ["Immediate"]
    assert figures["logins"] > 0
    assert (
        0
        < figures["trigger_to_connection_secret_ms"]["p50"]
        <= figures["trigger_to_new_password_logs_in_ms"]["p50"]
    )
    assert (
        figures["apiserver_writes_per_rotation_by_resource"]["secrets"] >= 1
    )  # the connection Secret at least
    assert figures["operator_api_writes_per_rotation"] > 0
