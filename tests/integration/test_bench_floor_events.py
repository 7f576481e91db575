"""``python -m bench --floor-events``: the floor posts the operator's one Event per new user, and says so.

A smoke test, not a timed gate: N=10, the floor alone, against the test environment's API server and
MySQL server. The Events are counted by the API server (``apiserver_request_total``), as every floor write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.integration.bench_support import bench_env, run_bench

pytestmark = pytest.mark.integration


@pytest.mark.timeout(300)
def test_the_floor_posts_one_event_per_user(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = ["--n", "10", "--scenarios", "floor", "--no-peer", "--floor-events"]
    argv += ["--out", str(out), "--workdir", str(tmp_path / "work")]
    run_bench("bench", argv, bench_env(kube, mysql), timeout=240)
    results = json.loads((out / "results.json").read_text())
    assert results["options"]["floor_events"] is True
    (floor,) = results["convergence"]
    assert floor["implementation"] == "floor"
    assert floor["ready"] == 10
    # Finalizer, status and the Event: three writes per user, the Events among them.
    assert floor["apiserver_writes_by_resource"]["events"] == 10
    assert 2.9 <= floor["api_writes_per_user"] <= 3.5
