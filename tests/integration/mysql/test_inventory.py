"""The batched drift inventory against the real server: what it reports, and a constant number of queries."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.accounts.limits import Limits, apply_limits
from dbuser_operator.mysql.bookkeeping.inventory import QUERIES, AccountState, inventory
from dbuser_operator.mysql.bookkeeping.ownership import Owner, account, claim, record_fingerprint
from dbuser_operator.mysql.grants import Grant, apply, normalise
from dbuser_operator.mysql.session.server import read_server
from tests.integration.mysql.support import Accounts, Databases, admin

pytestmark = pytest.mark.integration

OWNER = Owner("33333333-3333-4333-8333-333333333333", "team-c", "app")


async def owned_account(
    db: Database, accounts_made: Accounts, schema: str, host: str = "%", user: str | None = None
) -> str:
    """A new account, claimed, with its fingerprint recorded."""
    user = accounts_made.track(user or accounts_made.name(), host)
    await accounts.create(db, user, host, "pw")
    await claim(db, schema, account(user, host), OWNER)
    await record_fingerprint(db, schema, user, host, await read_server(db))
    return user


async def counted_inventory(db: Database, schema: str) -> dict[tuple[str, str], AccountState]:
    read, written = db.statements_read, db.statements_written
    found = await inventory(db, schema)
    assert (db.statements_read - read, db.statements_written - written) == (QUERIES, 0)
    return found


async def test_an_empty_inventory(db: Database, owned_schema: str) -> None:
    assert await counted_inventory(db, owned_schema) == {}


async def test_what_the_inventory_reports(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    databases_made: Databases,
    owned_schema: str,
    server: ServerInfo,
) -> None:
    app = databases_made.create("", "t")
    plain = await owned_account(db, accounts_made, owned_schema)
    busy = await owned_account(db, accounts_made, owned_schema, host="10.0.%")
    gone = await owned_account(db, accounts_made, owned_schema)
    changed = await owned_account(db, accounts_made, owned_schema)
    accounts_made.track(accounts_made.name(), "%")  # an account nobody owns is not reported
    grants = {
        Grant(frozenset({"SELECT", "INSERT"}), app, grant_option=True),
        Grant(frozenset({"ALL"}), app, "t"),
        Grant(frozenset({"PROCESS"}), "*"),
    }
    options = Limits(4, 3, 2, 1, require_tls=True)
    await apply(db, busy, "10.0.%", grants, server)
    await apply_limits(db, busy, "10.0.%", options)
    admin(
        mysql,
        f"DROP USER '{gone}'@'%'",
        f"ALTER USER '{changed}'@'%' IDENTIFIED BY 'by-hand'",
        f"GRANT DELETE ON `{app.replace('_', chr(92) + '_')}`.* TO '{changed}'@'%'",
    )

    found = await counted_inventory(db, owned_schema)

    assert found == {
        (plain, "%"): AccountState(OWNER, True, Limits(), True, frozenset()),
        (busy, "10.0.%"): AccountState(OWNER, True, options, True, normalise(grants, server)),
        (gone, "%"): AccountState(OWNER, False, None, None, frozenset()),
        (changed, "%"): AccountState(
            OWNER, True, Limits(), False, frozenset({Grant.observed({"DELETE"}, app)})
        ),
    }


async def test_an_owned_account_without_a_fingerprint(
    db: Database, accounts_made: Accounts, owned_schema: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    await claim(db, owned_schema, account(user, "%"), OWNER)
    (state,) = (await counted_inventory(db, owned_schema)).values()
    assert state.present
    assert state.password_intact is None


async def test_accounts_differing_in_case_are_kept_apart(
    db: Database, accounts_made: Accounts, databases_made: Databases, owned_schema: str, server: ServerInfo
) -> None:
    app = databases_made.create()
    lower = await owned_account(db, accounts_made, owned_schema)
    upper = await owned_account(db, accounts_made, owned_schema, user=lower.upper())
    named = await owned_account(db, accounts_made, owned_schema, host="App.Example.com")
    await apply(db, lower, "%", {Grant(frozenset({"SELECT"}), app)}, server)
    await apply(db, upper, "%", {Grant(frozenset({"INSERT"}), app)}, server)
    await apply(db, named, "App.Example.com", {Grant(frozenset({"UPDATE"}), app)}, server)
    await apply_limits(db, upper, "%", Limits(max_user_connections=9))

    found = await counted_inventory(db, owned_schema)

    assert found[(lower, "%")].grants == {Grant.observed({"SELECT"}, app)}
    assert found[(upper, "%")].grants == {Grant.observed({"INSERT"}, app)}
    assert found[(lower, "%")].limits == Limits()
    assert found[(upper, "%")].limits == Limits(max_user_connections=9)
    assert found[(named, "App.Example.com")].present
    assert found[(named, "App.Example.com")].password_intact is True
    assert found[(named, "App.Example.com")].grants == {Grant.observed({"UPDATE"}, app)}


async def test_the_number_of_queries_does_not_grow_with_the_accounts(
    db: Database, accounts_made: Accounts, databases_made: Databases, owned_schema: str, server: ServerInfo
) -> None:
    app = databases_made.create("", "t")
    grants = {
        Grant(frozenset({"SELECT"}), app),
        Grant(frozenset({"UPDATE"}), app, "t"),
        Grant(frozenset({"PROCESS"}), "*"),
    }
    first = await owned_account(db, accounts_made, owned_schema)
    await apply(db, first, "%", grants, server)

    one = await counted_inventory(db, owned_schema)  # QUERIES queries...
    assert len(one) == 1

    for _ in range(19):
        user = await owned_account(db, accounts_made, owned_schema)
        await apply(db, user, "%", grants, server)
    twenty = await counted_inventory(db, owned_schema)  # ...and the same for twenty

    assert len(twenty) == 20
    assert QUERIES == 2
    assert all(state.grants == normalise(grants, server) for state in twenty.values())
    assert all(state.password_intact for state in twenty.values())


async def test_privileges_of_accounts_nobody_owns_are_not_reported(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    databases_made: Databases,
    owned_schema: str,
    server: ServerInfo,
) -> None:
    # Every account's privilege rows are read and matched to the owned ones by GRANTEE: the same user at
    # another host, or another user, is another account.
    app = databases_made.create()
    escaped = app.replace("_", chr(92) + "_")
    user = await owned_account(db, accounts_made, owned_schema)
    other_host = accounts_made.track(user, "localhost")
    other_user = accounts_made.track(accounts_made.name(), "%")
    admin(
        mysql,
        f"CREATE USER '{other_host}'@'localhost' IDENTIFIED BY 'pw'",
        f"CREATE USER '{other_user}'@'%' IDENTIFIED BY 'pw'",
        f"GRANT INSERT ON `{escaped}`.* TO '{other_host}'@'localhost'",
        f"GRANT DELETE ON `{escaped}`.* TO '{other_user}'@'%'",
        f"GRANT PROCESS ON *.* TO '{other_user}'@'%'",
    )
    await apply(db, user, "%", {Grant(frozenset({"SELECT"}), app)}, server)

    found = await counted_inventory(db, owned_schema)

    assert set(found) == {(user, "%")}
    assert found[(user, "%")].grants == {Grant.observed({"SELECT"}, app)}
