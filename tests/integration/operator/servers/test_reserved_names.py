"""What is reserved on a physical server, tried by a hostile tenant with every kind on the real servers.

One operator (``--no-default-server``; its flags name an admin, ``--reserved-users`` and an
``--ownership-schema`` of their own), a policy-bound ClusterMySQLServer for the tenants and a neighbour's
MySQLServer on the same physical server, each with an admin account and a bookkeeping schema of its own. The
tenant's policy entry allows adoption with no name pattern and any database: only the registry of reserved
names stands between the tenant and the others' accounts and schemas. Every kind (rows: ``KINDS``) is tried
against every reserved name of its namespace of names (columns), with the adopt annotation and
``deletionPolicy: Delete``: refused with the registry's reason, nothing claimed, and after the resource is
deleted the reserved account or schema and its rows are still there, and the neighbour's DatabaseUser still
Ready. Also: a Database refused ``ServerNotFound`` deletes at once (nothing dropped)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND, KIND
from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    DATABASES,
    MYSQL_SERVERS,
)
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import Resource
from tests.integration.operator.servers.test_server_policy import GRANT_TABLES
from tests.integration.operator.servers.test_servers import wait_for_server
from tests.integration.operator.support.builders import database_user, server_object, server_spec, unique
from tests.integration.operator.support.kube import (
    create_secret,
    events_of,
    ready,
    wait_for_condition,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator

pytestmark = pytest.mark.integration

LOG_TABLES = {"general_log", "slow_log"}  # written by every statement: not compared


@dataclass
class Names:
    """The operator, its server resources and every reserved name of the physical server."""

    kube: KubeClient
    mysql: MySQLServer
    operator: RunningOperator
    target: str
    tenant: str
    neighbour: str  # another tenant's namespace, with its own MySQLServer on the same server
    server: str  # the tenants' ClusterMySQLServer
    own_schema: str
    neighbour_schema: str
    flags_schema: str  # --ownership-schema
    accounts: dict[str, str]  # reserved class → an account name of it
    databases: dict[str, str]  # reserved class → a database name of it
    neighbour_user: str  # the neighbour's DatabaseUser (Ready throughout)

    def body(self, resource: Resource, name: str, mysql_name: str) -> dict[str, Any]:
        """A resource of the tenant on the tenants' server naming ``mysql_name``, adopt annotation,
        deletionPolicy Delete."""
        spec: dict[str, Any] = {
            "serverRef": {"kind": CLUSTER_KIND, "name": self.server},
            "deletionPolicy": "Delete",
        }
        if resource == DATABASE_USERS:
            spec |= {"user": mysql_name, "password": {"name": "pw", "key": "password"}}
        elif resource == DATABASE_ROLES:
            spec["role"] = mysql_name
        else:
            spec["name"] = mysql_name
        return {
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {
                "name": name,
                "labels": {"dbuser-operator.dev/target": self.target},
                "annotations": {ADOPT_ANNOTATION: "true"},
            },
            "spec": spec,
        }


@dataclass(frozen=True)
class Kind:
    """A row of the matrix: a kind, its namespace of MySQL names, the reason the registry refuses with."""

    resource: Resource
    names: Callable[[Names], dict[str, str]]
    reason: str


KINDS = [
    Kind(DATABASE_USERS, lambda env: env.accounts, "ReservedAccount"),
    Kind(DATABASE_ROLES, lambda env: env.accounts, "ReservedAccount"),
    Kind(DATABASES, lambda env: env.databases, "ReservedDatabase"),
]


def account_rows(mysql: MySQLServer, name: str) -> dict[str, list[str]]:
    """Every row of the grant tables naming ``name`` (as text: comparable before and after)."""
    existing = {
        str(row[0])
        for row in mysql_query(
            mysql, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql'"
        )
    }
    found: dict[str, list[str]] = {}
    for table in GRANT_TABLES:
        if table in existing:
            rows = mysql_query(mysql, f"SELECT * FROM `mysql`.`{table}`")
            mine = sorted(repr(row) for row in rows if any(_text(cell) == name for cell in row))
            if mine:
                found[table] = mine
    return found


def schema_rows(mysql: MySQLServer, schema: str) -> dict[str, Any]:
    """The schema's tables and their rows (row counts for a system schema); {} if it does not exist."""
    tables = mysql_query(
        mysql, "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", schema
    )
    exists = mysql_query(mysql, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", schema)
    if not exists:
        return {}
    found: dict[str, Any] = {"": "exists"}
    for table, kind in tables:
        if str(kind) != "BASE TABLE" or str(table) in LOG_TABLES:
            continue
        if schema.lower() == "mysql":
            found[str(table)] = "kept"
        else:
            rows = mysql_query(mysql, f"SELECT * FROM `{schema}`.`{table}`")
            found[str(table)] = sorted(repr(row) for row in rows)
    return found


def _text(cell: Any) -> str:
    return cell.decode("utf-8", "replace") if isinstance(cell, bytes | bytearray) else str(cell)


def recorded(mysql: MySQLServer, schema: str, name: str) -> list[str]:
    """The rows of the bookkeeping tables of ``schema`` that name ``name``."""
    found = []
    for (table,) in mysql_query(
        mysql, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", schema
    ):
        rows = mysql_query(mysql, f"SELECT * FROM `{schema}`.`{table}`")
        found += [f"{table}: {row!r}" for row in rows if any(_text(cell) == name for cell in row)]
    return found


async def _admin(env_kube: KubeClient, mysql: MySQLServer, namespace: str, user: str, password: str) -> None:
    """A second admin account on the server, and its Secret ``admin`` in ``namespace``."""
    mysql_query(mysql, f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", password)
    mysql_query(mysql, f"GRANT ALL ON *.* TO '{user}'@'%' WITH GRANT OPTION")
    data = {"user": user, "password": password}
    if mysql.ca_file is not None:
        data["ca.crt"] = mysql.ca_file.read_text()
    await create_secret(env_kube, namespace, "admin", data)


@pytest.fixture
async def names(
    start_operator: StartOperator,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> AsyncIterator[Names]:
    suffix = uuid.uuid4().hex[:6]
    core = client.CoreV1Api(kube_api)
    ops, tenant, neighbour = f"ops-{suffix}", f"team-{suffix}", f"nbr-{suffix}"
    label = f"reserved-test-{suffix}"
    for namespace, labels in ((ops, {}), (tenant, {label: "tenant"}), (neighbour, {})):
        meta = client.V1ObjectMeta(name=namespace, labels=labels)
        await core.create_namespace(client.V1Namespace(metadata=meta), _request_timeout=30)
    target = f"reserved-{suffix}"
    own_admin, neighbour_admin = f"cadm_{suffix}", f"nadm_{suffix}"
    flags_admin, reserved_user = f"fadm_{suffix}", f"rsv_{suffix}"
    own_schema, neighbour_schema, flags_schema = (f"dbu_{what}_{suffix}" for what in ("own", "nbr", "flags"))
    await _admin(kube_client, mysql, ops, own_admin, passwords.new())
    await _admin(kube_client, mysql, neighbour, neighbour_admin, passwords.new())
    for user in (flags_admin, reserved_user):  # accounts of those names, to be kept
        mysql_query(mysql, f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", passwords.new())
    # The --ownership-schema, as another operator (or this one on its default server) would have it.
    mysql_query(mysql, f"CREATE DATABASE `{flags_schema}`")
    mysql_query(mysql, f"CREATE TABLE `{flags_schema}`.accounts (user VARCHAR(32), note VARCHAR(32))")
    mysql_query(mysql, f"INSERT INTO `{flags_schema}`.accounts VALUES ('someone', 'owned elsewhere')")
    for namespace in (tenant, neighbour):
        await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})

    server = f"shared-{suffix}"
    body = server_object(CLUSTER_KIND, server, server_spec(mysql, "admin", own_schema))
    body["metadata"]["labels"] = {"dbuser-operator.dev/target": target}
    entry = {"namespaceSelector": {"matchLabels": {label: "tenant"}}, "allowAdoption": True}
    body["spec"]["policy"] = {"namespaces": [entry]}
    await kube_client.create(CLUSTER_MYSQL_SERVERS, body)
    body = server_object(KIND, "theirs", server_spec(mysql, "admin", neighbour_schema))
    body["metadata"]["labels"] = {"dbuser-operator.dev/target": target}
    body["spec"]["host"] = "localhost" if mysql.host == "127.0.0.1" else mysql.host  # another name for it
    await kube_client.create(MYSQL_SERVERS, body, neighbour)
    operator = await start_operator(
        target=target,
        cluster_resource_namespace=ops,
        default_server=False,
        mysql_user=flags_admin,
        reserved_users=[reserved_user],
        ownership_schema=flags_schema,
        resync_period=1.0,
    )
    await wait_for_server(kube_client, neighbour, "theirs", "True")
    await wait_for_condition(kube_client, CLUSTER_MYSQL_SERVERS, None, server, "True", limit=60)
    # The neighbour's own DatabaseUser: rows in the neighbour's bookkeeping schema.
    neighbour_user = f"nbr_app_{suffix}"
    obj = database_user("app", "pw", target=target, user=neighbour_user, serverRef={"name": "theirs"})
    await kube_client.create(DATABASE_USERS, obj, neighbour)
    await wait_for_ready(kube_client, neighbour, "app", limit=60)
    env = Names(
        kube=kube_client,
        mysql=mysql,
        operator=operator,
        target=target,
        tenant=tenant,
        neighbour=neighbour,
        server=server,
        own_schema=own_schema,
        neighbour_schema=neighbour_schema,
        flags_schema=flags_schema,
        accounts={
            "system account": "root",
            "the flags' admin (--mysql-user)": flags_admin,
            "--reserved-users": reserved_user,
            "the server resource's own admin": own_admin,
            "another server resource's admin": neighbour_admin,
        },
        databases={
            "system schema": "mysql",
            "--ownership-schema": flags_schema,
            "the server resource's own bookkeeping schema": own_schema,
            "another server resource's bookkeeping schema": neighbour_schema,
        },
        neighbour_user=neighbour_user,
    )
    try:
        yield env
    finally:
        for namespace in (tenant, neighbour):
            for resource in (DATABASE_USERS, DATABASE_ROLES, DATABASES):
                for item in (await kube_client.list(resource, namespace))["items"]:
                    await kube_client.delete(resource, item["metadata"]["name"], namespace)
        await asyncio.sleep(1)
        await kube_client.delete(CLUSTER_MYSQL_SERVERS, server)
        await kube_client.delete(MYSQL_SERVERS, "theirs", neighbour)
        operator.stop.set()
        await asyncio.wait_for(operator.task, timeout=30)
        for namespace in (ops, tenant, neighbour):
            await core.delete_namespace(namespace, _request_timeout=30)
        for user in (own_admin, neighbour_admin, flags_admin, reserved_user, neighbour_user):
            mysql_query(mysql, f"DROP USER IF EXISTS '{user}'@'%'")
        for schema in (own_schema, neighbour_schema, flags_schema):
            mysql_query(mysql, f"DROP DATABASE IF EXISTS `{schema}`")


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.resource.kind)
async def test_every_reserved_name_is_refused_and_kept(names: Names, kind: Kind) -> None:
    env, ns = names, names.tenant
    untouched = await neighbour_readiness(env)
    neighbour_account = account_rows(env.mysql, env.neighbour_user)
    earlier_events = {event["metadata"]["uid"] for event in await events_of(env.kube, env.neighbour, "app")}
    for what, name in kind.names(env).items():
        resource = unique("grab")
        if kind.resource == DATABASES:
            before = schema_rows(env.mysql, name)
            assert before, f"{what} {name} exists before the attempt"
        else:
            before = account_rows(env.mysql, name)
        neighbour_rows = schema_rows(env.mysql, env.neighbour_schema)
        await env.kube.create(kind.resource, env.body(kind.resource, resource, name), ns)
        # (the server resource may be not ready for a moment on a busy machine: ServerNotReady comes first)
        found = await wait_for_condition(
            env.kube, kind.resource, ns, resource, "False", kind.reason, limit=60
        )
        condition = ready(found) or {}
        assert name in condition["message"], condition["message"]
        assert recorded(env.mysql, env.own_schema, name) == [], f"{what}: nothing claimed"
        await env.kube.delete(kind.resource, resource, ns)
        await wait_until_gone(env.kube, ns, resource, limit=60, resource=kind.resource)
        after = schema_rows(env.mysql, name) if kind.resource == DATABASES else account_rows(env.mysql, name)
        assert after == before, f"{what} {name} changed"
        assert schema_rows(env.mysql, env.neighbour_schema) == neighbour_rows
    # The neighbour's server and user never noticed: its account is as it was, both are Ready, and their
    # conditions are the very ones from before (nothing above moved their generations, so a Ready=True now
    # may be the one from before; a dip and a return would have moved its lastTransitionTime) — unless the
    # server's availability dipped meanwhile (a health check's login late on a busy machine): then all the
    # user was told is that (AVAILABILITY_DIP), and the server says Connected again, not AccessDenied.
    await wait_for_server(env.kube, env.neighbour, "theirs", "True")
    await wait_for_ready(env.kube, env.neighbour, "app", limit=60)
    assert account_rows(env.mysql, env.neighbour_user) == neighbour_account
    if (now := await neighbour_readiness(env)) != untouched:
        events = await events_of(env.kube, env.neighbour, "app")
        told = {event["reason"] for event in events if event["metadata"]["uid"] not in earlier_events}
        assert told <= AVAILABILITY_DIP, (untouched, now, told)
        assert (now[0] or {}).get("reason") == "Connected", now


AVAILABILITY_DIP = {"ServerNotReady", "AccountReady"}
"""The Events of a user whose server's health check failed for a moment: held, then Ready again (as seen with
a server's port refusing one health check)."""


async def neighbour_readiness(env: Names) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The Ready conditions of the neighbour's server and of its DatabaseUser, as they are now."""
    server = await env.kube.get(MYSQL_SERVERS, "theirs", env.neighbour)
    user = await env.kube.get(DATABASE_USERS, "app", env.neighbour)
    return ready(server), ready(user)


async def test_a_database_refused_server_not_found_deletes_at_once(names: Names) -> None:
    """Like a DatabaseUser in that state: the finalizer comes off, nothing is dropped."""
    env, ns = names, names.tenant
    name = f"{ns}_orphan".replace("-", "_")
    mysql_query(env.mysql, f"CREATE DATABASE `{name}`")
    try:
        for resource in (DATABASES, DATABASE_ROLES):  # a DatabaseRole in that state too
            body = env.body(resource, "nowhere", name)
            body["spec"]["serverRef"] = {"kind": CLUSTER_KIND, "name": "no-such-server"}
            await env.kube.create(resource, body, ns)
            await wait_for_condition(env.kube, resource, ns, "nowhere", "False", "ServerNotFound", limit=60)
            await env.kube.delete(resource, "nowhere", ns)
            await wait_until_gone(env.kube, ns, "nowhere", limit=60, resource=resource)
            assert schema_rows(env.mysql, name)
    finally:
        mysql_query(env.mysql, f"DROP DATABASE IF EXISTS `{name}`")
