"""The Argo CD health checks (Lua, run in a real Lua 5.1) read live objects of real runs as Argo CD would:
Ready → Healthy, a refusal → Degraded, Observe/Paused → Suspended, a retained password or a server that does
not answer → Progressing; and ``kubectl wait --for=condition=Ready`` waits for a DatabaseUser.

With ``DBUSER_OPERATOR_CAPTURE_HEALTH=DIR`` each object checked is written to DIR (the unit tests' fixtures,
tests/unit/gitops/objects/, come from such a run)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    DATABASES,
    MYSQL_SERVERS,
)
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.ports import free_port
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.conftest import Runner
from tests.integration.operator.servers.test_servers import CLUSTER_NAMESPACE, wait_for_server
from tests.integration.operator.support.builders import (
    database,
    database_role,
    database_user,
    server_object,
    server_spec,
    unique,
)
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    database_gone,
    ready,
    wait_db,
    wait_for_condition,
    wait_for_ready,
    wait_role_ready,
)
from tests.integration.operator.support.mysql import has_dual_passwords, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.rotation import delete_users, wait_for_phase
from tests.support.argocd import health

pytestmark = [pytest.mark.integration, pytest.mark.one_flavour]  # the same on every MySQL flavour

CAPTURE = os.environ.get("DBUSER_OPERATOR_CAPTURE_HEALTH")


def assess(kind: str, obj: dict[str, Any], expected: str, capture_as: str) -> str:
    """Run ``kind``'s health check on ``obj``; assert it says ``expected``; return its message. With
    DBUSER_OPERATOR_CAPTURE_HEALTH set, also keep the object as ``<capture_as>.json`` there."""
    found = health(kind, obj)
    assert found["status"] == expected, f"{kind} {capture_as}: {found} for {ready(obj)}"
    if CAPTURE:
        path = Path(CAPTURE) / f"{capture_as}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
        fixture = {"kind": kind, "expected": expected, "message": found["message"], "object": kept}
        path.write_text(json.dumps(fixture, indent=2, sort_keys=True) + "\n")
    return found["message"]


@pytest.fixture(autouse=True)
async def _cleanup(kube_client: KubeClient, namespace: str) -> Any:
    yield
    await delete_users(kube_client, namespace)


async def new_user(
    kube: KubeClient, namespace: str, passwords: PasswordLedger, name: str, **spec: Any
) -> None:
    await create_secret(kube, namespace, f"{name}-pw", {"password": passwords.new()})
    await kube.create(DATABASE_USERS, database_user(name, f"{name}-pw", **spec), namespace)


async def test_a_ready_user_is_healthy_and_kubectl_wait_waits_for_it(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    name = unique("healthy")
    await new_user(kube_client, namespace, passwords, name)
    # Started before the account exists: kubectl waits for Ready=True at the current generation (in a
    # thread: the operator runs on this event loop).
    waited = await asyncio.to_thread(
        kubectl, "wait", "--for=condition=Ready", f"dbu/{name}", "-n", namespace, "--timeout=60s"
    )
    assert waited.stdout.strip() == f"databaseuser.mysql.dbuser-operator.dev/{name} condition met"
    obj = await kube_client.get(DATABASE_USERS, name, namespace)
    assert ready(obj)["status"] == "True"  # type: ignore[index]
    assert assess("DatabaseUser", obj, "Healthy", "user-ready").startswith("AccountReady: ")


async def test_a_refused_grant_is_degraded_and_kubectl_wait_times_out(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    name = unique("greedy")
    await new_user(
        kube_client, namespace, passwords, name, privileges=[{"privileges": ["SUPER"], "database": "*"}]
    )
    obj = await wait_for_ready(kube_client, namespace, name, "False", "PrivilegeNotAllowed")
    message = assess("DatabaseUser", obj, "Degraded", "user-privilege-not-allowed")
    assert message.startswith("PrivilegeNotAllowed: ")
    assert "SUPER on *.*" in message

    wait = ("wait", "--for=condition=Ready", f"dbu/{name}", "-n", namespace, "--timeout=2s")
    waited = await asyncio.to_thread(kubectl, *wait, check=False)
    assert waited.returncode != 0
    assert "timed out" in waited.stderr


async def test_a_user_no_operator_serves_yet_is_progressing(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    name = unique("nobody")
    await new_user(kube_client, namespace, passwords, name, target="elsewhere")
    obj = await kube_client.get(DATABASE_USERS, name, namespace)
    assert "status" not in obj
    assert (
        assess("DatabaseUser", obj, "Progressing", "user-no-status")
        == "waiting for the operator's first status"
    )


async def test_kubectl_wait_waits_for_ready_at_the_current_generation(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    """Ready=True of an older generation does not satisfy kubectl wait (nor the health check). The status
    is written by the test: no operator serves the resource's target label."""
    name = unique("stale")
    await new_user(kube_client, namespace, passwords, name, target="elsewhere")
    obj = await kube_client.get(DATABASE_USERS, name, namespace)
    generation = obj["metadata"]["generation"]
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": "AccountReady",
        "message": "written by the test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": generation - 1,
    }
    status = {"status": {"conditions": [condition]}}
    obj = await kube_client.patch(
        DATABASE_USERS, name, status, PatchType.MERGE, namespace=namespace, subresource="status"
    )
    assert health("DatabaseUser", obj)["status"] == "Progressing"
    wait = ("wait", "--for=condition=Ready", f"dbu/{name}", "-n", namespace, "--timeout=2s")
    assert (await asyncio.to_thread(kubectl, *wait, check=False)).returncode != 0

    status["status"]["conditions"][0]["observedGeneration"] = generation
    obj = await kube_client.patch(
        DATABASE_USERS, name, status, PatchType.MERGE, namespace=namespace, subresource="status"
    )
    assert health("DatabaseUser", obj)["status"] == "Healthy"
    assert (await asyncio.to_thread(kubectl, *wait)).stdout.strip().endswith("condition met")


async def test_observe_and_paused_are_suspended(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    name = unique("policy")
    await new_user(kube_client, namespace, passwords, name)
    await wait_for_ready(kube_client, namespace, name)

    patch = {"spec": {"managementPolicy": "Observe"}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    obj = await wait_for_ready(kube_client, namespace, name, "True", "Observed")
    assert assess("DatabaseUser", obj, "Suspended", "user-observe").startswith(
        "managementPolicy Observe: Observed"
    )

    patch = {"spec": {"managementPolicy": "Paused", "maxUserConnections": 3}}  # type: ignore[dict-item]
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    obj = await wait_for_ready(kube_client, namespace, name, "True", "Paused")
    assert assess("DatabaseUser", obj, "Suspended", "user-paused").startswith("managementPolicy Paused")

    patch = {"spec": {"managementPolicy": "Manage"}}  # Paused would hold the deletion of the cleanup
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    obj = await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    assess("DatabaseUser", obj, "Healthy", "user-managed-again")


async def test_a_retained_old_password_is_progressing_until_discarded(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    if not has_dual_passwords(mysql):
        pytest.skip("dual passwords: MySQL only")
    name = unique("rotated")
    await new_user(kube_client, namespace, passwords, name, rotation={"gracePeriod": "8s"})
    await wait_for_ready(kube_client, namespace, name)
    patch = {"stringData": {"password": passwords.new()}}
    await kube_client.patch(SECRETS, f"{name}-pw", patch, PatchType.MERGE, namespace=namespace)

    await wait_for_phase(kube_client, namespace, name, "Retained", limit=10)
    obj = await kube_client.get(DATABASE_USERS, name, namespace)
    message = assess("DatabaseUser", obj, "Progressing", "user-rotation-retained")
    assert message.startswith("RotationRetained: password rotated: the previous password still works")

    await wait_for_phase(kube_client, namespace, name, "Discarded", limit=40)
    obj = await wait_for_ready(kube_client, namespace, name)
    assess("DatabaseUser", obj, "Healthy", "user-rotation-discarded")


async def test_server_kinds_healthy_unreachable_and_misconfigured(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    # A ClusterMySQLServer that connects: Healthy.
    shared, secret = unique("shared"), unique("shared-admin")
    await admin_secrets(kube_client, CLUSTER_NAMESPACE, mysql, secret)
    schema = f"dbu_{unique('gh').replace('-', '_')}"
    body = server_object("ClusterMySQLServer", shared, server_spec(mysql, secret, schema))
    await kube_client.create(CLUSTER_MYSQL_SERVERS, body)
    try:
        obj = await wait_cluster_server(kube_client, shared)
        assert assess("ClusterMySQLServer", obj, "Healthy", "clusterserver-connected").startswith(
            "Connected: "
        )
    finally:
        await kube_client.delete(CLUSTER_MYSQL_SERVERS, shared)

    # Nothing listens on its port (a server still starting, an outage): Progressing, retried.
    await admin_secrets(kube_client, namespace, mysql, "admin")
    spec = {**server_spec(mysql, "admin", schema), "host": "127.0.0.1", "port": free_port()}
    await kube_client.create(MYSQL_SERVERS, server_object("MySQLServer", "down", spec), namespace)
    obj = await wait_for_server(kube_client, namespace, "down", "False", "Unreachable")
    assert assess("MySQLServer", obj, "Progressing", "server-unreachable").startswith("Unreachable: ")

    # A wrong admin password: Degraded (a new check does not repair it); its users wait: Progressing.
    await create_secret(kube_client, namespace, "wrong", {"user": mysql.user, "password": passwords.new()})
    spec = server_spec(mysql, "wrong", schema)
    if mysql.ca_file is not None:
        spec["tls"]["ca"] = {"name": "admin", "key": "ca.crt"}
    await kube_client.create(MYSQL_SERVERS, server_object("MySQLServer", "denied", spec), namespace)
    obj = await wait_for_server(kube_client, namespace, "denied", "False", "AccessDenied")
    assert assess("MySQLServer", obj, "Degraded", "server-access-denied").startswith("AccessDenied: ")
    name = unique("waits")
    await new_user(kube_client, namespace, passwords, name, serverRef={"name": "denied"})
    obj = await wait_for_ready(kube_client, namespace, name, "False", "ServerNotReady")
    assert assess("DatabaseUser", obj, "Progressing", "user-server-not-ready").startswith("ServerNotReady: ")
    await delete_users(kube_client, namespace)
    for server in ("down", "denied"):
        await kube_client.delete(MYSQL_SERVERS, server, namespace)


async def test_roles_ready_and_refused(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    role = unique("reader")
    await kube_client.create(DATABASE_ROLES, database_role(role), namespace)
    obj = await wait_role_ready(kube_client, namespace, role)
    assert assess("DatabaseRole", obj, "Healthy", "role-ready").startswith("RoleReady: ")

    taken = unique("handmade")
    mysql_query(mysql, f"CREATE ROLE `{taken}`")
    try:
        await kube_client.create(DATABASE_ROLES, database_role(taken), namespace)
        obj = await wait_role_ready(kube_client, namespace, taken, "False", "RoleExists")
        assert assess("DatabaseRole", obj, "Degraded", "role-exists").startswith("RoleExists: ")
    finally:
        for name in (role, taken):
            await kube_client.delete(DATABASE_ROLES, name, namespace)
        mysql_query(mysql, f"DROP ROLE IF EXISTS `{taken}`")


async def wait_cluster_server(kube: KubeClient, name: str) -> dict[str, Any]:
    return await wait_for_condition(kube, CLUSTER_MYSQL_SERVERS, None, name, limit=60)


async def test_databases_ready_and_refused(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    name = unique("gitops-db")
    await kube_client.create(DATABASES, database(name, deletionPolicy="Delete"), namespace)
    obj = await wait_db(kube_client, namespace, name)
    assert assess("Database", obj, "Healthy", "database-ready").startswith("DatabaseReady: ")

    taken = unique("handmade-db")
    mysql_query(mysql, f"CREATE DATABASE `{taken}`")
    try:
        await kube_client.create(DATABASES, database(taken, deletionPolicy="Delete"), namespace)
        obj = await wait_db(kube_client, namespace, taken, "False", "DatabaseExists")
        assert assess("Database", obj, "Degraded", "database-exists").startswith("DatabaseExists: ")
    finally:
        for each in (name, taken):
            await kube_client.delete(DATABASES, each, namespace)
    await database_gone(kube_client, namespace, taken)
    assert mysql_query(mysql, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", taken)
    mysql_query(mysql, f"DROP DATABASE `{taken}`")
