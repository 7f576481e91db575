"""MariaDB's privilege tables read by key give what information_schema gives, in one query."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.grants import privilege_tables, read_grants
from tests.integration.mysql.support import Accounts, Databases, admin

pytestmark = pytest.mark.integration

# What people grant by hand, on the account {who}, in databases {d} (with tables t1, t2) and {e};
# {history} is MariaDB's DELETE HISTORY (", DELETE HISTORY"), a syntax error on MySQL (there: nothing).
HAND_GRANTS = {
    "nothing": [],
    "database": ["GRANT SELECT, INSERT{history}, LOCK TABLES ON `{d}`.* TO {who}"],
    "every database privilege": ["GRANT ALL ON `{d}`.* TO {who}"],
    "grant option": ["GRANT SELECT ON `{d}`.* TO {who} WITH GRANT OPTION"],
    "grant option only": ["GRANT GRANT OPTION ON `{d}`.* TO {who}"],
    "escaped name": ["GRANT SELECT ON `{d_escaped}`.* TO {who}"],
    "wildcard pattern": ["GRANT SELECT ON `{d}%`.* TO {who}"],
    "tables": [
        "GRANT SELECT, UPDATE ON `{d}`.`t1` TO {who}",
        "GRANT ALL ON `{d}`.`t2` TO {who} WITH GRANT OPTION",
    ],
    "table grant option only": ["GRANT GRANT OPTION ON `{d}`.`t1` TO {who}"],
    "all levels": [
        "GRANT SELECT ON `{d}`.* TO {who}",
        "GRANT INSERT ON `{e}`.* TO {who}",
        "GRANT DELETE ON `{d}`.`t1` TO {who}",
    ],
    "global": ["GRANT PROCESS ON *.* TO {who}", "GRANT SELECT ON `{d}`.* TO {who}"],
    "global grant option": ["GRANT USAGE ON *.* TO {who} WITH GRANT OPTION"],
}


@pytest.mark.parametrize("case", sorted(HAND_GRANTS))
@pytest.mark.parametrize("host", ["%", "App.Example.com"])
async def test_same_grants_as_information_schema(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    databases_made: Databases,
    server: ServerInfo,
    case: str,
    host: str,
) -> None:
    user = accounts_made.track(accounts_made.name(), host.lower())
    await accounts.create(db, user, host, "pw")
    d, e = databases_made.create("_x", "t1", "t2"), databases_made.create()
    who = f"'{user}'@'{host}'"
    history = ", DELETE HISTORY" if server.flavour == "mariadb" else ""
    names = {"d": d, "e": e, "who": who, "d_escaped": d.replace("_", "\\_"), "history": history}
    admin(mysql, *(statement.format(**names) for statement in HAND_GRANTS[case]))

    expected = await read_grants(db, user, host)  # information_schema
    read = db.statements_read
    assert await read_grants(db, user, host, server) == expected
    by_key = privilege_tables.supported(server)  # MariaDB; MySQL reads information_schema either way
    assert db.statements_read - read == (2 if by_key and case.startswith("global") else 1)
    assert bool(expected) == (case != "nothing")


async def test_a_missing_account(db: Database, accounts_made: Accounts, server: ServerInfo) -> None:
    assert await read_grants(db, accounts_made.name(), "%", server) == set()
    if privilege_tables.supported(server):
        assert await privilege_tables.read_rows(db, accounts_made.name(), "%", server) == (False, [])


def test_mariadb_versions_read_by_key() -> None:
    assert privilege_tables.supported(ServerInfo("mariadb", (10, 11, 19)))
    assert privilege_tables.supported(ServerInfo("mariadb", (11, 4, 2)))
    assert not privilege_tables.supported(ServerInfo("mariadb", (12, 0, 1)))  # columns not known here
    assert not privilege_tables.supported(ServerInfo("mysql", (8, 4, 3)))
