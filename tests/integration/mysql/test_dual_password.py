"""Dual passwords against the real server: retain, discard, the credential marker, older sessions.

On MariaDB (no dual passwords) the detection says so, and the server indeed refuses RETAIN CURRENT PASSWORD.
"""

from __future__ import annotations

import pymysql
import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts, dual_password
from dbuser_operator.mysql.accounts.dual_password import PasswordState
from dbuser_operator.mysql.errors import MySQLError
from tests.integration.mysql.support import Accounts, admin, client_tls, login, login_error

pytestmark = pytest.mark.integration


def test_support_follows_the_flavour(server: ServerInfo) -> None:
    assert dual_password.supports_dual_passwords(server) == (server.flavour == "mysql")


async def test_mariadb_refuses_retain(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    if server.flavour == "mysql":
        assert dual_password.supports_dual_passwords(server)
        return
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "first-pw")
    with pytest.raises(MySQLError):
        await dual_password.set_password(db, user, "%", "second-pw", "v2", retain=True)
    assert login(mysql, user, "first-pw") == f"{user}@%"


@pytest.fixture
def mysql_only(server: ServerInfo) -> None:
    if not dual_password.supports_dual_passwords(server):
        pytest.skip("dual passwords: MySQL 8.0.21+ only (MariaDB is covered by test_mariadb_refuses_retain)")


@pytest.mark.dual_passwords
@pytest.mark.usefixtures("mysql_only")
async def test_retain_keeps_both_then_discard_keeps_the_new_one(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "old-pw")
    assert await dual_password.read_state(db, user, "%") == PasswordState(None, retained=False)

    await dual_password.set_password(db, user, "%", "new-pw", "uid/2", retain=True)

    assert await dual_password.read_state(db, user, "%") == PasswordState("uid/2", retained=True)
    assert login(mysql, user, "old-pw") == f"{user}@%"
    assert login(mysql, user, "new-pw") == f"{user}@%"

    await dual_password.discard_old_password(db, user, "%")
    await dual_password.discard_old_password(db, user, "%")  # nothing left to discard: no error

    assert await dual_password.read_state(db, user, "%") == PasswordState("uid/2", retained=False)
    assert login_error(mysql, user, "old-pw") == 1045
    assert login(mysql, user, "new-pw") == f"{user}@%"


@pytest.mark.dual_passwords
@pytest.mark.usefixtures("mysql_only")
async def test_a_plain_set_keeps_the_retained_password(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    """What a retry after a crash does: the marker shows the credential is in place; setting the primary
    again without RETAIN leaves the retained (old) password valid."""
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "old-pw")
    await dual_password.set_password(db, user, "%", "new-pw", "uid/2", retain=True)

    await dual_password.set_password(db, user, "%", "new-pw", "uid/2", retain=False)

    assert login(mysql, user, "old-pw") == f"{user}@%"
    assert login(mysql, user, "new-pw") == f"{user}@%"
    assert await dual_password.read_state(db, user, "%") == PasswordState("uid/2", retained=True)


@pytest.mark.dual_passwords
@pytest.mark.usefixtures("mysql_only")
async def test_a_second_retain_replaces_the_secondary(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw-1")
    await dual_password.set_password(db, user, "%", "pw-2", "v2", retain=True)
    await dual_password.set_password(db, user, "%", "pw-3", "v3", retain=True)

    assert login_error(mysql, user, "pw-1") == 1045
    assert login(mysql, user, "pw-2") == f"{user}@%"
    assert login(mysql, user, "pw-3") == f"{user}@%"


@pytest.mark.dual_passwords
@pytest.mark.usefixtures("mysql_only")
async def test_sessions_up_to_the_watermark(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw-1")

    def connect() -> pymysql.Connection:
        return pymysql.connect(
            host=mysql.host, port=mysql.port, user=user, password=b"pw-1", **client_tls(mysql, tls=False)
        )

    older = connect()
    try:
        watermark = await dual_password.session_watermark(db)
        newer = connect()
        try:
            found = await dual_password.sessions_up_to(db, user, ["%"], watermark)
            assert found.count == 1
            assert found.uptime > 0
        finally:
            newer.close()
    finally:
        older.close()
    # The server notices the closed session at once or nearly: poll briefly.
    for _ in range(100):
        if (await dual_password.sessions_up_to(db, user, ["%"], watermark)).count == 0:
            break
        admin(mysql, "DO SLEEP(0.02)")
    assert (await dual_password.sessions_up_to(db, user, ["%"], watermark)).count == 0


async def test_sessions_are_counted_by_user_and_host(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    """A session of another account of the same user name (another tenant's, on another host) holds
    nothing: the processlist shows the client's host, matched against the accounts' hosts."""
    user = accounts_made.track(accounts_made.name(), "%", "10.9.9.9")
    await accounts.create(db, user, "%", "pw-theirs")
    await accounts.create(db, user, "10.9.9.9", "pw-ours")  # nobody here connects from there
    session = pymysql.connect(
        host=mysql.host, port=mysql.port, user=user, password=b"pw-theirs", **client_tls(mysql, tls=False)
    )
    try:
        watermark = await dual_password.session_watermark(db)
        assert (await dual_password.sessions_up_to(db, user, ["10.9.9.9"], watermark)).count == 0
        assert (await dual_password.sessions_up_to(db, user, ["%"], watermark)).count == 1
        assert (await dual_password.sessions_up_to(db, user, ["10.9.9.9", "%"], watermark)).count == 1
    finally:
        session.close()


async def test_bad_input_is_refused_before_any_statement(db: Database) -> None:
    with pytest.raises(ValueError, match="credential version"):
        await dual_password.set_password(db, "app", "%", "pw", "", retain=True)
    with pytest.raises(MySQLError):
        await dual_password.set_password(db, "bad`name", "%", "pw", "v1", retain=True)
