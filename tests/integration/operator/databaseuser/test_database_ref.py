"""A grant's ``databaseRef`` end to end: the user waits for its Database (DatabaseNotFound, DatabaseNotReady),
is granted on the Database's MySQL name once it is Ready (grant tables and a real login that SELECTs), has
a revoked grant restored by the drift check, reports
the Database's deletion; a Database on another server is refused; a tenant cannot reach another namespace's
Database by naming it."""

from __future__ import annotations

import asyncio

import pymysql
import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS, DATABASES
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.mysql.support import client_tls
from tests.integration.operator.servers import test_server_policy
from tests.integration.operator.servers.test_hostile_tenant import POLICY, Victim, victim
from tests.integration.operator.servers.test_server_policy import Tenancy, escaped
from tests.integration.operator.support.builders import database, database_user, unique
from tests.integration.operator.support.kube import (
    create_secret,
    database_gone,
    ready,
    wait_db,
    wait_for_ready,
)
from tests.integration.operator.support.mysql import mysql_query, privileges_of
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import becomes

pytestmark = pytest.mark.integration

shared_tenancy = test_server_policy.tenancy  # the policy tests' fixture, under this name here
__all__ = ["victim"]  # the hostile-tenant fixture, used here too


def select_as(mysql: MySQLServer, user: str, password: str, query: str) -> list[tuple[object, ...]]:
    """``query`` on a real client connection logged in as ``user``."""
    connection = pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password.encode("utf-8").decode("latin-1"),  # as helpers.can_log_in sends it
        connect_timeout=5,
        **client_tls(mysql, tls=False),
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(query)
            return list(cursor.fetchall())
    finally:
        connection.close()


async def test_a_user_waits_for_its_database_then_gets_the_grant(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    password = passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    resource, user = unique("dbref-db"), unique("dbref-u")
    mysql_name = resource.replace("-", "_")
    grants = [{"databaseRef": {"name": resource}, "privileges": ["SELECT"]}]
    await kube_client.create(DATABASE_USERS, database_user(user, "pw", privileges=grants), namespace)
    found = await wait_for_ready(kube_client, namespace, user, "False", "DatabaseNotFound")
    assert resource in (ready(found) or {})["message"]
    assert mysql_query(mysql, "SELECT 1 FROM mysql.user WHERE user = %s", user) == []  # no SQL yet

    # A Database that cannot be created yet (an unknown character set): the user waits, DatabaseNotReady.
    await kube_client.create(
        DATABASES, database(resource, name=mysql_name, characterSet="nosuchcharset"), namespace
    )
    await wait_db(kube_client, namespace, resource, "False")
    found = await wait_for_ready(kube_client, namespace, user, "False", "DatabaseNotReady")
    assert resource in (ready(found) or {})["message"]
    assert mysql_query(mysql, "SELECT 1 FROM mysql.user WHERE user = %s", user) == []

    # The Database becomes Ready: its change requeues the user, granted on the MySQL name (status.name).
    patch = {"spec": {"characterSet": "utf8mb4"}}
    await kube_client.patch(DATABASES, resource, patch, PatchType.MERGE, namespace=namespace)
    await wait_db(kube_client, namespace, resource)
    await wait_for_ready(kube_client, namespace, user, limit=60)
    assert privileges_of(mysql, user) == {(escaped(mysql_name), "*", "SELECT", False)}
    mysql_query(mysql, f"CREATE TABLE `{mysql_name}`.`t` (v INT)")
    mysql_query(mysql, f"INSERT INTO `{mysql_name}`.`t` VALUES (42)")
    assert select_as(mysql, user, password, f"SELECT v FROM `{mysql_name}`.`t`") == [(42,)]

    # A grant revoked behind the operator's back: the drift check resolves the ref too, and restores it.
    mysql_query(mysql, f"REVOKE SELECT ON `{escaped(mysql_name)}`.* FROM '{user}'@'%'")
    granted = {(escaped(mysql_name), "*", "SELECT", False)}
    await becomes(
        lambda: privileges_of(mysql, user), granted, interval=0.2, message="the grant never came back"
    )

    # The Database goes (Retain: the MySQL database stays): the user reports it, its grant stays as it was.
    await kube_client.delete(DATABASES, resource, namespace)
    await database_gone(kube_client, namespace, resource)
    found = await wait_for_ready(kube_client, namespace, user, "False", "DatabaseNotFound", limit=60)
    assert resource in (ready(found) or {})["message"]
    assert privileges_of(mysql, user) == {(escaped(mysql_name), "*", "SELECT", False)}
    mysql_query(mysql, f"DROP DATABASE `{mysql_name}`")


async def test_a_database_on_another_server_is_refused(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    resource, user = unique("dbref-far"), unique("dbref-f")
    far = database(resource, serverRef={"kind": "MySQLServer", "name": "elsewhere"})
    await kube_client.create(DATABASES, far, namespace)
    grants = [{"databaseRef": {"name": resource}, "privileges": ["SELECT"]}]
    await kube_client.create(DATABASE_USERS, database_user(user, "pw", privileges=grants), namespace)
    found = await wait_for_ready(kube_client, namespace, user, "False", "DatabaseOnAnotherServer")
    assert "MySQLServer" in (ready(found) or {})["message"]


async def test_a_tenant_cannot_reach_another_namespaces_database(
    shared_tenancy: Tenancy, victim: Victim
) -> None:
    """Tenant A names tenant B's Ready Database: refused (DatabaseNotFound: A's namespace has none of that
    name); A's account holds nothing on B's database, and B's Database is untouched."""
    env, b = shared_tenancy, victim
    await env.set_policy(**POLICY)
    theirs, b_database = "b-data", f"{b.namespace}_data"
    obj = database(theirs, name=b_database)
    obj["metadata"]["labels"]["dbuser-operator.dev/target"] = env.target
    obj["spec"]["serverRef"] = {"kind": "ClusterMySQLServer", "name": env.server}
    await env.kube.create(DATABASES, obj, b.namespace)
    before = await wait_db(env.kube, b.namespace, theirs)

    name = unique("a-ref")
    grants = [{"databaseRef": {"name": theirs}, "privileges": ["SELECT"]}]
    await env.kube.create(DATABASE_USERS, env.user(name, privileges=grants), env.tenant)
    found = await wait_for_ready(env.kube, env.tenant, name, "False", "DatabaseNotFound", limit=60)
    message = (ready(found) or {})["message"]
    assert theirs in message
    assert env.tenant in message
    assert b.namespace not in message
    grantees = mysql_query(
        env.mysql,
        "SELECT GRANTEE FROM information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA = %s",
        escaped(b_database),
    )
    assert all(name not in str(grantee) for (grantee,) in grantees)
    assert mysql_query(env.mysql, "SELECT 1 FROM mysql.user WHERE user = %s", name) == []
    refused = ready(found) or {}
    await asyncio.sleep(5)  # passes, resyncs and drift checks have had their chances
    after = await env.kube.get(DATABASES, theirs, b.namespace)
    assert after["status"] == before["status"]
    # Still refused, and never Ready in between (the condition's own record of its last change): nothing
    # requeued it into B's namespace.
    now = ready(await env.kube.get(DATABASE_USERS, name, env.tenant)) or {}
    fields = ("status", "reason", "lastTransitionTime")
    assert [now.get(field) for field in fields] == [refused.get(field) for field in fields]
    assert mysql_query(env.mysql, "SELECT 1 FROM mysql.user WHERE user = %s", name) == []


async def test_an_observed_user_resolves_its_refs_too(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    user = unique("dbref-o")
    grants = [{"databaseRef": {"name": "missing"}, "privileges": ["SELECT"]}]
    obj = database_user(user, "pw", privileges=grants, managementPolicy="Observe")
    await kube_client.create(DATABASE_USERS, obj, namespace)
    found = await wait_for_ready(kube_client, namespace, user, "False", "DatabaseNotFound")
    assert "missing" in (ready(found) or {})["message"]
