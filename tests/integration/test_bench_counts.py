"""The count guard: a short convergence run, then Secret rotations (``python -m bench --n 200 --scenarios
convergence,rotation``), may not cost more per user and per rotation than ``bench/results/counts.json``
records.

Counted, never timed: SQL statements per user (the server's own ``Questions`` counter), API writes per user
(the operator's ``rest_client_requests_total``), reconcile passes and requeues per user (its
``controller_runtime_reconcile_total`` by result); per rotation of a user's Secret the operator's API writes,
its SQL writes (the server's ``Com_*`` counters of writes) and statements. None of them depends on the
machine's speed but for the few passes a busy machine adds or saves (a watch event that arrives while a pass
runs), which the recorded ceilings allow for. The operator runs with a resync period longer than the run, so
that no periodic drift check falls in a window. A change that adds a statement, a write, a pass or a requeue
says why in the same commit and updates the file (bench/README.md, "The count guard"). The generated
password's rotation is guarded by ``test_bench_generated_rotation.py``.
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


def flavour_of(mysql: MySQLServer) -> str:
    """``mysql`` or ``mariadb``: the key of ``counts.json`` for the server."""
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    return "mariadb" if "mariadb" in str(version).lower() else "mysql"


def over_ceilings(measured: dict[str, float], ceilings: dict[str, float]) -> dict[str, str]:
    """The figures above their ceilings, for the failure message."""
    return {name: f"{measured[name]:.3f} > {top}" for name, top in ceilings.items() if measured[name] > top}


def per_user(row: dict[str, Any]) -> dict[str, float]:
    """The guarded figures of one convergence row of ``results.json``."""
    n, by_result = row["n"], row["reconciles_by_result"]
    return {
        "sql_statements_per_user": row["sql_statements_per_user"],
        "api_writes_per_user": row["operator_api_writes_per_user"],
        "reconciles_per_user": row["reconciles"] / n,
        "requeues_per_user": (by_result.get("requeue_after", 0) + by_result.get("error", 0)) / n,
    }


def per_rotation(row: dict[str, Any]) -> dict[str, float]:
    """The guarded figures of the rotation row of ``results.json``."""
    return {
        "api_writes_per_rotation": row["operator_api_writes_per_rotation"],
        "sql_writes_per_rotation": row["sql_writes_per_rotation"],
        "sql_statements_per_rotation": row["sql_statements_per_rotation"],
        "reconciles_per_rotation": row["reconciles_per_rotation"],
    }


def shown(measured: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.3f}" for name, value in measured.items())


@pytest.mark.timeout(600)
def test_a_new_user_and_a_secret_rotation_cost_no_more_than_recorded(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> None:
    flavour = flavour_of(mysql)
    recorded = json.loads(RECORDED.read_text())
    if flavour not in recorded["ceilings"]:
        pytest.skip(f"no counts recorded for {flavour}")
    n, samples = recorded["n"], recorded["secret_rotation"]["samples"]

    out = tmp_path / "out"
    argv = ["--n", str(n), "--scenarios", "convergence,rotation", "--no-peer", "--time-limit", "400"]
    argv += ["--rotation-samples", str(samples), "--resync-period", "3600"]
    argv += ["--out", str(out), "--workdir", str(tmp_path / "work")]
    run_bench("bench", argv, bench_env(kube, mysql))
    results = json.loads((out / "results.json").read_text())
    (row,) = results["convergence"]
    assert row["implementation"] == "operator"
    assert row["ready"] == n
    assert row["logins_ok"] == row["logins_checked"]
    assert row["events_dropped"] == 0
    rotation = results["rotation"]
    assert (rotation["samples"], rotation["timeouts"]) == (samples, 0)

    measured = per_user(row)
    print(f"{flavour} N={n}: {shown(measured)}")
    over = over_ceilings(measured, recorded["ceilings"][flavour])
    assert not over, f"more per user than {RECORDED.relative_to(REPO)} records: {over}"
    measured = per_rotation(rotation)
    print(f"{flavour} {samples} Secret rotations: {shown(measured)}")
    over = over_ceilings(measured, recorded["secret_rotation"]["ceilings"][flavour])
    assert not over, f"more per Secret rotation than {RECORDED.relative_to(REPO)} records: {over}"


@pytest.mark.timeout(600)
def test_without_the_finalizer_policy_a_new_user_costs_one_write_more(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> None:
    """A cluster without the chart's finalizer policy (Kubernetes before 1.36, or ``finalizerPolicy:
    false``): the first pass patches the finalizer, one API write more per user, nothing else more."""
    flavour = flavour_of(mysql)
    recorded = json.loads(RECORDED.read_text())
    if flavour not in recorded["ceilings"]:
        pytest.skip(f"no counts recorded for {flavour}")
    out = tmp_path / "out"
    argv = ["--n", str(recorded["n"]), "--scenarios", "convergence", "--no-peer", "--time-limit", "400"]
    argv += ["--resync-period", "3600", "--no-finalizer-policy"]
    argv += ["--out", str(out), "--workdir", str(tmp_path / "work")]
    run_bench("bench", argv, bench_env(kube, mysql))
    (row,) = json.loads((out / "results.json").read_text())["convergence"]
    assert (row["ready"], row["events_dropped"]) == (recorded["n"], 0)
    measured = per_user(row)
    print(f"{flavour} N={recorded['n']} without the finalizer policy: {shown(measured)}")
    ceilings = {**recorded["ceilings"][flavour], **recorded["ceilings_without_finalizer_policy"]}
    over = over_ceilings(measured, ceilings)
    assert not over, f"more per user than {RECORDED.relative_to(REPO)} records: {over}"
    assert measured["api_writes_per_user"] > recorded["ceilings"][flavour]["api_writes_per_user"]
