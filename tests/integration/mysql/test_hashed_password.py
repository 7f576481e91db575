"""A MySQL password change that carries its own fingerprint
(:mod:`dbuser_operator.mysql.accounts.hashed_password`): the string made on the client logs in, retains the
previous password, and its fingerprint in the same ``ALTER USER`` is what the look compares once the row's
is cleared — a change by hand still shows as drift; a server that checks passwords itself is told apart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.accounts import accounts, dual_password, hashed_password, password_hashes
from dbuser_operator.mysql.accounts.account_lookup import lookup
from dbuser_operator.mysql.bookkeeping.ownership import Owner, account, claim, record_fingerprint
from dbuser_operator.mysql.session.server import ServerInfo, read_server
from tests.integration.mysql.support import Accounts, admin, admin_rows, login, login_error
from tests.integration.mysql.test_ownership import ALICE, BOB, intact, recorded_fingerprints

pytestmark = pytest.mark.integration


@pytest.fixture
async def mysql_server(db: Database) -> ServerInfo:
    server = await read_server(db)
    if not hashed_password.applies(server, password_hashes.CACHING_SHA2):
        pytest.skip("account attributes: MySQL 8.0.21+ (MariaDB's fingerprint is known without them)")
    return server


async def claimed_account(db: Database, schema: str, accounts_made: Accounts, owner: Owner) -> str:
    """A new account ``'<name>'@'%'`` with the password ``first-pw``, its row naming ``owner``."""
    user = accounts_made.track(accounts_made.name(), "%")
    await claim(db, schema, account(user, "%"), owner)
    await accounts.create(db, user, "%", "first-pw")
    return user


async def test_a_retained_rotation_is_one_write_and_its_fingerprint_guards_the_account(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, mysql_server: ServerInfo
) -> None:
    server = mysql_server
    user = await claimed_account(db, owned_schema, accounts_made, ALICE)
    assert await record_fingerprint(db, owned_schema, user, "%", server, password="first-pw")
    assert await intact(db, owned_schema, user, "%", server) is True  # the row's fingerprint

    rounds = await hashed_password.digest_rounds(db, server)
    hashed = hashed_password.hashed(password_hashes.CACHING_SHA2, "second-pw", rounds, ALICE.uid)
    written = db.statements_written
    await dual_password.set_password(db, user, "%", "second-pw", "uid/2", retain=True, hashed=hashed)
    assert db.statements_written - written == 1
    # The row still holds the first password's fingerprint, and it wins: drift, until it is cleared.
    assert await intact(db, owned_schema, user, "%", server) is False
    await hashed_password.clear_row_fingerprint(db, owned_schema, user, "%")
    assert recorded_fingerprints(mysql, owned_schema, user) == [(None,)]
    assert await intact(db, owned_schema, user, "%", server) is True  # the attribute's
    assert await dual_password.read_state(db, user, "%") == dual_password.PasswordState("uid/2", True)
    assert login(mysql, user, "second-pw", tls=True) == f"{user}@%"
    assert login(mysql, user, "first-pw", tls=True) == f"{user}@%"  # retained
    [(string,)] = admin_rows(mysql, "SELECT authentication_string FROM mysql.user WHERE user = %s", user)
    assert string == hashed.string
    assert string.startswith(f"$A${rounds // 1000:03X}$")

    # The next rotation needs no clearing: one write again; the previous password retained in turn.
    hashed = hashed_password.hashed(password_hashes.CACHING_SHA2, "third-pw", rounds, ALICE.uid)
    written = db.statements_written
    await dual_password.set_password(db, user, "%", "third-pw", "uid/3", retain=True, hashed=hashed)
    assert db.statements_written - written == 1
    assert await intact(db, owned_schema, user, "%", server) is True
    assert login_error(mysql, user, "first-pw", tls=True) == 1045
    assert login(mysql, user, "second-pw", tls=True) == f"{user}@%"

    admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'set-by-hand'")  # drift, as with the row
    assert await intact(db, owned_schema, user, "%", server) is False


async def test_the_fingerprint_counts_for_the_owner_it_names_alone(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, mysql_server: ServerInfo
) -> None:
    """An account whose row another resource claimed is not taken for that one's by the attribute."""
    server = mysql_server
    user = await claimed_account(db, owned_schema, accounts_made, BOB)
    hashed = hashed_password.hashed(password_hashes.CACHING_SHA2, "second-pw", 5000, ALICE.uid)
    await dual_password.set_password(db, user, "%", "second-pw", "uid/2", retain=False, hashed=hashed)
    assert await intact(db, owned_schema, user, "%", server) is None
    assert login(mysql, user, "second-pw", tls=True) == f"{user}@%"  # 5000 rounds: any the server reads


@pytest.fixture
def restored_globals(mysql: MySQLServer, mysql_server: ServerInfo) -> Iterator[None]:
    query = "SELECT @@global.password_history, @@global.password_reuse_interval"
    [(history, interval)] = admin_rows(mysql, query)
    yield
    admin(mysql, f"SET GLOBAL password_history = {int(history)}")
    admin(mysql, f"SET GLOBAL password_reuse_interval = {int(interval)}")


@pytest.mark.usefixtures("restored_globals")
async def test_a_server_that_checks_passwords_itself_is_told_apart(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, mysql_server: ServerInfo
) -> None:
    """A string given ``AS`` skips the server's own checks: where the server has any, the operator sends the
    password (and records the fingerprint in the row afterwards)."""
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "first-pw")
    server = mysql_server

    async def checks() -> bool:
        own = (await lookup(db, owned_schema, user, "%", server)).own_reuse_policy
        return await hashed_password.server_checks_passwords(db, own)

    assert await checks() is False
    admin(mysql, "SET GLOBAL password_history = 3")
    assert await checks() is True
    admin(mysql, "SET GLOBAL password_history = 0", "SET GLOBAL password_reuse_interval = 30")
    assert await checks() is True
    admin(mysql, "SET GLOBAL password_reuse_interval = 0")
    admin(mysql, f"ALTER USER '{user}'@'%' PASSWORD HISTORY 2")  # the account's own
    assert await checks() is True
    admin(mysql, f"ALTER USER '{user}'@'%' PASSWORD HISTORY DEFAULT")
    assert await checks() is False

    admin(mysql, "INSTALL COMPONENT 'file://component_validate_password'")
    try:
        assert await checks() is True
    finally:
        admin(mysql, "UNINSTALL COMPONENT 'file://component_validate_password'")
    assert await checks() is False
