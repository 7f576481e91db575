"""A new MySQL account's password made the operator's own without a hash computed on the client
(:mod:`dbuser_operator.mysql.accounts.new_password`): created expired, the expiry lifted and the fingerprint
recorded (in the account's attributes, by the same statement) only while no change of the password came in
between; one that did is recorded as foreign."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.accounts import accounts, new_password, password_hashes
from dbuser_operator.mysql.accounts.account_lookup import lookup
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.bookkeeping.ownership import FOREIGN, account, claim, forget, record_fingerprint
from dbuser_operator.mysql.session.server import read_server
from tests.integration.mysql.support import Accounts, admin, admin_rows, login
from tests.integration.mysql.test_ownership import ALICE, BOB, intact, recorded_fingerprints

pytestmark = pytest.mark.integration


@pytest.fixture
async def on_mysql(db: Database) -> None:
    if (await read_server(db)).flavour != "mysql":
        pytest.skip("MySQL's salted hashes: MariaDB's fingerprint is known before CREATE USER")


def expired_flag(mysql: MySQLServer, user: str) -> str:
    [(flag,)] = admin_rows(mysql, "SELECT password_expired FROM mysql.user WHERE user = %s", user)
    return str(flag)


@pytest.fixture
def no_client_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any SHA-256 crypt on the client fails the test."""

    def refused(*args: object) -> str:
        raise AssertionError("a salted hash was computed on the client")

    monkeypatch.setattr(password_hashes, "sha256_crypt", refused)


@pytest.mark.parametrize("plugin", [None, "caching_sha2_password"], ids=["default", "named"])
async def test_the_new_password_is_recorded_as_the_operator_s_own(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    owned_schema: str,
    on_mysql: None,
    no_client_hash: None,
    plugin: str | None,
) -> None:
    server = await read_server(db)
    method = Method(plugin, server.flavour) if plugin is not None else None
    assert new_password.applies(server, method, "operator-pw")
    user = accounts_made.track(accounts_made.name(), "%")
    await claim(db, owned_schema, account(user, "%"), ALICE)
    await accounts.create(db, user, "%", "operator-pw", method, expired=True)
    assert expired_flag(mysql, user) == "Y"

    read, written = db.statements_read, db.statements_written
    assert await new_password.settle(db, owned_schema, user, "%", server, owner_uid=ALICE.uid) is True
    assert (db.statements_read - read, db.statements_written - written) == (1, 1)  # the read, ALTER USER
    assert expired_flag(mysql, user) == "N"
    assert login(mysql, user, "operator-pw", tls=True) == f"{user}@%"
    assert await intact(db, owned_schema, user, "%", server) is True
    assert recorded_fingerprints(mysql, owned_schema, user) == [(None,)]  # in the account's attributes
    path = f"'$.metadata.\"{new_password.FINGERPRINT_ATTRIBUTE}\".sha2'"
    query = (
        f"SELECT JSON_UNQUOTE(JSON_EXTRACT(User_attributes, {path})), SHA2(authentication_string, 256)"
        " FROM mysql.user WHERE user = %s"
    )
    [(attribute, current)] = admin_rows(mysql, query, user)
    assert attribute == current

    admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'later-by-hand'")  # afterwards: drift, as ever
    assert await intact(db, owned_schema, user, "%", server) is False


async def test_the_fingerprint_a_new_account_carries_counts_for_its_owner_alone_until_the_row_has_one(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    owned_schema: str,
    on_mysql: None,
) -> None:
    """The attribute names the owner it was written for: an account let go and claimed by another resource
    is not taken for that one's; once the operator records a fingerprint in the row, the row's counts."""
    server = await read_server(db)
    user = accounts_made.track(accounts_made.name(), "%")
    await claim(db, owned_schema, account(user, "%"), ALICE)
    await accounts.create(db, user, "%", "operator-pw", None, expired=True)
    assert await new_password.settle(db, owned_schema, user, "%", server, owner_uid=ALICE.uid) is True
    await forget(db, owned_schema, account(user, "%"), ALICE.uid)
    await claim(db, owned_schema, account(user, "%"), BOB)  # taken over: its password is not BOB's own
    assert await intact(db, owned_schema, user, "%", server) is None

    await record_fingerprint(db, owned_schema, user, "%", server, password="operator-pw")
    assert await intact(db, owned_schema, user, "%", server) is True  # the row's, now


async def test_a_password_changed_between_create_user_and_the_record_is_not_taken_for_ours(
    db: Database,
    mysql: MySQLServer,
    accounts_made: Accounts,
    owned_schema: str,
    on_mysql: None,
    no_client_hash: None,
) -> None:
    """The race the fingerprint guards against: somebody sets a password right after ``CREATE USER``."""
    server = await read_server(db)
    user = accounts_made.track(accounts_made.name(), "%")
    await claim(db, owned_schema, account(user, "%"), ALICE)
    await accounts.create(db, user, "%", "operator-pw", None, expired=True)
    admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'changed-right-after'")  # the race

    assert await new_password.settle(db, owned_schema, user, "%", server, owner_uid=ALICE.uid) is False
    assert recorded_fingerprints(mysql, owned_schema, user) == [(FOREIGN,)]
    assert await intact(db, owned_schema, user, "%", server) is False  # drift: the next pass sets it back
    assert login(mysql, user, "changed-right-after", tls=True) == f"{user}@%"  # left as it was found


async def test_an_account_dropped_before_the_record_is_foreign_and_nothing_is_altered(
    db: Database, accounts_made: Accounts, owned_schema: str, mysql: MySQLServer, on_mysql: None
) -> None:
    server = await read_server(db)
    user = accounts_made.track(accounts_made.name(), "%")
    await claim(db, owned_schema, account(user, "%"), ALICE)
    await accounts.create(db, user, "%", "operator-pw", None, expired=True)
    admin(mysql, f"DROP USER '{user}'@'%'")
    written = db.statements_written
    assert await new_password.settle(db, owned_schema, user, "%", server, owner_uid=ALICE.uid) is False
    assert db.statements_written == written + 1  # the record only
    assert recorded_fingerprints(mysql, owned_schema, user) == [(FOREIGN,)]


async def test_the_look_finds_an_account_left_unsettled_until_it_is_settled(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, on_mysql: None
) -> None:
    """A pass that stopped between ``CREATE USER`` and :func:`~new_password.settle` leaves an account the
    next pass's look calls unsettled; settled, or expired by hand after a settle, it is not."""
    server = await read_server(db)
    user = accounts_made.track(accounts_made.name(), "%")
    await claim(db, owned_schema, account(user, "%"), ALICE)
    await accounts.create(db, user, "%", "operator-pw", None, expired=True)
    assert (await lookup(db, owned_schema, user, "%", server)).unsettled is True

    assert await new_password.settle(db, owned_schema, user, "%", server, owner_uid=ALICE.uid) is True
    assert (await lookup(db, owned_schema, user, "%", server)).unsettled is False
    admin(mysql, f"ALTER USER '{user}'@'%' PASSWORD EXPIRE")  # a DBA's expiry of a settled account
    assert expired_flag(mysql, user) == "Y"
    assert (await lookup(db, owned_schema, user, "%", server)).unsettled is False
