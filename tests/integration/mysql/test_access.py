"""Every account and role of the real server for the access report: one query, what it reads, and no
authentication string in it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.access import QUERIES, read_accounts
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from tests.integration.mysql.support import Accounts, admin, admin_rows

pytestmark = pytest.mark.integration

OWNER = Owner("44444444-4444-4444-8444-444444444444", "team-d", "readers")


async def test_every_account_and_role_in_one_query_and_no_hash(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    dba, role, owned_role = accounts_made.name(), accounts_made.name(), accounts_made.name()
    accounts_made.track(dba, "%")
    try:
        await read_and_check(db, mysql, server, owned_schema, dba, role, owned_role)
    finally:
        admin(mysql, f"DROP ROLE IF EXISTS '{role}'", f"DROP ROLE IF EXISTS '{owned_role}'")


async def read_and_check(
    db: Database,
    mysql: MySQLServer,
    server: ServerInfo,
    owned_schema: str,
    dba: str,
    role: str,
    owned_role: str,
) -> None:
    mariadb = server.flavour == "mariadb"
    role_host = "" if mariadb else "%"
    admin(
        mysql,
        f"CREATE USER '{dba}'@'%' IDENTIFIED BY 'a-dba-password' REQUIRE SUBJECT '/CN={dba}'",
        f"CREATE ROLE '{role}'",
        f"CREATE ROLE '{owned_role}'",
        f"GRANT '{role}'" + ("" if mariadb else "@'%'") + f" TO '{dba}'@'%'",
    )
    await ownership.ensure_book(db, owned_schema, ownership.ROLES)
    await ownership.claim(db, owned_schema, ownership.role(owned_role), OWNER)
    (now,) = admin_rows(mysql, "SELECT UNIX_TIMESTAMP()")[0]

    read, written = db.statements_read, db.statements_written
    found = await read_accounts(db, server, owned_schema)
    assert (db.statements_read - read, db.statements_written - written) == (QUERIES, 0)

    account = found.accounts[(dba, "%")]
    assert account.plugin
    assert account.password_changed is not None
    server_now = datetime.fromtimestamp(int(now), UTC)
    assert (
        timedelta(0) <= server_now - account.password_changed <= timedelta(seconds=60)
    )  # the server's clock
    assert (account.tls, account.subject) == ("SPECIFIED", f"/CN={dba}")
    assert not account.role
    assert account.roles == {(role, role_host)}
    assert found.accounts[(role, role_host)].role
    assert (found.role_owners[owned_role].namespace, found.role_owners[owned_role].name) == (
        "team-d",
        "readers",
    )

    hashes = {
        str(value)
        for (value,) in admin_rows(
            mysql, "SELECT authentication_string FROM mysql.user WHERE authentication_string <> ''"
        )
    }
    assert hashes
    assert not any(value in repr(found) for value in hashes)
