"""Helpers of the many-servers tests: admin accounts on the fleet's servers, MySQLServer and
ClusterMySQLServer resources with their Secrets, and waiting for a server's status."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from dbuser_operator.api.mysqlserver import CLUSTER_KIND, KIND
from dbuser_operator.controllers.resources import CLUSTER_MYSQL_SERVERS, MYSQL_SERVERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS, Resource
from tests.integration.operator.conftest import PasswordLedger, create_secret
from tests.integration.operator.helpers import ready, unique
from tests.integration.operator.helpers import wait_for_ready as wait_for_user

ADMIN_HOST = "%"
"""Where the operator's admin accounts on the fleet may log in from (it connects over loopback TCP)."""


@dataclass(frozen=True)
class Admin:
    """An admin account of one server, for the operator: the test's own, so a test may rotate it."""

    server: LocalMySQLServer
    user: str
    password: str

    @property
    def connection(self) -> MySQLServer:
        """Its connection details (TLS, the server's certificate verified): for checks as this admin."""
        return MySQLServer(
            self.server.admin.host, self.server.port, self.user, self.password, "local", self.server.ca_file
        )


def create_admin(server: LocalMySQLServer, passwords: PasswordLedger, prefix: str = "fleet_adm") -> Admin:
    """A new account with every privilege, WITH GRANT OPTION (as the chart's README asks of an admin)."""
    user, password = unique(prefix).replace("-", "_"), passwords.new("admin")
    with server.admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE USER '{user}'@'{ADMIN_HOST}' IDENTIFIED BY %s", (password,))
        cursor.execute(f"GRANT ALL ON *.* TO '{user}'@'{ADMIN_HOST}' WITH GRANT OPTION")
    return Admin(server, user, password)


def set_admin_password(admin: Admin, password: str) -> Admin:
    """ALTER USER the admin's password on its server (as the envtest admin); the admin with it."""
    with admin.server.admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"ALTER USER '{admin.user}'@'{ADMIN_HOST}' IDENTIFIED BY %s", (password,))
    return Admin(admin.server, admin.user, password)


def drop_admin(admin: Admin) -> None:
    with admin.server.admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"DROP USER IF EXISTS '{admin.user}'@'{ADMIN_HOST}'")


@dataclass(frozen=True)
class ServerHandle:
    """A MySQLServer or ClusterMySQLServer the test created, and where its Secret is."""

    kind: str  # MySQLServer or ClusterMySQLServer
    name: str
    namespace: str | None  # None: cluster-scoped
    secret: str  # the admin Secret (keys user, password, ca.crt), in secret_namespace
    secret_namespace: str
    admin: Admin

    @property
    def resource(self) -> Resource:
        return MYSQL_SERVERS if self.kind == KIND else CLUSTER_MYSQL_SERVERS

    @property
    def ref(self) -> dict[str, str]:
        """``spec.serverRef`` of a DatabaseUser or DatabaseRole on this server."""
        return {"kind": self.kind, "name": self.name}

    @property
    def local(self) -> LocalMySQLServer:
        return self.admin.server

    @property
    def mysql(self) -> MySQLServer:
        """The envtest admin's connection details (for logins and checks that must not depend on the
        operator's admin account)."""
        return self.local.admin

    def __str__(self) -> str:
        """As the operator names the server in messages: ``MySQLServer ns/name``, ``ClusterMySQLServer
        name``."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def server_manifest(
    kind: str, name: str, server: LocalMySQLServer, secret: str, **spec: Any
) -> dict[str, Any]:
    """A MySQLServer/ClusterMySQLServer for ``server``: its address, the admin user and password from
    ``secret``, TLS verifying the server's certificate with the CA in ``secret``; ``spec`` adds to it."""
    return {
        "apiVersion": MYSQL_SERVERS.api_version,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "host": server.admin.host,
            "port": server.port,
            "credentials": {
                "user": {"name": secret, "key": "user"},
                "password": {"name": secret, "key": "password"},
            },
            "tls": {"mode": "VERIFY_IDENTITY", "ca": {"name": secret, "key": "ca.crt"}},
            **spec,
        },
    }


async def create_server(
    kube: KubeClient,
    admin: Admin,
    name: str,
    *,
    namespace: str | None = None,
    secret_namespace: str | None = None,
    **spec: Any,
) -> ServerHandle:
    """A MySQLServer in ``namespace`` (its Secret there), or, without a namespace, a ClusterMySQLServer
    whose Secret goes to ``secret_namespace`` (the operator's cluster resource namespace)."""
    kind = KIND if namespace is not None else CLUSTER_KIND
    where = namespace if namespace is not None else secret_namespace
    if where is None:
        raise ValueError("a ClusterMySQLServer's Secret needs the operator's cluster resource namespace")
    secret = f"{name}-admin"
    data = {"user": admin.user, "password": admin.password, "ca.crt": admin.server.ca_file.read_text()}
    await create_secret(kube, where, secret, data)
    handle = ServerHandle(kind, name, namespace, secret, where, admin)
    await kube.create(handle.resource, server_manifest(kind, name, admin.server, secret, **spec), namespace)
    return handle


async def set_server_secret_password(kube: KubeClient, server: ServerHandle, password: str) -> None:
    """Edit the admin Secret of ``server``: its new password."""
    patch = {"stringData": {"password": password}}
    await kube.patch(SECRETS, server.secret, patch, PatchType.MERGE, namespace=server.secret_namespace)


async def get_server(kube: KubeClient, server: ServerHandle) -> dict[str, Any]:
    return await kube.get(server.resource, server.name, server.namespace)


async def wait_for_server(
    kube: KubeClient, server: ServerHandle, status: str = "True", reason: str | None = None, limit: float = 60
) -> dict[str, Any]:
    """Poll until the server's Ready condition has ``status`` (and ``reason``); return the object."""
    deadline = time.monotonic() + limit
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await get_server(kube, server)
        condition = ready(obj)
        if condition and condition["status"] == status and (reason is None or condition["reason"] == reason):
            return obj
        await asyncio.sleep(0.1)
    raise AssertionError(f"{server} never got Ready={status} {reason or ''}: {ready(obj)}")


async def wait_for_users(
    kube: KubeClient, namespace: str, names: list[str], status: str = "True", limit: float = 90
) -> dict[str, dict[str, Any]]:
    """Every one of ``names`` with Ready=``status`` (polled side by side); the objects by name."""
    objects = await asyncio.gather(
        *(wait_for_user(kube, namespace, name, status, limit=limit) for name in names)
    )
    return dict(zip(names, objects, strict=True))
