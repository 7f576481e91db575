"""The privilege model end to end, on the real API server and the session's MySQL flavour: any privilege
the server lists (at its level), column and routine grants, converged from empty and from drift made by hand,
refused with a reason naming the privilege, proven by logging in; and what kubectl shows of it."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.conftest import Runner
from tests.integration.mysql.support import as_user
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, wait_for_ready
from tests.integration.operator.support.mysql import account_exists, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

TARGET = "privileges"
# Global privileges one flavour has and the other does not (and that are no static privilege).
SERVER_ONLY = {
    "mysql": ("BACKUP_ADMIN", "SYSTEM_VARIABLES_ADMIN"),
    "mariadb": ("SLAVE MONITOR", "READ_ONLY ADMIN"),
}


def flavour(mysql: MySQLServer) -> str:
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    return "mariadb" if "mariadb" in str(version).lower() else "mysql"


@pytest.fixture(scope="module")
async def privileged(start_module_operator: StartOperator) -> RunningOperator:
    """An instance whose allow-list on *.* has the server-only privileges of both flavours."""
    allowed = ["PROCESS", *SERVER_ONLY["mysql"], *SERVER_ONLY["mariadb"]]
    return await start_module_operator(
        target=TARGET,
        resync_period=1.0,
        ownership_schema="dbuser_operator_privileges",
        allowed_global_privileges=allowed,
    )


def objects(mysql: MySQLServer) -> str:
    """A fresh database with a table of three columns and two procedures."""
    database = unique("privdb").replace("-", "_")
    with mysql.connect() as connection, connection.cursor() as cursor:
        for statement in (
            f"CREATE DATABASE `{database}`",
            f"CREATE TABLE `{database}`.t (a INT, b INT, c INT)",
            f"INSERT INTO `{database}`.t VALUES (1, 2, 3)",
            f"CREATE PROCEDURE `{database}`.p1() SELECT 1",
            f"CREATE PROCEDURE `{database}`.p2() SELECT 2",
        ):
            cursor.execute(statement)
    return database


def grants_of(mysql: MySQLServer, user: str) -> set[tuple[Any, ...]]:
    """The account's rows in the grant tables (columns and routines included), for comparisons."""
    rows: set[tuple[Any, ...]] = set()
    rows |= {
        ("column", *r)
        for r in mysql_query(
            mysql,
            "SELECT Db, Table_name, Column_name, Column_priv FROM mysql.columns_priv WHERE User = %s",
            user,
        )
    }
    rows |= {
        ("routine", *r)
        for r in mysql_query(
            mysql,
            "SELECT Db, Routine_name, Routine_type, Proc_priv FROM mysql.procs_priv WHERE User = %s",
            user,
        )
    }
    rows |= {
        ("global", r[0])
        for r in mysql_query(
            mysql,
            "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %s",
            f"'{user}'@'%'",
        )
        if r[0] != "USAGE"
    }
    return rows


async def test_columns_routines_and_server_privileges_converge_and_take_effect(
    privileged: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    database = objects(mysql)
    name = unique("breadth")
    password = passwords.new()
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": password})
    server_only = list(SERVER_ONLY[flavour(mysql)])
    spec = [
        {"database": "*", "privileges": server_only},
        {"database": database, "table": "t", "columns": ["a", "b"], "privileges": ["SELECT"]},
        {"database": database, "routine": {"type": "PROCEDURE", "name": "p1"}, "privileges": ["EXECUTE"]},
    ]
    body = database_user(name, f"{name}-pw", target=TARGET, privileges=spec)
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    assert obj["status"]["privileges"] == [
        f"{', '.join(sorted(server_only))} ON *.*",
        f"SELECT (a, b) ON `{database}`.`t`",
        f"EXECUTE ON PROCEDURE `{database}`.`p1`",
    ]
    # The effect, for a real client.
    assert as_user(mysql, name, password, f"SELECT a, b FROM `{database}`.t") == [(1, 2)]
    assert as_user(mysql, name, password, f"SELECT c FROM `{database}`.t") == 1143
    assert as_user(mysql, name, password, f"CALL `{database}`.p1()") == [(1,)]
    assert as_user(mysql, name, password, f"CALL `{database}`.p2()") == 1370
    converged = grants_of(mysql, name)

    # Drift by hand: a column, a routine and a global privilege added, a wanted column and routine removed.
    extra = "PROCESS"
    with mysql.connect() as connection, connection.cursor() as cursor:
        for statement in (
            f"GRANT SELECT (c) ON `{database}`.t TO '{name}'@'%'",
            f"GRANT EXECUTE ON PROCEDURE `{database}`.p2 TO '{name}'@'%'",
            f"GRANT {extra} ON *.* TO '{name}'@'%'",
            f"REVOKE SELECT (a) ON `{database}`.t FROM '{name}'@'%'",
            f"REVOKE EXECUTE ON PROCEDURE `{database}`.p1 FROM '{name}'@'%'",
        ):
            cursor.execute(statement)
    assert grants_of(mysql, name) != converged
    await eventually(lambda: grants_of(mysql, name) == converged)  # the drift check (every second) repairs
    assert as_user(mysql, name, password, f"SELECT c FROM `{database}`.t") == 1143
    assert as_user(mysql, name, password, f"CALL `{database}`.p2()") == 1370
    assert as_user(mysql, name, password, f"CALL `{database}`.p1()") == [(1,)]

    # Narrowed in the spec: what is left out is revoked, and status says what is held.
    patch = {"spec": {"privileges": [spec[1]]}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    await eventually(lambda: {row[0] for row in grants_of(mysql, name)} == {"column"})
    obj = await wait_for_ready(kube_client, namespace, name)
    described = kubectl("describe", "dbu", name, "-n", namespace).stdout
    assert f"SELECT (a, b) ON `{database}`.`t`" in described


@pytest.mark.parametrize("case", ["other-flavour", "misplaced", "typo"])
async def test_privileges_the_server_refuses_are_named_before_any_sql(
    privileged: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    kubectl: Runner,
    case: str,
) -> None:
    here = flavour(mysql)
    other = SERVER_ONLY["mariadb" if here == "mysql" else "mysql"][0]
    grant, reason, says = {
        "other-flavour": ({"database": "*", "privileges": [other]}, "PrivilegeUnknown", f"{other} is "),
        "misplaced": (
            {"database": "app", "privileges": ["SELECT", SERVER_ONLY[here][1]]},
            "PrivilegeMisplaced",
            f"{SERVER_ONLY[here][1]} is a global privilege of",
        ),
        "typo": (
            {"database": "app", "privileges": ["SELEC"]},
            "PrivilegeUnknown",
            "SELEC is not a privilege of",
        ),
    }[case]
    name = unique("refused")
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": passwords.new()})
    body = database_user(name, f"{name}-pw", target=TARGET, privileges=[grant])
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name, status="False", reason=reason)
    [condition] = [c for c in obj["status"]["conditions"] if c["type"] == "Ready"]
    assert says in condition["message"], condition
    assert not account_exists(mysql, name)  # refused before anything was written, the account included
    assert obj["status"]["user"] == name
    assert "privileges" not in obj["status"]
    # kubectl get shows the user of a refused resource too.
    rows = [line.split() for line in kubectl("get", "dbu", name, "-n", namespace).stdout.splitlines()]
    assert rows[1][:5] == [name, name, "%", "False", reason]


async def test_describe_shows_no_empty_privileges_line(
    privileged: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    name = unique("bare")
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(name, f"{name}-pw", target=TARGET), namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    assert "privileges" not in obj["spec"]
    assert "privileges" not in obj["status"]
    described = kubectl("describe", "dbu", name, "-n", namespace).stdout
    assert "Privileges:" not in described, described
