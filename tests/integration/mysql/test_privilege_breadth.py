"""Privileges beyond the static list, against the real server of the session's flavour: names the server
lists (MySQL's dynamic privileges, MariaDB's administrative ones), column grants and routine grants —
applied, read back from the grant tables, drift by hand put right, the effect proven by logging in."""

from __future__ import annotations

import pytest

from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.bookkeeping.inventory import inventory
from dbuser_operator.mysql.bookkeeping.ownership import Owner, account, claim
from dbuser_operator.mysql.errors import (
    ColumnNotFoundError,
    PrivilegeMisplacedError,
    PrivilegeUnknownError,
    RoutineNotFoundError,
)
from dbuser_operator.mysql.grants import AccountGrants, Grant, apply, normalise, privilege_tables, read_grants
from tests.integration.mysql.support import Accounts, Databases, admin, admin_rows, as_user

pytestmark = pytest.mark.integration

PASSWORD = "breadth-test-pw"

# Global privileges that exist on one flavour only and are no static privilege of the API's old enum.
SERVER_ONLY = {
    "mysql": ("BACKUP_ADMIN", "REPLICATION_SLAVE_ADMIN", "SYSTEM_VARIABLES_ADMIN"),
    "mariadb": ("SLAVE MONITOR", "BINLOG MONITOR", "READ_ONLY ADMIN"),
}


async def new_account(db: Database, accounts_made: Accounts) -> str:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", PASSWORD)
    return user


async def converges(db: Database, user: str, desired: set[Grant], server: ServerInfo) -> list[str]:
    """Apply; the grants read back (both ways on MariaDB) equal the wanted ones; a second pass writes
    nothing."""
    done = await apply(db, user, "%", desired, server)
    wanted = normalise(desired, server)
    assert await read_grants(db, user, "%") == wanted
    assert await read_grants(db, user, "%", server) == wanted
    written = db.statements_written
    assert await apply(db, user, "%", desired, server) == []
    assert db.statements_written == written
    return done


def grant_tables_of(mysql: MySQLServer, user: str) -> list[tuple[object, ...]]:
    """Every row the grant tables hold for ``user``, whatever the level (for before/after comparisons)."""
    rows: list[tuple[object, ...]] = []
    for table in ("db", "tables_priv", "columns_priv", "procs_priv"):
        rows += [
            (table, *row) for row in admin_rows(mysql, f"SELECT * FROM mysql.{table} WHERE User = %s", user)
        ]
    rows += [
        ("user_privileges", *row)
        for row in admin_rows(
            mysql, "SELECT * FROM information_schema.USER_PRIVILEGES WHERE GRANTEE LIKE %s", f"'{user}'@%"
        )
    ]
    return sorted(rows, key=repr)


async def test_privileges_only_this_server_has(
    db: Database, server: ServerInfo, accounts_made: Accounts, mysql: MySQLServer
) -> None:
    user = await new_account(db, accounts_made)
    names = SERVER_ONLY[server.flavour]
    wanted = {Grant(frozenset(names), "*")}
    done = await converges(db, user, wanted, server)
    assert done == [f"granted {', '.join(sorted(names))} ON *.*"]
    # One added by hand is revoked; one removed by hand is restored.
    extra = "CONNECTION_ADMIN" if server.flavour == "mysql" else "CONNECTION ADMIN"
    admin(mysql, f"GRANT {extra} ON *.* TO '{user}'@'%'", f"REVOKE {names[0]} ON *.* FROM '{user}'@'%'")
    assert sorted(await apply(db, user, "%", wanted, server)) == [
        f"granted {names[0]} ON *.*",
        f"revoked {extra} ON *.*",
    ]
    assert await read_grants(db, user, "%", server) == normalise(wanted, server)


async def test_a_privilege_of_the_other_flavour_is_unknown_before_any_sql(
    db: Database, server: ServerInfo, accounts_made: Accounts, mysql: MySQLServer
) -> None:
    user = await new_account(db, accounts_made)
    other = SERVER_ONLY["mariadb" if server.flavour == "mysql" else "mysql"][2]  # not a static privilege
    before = grant_tables_of(mysql, user)
    written, read = db.statements_written, db.statements_read
    with pytest.raises(PrivilegeUnknownError) as refused:
        await apply(db, user, "%", {Grant(frozenset({other, "PROCESS"}), "*")}, server)
    assert refused.value.reason == "PrivilegeUnknown"
    assert str(refused.value) == f"{other} is not a privilege of {server} (not in its SHOW PRIVILEGES)"
    assert (db.statements_written, db.statements_read) == (written, read)
    assert grant_tables_of(mysql, user) == before


async def test_a_global_privilege_on_a_database_is_misplaced_before_any_sql(
    db: Database, server: ServerInfo, accounts_made: Accounts, databases_made: Databases
) -> None:
    user = await new_account(db, accounts_made)
    name = SERVER_ONLY[server.flavour][2]  # not a static privilege: only the server's list says it is global
    written = db.statements_written
    with pytest.raises(PrivilegeMisplacedError, match=f"{name} is a global privilege of {server}"):
        await apply(db, user, "%", {Grant(frozenset({"SELECT", name}), databases_made.name())}, server)
    assert db.statements_written == written


async def _table(mysql: MySQLServer, databases_made: Databases) -> str:
    database = databases_made.name()
    admin(
        mysql,
        f"CREATE DATABASE `{database}`",
        f"CREATE TABLE `{database}`.t (a INT, b INT, c INT)",
        f"INSERT INTO `{database}`.t VALUES (1, 2, 3)",
    )
    return database


async def test_column_grants_converge_and_decide_what_a_login_may_read(
    db: Database, server: ServerInfo, accounts_made: Accounts, databases_made: Databases, mysql: MySQLServer
) -> None:
    database = await _table(mysql, databases_made)
    user = await new_account(db, accounts_made)
    wanted = {
        Grant(frozenset({"SELECT"}), database, "t", columns=frozenset({"a", "B"})),
        Grant(frozenset({"UPDATE"}), database, "t", columns=frozenset({"b"})),
    }
    done = await converges(db, user, wanted, server)
    assert done == [
        f"granted SELECT ON `{database}`.`t`.`a`",
        f"granted SELECT, UPDATE ON `{database}`.`t`.`b`",
    ]
    assert as_user(mysql, user, PASSWORD, f"SELECT a, b FROM `{database}`.t") == [(1, 2)]
    assert as_user(mysql, user, PASSWORD, f"SELECT c FROM `{database}`.t") == 1143  # column access denied
    assert as_user(mysql, user, PASSWORD, f"UPDATE `{database}`.t SET b = 5") == []
    assert as_user(mysql, user, PASSWORD, f"UPDATE `{database}`.t SET a = 5") == 1143

    # Drift by hand: a column added, one removed, a column privilege widened to the table.
    admin(
        mysql,
        f"GRANT SELECT (c), INSERT (a) ON `{database}`.t TO '{user}'@'%'",
        f"REVOKE SELECT (a) ON `{database}`.t FROM '{user}'@'%'",
    )
    assert sorted(await apply(db, user, "%", wanted, server)) == [
        f"granted SELECT ON `{database}`.`t`.`a`",
        f"revoked INSERT ON `{database}`.`t`.`a`",
        f"revoked SELECT ON `{database}`.`t`.`c`",
    ]
    assert await read_grants(db, user, "%", server) == normalise(wanted, server)
    assert as_user(mysql, user, PASSWORD, f"SELECT c FROM `{database}`.t") == 1143
    assert as_user(mysql, user, PASSWORD, f"SELECT a FROM `{database}`.t") == [(1,)]

    # Table-level and column-level grants on the same table are separate levels.
    wider = wanted | {Grant(frozenset({"INSERT"}), database, "t")}
    assert await apply(db, user, "%", wider, server) == [f"granted INSERT ON `{database}`.`t`"]
    assert await apply(db, user, "%", set(), server) == [
        f"revoked INSERT ON `{database}`.`t`",
        f"revoked SELECT ON `{database}`.`t`.`a`",
        f"revoked SELECT, UPDATE ON `{database}`.`t`.`b`",
    ]
    assert await read_grants(db, user, "%", server) == set()


async def test_a_column_that_does_not_exist(
    db: Database, server: ServerInfo, accounts_made: Accounts, databases_made: Databases, mysql: MySQLServer
) -> None:
    database = await _table(mysql, databases_made)
    user = await new_account(db, accounts_made)
    with pytest.raises(ColumnNotFoundError, match=r"no such column \(MySQL error 1054\)") as refused:
        await apply(
            db, user, "%", {Grant(frozenset({"SELECT"}), database, "t", columns=frozenset({"z"}))}, server
        )
    assert refused.value.reason == "ColumnNotFound"
    assert await read_grants(db, user, "%", server) == set()


async def _routines(mysql: MySQLServer, databases_made: Databases) -> str:
    database = databases_made.name()
    admin(
        mysql,
        f"CREATE DATABASE `{database}`",
        f"CREATE PROCEDURE `{database}`.p1() SELECT 1",
        f"CREATE PROCEDURE `{database}`.p2() SELECT 2",
        f"CREATE FUNCTION `{database}`.f1() RETURNS INT DETERMINISTIC RETURN 41",
    )
    return database


async def test_routine_grants_converge_and_decide_what_a_login_may_call(
    db: Database, server: ServerInfo, accounts_made: Accounts, databases_made: Databases, mysql: MySQLServer
) -> None:
    database = await _routines(mysql, databases_made)
    user = await new_account(db, accounts_made)
    wanted = {
        Grant(frozenset({"EXECUTE"}), database, "P1", routine="PROCEDURE"),
        Grant(frozenset({"ALL"}), database, "f1", routine="FUNCTION", grant_option=True),
    }
    done = await converges(db, user, wanted, server)
    assert done == [
        f"granted ALTER ROUTINE, EXECUTE ON FUNCTION `{database}`.`f1` WITH GRANT OPTION",
        f"granted EXECUTE ON PROCEDURE `{database}`.`p1`",
    ]
    assert as_user(mysql, user, PASSWORD, f"CALL `{database}`.p1()") == [(1,)]
    assert as_user(mysql, user, PASSWORD, f"CALL `{database}`.p2()") == 1370  # execute command denied
    assert as_user(mysql, user, PASSWORD, f"SELECT `{database}`.f1()") == [(41,)]

    # Drift by hand: another procedure added, the wanted one revoked, the grant option taken away.
    admin(
        mysql,
        f"GRANT EXECUTE ON PROCEDURE `{database}`.p2 TO '{user}'@'%'",
        f"REVOKE EXECUTE ON PROCEDURE `{database}`.p1 FROM '{user}'@'%'",
        f"REVOKE GRANT OPTION ON FUNCTION `{database}`.f1 FROM '{user}'@'%'",
    )
    assert sorted(await apply(db, user, "%", wanted, server)) == [
        f"granted EXECUTE ON PROCEDURE `{database}`.`p1`",
        f"granted GRANT OPTION ON FUNCTION `{database}`.`f1`",
        f"revoked EXECUTE ON PROCEDURE `{database}`.`p2`",
    ]
    assert await read_grants(db, user, "%", server) == normalise(wanted, server)
    assert as_user(mysql, user, PASSWORD, f"CALL `{database}`.p2()") == 1370
    assert as_user(mysql, user, PASSWORD, f"CALL `{database}`.p1()") == [(1,)]


async def test_a_routine_that_does_not_exist(
    db: Database, server: ServerInfo, accounts_made: Accounts, databases_made: Databases, mysql: MySQLServer
) -> None:
    database = await _routines(mysql, databases_made)
    user = await new_account(db, accounts_made)
    missing = {Grant(frozenset({"EXECUTE"}), database, "nope", routine="PROCEDURE")}
    with pytest.raises(RoutineNotFoundError, match=r"no such routine \(MySQL error 1305\)"):
        await apply(db, user, "%", missing, server)


async def test_the_handle_observes_once_then_acts(
    db: Database, server: ServerInfo, accounts_made: Accounts, databases_made: Databases, mysql: MySQLServer
) -> None:
    database = await _table(mysql, databases_made)
    user = await new_account(db, accounts_made)
    handle = AccountGrants(db, user, "%", server)
    assert await handle.observe() == frozenset()
    wanted = {Grant(frozenset({"SELECT"}), database, "t", columns=frozenset({"a"}))}
    read = db.statements_read
    assert await handle.converge(wanted) == [f"granted SELECT ON `{database}`.`t`.`a`"]
    assert db.statements_read == read  # observed already
    assert handle.held == normalise(wanted, server)
    assert await handle.converge(wanted) == []


async def test_the_inventory_sees_columns_and_routines(
    db: Database,
    server: ServerInfo,
    accounts_made: Accounts,
    databases_made: Databases,
    mysql: MySQLServer,
    owned_schema: str,
) -> None:
    database = await _routines(mysql, databases_made)
    admin(mysql, f"CREATE TABLE `{database}`.t (a INT, b INT)")
    user = await new_account(db, accounts_made)
    await claim(db, owned_schema, account(user, "%"), Owner("uid-1", "ns", "name"))
    wanted = {
        Grant(frozenset({"SELECT"}), database, "t", columns=frozenset({"a", "b"})),
        Grant(frozenset({"EXECUTE"}), database, "p1", routine="PROCEDURE"),
        Grant(frozenset({SERVER_ONLY[server.flavour][0]}), "*"),
    }
    await apply(db, user, "%", wanted, server)
    states = await inventory(db, owned_schema)
    assert states[(user, "%")].grants == normalise(wanted, server)
    if privilege_tables.supported(server):
        assert await read_grants(db, user, "%", server) == normalise(wanted, server)


async def test_the_server_is_read_again_when_a_privilege_seems_unknown(db: Database) -> None:
    """The privilege check asks the server again (at most once a minute) before refusing a name: a plugin
    or an upgrade may have added it since the operator first read ``SHOW PRIVILEGES``."""
    handle = ServerHandle(db, "unused")
    first = await handle.server()
    read = db.statements_read
    assert await handle.server_reread() == first  # read a moment ago: not again
    assert db.statements_read == read
    assert await handle.server_reread(min_age=0) == first
    # VERSION(), SHOW PRIVILEGES, and the identity (on MariaDB with @@old_passwords)
    assert db.statements_read == read + 3
    assert (await handle.server()).privileges == first.privileges
