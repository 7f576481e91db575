"""Helpers of the many-servers tests: one operator for the fleet's servers, admin accounts on them,
MySQLServer and ClusterMySQLServer resources with their Secrets, and waiting for a server's status."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND, KIND
from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.envtest.fleet import Fleet
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS, Resource
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import (
    create_secret,
    deleted,
    ready,
    wait_for_condition,
    wait_until_gone,
)
from tests.integration.operator.support.kube import wait_for_ready as wait_for_user
from tests.integration.operator.support.mysql import can_log_in
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import eventually

TARGET_LABEL = "dbuser-operator.dev/target"


@dataclass(frozen=True)
class Admin:
    """An admin account of one server, for the operator: the test's own, so a test may rotate it."""

    server: MySQLServer  # the server, as the test environment's admin reaches it
    user: str
    password: str

    @property
    def connection(self) -> MySQLServer:
        """Its connection details (the server's certificate verified when its CA is known)."""
        return MySQLServer(
            self.server.host, self.server.port, self.user, self.password, "local", self.server.ca_file
        )


def create_admin(server: MySQLServer, passwords: PasswordLedger, prefix: str = "fleet_adm") -> Admin:
    """A new account with every privilege, WITH GRANT OPTION (as the chart's README asks of an admin) on
    the server ``server`` (the test environment's admin) names."""
    user, password = unique(prefix).replace("-", "_"), passwords.new("admin")
    with server.connect() as connection, connection.cursor() as cursor:
        # With parameters, PyMySQL formats the statement with %: the host's % is written %%.
        cursor.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
        cursor.execute(f"GRANT ALL ON *.* TO '{user}'@'%' WITH GRANT OPTION")
    return Admin(server, user, password)


def set_admin_password(admin: Admin, password: str) -> Admin:
    """ALTER USER the admin's password on its server (as the envtest admin); the admin with it."""
    with admin.server.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"ALTER USER '{admin.user}'@'%%' IDENTIFIED BY %s", (password,))
    return Admin(admin.server, admin.user, password)


def drop_admin(admin: Admin) -> None:
    with admin.server.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"DROP USER IF EXISTS '{admin.user}'@'%'")


@dataclass(frozen=True)
class ServerHandle:
    """A MySQLServer or ClusterMySQLServer the test created, and where its Secret is."""

    kind: str  # MySQLServer or ClusterMySQLServer
    name: str
    namespace: str | None  # None: cluster-scoped
    secret: str  # the admin Secret (keys user, password, ca.crt), in secret_namespace
    secret_namespace: str
    admin: Admin
    schema: str  # its bookkeeping schema: the test's own, so that status.accounts counts only its accounts

    @property
    def resource(self) -> Resource:
        return MYSQL_SERVERS if self.kind == KIND else CLUSTER_MYSQL_SERVERS

    @property
    def ref(self) -> dict[str, str]:
        """``spec.serverRef`` of a DatabaseUser or DatabaseRole on this server."""
        return {"kind": self.kind, "name": self.name}

    @property
    def mysql(self) -> MySQLServer:
        """The envtest admin's connection details (for logins and checks that must not depend on the
        operator's admin account)."""
        return self.admin.server

    def __str__(self) -> str:
        """As the operator names the server in messages: ``MySQLServer ns/name``, ``ClusterMySQLServer
        name``."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(frozen=True)
class FleetOperator:
    """The operator of the many-servers tests: a target of its own, no default server, a health check and
    a drift check every second; ClusterMySQLServer Secrets in ``secrets_namespace``."""

    instance: RunningOperator
    target: str
    secrets_namespace: str


@asynccontextmanager
async def running_fleet_operator(
    start_operator: StartOperator, kube_api: client.ApiClient
) -> AsyncIterator[FleetOperator]:
    """One operator instance for a test module's servers (a module fixture of each fleet test module),
    stopped at the end."""
    suffix = secrets.token_hex(3)
    namespace, target = f"fleet-ops-{suffix}", f"fleet-{suffix}"
    core = client.CoreV1Api(kube_api)
    await core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)), _request_timeout=30
    )
    instance = await start_operator(
        target=target,
        default_server=False,
        cluster_resource_namespace=namespace,
        server_check_period=1.0,
        resync_period=1.0,
    )
    try:
        yield FleetOperator(instance, target, namespace)
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=60)
        await core.delete_namespace(namespace, _request_timeout=30)


def server_manifest(
    kind: str, name: str, mysql: MySQLServer, secret: str, target: str, **spec: Any
) -> dict[str, Any]:
    """A MySQLServer/ClusterMySQLServer for the server ``mysql`` names, served by the operator of
    ``target``: its address, the admin user and password from ``secret``, TLS verifying the server's
    certificate with the CA in ``secret`` (key ca.crt; without a CA, as TLS is offered); ``spec`` adds to
    it."""
    tls = (
        {"mode": "VERIFY_IDENTITY", "ca": {"name": secret, "key": "ca.crt"}}
        if mysql.ca_file is not None
        else {"mode": "PREFERRED"}
    )
    return {
        "apiVersion": MYSQL_SERVERS.api_version,
        "kind": kind,
        "metadata": {"name": name, "labels": {TARGET_LABEL: target}},
        "spec": {
            "host": mysql.host,
            "port": mysql.port,
            "credentials": {
                "user": {"name": secret, "key": "user"},
                "password": {"name": secret, "key": "password"},
            },
            "tls": tls,
            **spec,
        },
    }


def admin_secret_data(mysql: MySQLServer) -> dict[str, str]:
    """What a server resource's admin Secret holds for ``mysql``: user, password, ca.crt (if known)."""
    data = {"user": mysql.user, "password": mysql.password}
    if mysql.ca_file is not None:
        data["ca.crt"] = mysql.ca_file.read_text()
    return data


async def create_server(
    kube: KubeClient,
    operator: FleetOperator,
    admin: Admin,
    name: str,
    *,
    namespace: str | None = None,
    **spec: Any,
) -> ServerHandle:
    """A MySQLServer in ``namespace`` (its Secret there), or, without a namespace, a ClusterMySQLServer
    (its Secret in the operator's cluster resource namespace); labelled for ``operator``, with a bookkeeping
    schema of its own unless ``spec`` names one."""
    kind = KIND if namespace is not None else CLUSTER_KIND
    where = namespace if namespace is not None else operator.secrets_namespace
    secret = f"{name}-admin"
    spec.setdefault("bookkeepingSchema", f"fleet_{secrets.token_hex(5)}")
    await create_secret(kube, where, secret, admin_secret_data(admin.connection))
    handle = ServerHandle(kind, name, namespace, secret, where, admin, spec["bookkeepingSchema"])
    manifest = server_manifest(kind, name, admin.connection, secret, operator.target, **spec)
    await kube.create(handle.resource, manifest, namespace)
    return handle


async def set_server_secret_password(kube: KubeClient, server: ServerHandle, password: str) -> None:
    """Edit the admin Secret of ``server``: its new password."""
    patch = {"stringData": {"password": password}}
    await kube.patch(SECRETS, server.secret, patch, PatchType.MERGE, namespace=server.secret_namespace)


async def get_server(kube: KubeClient, server: ServerHandle) -> dict[str, Any]:
    return await kube.get(server.resource, server.name, server.namespace)


async def server_gone(kube: KubeClient, server: ServerHandle, limit: float = 60) -> None:
    """Poll until the server resource no longer exists."""
    await eventually(
        lambda: deleted(kube, server.resource, server.namespace, server.name),
        limit=limit,
        interval=0.1,
        message=f"{server} was not deleted",
    )


async def wait_for_server(
    kube: KubeClient, server: ServerHandle, status: str = "True", reason: str | None = None, limit: float = 60
) -> dict[str, Any]:
    """Poll until the server's Ready condition has ``status`` (and ``reason``); return the object."""
    return await wait_for_condition(
        kube, server.resource, server.namespace, server.name, status, reason, limit=limit
    )


async def wait_for_users(
    kube: KubeClient, namespace: str, names: list[str], status: str = "True", limit: float = 90
) -> dict[str, dict[str, Any]]:
    """Every one of ``names`` with Ready=``status`` (polled side by side); the objects by name."""
    objects = await asyncio.gather(
        *(wait_for_user(kube, namespace, name, status, limit=limit) for name in names)
    )
    return dict(zip(names, objects, strict=True))


async def wait_for_user_message(
    kube: KubeClient,
    namespace: str,
    name: str,
    status: str,
    contains: str,
    limit: float = 90,
    reasons: Collection[str] = (),
) -> dict[str, Any]:
    """Poll until the DatabaseUser's Ready condition has ``status``, its message contains ``contains``
    (e.g. the server's name) and, when ``reasons`` are given, one of them; the condition.

    Give ``reasons`` when an earlier condition also names the server (ServerDeleting before
    ServerNotFound): without them the stale one would do."""

    async def check() -> dict[str, Any]:
        condition = ready(await kube.get(DATABASE_USERS, name, namespace))
        assert condition is not None, "no Ready condition"
        assert condition["status"] == status, f"Ready: {condition}"
        assert contains in (condition.get("message") or ""), f"Ready: {condition}"
        assert not reasons or condition.get("reason") in reasons, f"Ready: {condition}"
        return condition

    wanted = f" ({' or '.join(reasons)})" if reasons else ""
    message = f"{namespace}/{name} never got Ready={status}{wanted} naming {contains!r}"
    return await eventually(check, limit=limit, interval=0.1, message=message)


async def create_servers(
    kube: KubeClient,
    operator: FleetOperator,
    fleet: Fleet,
    passwords: PasswordLedger,
    namespace: str,
) -> dict[str, ServerHandle]:
    """One server resource per flavour of the fleet, each with an admin account of its own, all Ready:
    MySQL 9.7 as a ClusterMySQLServer, both MariaDBs as MySQLServers in ``namespace``."""
    handles: dict[str, ServerHandle] = {}
    for flavour, server in fleet.servers.items():
        name = unique(flavour.replace(".", ""))
        cluster = flavour.startswith("mysql")
        handles[flavour] = await create_server(
            kube,
            operator,
            create_admin(server.admin, passwords),
            name,
            namespace=None if cluster else namespace,
        )
    await asyncio.gather(*(wait_for_server(kube, handle) for handle in handles.values()))
    return handles


async def remove_servers(kube: KubeClient, namespace: str, handles: dict[str, ServerHandle]) -> None:
    """Delete the DatabaseUsers of ``namespace``, then the server resources, then their admin accounts and
    bookkeeping schemas: what a test leaves behind, gone (the fleet's servers must all be running)."""
    listed = await kube.list(DATABASE_USERS, namespace)
    names = [item["metadata"]["name"] for item in listed["items"]]
    for name in names:
        await kube.delete(DATABASE_USERS, name, namespace)
    await asyncio.gather(*(wait_until_gone(kube, namespace, name, limit=90) for name in names))
    for handle in handles.values():
        await kube.delete(handle.resource, handle.name, handle.namespace)
    await asyncio.gather(*(server_gone(kube, handle) for handle in handles.values()))
    for handle in handles.values():
        forget_server(handle)


def forget_server(server: ServerHandle) -> None:
    """Drop the admin account and the bookkeeping schema of a server resource that is gone."""
    drop_admin(server.admin)
    with server.mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{server.schema}`")


@asynccontextmanager
async def server_stopped(fleet: Fleet, flavour: str) -> AsyncIterator[LocalMySQLServer]:
    """:meth:`Fleet.stopped` for async tests: the server stopped and started in a thread, so that the
    in-process operator's event loop keeps running meanwhile."""
    server = fleet[flavour]
    await asyncio.to_thread(server.stop)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.start)


async def add_user(
    kube: KubeClient,
    operator: FleetOperator,
    namespace: str,
    server: ServerHandle,
    passwords: PasswordLedger,
    prefix: str = "app",
    **spec: Any,
) -> tuple[str, str]:
    """A DatabaseUser on ``server`` with a Secret of its own (``spec`` adds to its spec); (name,
    password)."""
    name, password = unique(prefix), passwords.new()
    await create_secret(kube, namespace, f"{name}-pw", {"password": password})
    obj = database_user(name, f"{name}-pw", target=operator.target, serverRef=server.ref, **spec)
    await kube.create(DATABASE_USERS, obj, namespace)
    return name, password


async def set_password(kube: KubeClient, namespace: str, name: str, password: str) -> None:
    """Edit the password Secret of the DatabaseUser ``name`` (made by :func:`add_user`)."""
    patch = {"stringData": {"password": password}}
    await kube.patch(SECRETS, f"{name}-pw", patch, PatchType.MERGE, namespace=namespace)


async def logs_in_soon(server: ServerHandle, user: str, password: str, limit: float = 60) -> None:
    """Poll until ``user`` logs in to ``server`` with ``password``."""
    await eventually(
        lambda: can_log_in(server.mysql, user, password),
        limit=limit,
        interval=0.1,
        message=f"{user} never logged in to {server} with its new password",
    )
