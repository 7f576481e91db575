"""Two passwords on MariaDB against the real server: mysql_native_password twice, both log in, a retry
after a crash between any two statements neither loses the old password early nor keeps a third, the
discard is idempotent, and the account's other options survive every statement. And why ed25519 is not
offered: a login through its second entry takes a second plugin switch, which PyMySQL refuses."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pymysql
import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts, mariadb_dual_auth
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.accounts.mariadb_dual_auth import DualAuthState
from dbuser_operator.mysql.errors import MySQLError
from tests.integration.mysql.support import Accounts, admin, admin_rows, loaded_plugin, login, login_error

pytestmark = [pytest.mark.integration, pytest.mark.dual_passwords]


@pytest.fixture
def mariadb(server: ServerInfo) -> None:
    if not mariadb_dual_auth.supports_dual_auth(server):
        pytest.skip("two authentications of one plugin: MariaDB 10.11+ only (MySQL: test_dual_password)")


@pytest.fixture
def method(mariadb: None) -> Method:
    return Method("mysql_native_password", "mariadb")


@pytest.fixture
def ed25519(mysql: MySQLServer, mariadb: None) -> Iterator[Method]:
    with loaded_plugin(mysql, "mariadb", "ed25519"):
        yield Method("ed25519", "mariadb")


def options(mysql: MySQLServer, user: str) -> str:
    """SHOW CREATE USER without its authentication: what the rotation statements must leave alone."""
    [(text,)] = admin_rows(mysql, f"SHOW CREATE USER '{user}'@'%'")
    return re.sub(r" IDENTIFIED (VIA|BY) .*?(?= REQUIRE| WITH| PASSWORD|$)", "", str(text))


async def rotate(db: Database, user: str, password: str, method: Method) -> bool:
    """One pass of the rotation as the operator makes it: read, then set unless already current."""
    state = await mariadb_dual_auth.read_state(db, user, "%")
    if state is not None and state.holds(method, password):
        return state.retained
    return await mariadb_dual_auth.set_password(db, user, "%", password, method, state=state, retain=True)


async def make(db: Database, mysql: MySQLServer, accounts_made: Accounts, method: Method) -> str:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "old-pw", method)
    admin(
        mysql,
        f"ALTER USER '{user}'@'%' REQUIRE ISSUER '/CN=ca' AND SUBJECT '/CN=app'"
        " WITH MAX_USER_CONNECTIONS 7 MAX_QUERIES_PER_HOUR 1000",
    )
    return user


def relax(mysql: MySQLServer, user: str) -> None:
    """Drop the TLS requirement (kept by every rotation statement, checked before) to log in plainly."""
    admin(mysql, f"ALTER USER '{user}'@'%' REQUIRE NONE")


async def test_both_log_in_then_the_discard_keeps_the_new_one(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, method: Method
) -> None:
    user = await make(db, mysql, accounts_made, method)
    before = options(mysql, user)

    assert await rotate(db, user, "new-pw", method) is True

    assert options(mysql, user) == before, "the TLS requirement and limits survive the ALTER"
    state = await mariadb_dual_auth.read_state(db, user, "%")
    assert state is not None
    assert len(state.entries) == 2
    assert state.holds(method, "new-pw")
    assert {entry.plugin for entry in state.entries} == {method.plugin}
    # mysql.user (and so the ownership fingerprint) shows the new password's hash
    [(plugin, auth)] = admin_rows(
        mysql, "SELECT plugin, authentication_string FROM mysql.user WHERE User = %s", user
    )
    assert (plugin, auth) == (method.plugin, method.stored("new-pw"))
    relax(mysql, user)
    before = options(mysql, user)
    assert login(mysql, user, "old-pw") == f"{user}@%"
    assert login(mysql, user, "new-pw") == f"{user}@%"
    assert login_error(mysql, user, "wrong-pw") == 1045

    assert await mariadb_dual_auth.discard_old_password(db, user, "%") is True

    assert options(mysql, user) == before
    assert login_error(mysql, user, "old-pw") == 1045
    assert login(mysql, user, "new-pw") == f"{user}@%"
    after = await mariadb_dual_auth.read_state(db, user, "%")
    assert after is not None
    assert after.entries == state.entries[:1]


async def test_a_retry_after_a_crash_between_any_two_statements(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, method: Method
) -> None:
    """Each statement of a rotation (the set, the discard), repeated as a pass that restarts after a crash
    right after it would: the same outcome as once."""
    user = await make(db, mysql, accounts_made, method)
    relax(mysql, user)

    for old, new in (("old-pw", "new-pw"), ("new-pw", "newer-pw")):
        assert await rotate(db, user, new, method) is True
        assert await rotate(db, user, new, method) is True  # the retry: nothing sent, nothing lost
        state = await mariadb_dual_auth.read_state(db, user, "%")
        assert state is not None
        assert len(state.entries) == 2
        assert login(mysql, user, old) == f"{user}@%", "a retried set must not lose the old password"
        assert login(mysql, user, new) == f"{user}@%"

        assert await mariadb_dual_auth.discard_old_password(db, user, "%") is True
        assert await mariadb_dual_auth.discard_old_password(db, user, "%") is False  # nothing left
        assert await rotate(db, user, new, method) is False  # a set retried after the discard: nothing
        assert login_error(mysql, user, old) == 1045
        assert login(mysql, user, new) == f"{user}@%"


async def test_a_plain_set_keeps_the_older_entry(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, method: Method
) -> None:
    """A restore within a rotation replaces the current entry and keeps the older one; otherwise a set
    without retain leaves the new password alone (an older entry set by hand is not kept)."""
    user = await make(db, mysql, accounts_made, method)
    relax(mysql, user)
    await rotate(db, user, "new-pw", method)
    state = await mariadb_dual_auth.read_state(db, user, "%")

    assert await mariadb_dual_auth.set_password(
        db, user, "%", "third-pw", method, state=state, retain=False, keep_older=True
    )

    assert login(mysql, user, "old-pw") == f"{user}@%"
    assert login_error(mysql, user, "new-pw") == 1045
    assert login(mysql, user, "third-pw") == f"{user}@%"
    state = await mariadb_dual_auth.read_state(db, user, "%")
    assert not await mariadb_dual_auth.set_password(
        db, user, "%", "fourth-pw", method, state=state, retain=False
    )
    assert login_error(mysql, user, "old-pw") == 1045
    assert login_error(mysql, user, "third-pw") == 1045
    assert login(mysql, user, "fourth-pw") == f"{user}@%"


async def test_an_account_of_one_entry_holds_its_password(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, method: Method
) -> None:
    user = await make(db, mysql, accounts_made, method)
    state = await mariadb_dual_auth.read_state(db, user, "%")

    assert state == DualAuthState((mariadb_dual_auth.Entry(method.plugin, str(method.stored("old-pw"))),))
    assert state.holds(method, "old-pw")
    assert not state.holds(method, "new-pw")
    assert not state.retained
    assert await mariadb_dual_auth.read_state(db, "it_nobody", "%") is None


async def test_ed25519_twice_loses_clients_on_the_second_entry(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, ed25519: Method
) -> None:
    """The server fact that keeps ed25519 on Immediate: the first entry logs in, the second asks the client
    for a second plugin switch, which PyMySQL (like Go's go-sql-driver/mysql) refuses. And the module
    refuses to make such an account."""
    user = accounts_made.track(accounts_made.name(), "%")
    admin_rows(
        mysql,
        f"CREATE USER '{user}'@'%%' IDENTIFIED VIA ed25519 USING %s OR ed25519 USING %s",
        str(ed25519.stored("first-pw")),
        str(ed25519.stored("second-pw")),
    )
    assert login(mysql, user, "first-pw") == f"{user}@%"
    with pytest.raises(pymysql.err.OperationalError, match="multiple auth switch"):
        login(mysql, user, "second-pw")

    state = await mariadb_dual_auth.read_state(db, user, "%")
    with pytest.raises(MySQLError, match="mysql_native_password"):
        await mariadb_dual_auth.set_password(db, user, "%", "third-pw", ed25519, state=state, retain=True)
