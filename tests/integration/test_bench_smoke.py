"""The benchmark harness (``python -m bench --smoke``) runs end to end and reports sane numbers.

A smoke test, not a timed gate: N=10, 10 s idle, the floor and the kopf peer at N=10 (created live and
as a backlog), against the test environment's API server and MySQL server. It checks that the table, the
JSON and the PNG are produced and that what they say is plausible; whether the targets pass is the full
benchmark's business.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.integration.bench_support import bench_env, run_bench

pytestmark = pytest.mark.integration


@pytest.mark.timeout(600)
def test_bench_smoke(kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["--smoke", "--out", str(out), "--workdir", str(tmp_path / "work")]
    result = run_bench("bench", argv, bench_env(kube, mysql))

    # The three artefacts: the table (printed and written), the JSON, a commit-sized PNG.
    table = (out / "results.md").read_text()
    assert "| 10 | operator" in table
    assert "Targets:" in table
    assert table.strip().splitlines()[-1] in result.stdout
    png = (out / "results.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert 10_000 < len(png) < 200_000
    results = json.loads((out / "results.json").read_text())
    assert results["smoke"] is True
    assert "errors" not in results
    assert results["machine"]["cpus"] >= 1
    assert results["machine"]["kube_version"].startswith("v")

    # Convergence: the operator, the floor and the kopf peer each made 10 accounts that log in.
    rows = {row["implementation"]: row for row in results["convergence"]}
    assert set(rows) == {"operator", "floor", "kopf"}
    for kind, row in rows.items():
        assert row["n"] == 10
        assert row["converged"], kind
        assert row["ready"] == 10, kind
        assert 0 < row["seconds"] < 120, kind
        assert 0 < row["latency_p50_ms"] <= row["latency_p99_ms"] <= row["latency_max_ms"], kind
        assert row["logins_checked"] == 5
        assert row["logins_ok"] == 5, kind
        assert row["sql"]["Com_create_user"] >= 10, kind
        assert row["sql"]["Com_grant"] >= 10, kind
        assert row["cpu_seconds"] > 0, kind
        assert 10 < row["peak_rss_mib"] < 2048, kind
    # The floor makes exactly two API writes per user (finalizer, status): the counting is sound.
    assert 1.9 <= rows["floor"]["api_writes_per_user"] <= 2.5
    operator = rows["operator"]
    assert 2 <= operator["operator_api_writes_per_user"] <= 10
    assert operator["reconciles"] >= 10
    assert operator["sql_statements_per_user"] >= 2

    # Backlog: the same three, started on 10 objects created beforehand.
    backlog = {row["implementation"]: row for row in results["backlog"]}
    assert set(backlog) == {"operator", "floor", "kopf"}
    for kind, row in backlog.items():
        assert row["ready"] == 10, kind
        assert 0 < row["seconds"] < 120, kind
        assert row["logins_ok"] == row["logins_checked"] == 5, kind

    # Rotation, idle, cold start: measured, and what the operator itself counts is plausible.
    rotation = results["rotation"]
    assert rotation["samples"] == 5
    assert rotation["timeouts"] == 0
    assert 0 < rotation["p50_ms"] <= rotation["p99_ms"] < 30_000
    idle = results["idle"]
    assert 9 <= idle["seconds"] <= 30
    assert idle["operator_api_writes"] >= 0
    assert 0 <= idle["cpu_percent_of_core"] < 100
    assert idle["drift_checks_expected"] == 2
    cold = results["coldstart"]
    assert cold["n"] == 11
    assert cold["reconciles"] >= 11
    assert 0 < cold["seconds_to_all_checked"] < 120
    assert 10 < cold["peak_rss_mib"] < 2048

    # Every target is judged or marked as information only.
    names = {target["name"] for target in results["targets"]}
    assert {"rotation p99", "idle API writes", "idle SQL writes", "idle CPU"} <= names
    # And what the floor says of kopf: the best ratio any implementation could reach.
    ceiling = next(
        t for t in results["targets"] if t["name"] == "backlog N=10: floor vs kopf (processing only)"
    )
    assert ceiling["pass"] is None
    assert ceiling["value"] == pytest.approx(backlog["kopf"]["seconds"] / backlog["floor"]["seconds"])
    assert all(target["pass"] in (True, False, None) for target in results["targets"])
