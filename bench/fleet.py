"""The fleet: N users over K servers of three flavours, served through both server kinds, over namespaces.

``python -m bench --servers K --n N --scenarios fleet[,restart]`` (:mod:`bench.fleet_run` runs it). The
layout, a pure function of ``(K, N)``:

- server ``k`` (MySQL 9.7, MariaDB 11.8, MariaDB 10.11, cycling: :mod:`bench.servers`) is a
  ``ClusterMySQLServer`` when ``k`` is even (its admin Secret in the cluster-resource namespace), else a
  ``MySQLServer`` in namespace ``k mod NS``, which only that namespace's users may use;
- ``NS = max(K, 2)`` namespaces; user ``i`` is server ``i mod K``'s user number ``j = i div K``: in that
  server's namespace when it is a ``MySQLServer``, else in namespace ``j mod NS`` (a shared server serves
  every namespace);
- every user has its own password Secret and ``SELECT`` on the ``bench`` database; a fifth (``(j div NS)
  mod 5 = 1``) also has a connection Secret the operator writes; a tenth (``(j div NS) mod 10 = 3``) is
  granted a ``DatabaseRole`` of its namespace on its server (one role per namespace and server in use).

Seeding creates everything with a pool of concurrent requests (the harness's client keeps 64
connections; the admin is in ``system:masters``, which API Priority and Fairness exempts).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench.common import (
    BENCH_DATABASE,
    OWNERSHIP_SCHEMA,
    TARGET,
    TARGET_LABEL,
    MySQLAddress,
    admin_sql,
    database_user,
    secret,
)
from bench.servers import mysql_server
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND, KIND
from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    MYSQL_SERVERS,
)
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import ApiError, Conflict, NotFound, Unavailable
from dbuser_operator.runtime.resources import NAMESPACES, SECRETS, Resource

SEED_CONCURRENCY = 48  # the harness's API client keeps 64 connections; its watches hold some
SEED_ATTEMPTS = 5


@dataclass(frozen=True)
class Fleet:
    """Where each server resource, namespace, role and user of one fleet run is."""

    run: str  # short and unique per run: in namespace, resource and MySQL user names
    servers: tuple[MySQLAddress, ...]
    size: int

    @property
    def namespaces(self) -> int:
        return max(len(self.servers), 2)

    def namespace(self, index: int) -> str:
        return f"fleet-{self.run}-{index}"

    def all_namespaces(self) -> list[str]:
        return [self.namespace(j) for j in range(self.namespaces)]

    @property
    def admin_namespace(self) -> str:
        """The operator's ``--cluster-resource-namespace``: the ClusterMySQLServers' admin Secrets."""
        return f"fleet-{self.run}-admin"

    @staticmethod
    def is_cluster(server: int) -> bool:
        return server % 2 == 0

    def server_name(self, server: int) -> str:
        return f"{self.run}-s{server}" if self.is_cluster(server) else f"s{server}"

    def server_namespace(self, server: int) -> str:
        """Where a MySQLServer lives (a ClusterMySQLServer's admin Secret: the admin namespace)."""
        return self.admin_namespace if self.is_cluster(server) else self.namespace(server % self.namespaces)

    def server_ref(self, server: int) -> dict[str, str]:
        return {"kind": CLUSTER_KIND if self.is_cluster(server) else KIND, "name": self.server_name(server)}

    def server_of(self, index: int) -> int:
        return index % len(self.servers)

    def _turn(self, index: int) -> int:
        """The user's number among its server's users."""
        return index // len(self.servers)

    def namespace_of(self, index: int) -> str:
        server = self.server_of(index)
        if not self.is_cluster(server):
            return self.server_namespace(server)
        return self.namespace(self._turn(index) % self.namespaces)

    def has_role(self, index: int) -> bool:
        """A tenth of each server's users in each namespace."""
        return (self._turn(index) // self.namespaces) % 10 == 3

    def has_connection_secret(self, index: int) -> bool:
        """A fifth of each server's users in each namespace."""
        return (self._turn(index) // self.namespaces) % 5 == 1

    @staticmethod
    def name(index: int) -> str:
        return f"u{index:06d}"

    def user(self, index: int) -> str:
        """The MySQL user name (``<run>_<index>``; the run tag lets the harness drop them all)."""
        return f"{self.run}_{index:06d}"

    @staticmethod
    def role_name(server: int) -> str:
        return f"r-s{server}"

    def roles(self) -> list[tuple[str, int]]:
        """(namespace, server) of every DatabaseRole: one per namespace and server with a role user."""
        used = {(self.namespace_of(i), self.server_of(i)) for i in range(self.size) if self.has_role(i)}
        return sorted(used)

    def mysql_role(self, namespace: str, server: int) -> str:
        return f"{self.run}_r{namespace.rsplit('-', 1)[1]}_{server}"

    # --- objects -----------------------------------------------------------------------------------------

    def server_resource(self, server: int) -> dict[str, Any]:
        """The server's MySQLServer or ClusterMySQLServer (its admin Secret: :meth:`admin_secret`)."""
        obj = mysql_server(self.servers[server])
        obj["kind"] = self.server_ref(server)["kind"]
        obj["metadata"]["name"] = self.server_name(server)
        credentials = obj["spec"]["credentials"]
        for item in credentials.values():
            item["name"] = self.admin_secret_name(server)
        return obj

    def admin_secret_name(self, server: int) -> str:
        return f"admin-{self.server_name(server)}"

    def admin_secret(self, server: int) -> dict[str, Any]:
        address = self.servers[server]
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": self.admin_secret_name(server)},
            "stringData": {"user": address.user, "password": address.password},
        }

    def role(self, namespace: str, server: int) -> dict[str, Any]:
        return {
            "apiVersion": DATABASE_ROLES.api_version,
            "kind": "DatabaseRole",
            "metadata": {"name": self.role_name(server), "labels": {TARGET_LABEL: TARGET}},
            "spec": {
                "role": self.mysql_role(namespace, server),
                "serverRef": self.server_ref(server),
                "privileges": [{"privileges": ["SELECT"], "database": BENCH_DATABASE}],
            },
        }

    def database_user(self, index: int) -> dict[str, Any]:
        server = self.server_of(index)
        name = self.name(index)
        obj = database_user(name, self.user(index), f"pw-{name}")
        obj["spec"]["serverRef"] = self.server_ref(server)
        if self.has_connection_secret(index):
            obj["spec"]["connectionSecret"] = {"name": f"conn-{name}"}
        if self.has_role(index):
            obj["spec"]["roles"] = [self.role_name(server)]
        return obj

    def password(self, index: int) -> str:
        """A user's password: derived from the run's secret seed, so the harness need not keep 100 000."""
        return f"pw-{self.run}-{index}-{_SEED}"


_SEED = secrets.token_hex(8)


# --- seeding and cleanup -------------------------------------------------------------------------------


async def parallel(count: int, work: Callable[[int], Awaitable[None]], width: int = SEED_CONCURRENCY) -> None:
    """``work(0)`` … ``work(count - 1)``, ``width`` at a time."""
    indexes: Iterator[int] = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await work(index)

    await asyncio.gather(*(worker() for _ in range(min(width, count) or 1)))


async def create_servers(kube: KubeClient, fleet: Fleet) -> None:
    """The namespaces, and every server's admin Secret and server resource."""
    for namespace in [*fleet.all_namespaces(), fleet.admin_namespace]:
        await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
    for server in range(len(fleet.servers)):
        await admin_sql(fleet.servers[server], f"CREATE DATABASE IF NOT EXISTS `{BENCH_DATABASE}`")
        namespace = fleet.server_namespace(server)
        await kube.create(SECRETS, fleet.admin_secret(server), namespace)
        resource = CLUSTER_MYSQL_SERVERS if fleet.is_cluster(server) else MYSQL_SERVERS
        where = None if fleet.is_cluster(server) else namespace
        await kube.create(resource, fleet.server_resource(server), where)


async def create_users(kube: KubeClient, fleet: Fleet) -> float:
    """Every DatabaseRole, then every user's password Secret and DatabaseUser; the seconds it took."""
    started = time.monotonic()
    roles = fleet.roles()

    async def create_role(index: int) -> None:
        namespace, server = roles[index]
        await create(kube, DATABASE_ROLES, fleet.role(namespace, server), namespace)

    async def create_user(index: int) -> None:
        namespace, name = fleet.namespace_of(index), fleet.name(index)
        await create(kube, SECRETS, secret(f"pw-{name}", fleet.password(index)), namespace)
        await create(kube, DATABASE_USERS, fleet.database_user(index), namespace)

    await parallel(len(roles), create_role)
    await parallel(fleet.size, create_user)
    return time.monotonic() - started


async def create(kube: KubeClient, resource: Resource, obj: dict[str, Any], namespace: str | None) -> None:
    """Create ``obj``; a busy API server (429, 5xx, a timeout) is asked again, and an object that exists
    after such an answer is the one sent."""
    for attempt in range(SEED_ATTEMPTS):
        try:
            await kube.create(resource, obj, namespace)
            return
        except Conflict:
            if attempt == 0:
                raise
            return
        except Unavailable:
            if attempt == SEED_ATTEMPTS - 1:
                raise
            await asyncio.sleep(2.0**attempt)


async def cleanup(kube: KubeClient, fleet: Fleet) -> None:
    """Remove what the run made: accounts, roles and bookkeeping rows on every server; every object
    (finalizers first: no operator runs now), the namespaces."""
    for server in fleet.servers:
        await _drop_on_server(server, fleet.run)
    namespaced = (DATABASE_USERS, DATABASE_ROLES, MYSQL_SERVERS)
    for namespace in fleet.all_namespaces():
        for resource in namespaced:
            await _release_all(kube, resource, namespace)
    await _release_all(kube, CLUSTER_MYSQL_SERVERS, None)
    for index in range(len(fleet.servers)):
        if fleet.is_cluster(index):
            with contextlib.suppress(NotFound):
                await kube.delete(CLUSTER_MYSQL_SERVERS, fleet.server_name(index))
    for namespace in [*fleet.all_namespaces(), fleet.admin_namespace]:
        for resource in (*namespaced, SECRETS):
            await kube.request("DELETE", resource.path(namespace))
        with contextlib.suppress(ApiError):
            await kube.delete(NAMESPACES, namespace)


async def _release_all(kube: KubeClient, resource: Resource, namespace: str | None) -> None:
    """Strip the finalizers of every object of ``resource`` there."""
    items, _ = await kube.list_all(resource, namespace)
    held = [item["metadata"] for item in items if item["metadata"].get("finalizers")]

    async def release(index: int) -> None:
        with contextlib.suppress(ApiError):
            await kube.patch(
                resource,
                held[index]["name"],
                {"metadata": {"finalizers": None}},
                PatchType.MERGE,
                namespace=held[index].get("namespace"),
            )

    await parallel(len(held), release)


async def _drop_on_server(server: MySQLAddress, run: str) -> None:
    """Drop the run's accounts and roles on ``server`` and forget them in its bookkeeping."""
    pattern = f"{run}\\_%"
    rows = await admin_sql(server, ("SELECT User, Host FROM mysql.user WHERE User LIKE %s", (pattern,)))
    accounts = [f"'{user}'@'{host}'" for user, host in rows if host]
    for start in range(0, len(accounts), 500):
        await admin_sql(server, f"DROP USER IF EXISTS {', '.join(accounts[start : start + 500])}")
    for user, host in rows:  # MariaDB's roles have no host
        if not host:
            await admin_sql(server, f"DROP ROLE IF EXISTS '{user}'")
    for table in ("accounts", "roles"):
        with contextlib.suppress(Exception):
            forget = f"DELETE FROM `{OWNERSHIP_SCHEMA}`.`{table}` WHERE user LIKE %s"  # noqa: S608 - constants
            await admin_sql(server, (forget, (pattern,)))
