"""Account limits and the TLS requirement against the real server: read back as applied, written once."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, InvalidAccountError
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.accounts.limits import (
    LIMIT_MAX,
    USER_CONNECTIONS_MAX,
    Limits,
    apply_limits,
    read_limits,
)
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from tests.integration.mysql.support import Accounts, admin, admin_rows, login, login_error

pytestmark = pytest.mark.integration


async def new_account(db: Database, accounts_made: Accounts, host: str = "%") -> str:
    user = accounts_made.track(accounts_made.name(), host)
    await accounts.create(db, user, host, "pw")
    return user


async def test_a_new_account_has_no_limits(db: Database, accounts_made: Accounts) -> None:
    user = await new_account(db, accounts_made)
    assert await read_limits(db, user, "%") == Limits()
    assert await read_limits(db, accounts_made.name(), "%") is None
    written = db.statements_written
    assert await apply_limits(db, user, "%", Limits()) is False
    assert db.statements_written == written


async def test_limits_read_back_as_applied_and_a_second_apply_writes_nothing(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = await new_account(db, accounts_made)
    wanted = Limits(
        max_user_connections=3,
        max_queries_per_hour=1000,
        max_updates_per_hour=100,
        max_connections_per_hour=50,
    )

    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted
    assert admin_rows(
        mysql,
        "SELECT max_user_connections, max_questions, max_updates, max_connections, ssl_type"
        " FROM mysql.user WHERE User = %s",
        user,
    ) == [(3, 1000, 100, 50, "")]

    written, read = db.statements_written, db.statements_read
    assert await apply_limits(db, user, "%", wanted) is False
    assert (db.statements_written, db.statements_read) == (written, read + 1)

    assert await apply_limits(db, user, "%", Limits(max_user_connections=3)) is True
    assert await read_limits(db, user, "%") == Limits(max_user_connections=3)
    assert login(mysql, user, "pw") == f"{user}@%"


async def test_the_largest_limits(db: Database, accounts_made: Accounts) -> None:
    user = await new_account(db, accounts_made)
    wanted = Limits(USER_CONNECTIONS_MAX, LIMIT_MAX, LIMIT_MAX, LIMIT_MAX)
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted
    assert await apply_limits(db, user, "%", wanted) is False


async def test_require_tls_on_and_off(db: Database, mysql: MySQLServer, accounts_made: Accounts) -> None:
    user = await new_account(db, accounts_made)
    tls = Limits(require_tls=True)

    assert await apply_limits(db, user, "%", tls) is True
    assert await read_limits(db, user, "%") == tls
    assert admin_rows(mysql, "SELECT ssl_type FROM mysql.user WHERE User = %s", user) == [("ANY",)]
    assert login_error(mysql, user, "pw", tls=False) == 1045  # a client without TLS: refused
    assert login(mysql, user, "pw", tls=True) == f"{user}@%"  # the same client with TLS: accepted
    assert await apply_limits(db, user, "%", tls) is False

    assert await apply_limits(db, user, "%", Limits()) is True
    assert await read_limits(db, user, "%") == Limits()
    assert login(mysql, user, "pw", tls=False) == f"{user}@%"


@pytest.mark.parametrize(
    ("requirement", "identity"),
    [("X509", TLSIdentity(x509=True)), ("SUBJECT '/CN=app'", TLSIdentity(subject="/CN=app"))],
)
async def test_a_stricter_tls_requirement_by_hand_is_put_back(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, requirement: str, identity: TLSIdentity
) -> None:
    user = await new_account(db, accounts_made)
    admin(mysql, f"ALTER USER '{user}'@'%' REQUIRE {requirement}")

    found = await read_limits(db, user, "%")
    assert found == Limits(require_tls=True, tls_identity=identity)
    assert found != Limits(require_tls=True)

    assert await apply_limits(db, user, "%", Limits(require_tls=True)) is True
    assert await read_limits(db, user, "%") == Limits(require_tls=True)
    # x509_subject is a BLOB: b"" on MySQL, "" on MariaDB (a view over JSON there): compare its length.
    subject = "SELECT ssl_type, LENGTH(x509_subject) FROM mysql.user WHERE User = %s"
    assert admin_rows(mysql, subject, user) == [("ANY", 0)]


async def test_limits_changed_by_hand_are_put_back(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = await new_account(db, accounts_made)
    wanted = Limits(max_user_connections=5)
    await apply_limits(db, user, "%", wanted)
    admin(mysql, f"ALTER USER '{user}'@'%' WITH MAX_USER_CONNECTIONS 500 MAX_QUERIES_PER_HOUR 7")
    assert await read_limits(db, user, "%") == Limits(max_user_connections=500, max_queries_per_hour=7)
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted


async def test_options_of_a_host_pattern_and_an_upper_case_host(
    db: Database, accounts_made: Accounts
) -> None:
    pattern = await new_account(db, accounts_made, host="10.%")
    assert await apply_limits(db, pattern, "10.%", Limits(max_queries_per_hour=9)) is True
    assert await read_limits(db, pattern, "10.%") == Limits(max_queries_per_hour=9)
    assert await read_limits(db, pattern, "%") is None

    named = accounts_made.track(accounts_made.name(), "db.example.com")
    await accounts.create(db, named, "DB.Example.com", "pw")
    assert await apply_limits(db, named, "DB.Example.com", Limits(max_user_connections=2)) is True
    assert await read_limits(db, named, "db.example.com") == Limits(max_user_connections=2)


async def test_options_of_a_missing_account(db: Database, accounts_made: Accounts) -> None:
    with pytest.raises(InvalidAccountError) as refused:
        await apply_limits(db, accounts_made.name(), "%", Limits(max_user_connections=1))
    assert refused.value.code == 1396
