"""Ownership bookkeeping against the real server: the table, claims (also concurrent), fingerprints."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import ConnectionSettings, Database, InvalidAccountError, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.accounts.account_lookup import Lookup, lookup
from dbuser_operator.mysql.accounts.authentication import Method, effective
from dbuser_operator.mysql.bookkeeping.ownership import (
    DATABASES,
    FOREIGN,
    ROLES,
    Claim,
    OwnedAccount,
    Owner,
    account,
    claim,
    claim_new,
    database,
    ensure_book,
    ensure_schema,
    expected_fingerprint,
    forget,
    list_owned,
    owned,
    owner_of,
    record_fingerprint,
)
from dbuser_operator.mysql.session.server import read_server
from tests.integration.mysql.support import Accounts, Databases, admin, admin_rows, loaded_plugin

pytestmark = pytest.mark.integration


def recorded_fingerprints(mysql: MySQLServer, schema: str, user: str) -> list[tuple[Any, ...]]:
    """The fingerprint column of ``user``'s bookkeeping rows, as the admin reads it."""
    return admin_rows(mysql, f"SELECT auth_fingerprint FROM `{schema}`.accounts WHERE user = %s", user)


async def intact(db: Database, schema: str, user: str, host: str, server: ServerInfo) -> bool | None:
    return (await lookup(db, schema, user, host, server)).password_intact


ALICE = Owner("11111111-1111-4111-8111-111111111111", "team-a", "app")
BOB = Owner("22222222-2222-4222-8222-222222222222", "team-b", "app")


async def test_ensure_schema_is_idempotent_and_cheap(
    db: Database, mysql: MySQLServer, databases_made: Databases
) -> None:
    schema = databases_made.name("_own")
    await ensure_schema(db, schema)
    read = db.statements_read
    await claim(db, schema, account("app", "%"), ALICE)
    assert db.statements_read == read  # a claim that inserted its row needs no read-back
    written = db.statements_written
    await ensure_schema(db, schema)  # again: one look and no DDL; the rows stay
    assert db.statements_written == written
    assert db.statements_read == read + 1
    assert await owner_of(db, schema, account("app", "%")) == ALICE

    await ensure_book(db, schema, ROLES)  # missing: created
    written = db.statements_written
    await ensure_book(db, schema, ROLES)  # present (a restart): one look and no DDL
    assert db.statements_written == written
    assert admin_rows(
        mysql,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'roles'",
        schema,
    ) == [(1,)]

    columns = admin_rows(
        mysql,
        "SELECT COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'accounts' ORDER BY ORDINAL_POSITION",
        schema,
    )
    assert [name for name, _ in columns] == [
        "user",
        "host",
        "owner_uid",
        "namespace",
        "name",
        "auth_fingerprint",
        "created_at",
    ]
    assert dict(columns)["user"] == "ascii_bin"  # user names are case-sensitive
    assert dict(columns)["host"] == "ascii_general_ci"  # host names are not
    keys = admin_rows(
        mysql,
        "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'accounts' AND CONSTRAINT_NAME = 'PRIMARY'"
        " ORDER BY ORDINAL_POSITION",
        schema,
    )
    assert keys == [("user",), ("host",)]


async def test_claim_owner_of_forget_and_list(db: Database, owned_schema: str) -> None:
    assert await owner_of(db, owned_schema, account("app", "%")) is None
    assert await list_owned(db, owned_schema) == []

    assert await claim(db, owned_schema, account("app", "%"), ALICE) == Claim(ALICE, inserted=True)
    # Again: still Alice's, but not claimed by this call (an earlier pass or another replica did).
    assert await claim(db, owned_schema, account("app", "%"), ALICE) == Claim(ALICE, inserted=False)
    # Bob is told who; another host is another account.
    assert await claim(db, owned_schema, account("app", "%"), BOB) == Claim(ALICE, inserted=False)
    assert await claim(db, owned_schema, account("app", "10.0.%"), BOB) == Claim(BOB, inserted=True)
    assert (await claim(db, owned_schema, account("other", "%"), BOB)).owner == BOB
    assert await owner_of(db, owned_schema, account("app", "%")) == ALICE

    assert await list_owned(db, owned_schema) == [
        OwnedAccount("app", "%", ALICE),
        OwnedAccount("app", "10.0.%", BOB),
        OwnedAccount("other", "%", BOB),
    ]

    assert await forget(db, owned_schema, account("app", "%"), BOB.uid) is False  # not Bob's to forget
    assert await owner_of(db, owned_schema, account("app", "%")) == ALICE
    assert await forget(db, owned_schema, account("app", "%"), ALICE.uid) is True
    assert await forget(db, owned_schema, account("app", "%"), ALICE.uid) is False
    assert await owner_of(db, owned_schema, account("app", "%")) is None
    assert await claim(db, owned_schema, account("app", "%"), BOB) == Claim(BOB, inserted=True)  # free again


async def test_claim_new_claims_only_a_free_absent_account_in_one_statement(
    db: Database, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "app.example.com", "%")
    written = db.statements_written
    assert await claim_new(db, owned_schema, user, "App.Example.com", ALICE, server=server) is True
    assert db.statements_written == written + 1  # no look first
    assert await owner_of(db, owned_schema, account(user, "app.example.com")) == ALICE
    # A row there already (an earlier pass, another owner): no claim, the row unchanged.
    assert await claim_new(db, owned_schema, user, "app.example.com", ALICE, server=server) is False
    assert await claim_new(db, owned_schema, user, "app.example.com", BOB, server=server) is False
    assert await owner_of(db, owned_schema, account(user, "app.example.com")) == ALICE
    # An account nobody owns (made by hand): no row is written, whatever happens next.
    await accounts.create(db, user, "%", "pw")
    assert await claim_new(db, owned_schema, user, "%", BOB, server=server) is False
    assert await owner_of(db, owned_schema, account(user, "%")) is None


async def test_claim_new_racing_create_user_never_claims_the_account_it_lost(
    admin_settings: ConnectionSettings, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    # Somebody creates the account while the operator claims it, 20 times: the row is written only if
    # the account was not there when the claim ran, so a row next to a hand-made account never stays.
    async with Database(admin_settings) as operator, Database(admin_settings) as somebody:
        for _ in range(20):
            user = accounts_made.track(accounts_made.name(), "%")
            claimed, _ = await asyncio.gather(
                claim_new(operator, owned_schema, user, "%", ALICE, server=server),
                accounts.create(somebody, user, "%", "pw"),
            )
            found = await lookup(operator, owned_schema, user, "%", server)
            assert found.exists
            if not claimed:
                assert found.owner is None
            else:  # claimed before the account came: the operator's CREATE USER will fail and withdraw it
                assert found.owner == ALICE


async def test_user_names_are_case_sensitive_and_hosts_are_not(db: Database, owned_schema: str) -> None:
    assert (await claim(db, owned_schema, account("app", "DB.example.com"), ALICE)).owner == ALICE
    assert (await claim(db, owned_schema, account("APP", "db.example.com"), BOB)).owner == BOB  # another user
    assert (
        await claim(db, owned_schema, account("app", "db.EXAMPLE.com"), BOB)
    ).owner == ALICE  # the same account
    assert await owner_of(db, owned_schema, account("app", "db.example.com")) == ALICE
    assert await forget(db, owned_schema, account("app", "db.example.com"), ALICE.uid) is True
    assert await list_owned(db, owned_schema) == [OwnedAccount("APP", "db.example.com", BOB)]


async def test_hostile_owner_values_are_parameters(db: Database, owned_schema: str) -> None:
    owner = Owner("uid'); DROP TABLE accounts; --", "ns-%s-%%", "name \\ ' \" 日本")
    assert (await claim(db, owned_schema, account("app", "%"), owner)).owner == owner
    assert await list_owned(db, owned_schema) == [OwnedAccount("app", "%", owner)]


async def test_invalid_names_are_refused_before_anything_is_sent(db: Database, owned_schema: str) -> None:
    with pytest.raises(InvalidAccountError):
        await claim(db, owned_schema, account("a'b", "%"), ALICE)
    with pytest.raises(InvalidAccountError):
        await owner_of(db, owned_schema, account("app", "host name"))
    with pytest.raises(ValueError, match="reserved"):
        await list_owned(db, "mysql")
    assert await list_owned(db, owned_schema) == []


async def test_two_concurrent_claims_have_one_winner(
    admin_settings: ConnectionSettings, owned_schema: str
) -> None:
    # Two operators (two pools), racing for the same accounts, 20 times.
    async with Database(admin_settings) as first, Database(admin_settings) as second:
        for round_ in range(20):
            user = f"race{round_}"
            one, two = await asyncio.gather(
                claim(first, owned_schema, account(user, "%"), ALICE),
                claim(second, owned_schema, account(user, "%"), BOB),
            )
            assert one.owner == two.owner
            assert one.owner in (ALICE, BOB)
            assert [one.inserted, two.inserted].count(True) == 1  # exactly one call wrote the row
            assert await owner_of(first, owned_schema, account(user, "%")) == one.owner


async def test_the_fingerprint_detects_a_password_set_by_hand(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "first")
    assert await intact(db, owned_schema, user, "%", server) is None  # not owned
    await claim(db, owned_schema, account(user, "%"), ALICE)
    assert await intact(db, owned_schema, user, "%", server) is None  # no fingerprint yet

    written = db.statements_written
    await record_fingerprint(db, owned_schema, user, "%", server)
    assert db.statements_written == written + 1  # one statement
    assert await intact(db, owned_schema, user, "%", server) is True
    stored = recorded_fingerprints(mysql, owned_schema, user)
    assert len(stored[0][0]) == 64
    assert "first" not in stored[0][0]

    admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'changed-by-hand'")
    assert await intact(db, owned_schema, user, "%", server) is False

    await accounts.set_password(db, user, "%", "second")  # the operator puts its password back...
    await record_fingerprint(db, owned_schema, user, "%", server)  # ...and records the new fingerprint
    assert await intact(db, owned_schema, user, "%", server) is True

    if server.flavour == "mariadb":  # unsalted mysql_native_password: the same password, the same string
        admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'second'")
        assert await intact(db, owned_schema, user, "%", server) is True

    admin(mysql, f"DROP USER '{user}'@'%'")
    assert await intact(db, owned_schema, user, "%", server) is None  # no account to compare
    await record_fingerprint(db, owned_schema, user, "%", server)
    assert recorded_fingerprints(mysql, owned_schema, user) == [(None,)]


async def test_the_fingerprint_of_an_upper_case_host(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "app.example.com")
    await accounts.create(db, user, "App.Example.com", "pw")
    await claim(db, owned_schema, account(user, "App.Example.com"), ALICE)
    await record_fingerprint(db, owned_schema, user, "App.Example.com", server)
    assert await intact(db, owned_schema, user, "app.example.com", server) is True
    admin(mysql, f"ALTER USER '{user}'@'app.example.com' IDENTIFIED BY 'other'")
    assert await intact(db, owned_schema, user, "App.Example.com", server) is False


async def test_record_fingerprint_leaves_accounts_nobody_owns_alone(
    db: Database, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    await record_fingerprint(db, owned_schema, user, "%", server)
    assert await list_owned(db, owned_schema) == []


async def test_lookup_tells_owner_existence_and_fingerprint_in_one_query(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "app.example.com")
    read = db.statements_read
    assert await lookup(db, owned_schema, user, "App.Example.com", server) == Lookup(None, False, None)
    assert db.statements_read == read + 1

    await claim(db, owned_schema, account(user, "App.Example.com"), ALICE)
    assert await lookup(db, owned_schema, user, "App.Example.com", server) == Lookup(ALICE, False, None)

    await accounts.create(db, user, "App.Example.com", "pw")
    assert await lookup(db, owned_schema, user, "App.Example.com", server) == Lookup(ALICE, True, None)

    await record_fingerprint(db, owned_schema, user, "App.Example.com", server)
    assert await lookup(db, owned_schema, user, "App.Example.com", server) == Lookup(ALICE, True, True)
    default = "mysql_native_password" if server.flavour == "mariadb" else "caching_sha2_password"
    assert (await lookup(db, owned_schema, user, "App.Example.com", server)).plugin == default

    await forget(db, owned_schema, account(user, "App.Example.com"), ALICE.uid)
    assert await lookup(db, owned_schema, user, "App.Example.com", server) == Lookup(None, True, None)


async def test_the_fingerprint_is_that_of_mysql_user(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    """Fingerprints recorded from mysql.user (before the catalog read global_priv on MariaDB) still hold."""
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    await claim(db, owned_schema, account(user, "%"), ALICE)
    await record_fingerprint(db, owned_schema, user, "%", server)
    recorded = recorded_fingerprints(mysql, owned_schema, user)
    from_view = admin_rows(
        mysql, "SELECT SHA2(authentication_string, 256) FROM mysql.user WHERE User = %s AND Host = '%%'", user
    )
    assert recorded == from_view
    assert recorded[0][0] is not None


@pytest.mark.parametrize(
    "password",
    ["pw", "pässwörd ✓ 密码", "x" * 200, "quote ' backslash \\ percent %s"],
    ids=["ascii", "non-ascii", "long", "specials"],
)
async def test_a_new_accounts_fingerprint_is_claimed_beforehand_where_the_server_hash_is_unsalted(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, password: str
) -> None:
    """MariaDB (``mysql_native_password`` by default): the claim records the fingerprint the account gets
    from ``CREATE USER … IDENTIFIED BY``, byte for byte; MySQL (salted by default): nothing to predict."""
    server = await read_server(db)
    expected = expected_fingerprint(server, password)
    assert server.native_by_default is (server.flavour == "mariadb")
    assert (expected is None) is (server.flavour == "mysql")
    user = accounts_made.track(accounts_made.name(), "%")
    assert await claim_new(db, owned_schema, user, "%", ALICE, server=server, fingerprint=expected)
    await accounts.create(db, user, "%", password)
    assert await intact(db, owned_schema, user, "%", server) is (True if expected else None)
    await record_fingerprint(db, owned_schema, user, "%", server)  # what the server has: the same
    assert recorded_fingerprints(mysql, owned_schema, user) == [(expected,)] or expected is None
    assert await intact(db, owned_schema, user, "%", server) is True
    admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'changed-by-hand'")
    assert await intact(db, owned_schema, user, "%", server) is False


async def test_no_fingerprint_is_predicted_when_old_passwords_is_on(
    admin_settings: ConnectionSettings, mysql: MySQLServer
) -> None:
    """MariaDB with ``old_passwords=1`` stores the pre-4.1 hash: the operator reads the fingerprint back."""
    async with Database(admin_settings) as db:
        if (await read_server(db)).flavour == "mysql":
            return  # no such variable: MySQL's default is salted, never predicted (test above)
    admin(mysql, "SET GLOBAL old_passwords = 1")
    try:
        async with Database(admin_settings) as db:  # new sessions take the global value
            server = await read_server(db)
            assert server.native_by_default is False
            assert expected_fingerprint(server, "pw") is None
    finally:
        admin(mysql, "SET GLOBAL old_passwords = 0")


@pytest.mark.parametrize("plugin", [None, "ed25519"], ids=["default", "ed25519"])
async def test_only_the_operator_s_own_password_is_recorded(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    owned_schema: str,
    plugin: str | None,
) -> None:
    """The password set, then changed by hand before the record: the record does not take the hand's
    string for the operator's (unsalted: the known hash is recorded, the account not read; MySQL's
    caching_sha2_password: the string is checked against the password first), so the lookup sees drift."""
    server = await read_server(db)  # with native_by_default
    if plugin is not None and server.flavour == "mysql":
        pytest.skip("a MariaDB plugin")
    method = Method(plugin, server.flavour) if plugin is not None else effective(None, server)
    loaded = loaded_plugin(mysql, "mariadb", plugin) if plugin else contextlib.nullcontext()
    with loaded:
        user = accounts_made.track(accounts_made.name(), "%")
        await claim(db, owned_schema, account(user, "%"), ALICE)
        await accounts.create(db, user, "%", "operator-pw", method)
        assert await record_fingerprint(
            db, owned_schema, user, "%", server, password="operator-pw", method=method
        )
        assert await intact(db, owned_schema, user, "%", server) is True

        await accounts.set_password(db, user, "%", "operator-pw-2", method)
        admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'changed-right-after'")  # the race
        read = db.statements_read
        own = await record_fingerprint(
            db, owned_schema, user, "%", server, password="operator-pw-2", method=method
        )
        assert own is (server.flavour == "mariadb")  # MariaDB: not read, the drift shows at the next look
        assert db.statements_read == read + (0 if server.flavour == "mariadb" else 1)
        assert recorded_fingerprints(mysql, owned_schema, user) != [(None,)]
        assert await intact(db, owned_schema, user, "%", server) is False
        if server.flavour == "mysql":
            assert recorded_fingerprints(mysql, owned_schema, user) == [(FOREIGN,)]

        await accounts.set_password(db, user, "%", "operator-pw-2", method)  # the next pass restores
        assert await record_fingerprint(
            db, owned_schema, user, "%", server, password="operator-pw-2", method=method
        )
        assert await intact(db, owned_schema, user, "%", server) is True
        admin(mysql, f"DROP USER '{user}'@'%'")


async def test_owned_databases_read_in_one_select_and_none_without_the_table(
    db: Database, owned_schema: str
) -> None:
    """What the drift check reads for orphaned databases: nothing (no error) before any Database was
    managed, then every row with its owner."""
    assert await owned(db, owned_schema, DATABASES) == {}  # the schema has no databases table yet
    await ensure_book(db, owned_schema, DATABASES)
    first, second = Owner("uid-1", "team-a", "app"), Owner("uid-2", "team-b", "other")
    await claim(db, owned_schema, database("app_db"), first)
    await claim(db, owned_schema, database("other_db"), second)
    assert await owned(db, owned_schema, DATABASES) == {("app_db",): first, ("other_db",): second}
