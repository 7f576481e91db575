"""The access report of server resources end to end (real API server, real MySQL or MariaDB, real kubectl with
the plugin): a DBA's hand-made account with SUPER shows as Unmanaged, a GRANT added by hand to a managed
account as drift (in the report of the very drift check that repairs it), a role made by hand as an
Unmanaged role; a report that did not change is not written again; no password, hash or authentication
string appears in the status or the plugin's output, which a user who may only get MySQLServers reads."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import Binaries, KubeCluster, MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import Resource
from tests.conftest import REPO
from tests.integration.operator.support.builders import database_user, server_object, server_spec, unique
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    namespaced_user,
    wait_for_ready,
)
from tests.integration.operator.support.mysql import is_mariadb, mysql_query, privileges_of
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.replicas import GeneralLog
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

CLUSTER_NAMESPACE = "default"  # the session operator's --cluster-resource-namespace (no $POD_NAMESPACE)
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)


def entry(access: dict[str, Any] | None, user: str) -> dict[str, Any] | None:
    """The report's entry of ``user``, if listed."""
    return next((e for e in (access or {}).get("entries") or [] if e["user"] == user), None)


@asynccontextmanager
async def every_report(kube: KubeClient, namespace: str, name: str) -> AsyncIterator[list[dict[str, Any]]]:
    """Every ``status.access`` the server resource ``name`` is written with while the block runs (a watch:
    a report that a repair outdates a second later is seen all the same)."""
    seen: list[dict[str, Any]] = []
    _, version = await kube.list_all(MYSQL_SERVERS, namespace)
    response = await kube.watch(MYSQL_SERVERS, namespace, resource_version=version, timeout_seconds=600)

    async def read() -> None:
        async for line in response.content:
            obj = json.loads(line).get("object") or {}
            if (obj.get("metadata") or {}).get("name") == name:
                seen.append((obj.get("status") or {}).get("access") or {})

    task = asyncio.create_task(read())
    try:
        yield seen
    finally:
        task.cancel()
        response.close()
        await asyncio.gather(task, return_exceptions=True)


def plugin(binaries: Binaries, kubeconfig: Path, tmp_path: Path, *args: str) -> str:
    """``kubectl dbu ARGS`` through the real kubectl, the plugin on PATH; its stdout."""
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    script = directory / "kubectl-dbu"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m dbuser_operator.kubectl_dbu "$@"\n')
    script.chmod(0o755)
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": os.pathsep.join([str(directory), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join([str(REPO / "operator"), str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [str(binaries.path("kubectl")), "dbu", *args], capture_output=True, text=True, env=env, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def secrets_of(mysql: MySQLServer, users: list[str]) -> list[str]:
    """The authentication strings (hashes) of ``users``, as the server keeps them."""
    column = "Password" if is_mariadb(mysql) else "authentication_string"
    rows = mysql_query(
        mysql, f"SELECT {column} FROM mysql.user WHERE User IN ({', '.join(['%s'] * len(users))})", *users
    )
    hashes = [row[0].decode() if isinstance(row[0], bytes) else str(row[0] or "") for row in rows]
    if is_mariadb(mysql):
        hashes += [str(row[0]) for row in mysql_query(
            mysql, f"SELECT authentication_string FROM mysql.user WHERE User IN "
            f"({', '.join(['%s'] * len(users))})", *users,
        )]  # fmt: skip
    return [value for value in hashes if len(value) >= 8]


async def test_the_report_shows_an_unmanaged_super_account_hand_drift_and_an_unmanaged_role(
    operator: RunningOperator,
    kube_client: KubeClient,
    kube: KubeCluster,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    binaries: Binaries,
    tmp_path: Path,
) -> None:
    schema = f"dbu_{unique('acc').replace('-', '_')}"
    await admin_secrets(kube_client, namespace, mysql, "main-admin")
    await kube_client.create(
        MYSQL_SERVERS,
        server_object("MySQLServer", "main", server_spec(mysql, "main-admin", schema)),
        namespace,
    )
    suffix = unique("x").replace("-", "_")
    app, dba, role = f"app_{suffix}", f"dba_{suffix}", f"audit_{suffix}"
    database = f"acc{uuid.uuid4().hex[:12]}"  # no '_': a wildcard in a GRANT typed by hand
    password, dba_password = passwords.new(), passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": password})
    privileges = [{"privileges": ["SELECT"], "database": database}]
    obj = database_user("app", "app-pw", user=app, serverRef={"name": "main"}, privileges=privileges)
    await kube_client.create(DATABASE_USERS, obj, namespace)
    await wait_for_ready(kube_client, namespace, "app", limit=60)

    async def reported() -> dict[str, Any]:
        server = await kube_client.get(MYSQL_SERVERS, "main", namespace)
        access = (server.get("status") or {}).get("access")
        assert entry(access, app) is not None, access
        return server

    await eventually(reported, limit=60, message="the managed account was never reported")

    async with every_report(kube_client, namespace, "main") as seen:
        mysql_query(mysql, f"CREATE USER '{dba}'@'%%' IDENTIFIED BY %s", dba_password)
        mysql_query(mysql, f"GRANT SUPER ON *.* TO '{dba}'@'%'")
        mysql_query(mysql, f"CREATE ROLE '{role}'")

        def drift_seen() -> dict[str, Any]:
            found = next(
                (e for report in seen if (e := entry(report, app)) and e["state"] == "Drifted"), None
            )
            if found is None and (database, "*", "INSERT", False) not in privileges_of(mysql, app):
                # Granted by hand (again: a pass of the user's own still in flight, its status write's
                # echo, puts the grants right before any drift check sees them; only once).
                mysql_query(mysql, f"GRANT INSERT ON `{database}`.* TO '{app}'@'%'")
            assert found is not None, [entry(report, app) for report in seen]
            return found

        drifted = await eventually(drift_seen, limit=60, message="the hand-added GRANT was never reported")
    assert drifted["owner"] == f"{namespace}/app"
    assert drifted["drift"] == [f"INSERT ON `{database}`.*"]

    async def settled() -> dict[str, Any]:
        server = await reported()
        access = server["status"]["access"]
        assert (entry(access, app) or {}).get("state") == "Managed", entry(access, app)  # repaired
        assert entry(access, dba) is not None, access
        assert entry(access, role) is not None, access
        return server

    server = await eventually(settled, limit=60, message="the report never settled")
    access = server["status"]["access"]

    # Written only when it changed: two more drift checks (their query of this server's accounts, in the
    # server's general log) leave the server resource as it was.
    with GeneralLog(mysql) as general:

        def reads_of_the_accounts() -> int:
            texts = [entry.text for entry in general.entries() if "general_log" not in entry.text]
            return len([text for text in texts if f"`{schema}`.`roles` o" in text])

        await eventually(lambda: reads_of_the_accounts() >= 2, limit=60, message="no two drift checks ran")
    again = await kube_client.get(MYSQL_SERVERS, "main", namespace)
    assert again["metadata"]["resourceVersion"] == server["metadata"]["resourceVersion"]
    super_account = entry(access, dba)
    assert super_account is not None
    assert super_account["state"] == "Unmanaged"
    assert "owner" not in super_account
    assert "SUPER" in super_account["globalPrivileges"]
    assert super_account["passwordChanged"]
    assert super_account["plugin"]
    unmanaged_role = entry(access, role)
    assert unmanaged_role is not None
    assert unmanaged_role["role"]
    assert unmanaged_role["state"] == "Unmanaged"
    managed = entry(access, app)
    assert managed is not None
    assert managed["databases"] == [database]
    assert managed["owner"] == f"{namespace}/app"
    assert access["unmanaged"] >= 2
    assert access["managed"] >= 1
    assert access["accounts"] == len(access["entries"])
    ordered = [e["state"] for e in access["entries"]]
    assert ordered.index("Unmanaged") < ordered.index("Managed")  # attention first

    rules = [{"apiGroups": [MYSQL_SERVERS.group], "resources": ["mysqlservers"], "verbs": ["get"]}]
    path = tmp_path / "auditor.kubeconfig"
    kubeconfig = await namespaced_user(kube, kube_client, namespace, "auditor", rules, path)
    printed = await asyncio.to_thread(
        plugin, binaries, kubeconfig, tmp_path, "access", "main", "-n", namespace
    )
    assert f"MySQLServer {namespace}/main:" in printed
    line = next(line for line in printed.splitlines() if f"{dba}@%" in line)
    assert line.startswith("Unmanaged")
    assert "SUPER" in line

    hashes = secrets_of(mysql, [dba, app])
    assert hashes  # there is something to look for
    everything = json.dumps(server) + json.dumps(seen) + printed
    for secret in [*hashes, password, dba_password]:
        assert secret not in everything


async def test_a_clustermysqlservers_report_is_read_by_who_may_get_it(
    operator: RunningOperator,
    kube_client: KubeClient,
    kube: KubeCluster,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    binaries: Binaries,
    tmp_path: Path,
) -> None:
    schema = f"dbu_{unique('cls').replace('-', '_')}"
    server, secret = unique("shared"), unique("shared-admin")
    await admin_secrets(kube_client, CLUSTER_NAMESPACE, mysql, secret)
    body = server_object("ClusterMySQLServer", server, server_spec(mysql, secret, schema))
    await kube_client.create(CLUSTER_MYSQL_SERVERS, body)
    app = f"app_{unique('c').replace('-', '_')}"
    await create_secret(kube_client, namespace, "app-pw", {"password": passwords.new()})
    ref = {"kind": "ClusterMySQLServer", "name": server}
    await kube_client.create(
        DATABASE_USERS, database_user("app", "app-pw", user=app, serverRef=ref), namespace
    )
    await wait_for_ready(kube_client, namespace, "app", limit=60)

    async def reported() -> dict[str, Any]:
        obj = await kube_client.get(CLUSTER_MYSQL_SERVERS, server)
        access = (obj.get("status") or {}).get("access")
        managed, admin = entry(access, app), entry(access, mysql.user)
        assert managed is not None, access  # listed from the first report made after it was created
        assert admin is not None, access
        return {"managed": managed, "admin": admin}

    found = await eventually(reported, limit=60, message="the ClusterMySQLServer's report never came")
    assert found["managed"]["owner"] == f"{namespace}/app"  # never first listed as Unmanaged
    assert found["managed"]["state"] == "Managed"
    assert found["admin"]["state"] == "Unmanaged"  # the operator's own admin: no resource owns it

    reader = f"auditor-{namespace}"
    rules = [
        {"apiGroups": [CLUSTER_MYSQL_SERVERS.group], "resources": ["clustermysqlservers"], "verbs": ["get"]}
    ]
    role = {"metadata": {"name": reader}, "rules": rules}
    binding = {
        "metadata": {"name": reader},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": reader}],
    }
    await kube_client.create(CLUSTER_ROLES, role)
    await kube_client.create(CLUSTER_ROLE_BINDINGS, binding)
    try:
        kubeconfig = await kube.mint_kubeconfig(reader, [], tmp_path / "auditor.kubeconfig")
        arguments = ("access", f"clustermysqlserver/{server}")
        printed = await asyncio.to_thread(plugin, binaries, kubeconfig, tmp_path, *arguments)
    finally:
        await kube_client.delete(CLUSTER_ROLE_BINDINGS, reader)
        await kube_client.delete(CLUSTER_ROLES, reader)
    assert printed.startswith(f"ClusterMySQLServer {server}:")
    assert any(line.startswith("Managed") and f"{app}@%" in line for line in printed.splitlines())
