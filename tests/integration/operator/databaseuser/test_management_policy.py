"""spec.managementPolicy end to end on real servers: Observe reads a hand-made account into status and writes
nothing (the grant tables compared before and after); Paused repairs no drift and holds deletion; back to
Manage converges."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import own_schema
from tests.integration.operator.support.kube import ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import (
    account_exists,
    account_row,
    can_log_in,
    mysql_query,
    privileges_of,
)
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

# The account tables of both flavours, and the per-flavour ones (roles, dynamic privileges).
ACCOUNT_TABLES = (
    "mysql.user",
    "mysql.db",
    "mysql.tables_priv",
    "mysql.columns_priv",
    "mysql.procs_priv",
    "mysql.global_priv",
    "mysql.global_grants",
    "mysql.roles_mapping",
    "mysql.role_edges",
    "mysql.default_roles",
)


async def until(condition: Callable[[], bool], what: str) -> None:
    await eventually(condition, timeout=30, interval=0.1, what=what)


async def patch_spec(kube: KubeClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    await kube.patch(DATABASE_USERS, name, {"spec": spec}, PatchType.MERGE, namespace=namespace)


def grant_tables(mysql: MySQLServer, user: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the account tables that concerns ``user`` (and the bookkeeping rows naming it)."""
    present = {
        f"mysql.{row[0]}"
        for row in mysql_query(
            mysql, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql'"
        )
    }
    rows: dict[str, list[tuple[Any, ...]]] = {}
    for table in ACCOUNT_TABLES:
        if table not in present:
            continue
        columns = [str(row[0]) for row in mysql_query(mysql, f"SHOW COLUMNS FROM {table}")]
        keys = [column for column in columns if column.lower() in {"user", "to_user", "from_user"}]
        where = " OR ".join(f"`{key}` = %s" for key in keys)
        rows[table] = sorted(
            mysql_query(mysql, f"SELECT * FROM {table} WHERE {where}", *([user] * len(keys))), key=repr
        )
    books = (
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'accounts'"
    )
    rows["bookkeeping"] = (  # none before the operator's first account made its schema
        mysql_query(mysql, f"SELECT * FROM {own_schema()}.accounts WHERE user = %s", user)
        if mysql_query(mysql, books, own_schema())[0][0]
        else []
    )
    return rows


async def test_observe_reads_a_hand_made_account_and_writes_nothing(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    passwords: PasswordLedger,
) -> None:
    name = unique("imported")
    handmade = passwords.new("handmade")
    mysql_query(mysql, "CREATE DATABASE IF NOT EXISTS observedb")
    mysql_query(mysql, f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s WITH MAX_USER_CONNECTIONS 5", handmade)
    mysql_query(mysql, f"GRANT SELECT, INSERT ON observedb.* TO '{name}'@'%'")
    mysql_query(mysql, f"CREATE USER '{name}'@'localhost' IDENTIFIED BY %s REQUIRE SSL", handmade)
    before = grant_tables(mysql, name)
    try:
        body = database_user(
            name,
            "pw",
            hosts=["localhost", "10.8.%"],
            managementPolicy="Observe",
            privileges=[{"privileges": ["SELECT"], "database": "observedb"}],
        )
        await kube_client.create(DATABASE_USERS, body, namespace)
        obj = await wait_for_ready(kube_client, namespace, name, "False", "Diverged")
        message = ready(obj)["message"]  # type: ignore[index]
        assert f"'{name}'@'%': maxUserConnections is 5 (spec 0)" in message
        assert "would revoke INSERT ON `observedb`.*" in message
        assert f"'{name}'@'localhost': requireTLS is True (spec False)" in message
        assert f"'{name}'@'10.8.%': the account does not exist" in message
        observed = {account["host"]: account for account in obj["status"]["observed"]}
        assert set(observed) == {"%", "localhost", "10.8.%"}
        anywhere = observed["%"]
        assert anywhere["exists"] is True
        assert anywhere["plugin"]
        assert (anywhere["tls"], anywhere["maxUserConnections"]) == ("NONE", 5)
        assert anywhere["privileges"] == ["INSERT, SELECT ON `observedb`.*"]
        assert observed["localhost"]["tls"] == "SSL"
        assert observed["10.8.%"]["exists"] is False
        assert "finalizers" not in obj["metadata"]  # nothing to undo: no finalizer

        # A spec in line with the accounts: Observed. Still nothing written.
        await patch_spec(
            kube_client,
            namespace,
            name,
            {
                "hosts": None,
                "maxUserConnections": 5,
                "privileges": [{"privileges": ["SELECT", "INSERT"], "database": "observedb"}],
            },
        )
        obj = await wait_for_ready(kube_client, namespace, name, "True", "Observed")
        assert [account["host"] for account in obj["status"]["observed"]] == ["%"]
        # A change by hand shows in status at the next look (every resync period).
        mysql_query(mysql, f"ALTER USER '{name}'@'%' WITH MAX_USER_CONNECTIONS 6")
        await wait_for_ready(kube_client, namespace, name, "False", "Diverged")
        mysql_query(mysql, f"ALTER USER '{name}'@'%' WITH MAX_USER_CONNECTIONS 5")
        await wait_for_ready(kube_client, namespace, name, "True", "Observed")
        assert grant_tables(mysql, name) == before
        assert can_log_in(mysql, name, handmade)  # the Secret's password was never set

        await kube_client.delete(DATABASE_USERS, name, namespace)
        await wait_until_gone(kube_client, namespace, name)
        assert grant_tables(mysql, name) == before
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{name}'@'%', '{name}'@'localhost'")


async def test_paused_repairs_no_drift_and_manage_converges_again(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("paused")
    wanted = {("pauseddb", "*", "SELECT", False)}
    body = database_user(name, "pw", privileges=[{"privileges": ["SELECT"], "database": "pauseddb"}])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)

    await patch_spec(kube_client, namespace, name, {"managementPolicy": "Paused", "maxUserConnections": 3})
    obj = await wait_for_ready(kube_client, namespace, name, "True", "Paused")
    paused = [c for c in obj["status"]["conditions"] if c["type"] == "Paused"]
    assert [(c["status"], c["reason"]) for c in paused] == [("True", "ManagementPaused")]
    assert (account_row(mysql, name) or {})["max_user_connections"] == 0  # the spec change waits too

    mysql_query(mysql, f"GRANT INSERT ON pauseddb.* TO '{name}'@'%'")
    mysql_query(mysql, f"ALTER USER '{name}'@'%' WITH MAX_QUERIES_PER_HOUR 7")
    await asyncio.sleep(4)  # four drift-check periods of the session's operator
    assert ("pauseddb", "*", "INSERT", False) in privileges_of(mysql, name)
    assert (account_row(mysql, name) or {})["max_questions"] == 7

    await patch_spec(kube_client, namespace, name, {"managementPolicy": "Manage"})
    await until(lambda: privileges_of(mysql, name) == wanted, what="the hand grant revoked")
    await until(lambda: (account_row(mysql, name) or {})["max_questions"] == 0, what="the limit restored")
    obj = await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    assert (account_row(mysql, name) or {})["max_user_connections"] == 3
    assert "Paused" not in {c["type"] for c in obj["status"]["conditions"]}

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)


async def test_deleting_a_paused_resource_waits_for_manage(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("held")
    await kube_client.create(DATABASE_USERS, database_user(name, "pw"), namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    finalizers = obj["metadata"]["finalizers"]
    await patch_spec(kube_client, namespace, name, {"managementPolicy": "Paused"})
    await wait_for_ready(kube_client, namespace, name, "True", "Paused")

    await kube_client.delete(DATABASE_USERS, name, namespace)
    # Wait for the deletion's own pass (a fixed sleep assumed it within 3 s: the Ready=True Paused still there
    # is the one from before, "changes nothing"); then three drift-check periods change nothing.
    await wait_for_ready(kube_client, namespace, name, "True", "Paused", containing="deletion waits")
    await asyncio.sleep(3)
    obj = await kube_client.get(DATABASE_USERS, name, namespace)
    assert obj["metadata"]["finalizers"] == finalizers
    assert "deletion waits" in ready(obj)["message"]  # type: ignore[index]
    assert account_exists(mysql, name)

    await patch_spec(kube_client, namespace, name, {"managementPolicy": "Manage"})
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)
