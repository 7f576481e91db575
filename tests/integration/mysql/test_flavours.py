"""Where MySQL and MariaDB differ, against the real server of the session's flavour: the server is read
from the live connection, and a privilege of the other flavour is refused by name, not sent."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.mysql import Database, InvalidGrantError, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.grants import FLAVOUR_ONLY_PRIVILEGES, GLOBAL, Grant, apply, read_grants
from dbuser_operator.mysql.session.connection import ConnectionSettings
from dbuser_operator.mysql.session.server import read_identity, read_server
from tests.integration.mysql.support import Accounts, Databases

pytestmark = pytest.mark.integration

# Each flavour-only privilege, on a level where its own flavour grants it ("db": a fresh database).
LEVELS = {
    "DELETE HISTORY": ("db", "*"),
    "BINLOG MONITOR": GLOBAL,
    "SLAVE MONITOR": GLOBAL,
    "CREATE ROLE": GLOBAL,
    "DROP ROLE": GLOBAL,
}


def test_every_flavour_only_privilege_is_tried_here() -> None:
    assert set(LEVELS) == set(FLAVOUR_ONLY_PRIVILEGES)


async def test_the_live_server_is_the_flavour_the_session_started(
    db: Database, mysql_provider: MySQLServer | LocalMySQLServer
) -> None:
    info = await read_server(db)
    assert info.version > (8, 0, 0)
    assert {"SELECT", "CREATE USER", "GRANT OPTION"} <= info.privileges
    for name, flavour in FLAVOUR_ONLY_PRIVILEGES.items():
        assert (name in info.privileges) == (flavour == info.flavour), name
    if isinstance(mysql_provider, LocalMySQLServer):
        assert info.flavour == mysql_provider.flavour.product
        assert ".".join(str(part) for part in info.version).startswith(mysql_provider.flavour.version_line)


def _grant(databases_made: Databases, name: str) -> Grant:
    database, table = LEVELS[name]
    return Grant(frozenset({name}), databases_made.create() if database == "db" else database, table)


@pytest.mark.parametrize("name", sorted(FLAVOUR_ONLY_PRIVILEGES))
async def test_a_flavour_only_privilege(
    db: Database, accounts_made: Accounts, databases_made: Databases, name: str
) -> None:
    """Granted exactly on its flavour (a second pass changes nothing); refused by name on the other,
    with nothing sent but the reads that found the server."""
    server = await read_server(db)
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    wanted = _grant(databases_made, name)
    if FLAVOUR_ONLY_PRIVILEGES[name] == server.flavour:
        assert await apply(db, user, "%", {wanted}, server) == [f"granted {name} ON {_on(wanted)}"]
        assert await read_grants(db, user, "%", server) == {wanted}
        assert await apply(db, user, "%", {wanted}, server) == []
        return
    written, read = db.statements_written, db.statements_read
    with pytest.raises(InvalidGrantError) as refused:
        await apply(db, user, "%", {wanted}, server)
    only = "MySQL" if server.flavour == "mariadb" else "MariaDB"
    assert str(refused.value) == f"{name} is a {only}-only privilege: {server} has no such privilege"
    assert refused.value.reason == "PrivilegeUnknown"
    assert (db.statements_written, db.statements_read) == (written, read)
    assert await read_grants(db, user, "%", server) == set()


def _on(grant: Grant) -> str:
    return "*.*" if grant.database == "*" else f"`{grant.database}`.*"


async def test_a_privilege_the_server_does_not_list_is_refused(db: Database, accounts_made: Accounts) -> None:
    """SHOW PRIVILEGES decides, not only the flavour: a server that lacks a privilege (an older version)
    refuses it by name too. Here: the live server's list, less one privilege it has."""
    live = await read_server(db)
    server = ServerInfo(live.flavour, live.version, live.privileges - {"PROCESS"})
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    process = {Grant(frozenset({"PROCESS"}), "*")}
    refused = rf"^PROCESS is not a privilege of {server} \(not in its SHOW PRIVILEGES\)$"
    with pytest.raises(InvalidGrantError, match=refused):
        await apply(db, user, "%", process, server)
    assert await apply(db, user, "%", process, live) == ["granted PROCESS ON *.*"]


async def test_the_server_says_which_it_is_whatever_the_address_or_the_account(
    db: Database,
    admin_settings: ConnectionSettings,
    accounts_made: Accounts,
    mysql_provider: MySQLServer | LocalMySQLServer,
) -> None:
    """read_identity: the same answer through another host name, and for an account without privileges (a
    server resource's admin may be a narrow one); MySQL's server UUID, MariaDB's host name and port."""
    info = await read_server(db)
    prefix, _, rest = info.identity.partition(":")
    assert (prefix, bool(rest)) == (info.flavour, True)
    if isinstance(mysql_provider, LocalMySQLServer) and info.flavour == "mariadb":
        assert rest.endswith(f":{admin_settings.port}")
    other_name = "localhost" if admin_settings.host == "127.0.0.1" else admin_settings.host
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "identity-pw-123")
    for settings in (
        admin_settings.model_copy(update={"host": other_name}),
        admin_settings.model_copy(update={"user": user, "password": SecretStr("identity-pw-123")}),
    ):
        other = Database(settings)
        try:
            assert await read_identity(other, info.flavour) == info.identity
        finally:
            await other.close()
