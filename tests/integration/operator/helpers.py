"""Helpers of the operator's end-to-end tests: objects, waiting, and real MySQL logins."""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

import pymysql
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from tests.integration.mysql.support import client_tls
from tests.integration.operator.conftest import TARGET


def unique(name: str) -> str:
    """``name`` with a random suffix: a DatabaseUser and account name no other test (or earlier run against
    the same server) uses."""
    return f"{name}-{secrets.token_hex(3)}"


def database_user(
    name: str, secret: str, key: str = "password", target: str = TARGET, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": target}},
        "spec": {"password": {"name": secret, "key": key}, **spec},
    }


def ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return dict(condition)
    return None


async def wait_for_ready(
    kube: KubeClient,
    namespace: str,
    name: str,
    status: str = "True",
    reason: str | None = None,
    limit: float = 30,
) -> dict[str, Any]:
    """Poll until the Ready condition has ``status`` (and ``reason``); return the object."""
    deadline = time.monotonic() + limit
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        condition = ready(obj)
        if condition and condition["status"] == status and (reason is None or condition["reason"] == reason):
            return obj
        await asyncio.sleep(0.05)
    raise AssertionError(f"{namespace}/{name} never got Ready={status} {reason or ''}: {ready(obj)}")


async def finalizers_become(
    kube: KubeClient, namespace: str, name: str, expected: list[str], limit: float = 15
) -> None:
    """Poll until the resource's finalizers are exactly ``expected``."""
    deadline = time.monotonic() + limit
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        if (obj["metadata"].get("finalizers") or []) == expected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{namespace}/{name} finalizers never became {expected}: {obj.get('metadata')}")


async def wait_until_gone(kube: KubeClient, namespace: str, name: str, limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            await kube.get(DATABASE_USERS, name, namespace)
        except ApiException as error:
            if error.status == 404:
                return
            raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"{namespace}/{name} was not deleted")


def can_log_in(mysql: MySQLServer, user: str, password: str, *, tls: bool = False) -> bool:
    """Whether a real client connection, without TLS unless ``tls``, logs in as ``user`` with ``password``."""
    # PyMySQL encodes passwords as Latin-1; the server hashed the UTF-8 bytes: send those.
    wire_password = password.encode("utf-8").decode("latin-1")
    try:
        pymysql.connect(
            host=mysql.host,
            port=mysql.port,
            user=user,
            password=wire_password,
            connect_timeout=5,
            **client_tls(mysql, tls=tls),
        ).close()
    except pymysql.err.OperationalError as error:
        if error.args[0] == 1045:  # access denied
            return False
        raise
    return True


def account_exists(mysql: MySQLServer, user: str, host: str = "%") -> bool:
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", (user, host))
        return cursor.fetchone() is not None


def write_statements(mysql: MySQLServer) -> int:
    """Account-changing statements the server has executed (its own status counters)."""
    names = (
        "Com_create_user",
        "Com_alter_user",
        "Com_drop_user",
        "Com_grant",
        "Com_revoke",
        "Com_rename_user",
    )
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS WHERE Variable_name IN %s", (names,))
        return sum(int(value) for _, value in cursor.fetchall())


def mysql_query(mysql: MySQLServer, query: str, *args: Any) -> list[tuple[Any, ...]]:
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(query, args or None)
        return list(cursor.fetchall())


def privileges_of(mysql: MySQLServer, user: str, host: str = "%") -> set[tuple[str, str, str, bool]]:
    """(database, table, privilege, grantable) as information_schema reports them; global is ('*', '*')."""
    grantee = f"'{user}'@'{host}'"
    rows = mysql_query(
        mysql,
        "SELECT '*', '*', PRIVILEGE_TYPE, IS_GRANTABLE FROM information_schema.USER_PRIVILEGES "
        "WHERE GRANTEE = %s AND PRIVILEGE_TYPE <> 'USAGE' "
        "UNION ALL SELECT TABLE_SCHEMA, '*', PRIVILEGE_TYPE, IS_GRANTABLE "
        "FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s "
        "UNION ALL SELECT TABLE_SCHEMA, TABLE_NAME, PRIVILEGE_TYPE, IS_GRANTABLE "
        "FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = %s",
        grantee,
        grantee,
        grantee,
    )
    return {
        (database, table, privilege, grantable == "YES") for database, table, privilege, grantable in rows
    }


def account_row(mysql: MySQLServer, user: str, host: str = "%") -> dict[str, Any] | None:
    rows = mysql_query(
        mysql,
        "SELECT max_user_connections, max_questions, max_updates, max_connections, ssl_type, "
        "authentication_string FROM mysql.user WHERE User = %s AND Host = %s",
        user,
        host,
    )
    if not rows:
        return None
    keys = ("max_user_connections", "max_questions", "max_updates", "max_connections", "ssl_type", "auth")
    return dict(zip(keys, rows[0], strict=True))


def mysql_accounts(mysql: MySQLServer) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Every account with the columns a change would touch: to prove nothing else changed."""
    rows = mysql_query(
        mysql,
        "SELECT User, Host, authentication_string, max_user_connections, max_questions, ssl_type "
        "FROM mysql.user",
    )
    return {(row[0], row[1]): tuple(row[2:]) for row in rows}
