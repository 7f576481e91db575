"""A Database and a DatabaseRole survive their operator SIGKILLed mid-way: between the bookkeeping row and
``CREATE DATABASE`` (the statement held unsent by the fault proxy), and right after ``DROP DATABASE`` or
``DROP ROLE`` ran on the server (its answer kept from the operator), before the row was forgotten and the
finalizer removed. The next process creates the database once, or finishes the deletion: nothing left
in MySQL, no row, no resource. Real operator processes, real API server, MySQL 9.7 and MariaDB 11.8.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASES
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import Resource
from tests.integration.operator.support.builders import database, database_role
from tests.integration.operator.support.kube import wait_db, wait_for_condition, wait_until_gone
from tests.integration.operator.support.mysql import mysql_query, role_exists
from tests.integration.operator.support.replicas import Failover, killed_before, killed_when_answered
from tests.support.fault_proxy import FaultProxy

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def labelled(obj: dict[str, Any], failover: Failover) -> dict[str, Any]:
    obj["metadata"]["labels"] = {"dbuser-operator.dev/target": failover.target}
    return obj


def schema_exists(mysql: MySQLServer, name: str) -> bool:
    query = "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s"
    return bool(mysql_query(mysql, query, name))


def rows(mysql: MySQLServer, failover: Failover, book: str, name: str) -> list[tuple[Any, ...]]:
    column = "name" if book == "databases" else "user"  # roles: keyed as accounts, the host %
    query = f"SELECT owner_uid FROM `{failover.schema}`.`{book}` WHERE {column} = %s"
    return mysql_query(mysql, query, name)


async def test_a_database_killed_before_its_create_database_is_created_once(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer
) -> None:
    namespace, name = failover.namespace, f"crdb{failover.suffix}"
    body = labelled(database(name, deletionPolicy="Delete"), failover)
    async with FaultProxy(mysql.host, mysql.port) as to_mysql:
        a = failover.start("a", mysql_port=to_mysql.port)
        await failover.wait_for_holder(kube_client, a)

        async def create() -> None:
            await kube_client.create(DATABASES, body, namespace)

        only = f"CREATE DATABASE `{name}`".upper().encode()
        print("killed with unsent:", await killed_before(a, to_mysql, create, only=only))
    obj = await kube_client.get(DATABASES, name, namespace)
    assert rows(mysql, failover, "databases", name) == [(obj["metadata"]["uid"],)]  # the claim landed
    assert not schema_exists(mysql, name)

    failover.start("b")
    await wait_db(kube_client, namespace, name, "True", "DatabaseReady")
    assert schema_exists(mysql, name)
    await kube_client.delete(DATABASES, name, namespace)
    await wait_until_gone(kube_client, namespace, name, 90, resource=DATABASES)
    assert not schema_exists(mysql, name)
    assert rows(mysql, failover, "databases", name) == []


@pytest.mark.parametrize(
    ("kind", "statement"),
    [(DATABASES, "DROP DATABASE"), (DATABASE_ROLES, "DROP ROLE")],
    ids=["Database", "DatabaseRole"],
)
async def test_a_deletion_killed_after_its_drop_ran_is_finished_by_the_next_process(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, kind: Resource, statement: str
) -> None:
    namespace, name = failover.namespace, f"drop{failover.suffix}"
    exists: Callable[[MySQLServer, str], bool]
    if kind is DATABASES:
        body, book, exists = database(name, deletionPolicy="Delete"), "databases", schema_exists
    else:
        body, book, exists = database_role(name, deletionPolicy="Delete"), "roles", role_exists
    async with FaultProxy(mysql.host, mysql.port) as to_mysql:
        a = failover.start("a", mysql_port=to_mysql.port)
        await failover.wait_for_holder(kube_client, a)
        await kube_client.create(kind, labelled(body, failover), namespace)
        await wait_for_condition(kube_client, kind, namespace, name, "True")
        assert exists(mysql, name)

        async def delete() -> None:
            await kube_client.delete(kind, name, namespace)

        after = statement.encode()
        print("killed after", await killed_when_answered(a, to_mysql, delete, after))
    assert not exists(mysql, name), f"the {statement} did not land"
    assert rows(mysql, failover, book, name), "the row went before the process was killed"
    assert (await kube_client.get(kind, name, namespace))["metadata"].get("finalizers")

    failover.start("b")
    await wait_until_gone(kube_client, namespace, name, 90, resource=kind)
    assert not exists(mysql, name)
    assert rows(mysql, failover, book, name) == []
