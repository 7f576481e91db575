"""Reading an account without writing (managementPolicy Observe) and the per-user ownership queries of
several hosts, against the real server of each flavour."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, InvalidAccountError, ServerInfo
from dbuser_operator.mysql.accounts.observe import read_account
from dbuser_operator.mysql.bookkeeping.ownership import (
    ACCOUNTS,
    Owner,
    account,
    claim,
    forget_owner,
    owned_hosts,
)
from dbuser_operator.mysql.grants import Grant
from tests.integration.mysql.support import Accounts, Databases, admin, admin_rows

pytestmark = pytest.mark.integration

ALICE = Owner("11111111-1111-4111-8111-111111111111", "team-a", "app")
BOB = Owner("22222222-2222-4222-8222-222222222222", "team-b", "app")

WRITES = (
    "Com_create_user",
    "Com_alter_user",
    "Com_drop_user",
    "Com_grant",
    "Com_revoke",
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_delete",
    "Com_create_db",
    "Com_create_table",
)


def writes(mysql: MySQLServer) -> int:
    rows = admin_rows(mysql, "SHOW GLOBAL STATUS WHERE Variable_name IN %s", WRITES)
    return sum(int(value) for _, value in rows)


async def test_owned_hosts_and_forget_owner_go_by_user_and_owner(db: Database, owned_schema: str) -> None:
    for host in ("localhost", "10.0.%", "127.0.0.1"):
        await claim(db, owned_schema, account("app", host), ALICE)
    await claim(db, owned_schema, account("app", "%"), BOB)
    await claim(db, owned_schema, account("other", "%"), ALICE)
    assert await owned_hosts(db, owned_schema, "app", ALICE.uid) == ["10.0.%", "127.0.0.1", "localhost"]
    assert await owned_hosts(db, owned_schema, "app", BOB.uid) == ["%"]
    assert await owned_hosts(db, owned_schema, "nobody", ALICE.uid) == []
    assert await forget_owner(db, owned_schema, ACCOUNTS, "app", ALICE.uid) == 3
    assert await owned_hosts(db, owned_schema, "app", ALICE.uid) == []
    assert await owned_hosts(db, owned_schema, "app", BOB.uid) == ["%"]  # Bob's row stays
    assert await owned_hosts(db, owned_schema, "other", ALICE.uid) == ["%"]  # another user's too
    assert await forget_owner(db, owned_schema, ACCOUNTS, "app", ALICE.uid) == 0
    with pytest.raises(InvalidAccountError):
        await owned_hosts(db, owned_schema, "a'b", ALICE.uid)


async def test_read_account_reports_plugin_tls_limits_grants_and_roles_and_writes_nothing(
    db: Database,
    mysql: MySQLServer,
    server: ServerInfo,
    accounts_made: Accounts,
    databases_made: Databases,
) -> None:
    user = accounts_made.track(accounts_made.name(), "%", "localhost")
    role = accounts_made.name()
    database = databases_made.name("_obs")
    try:
        await _read_and_check(db, mysql, server, user, role, database)
    finally:
        admin(mysql, f"DROP ROLE IF EXISTS '{role}'")


async def _read_and_check(
    db: Database, mysql: MySQLServer, server: ServerInfo, user: str, role: str, database: str
) -> None:
    escaped = database.replace("_", "\\_")  # the database alone, not a pattern
    admin(
        mysql,
        f"CREATE USER '{user}'@'%' IDENTIFIED BY 'Observed-1' REQUIRE SSL WITH MAX_USER_CONNECTIONS 4"
        " MAX_QUERIES_PER_HOUR 9",
        f"GRANT SELECT, INSERT ON `{escaped}`.* TO '{user}'@'%'",
        f"CREATE USER '{user}'@'localhost' IDENTIFIED BY 'Observed-2'",
        f"CREATE ROLE '{role}'",
        f"GRANT '{role}' TO '{user}'@'%'",
    )
    before = writes(mysql)
    live = await read_account(db, user, "%", server)
    assert live is not None
    assert live.plugin == ("caching_sha2_password" if server.flavour == "mysql" else "mysql_native_password")
    assert live.tls == "SSL"
    assert (live.limits.max_user_connections, live.limits.max_queries_per_hour) == (4, 9)
    assert live.limits.require_tls is True
    assert live.grants == {Grant(frozenset({"SELECT", "INSERT"}), database)}
    assert live.roles == ((f"'{role}'@'%'",) if server.flavour == "mysql" else (role,))

    other = await read_account(db, user, "LOCALHOST", server)  # hosts compare without regard to case
    assert other is not None
    assert (other.tls, other.grants, other.roles) == ("NONE", frozenset(), ())
    assert await read_account(db, user, "10.0.%", server) is None
    assert writes(mysql) == before  # reads only
