"""Account operations against the real server, checked by logging in with a separate connection."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import (
    AccountExistsError,
    ConnectionSettings,
    Database,
    InvalidAccountError,
    InvalidIdentifierError,
    InvalidPasswordError,
    MySQLError,
    PasswordRejectedError,
    Statement,
)
from dbuser_operator.mysql.accounts import accounts
from tests.integration.mysql.support import Accounts, login, login_error

pytestmark = pytest.mark.integration

HOSTILE_PASSWORDS = [
    "it's",
    'say "hi"',
    "back\\slash\\",
    "100%",
    "%s and %%",
    "under_score",
    "semi;colon",
    "-- comment",
    "/* comment */ #",
    "  spaces  inside and around  ",
    "pässwörd-日本語-🔑",
    "' OR '1'='1",
    "\\'); DROP USER root; --",
    "tab\tnew\nline",
    "x" * 100,
]


@pytest.mark.parametrize("password", HOSTILE_PASSWORDS)
async def test_create_and_the_user_logs_in(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, password: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    assert not await accounts.exists(db, user, "%")

    await accounts.create(db, user, "%", password)

    assert await accounts.exists(db, user, "%")
    assert login(mysql, user, password) == f"{user}@%"
    assert login_error(mysql, user, password + "x") == 1045


async def test_the_operator_itself_logs_in_with_a_unicode_password(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    password = "Grüße-日本語-🔑-'%\\"
    await accounts.create(db, user, "%", SecretStr(password))
    settings = ConnectionSettings(host=mysql.host, port=mysql.port, user=user, password=SecretStr(password))
    async with Database(settings) as as_user:
        assert await as_user.fetch(Statement("SELECT CURRENT_USER()")) == [(f"{user}@%",)]


async def test_set_password_replaces_the_old_one(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "old-password")
    assert login(mysql, user, "old-password") == f"{user}@%"

    await accounts.set_password(db, user, "%", "new-password;'%")

    assert login(mysql, user, "new-password;'%") == f"{user}@%"
    assert login_error(mysql, user, "old-password") == 1045


async def test_create_again_is_refused_and_keeps_the_existing_password(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "first")
    with pytest.raises(AccountExistsError) as refused:
        await accounts.create(db, user, "%", "second")
    assert refused.value.code == 1396
    assert refused.value.reason == "AccountExists"
    assert "second" not in str(refused.value)
    assert login(mysql, user, "first") == f"{user}@%"
    assert login_error(mysql, user, "second") == 1045


async def test_drop_removes_the_account_and_may_be_repeated(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    assert login(mysql, user, "pw") == f"{user}@%"

    await accounts.drop(db, user, "%")

    assert not await accounts.exists(db, user, "%")
    assert login_error(mysql, user, "pw") == 1045
    await accounts.drop(db, user, "%")  # no error: already gone
    assert not await accounts.exists(db, user, "%")


async def test_set_password_of_a_missing_account(db: Database, accounts_made: Accounts) -> None:
    user = accounts_made.name()
    with pytest.raises(InvalidAccountError) as raised:
        await accounts.set_password(db, user, "%", "pw")
    assert raised.value.code == 1396
    assert raised.value.reason == "InvalidAccount"
    assert user in raised.value.message


async def test_a_specific_host(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, client_host: str
) -> None:
    user = accounts_made.track(accounts_made.name(), client_host)
    await accounts.create(db, user, client_host, "pw")
    assert await accounts.exists(db, user, client_host)
    assert not await accounts.exists(db, user, "%")
    assert login(mysql, user, "pw") == f"{user}@{client_host}"


async def test_a_loopback_account(db: Database, accounts_made: Accounts) -> None:
    user = accounts_made.track(accounts_made.name(), "127.0.0.1")
    await accounts.create(db, user, "127.0.0.1", "pw")
    assert await accounts.exists(db, user, "127.0.0.1")
    assert not await accounts.exists(db, user, "%")
    await accounts.drop(db, user, "127.0.0.1")
    assert not await accounts.exists(db, user, "127.0.0.1")


async def test_accounts_differing_only_by_host_are_independent(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, client_host: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%", client_host)
    await accounts.create(db, user, "%", "anywhere")
    await accounts.create(db, user, client_host, "here")

    # The server picks the most specific host: from here, only the host-specific password works.
    assert login(mysql, user, "here") == f"{user}@{client_host}"
    assert login_error(mysql, user, "anywhere") == 1045

    await accounts.set_password(db, user, client_host, "here-2")
    assert login(mysql, user, "here-2") == f"{user}@{client_host}"

    await accounts.drop(db, user, client_host)
    assert await accounts.exists(db, user, "%")
    assert not await accounts.exists(db, user, client_host)
    assert login(mysql, user, "anywhere") == f"{user}@%"  # untouched by the other account's changes


@pytest.mark.parametrize(
    ("user", "host", "password", "error"),
    [
        ("a'b", "%", "pw", InvalidAccountError),
        ("app", "%'; DROP USER root; --", "pw", InvalidAccountError),
        ("x" * 33, "%", "pw", InvalidAccountError),
        ("\uff52\uff4f\uff4f\uff54", "%", "pw", InvalidAccountError),
        ("app", "%", "", PasswordRejectedError),
        ("app", "%", "nul\0", PasswordRejectedError),
    ],
)
async def test_invalid_input_sends_no_statement(
    db: Database, user: str, host: str, password: str, error: type[MySQLError]
) -> None:
    before = (db.statements_read, db.statements_written)
    with pytest.raises(error) as raised:
        await accounts.create(db, user, host, password)
    cause = InvalidIdentifierError if error is InvalidAccountError else InvalidPasswordError
    assert isinstance(raised.value.__cause__, cause)  # the ValueError of the check, for the curious
    with pytest.raises(error):
        await accounts.set_password(db, user, host, password)
    if error is InvalidAccountError:
        with pytest.raises(error):
            await accounts.exists(db, user, host)
        with pytest.raises(error):
            await accounts.drop(db, user, host)
    assert (db.statements_read, db.statements_written) == before


async def test_a_refused_create_of_an_absent_account_is_not_reported_as_existing(
    db: Database, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    """MySQL answers 1396 ("operation failed") to a password it will not take too: the account is looked
    for, and the refusal never claims it exists. (MariaDB takes the password: then it logs in.)"""
    user = accounts_made.track(accounts_made.name(), "%")
    password = "x" * 300  # over caching_sha2_password's 256 bytes
    refused: MySQLError | None = None
    try:
        await accounts.create(db, user, "%", password)
    except MySQLError as error:
        refused = error
    if refused is None:
        assert login(mysql, user, password) == f"{user}@%"
        return
    assert not isinstance(refused, AccountExistsError)
    assert refused.reason == "InvalidAccount"
    assert "does not exist" in str(refused)
    assert password not in str(refused)
    assert not await accounts.exists(db, user, "%")
