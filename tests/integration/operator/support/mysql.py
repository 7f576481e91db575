"""The MySQL server as the operator's tests see it: real logins, accounts, privileges, its flavour."""

from __future__ import annotations

from typing import Any

import pymysql

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import ServerInfo
from dbuser_operator.mysql.accounts import dual_password, mariadb_dual_auth
from tests.integration.mysql.support import client_tls
from tests.integration.operator.support.wait import eventually


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
        # Access denied; or, on MySQL, an account still being created (expired for the few milliseconds
        # until the operator lifts it: mysql/accounts/new_password.py).
        if error.args[0] in (1045, 1862):
            return False
        raise
    return True


async def wait_for_login(
    mysql: MySQLServer,
    user: str,
    password: str,
    *,
    limit: float = 30.0,
    interval: float = 0.05,
    message: str = "",
) -> None:
    """Wait (:func:`eventually`) until ``user`` logs in with ``password`` (:func:`can_log_in`)."""
    await eventually(
        lambda: can_log_in(mysql, user, password),
        limit=limit,
        interval=interval,
        message=message or f"{user} never logged in with that password",
    )


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


def has_dual_passwords(mysql: MySQLServer) -> bool:
    """Whether the test server can keep two passwords of an account: MySQL 8.0.21+ (a retained password),
    MariaDB 10.11+ (two authentications of one plugin)."""
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    server = ServerInfo.parse(str(version))
    return dual_password.supports_dual_passwords(server) or mariadb_dual_auth.supports_dual_auth(server)


def is_mariadb(mysql: MySQLServer) -> bool:
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    return ServerInfo.parse(str(version)).flavour == "mariadb"


def role_host(mysql: MySQLServer) -> str:
    return "" if is_mariadb(mysql) else "%"


def role_exists(mysql: MySQLServer, role: str) -> bool:
    return bool(
        mysql_query(mysql, "SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", role, role_host(mysql))
    )


def roles_of(mysql: MySQLServer, user: str) -> set[str]:
    if is_mariadb(mysql):
        rows = mysql_query(
            mysql, "SELECT Role FROM mysql.roles_mapping WHERE User = %s AND Host = '%%'", user
        )
    else:
        rows = mysql_query(
            mysql, "SELECT FROM_USER FROM mysql.role_edges WHERE TO_USER = %s AND TO_HOST = '%%'", user
        )
    return {str(row[0]) for row in rows}


def default_roles_of(mysql: MySQLServer, user: str) -> set[str]:
    if is_mariadb(mysql):
        rows = mysql_query(mysql, "SELECT default_role FROM mysql.user WHERE User = %s AND Host = '%%'", user)
    else:
        rows = mysql_query(mysql, "SELECT DEFAULT_ROLE_USER FROM mysql.default_roles WHERE USER = %s", user)
    return {str(row[0]) for row in rows if row[0]}
