"""Grants against the real server: applied, read back, drift by hand revoked, checked by logging in."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import (
    Database,
    InvalidAccountError,
    InvalidGrantError,
    InvalidNameError,
    ServerInfo,
    TableNotFoundError,
)
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.grants import (
    GLOBAL,
    Grant,
    apply,
    expand_all,
    normalise,
    privilege_tables,
    read_grants,
)
from tests.integration.mysql.support import Accounts, Databases, admin, admin_rows, as_user

pytestmark = pytest.mark.integration

PASSWORD = "grants-test-pw"


def g(privileges: str, database: str, table: str = "*", grant_option: bool = False) -> Grant:
    return Grant(frozenset(p.strip() for p in privileges.split(",")), database, table, grant_option)


def esc(database: str) -> str:
    """The database name as a person types it in GRANT to mean that database alone."""
    return database.replace("_", "\\_")


async def new_account(db: Database, accounts_made: Accounts, host: str = "%") -> str:
    user = accounts_made.track(accounts_made.name(), host)
    await accounts.create(db, user, host, PASSWORD)
    return user


async def applied_twice(
    db: Database, user: str, desired: set[Grant], server: ServerInfo, host: str = "%"
) -> list[str]:
    """Apply, check the grants read back as wanted, and that a second pass sends nothing but one read (two
    on MariaDB for an account with global privileges: the privilege tables, then information_schema)."""
    summary = await apply(db, user, host, desired, server)
    wanted = normalise(desired, server)
    assert await read_grants(db, user, host) == wanted
    written, read = db.statements_written, db.statements_read
    assert await apply(db, user, host, desired, server) == []
    reads = 2 if privilege_tables.supported(server) and any(grant.database == "*" for grant in wanted) else 1
    assert (db.statements_written, db.statements_read) == (written, read + reads)
    return summary


async def test_a_new_account_has_no_grants(db: Database, accounts_made: Accounts) -> None:
    user = await new_account(db, accounts_made)
    assert await read_grants(db, user, "%") == set()
    assert await read_grants(db, accounts_made.name(), "%") == set()  # no such account


async def test_database_grants_added_changed_and_removed(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create("", "t")

    summary = await applied_twice(db, user, {g("SELECT, INSERT", app)}, server)
    assert summary == [f"granted INSERT, SELECT ON `{app}`.*"]
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{app}`.t") == [(0,)]

    summary = await applied_twice(db, user, {g("SELECT, UPDATE", app)}, server)
    assert summary == [f"revoked INSERT ON `{app}`.*", f"granted UPDATE ON `{app}`.*"]

    summary = await applied_twice(db, user, set(), server)
    assert summary == [f"revoked SELECT, UPDATE ON `{app}`.*"]
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{app}`.t") == 1142  # SELECT denied
    (only,) = admin_rows(mysql, "SHOW GRANTS FOR %s@'%%'", user)
    assert only[0].startswith(f"GRANT USAGE ON *.* TO `{user}`@`%`")


async def test_an_extra_privilege_granted_by_hand_is_revoked(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create()
    desired = {g("SELECT", app)}
    await apply(db, user, "%", desired, server)

    admin(mysql, f"GRANT DELETE ON `{esc(app)}`.* TO '{user}'@'%'")  # by hand
    assert await read_grants(db, user, "%") == {Grant.observed({"SELECT", "DELETE"}, app)}

    assert await applied_twice(db, user, desired, server) == [f"revoked DELETE ON `{app}`.*"]


async def test_a_level_granted_only_by_hand_is_revoked_entirely(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app, other = databases_made.create(), databases_made.create("", "t")
    admin(
        mysql,
        f"GRANT SELECT, UPDATE ON `{esc(other)}`.* TO '{user}'@'%' WITH GRANT OPTION",
        f"GRANT INSERT ON `{other}`.`t` TO '{user}'@'%'",
        f"GRANT PROCESS ON *.* TO '{user}'@'%'",
    )

    summary = await applied_twice(db, user, {g("SELECT", app)}, server)

    assert sorted(summary) == sorted(
        [
            "revoked PROCESS ON *.*",
            f"granted SELECT ON `{app}`.*",
            f"revoked SELECT, UPDATE ON `{other}`.*",
            f"revoked GRANT OPTION ON `{other}`.*",
            f"revoked INSERT ON `{other}`.`t`",
        ]
    )
    shown = [row[0] for row in admin_rows(mysql, "SHOW GRANTS FOR %s@'%%'", user)]
    assert len(shown) == 2
    assert shown[0].startswith(f"GRANT USAGE ON *.* TO `{user}`@`%`")
    assert shown[1] == f"GRANT SELECT ON `{esc(app)}`.* TO `{user}`@`%`"


async def test_table_grants(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create("", "orders", "order_lines")

    summary = await applied_twice(
        db, user, {g("SELECT, UPDATE", app, "orders"), g("SELECT", app, "order_lines")}, server
    )
    assert summary == [
        f"granted SELECT ON `{app}`.`order_lines`",
        f"granted SELECT, UPDATE ON `{app}`.`orders`",
    ]
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{app}`.orders") == [(0,)]
    assert as_user(mysql, user, PASSWORD, f"DELETE FROM `{app}`.orders") == 1142

    summary = await applied_twice(db, user, {g("INSERT", app, "orders")}, server)
    assert summary == [
        f"revoked SELECT ON `{app}`.`order_lines`",
        f"revoked SELECT, UPDATE ON `{app}`.`orders`",
        f"granted INSERT ON `{app}`.`orders`",
    ]


async def test_a_table_grant_on_a_missing_table(
    db: Database, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create()
    with pytest.raises(TableNotFoundError) as refused:
        await apply(db, user, "%", {g("SELECT", app, "later")}, server)
    assert refused.value.reason == "TableNotFound"
    assert isinstance(refused.value, InvalidGrantError)
    assert refused.value.code == 1146
    assert f"`{app}`.`later`" in refused.value.message


async def test_global_grants(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    summary = await applied_twice(db, user, {g("PROCESS, SELECT, SHOW DATABASES", "*")}, server)
    assert summary == ["granted PROCESS, SELECT, SHOW DATABASES ON *.*"]
    assert as_user(mysql, user, PASSWORD, "SELECT COUNT(*) > 0 FROM mysql.user") == [(1,)]  # global SELECT
    assert await applied_twice(db, user, {g("PROCESS", "*")}, server) == [
        "revoked SELECT, SHOW DATABASES ON *.*"
    ]
    assert await applied_twice(db, user, set(), server) == ["revoked PROCESS ON *.*"]


async def test_grant_option_on_and_off(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create()
    grantable = "SELECT DISTINCT IS_GRANTABLE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s"

    await applied_twice(db, user, {g("SELECT", app)}, server)
    assert admin_rows(mysql, grantable, f"'{user}'@'%'") == [("NO",)]

    summary = await applied_twice(db, user, {g("SELECT", app, grant_option=True)}, server)
    assert summary == [f"granted GRANT OPTION ON `{app}`.*"]
    assert admin_rows(mysql, grantable, f"'{user}'@'%'") == [("YES",)]

    summary = await applied_twice(db, user, {g("SELECT, INSERT", app, grant_option=True)}, server)
    assert summary == [f"granted INSERT ON `{app}`.*"]
    assert admin_rows(mysql, grantable, f"'{user}'@'%'") == [("YES",)]

    summary = await applied_twice(db, user, {g("SELECT, INSERT", app)}, server)
    assert summary == [f"revoked GRANT OPTION ON `{app}`.*"]
    assert admin_rows(mysql, grantable, f"'{user}'@'%'") == [("NO",)]

    summary = await applied_twice(db, user, {g("SELECT", "*", grant_option=True)}, server)
    assert summary == ["granted SELECT ON *.* WITH GRANT OPTION", f"revoked INSERT, SELECT ON `{app}`.*"]
    assert await applied_twice(db, user, {g("SELECT", "*")}, server) == ["revoked GRANT OPTION ON *.*"]


@pytest.mark.parametrize("level", ["database", "table", "global"])
async def test_all_expands_and_round_trips(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    databases_made: Databases,
    server: ServerInfo,
    level: str,
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create("", "t")
    database, table = {"database": (app, "*"), "table": (app, "t"), "global": GLOBAL}[level]

    await applied_twice(db, user, {g("ALL", database, table)}, server)

    (grant,) = await read_grants(db, user, "%")
    assert grant.privileges == expand_all((database, table), server)
    # What the server itself grants for ALL is what expand_all says (MySQL adds dynamic privileges globally).
    other = await new_account(db, accounts_made)
    on = "*.*" if database == "*" else f"`{esc(database)}`.*" if table == "*" else f"`{database}`.`{table}`"
    admin(mysql, f"GRANT ALL PRIVILEGES ON {on} TO '{other}'@'%'")
    (by_hand,) = await read_grants(db, other, "%")
    if server.flavour == "mariadb" or level != "global":
        assert by_hand.privileges == grant.privileges
    else:
        assert by_hand.privileges >= grant.privileges


async def test_all_after_a_privilege_was_revoked_by_hand(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app = databases_made.create()
    await apply(db, user, "%", {g("ALL", app)}, server)
    admin(mysql, f"REVOKE EVENT, TRIGGER ON `{esc(app)}`.* FROM '{user}'@'%'")
    assert await applied_twice(db, user, {g("ALL", app)}, server) == [f"granted EVENT, TRIGGER ON `{app}`.*"]


async def test_underscore_in_a_database_name_is_not_a_wildcard(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app_db = databases_made.create("_db", "t")  # it_<hex>_db
    lookalike = app_db[: -len("_db")] + "Xdb"  # it_<hex>Xdb: matched by the wildcard app_db
    databases_made.made.append(lookalike)
    admin(mysql, f"CREATE DATABASE `{lookalike}`", f"CREATE TABLE `{lookalike}`.t (a INT)")

    await applied_twice(db, user, {g("SELECT", app_db)}, server)

    assert admin_rows(
        mysql,
        "SELECT TABLE_SCHEMA FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s",
        f"'{user}'@'%'",
    ) == [(esc(app_db),)]
    visible = as_user(mysql, user, PASSWORD, "SHOW DATABASES")
    assert isinstance(visible, list)
    assert (app_db,) in visible
    assert (lookalike,) not in visible
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{app_db}`.t") == [(0,)]
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{lookalike}`.t") == 1142


async def test_a_wildcard_grant_by_hand_is_replaced_by_the_literal_one(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    app_db = databases_made.create("_db", "t")
    lookalike = app_db[: -len("_db")] + "Xdb"
    databases_made.made.append(lookalike)
    admin(
        mysql,
        f"CREATE DATABASE `{lookalike}`",
        f"CREATE TABLE `{lookalike}`.t (a INT)",
        f"GRANT SELECT ON `{app_db}`.* TO '{user}'@'%'",  # unescaped: a pattern
    )
    assert await read_grants(db, user, "%") == {Grant.observed({"SELECT"}, app_db, pattern=True)}
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{lookalike}`.t") == [(0,)]  # the wildcard

    summary = await applied_twice(db, user, {g("SELECT", app_db)}, server)

    assert summary == [
        f"granted SELECT ON `{app_db}`.*",
        f"revoked SELECT ON `{app_db}`.* (wildcard pattern)",
    ]
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{app_db}`.t") == [(0,)]
    assert as_user(mysql, user, PASSWORD, f"SELECT COUNT(*) FROM `{lookalike}`.t") == 1142


async def test_replication_client_round_trips(
    db: Database, accounts_made: Accounts, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    await applied_twice(db, user, {g("REPLICATION CLIENT, REPLICATION SLAVE", "*")}, server)
    (grant,) = await read_grants(db, user, "%")
    if server.flavour == "mariadb":
        assert grant.privileges == {"BINLOG MONITOR", "REPLICATION SLAVE"}


async def test_user_names_differing_only_in_case_keep_their_own_grants(
    db: Database, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    lower = await new_account(db, accounts_made)
    upper = accounts_made.track(lower.upper(), "%")
    await accounts.create(db, upper, "%", PASSWORD)
    app = databases_made.create()

    await apply(db, lower, "%", {g("SELECT", app)}, server)
    await applied_twice(db, upper, {g("INSERT", app)}, server)

    assert await read_grants(db, lower, "%") == {Grant.observed({"SELECT"}, app)}
    assert await read_grants(db, upper, "%") == {Grant.observed({"INSERT"}, app)}


async def test_an_account_with_a_host_pattern(
    db: Database, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made, host="10.0.%")
    app = databases_made.create()
    summary = await applied_twice(db, user, {g("SELECT", app), g("PROCESS", "*")}, server, host="10.0.%")
    assert summary == ["granted PROCESS ON *.*", f"granted SELECT ON `{app}`.*"]
    assert await read_grants(db, user, "%") == set()  # another account


async def test_a_host_in_upper_case_is_the_same_account(
    db: Database, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "app.example.com")
    await accounts.create(db, user, "App.Example.COM", PASSWORD)  # the server stores it in lower case
    app = databases_made.create()
    await applied_twice(db, user, {g("SELECT", app)}, server, host="App.Example.COM")
    assert await read_grants(db, user, "app.example.com") == {Grant.observed({"SELECT"}, app)}


async def test_grants_of_a_missing_account_are_refused_before_any_grant(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, databases_made: Databases, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    app = databases_made.create()
    admin(mysql, "SET SESSION sql_mode = ''")  # harmless here; the point: GRANT could create the account
    with pytest.raises(InvalidAccountError, match="does not exist"):
        await apply(db, user, "%", {g("SELECT", app)}, server)
    assert db.statements_written == 0
    assert not await accounts.exists(db, user, "%")
    assert await apply(db, user, "%", set(), server) == []  # nothing to do is no error


async def test_a_database_name_too_long_once_escaped_is_an_invalid_name(
    db: Database, accounts_made: Accounts, server: ServerInfo
) -> None:
    """64 characters with a '_' become 65 in GRANT (escaped): the server refuses the name (MariaDB 1102,
    MySQL 1059), a permanent refusal with its own reason, not a ServerError retried for ever."""
    user = await new_account(db, accounts_made)
    with pytest.raises(InvalidNameError) as refused:
        await apply(db, user, "%", {g("SELECT", "d" * 63 + "_")}, server)
    assert refused.value.reason == "InvalidName"
    assert refused.value.code in {1059, 1102}
    assert await read_grants(db, user, "%") == set()
