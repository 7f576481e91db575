"""The rotation bench (``python -m bench.generated_rotation``) runs end to end on the session's servers, and a
generated password's rotation costs no more writes than ``bench/results/counts.json`` records (the count
guard's, as ``test_bench_counts.py`` holds new users and Secret rotations to it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.conftest import REPO
from tests.integration.bench_support import bench_env, run_bench
from tests.integration.test_bench_counts import RECORDED, flavour_of, over_ceilings

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
    assert figures["strategies"] == ["DualPassword"]  # the default on MySQL 9.7 and MariaDB 10.11+
    assert figures["failed_logins"] == 0
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

    recorded = json.loads(RECORDED.read_text())["generated_rotation"]
    flavour = flavour_of(mysql)
    if flavour in recorded["ceilings"]:
        measured = {
            "api_writes_per_rotation": figures["operator_api_writes_per_rotation"],
            "sql_writes_per_rotation": sum(figures["sql_writes_per_rotation"].values()),
        }
        print(f"{flavour} {figures['samples']} generated rotations: {measured}")
        over = over_ceilings(measured, recorded["ceilings"][flavour])
        assert not over, f"more per generated rotation than {RECORDED.relative_to(REPO)} records: {over}"
