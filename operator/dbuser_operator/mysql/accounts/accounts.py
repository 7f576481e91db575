"""Account operations, one statement each; passwords travel as query parameters only.

The functions raise only :class:`~.errors.MySQLError`: a bad user name or host becomes
:class:`~.errors.InvalidAccountError` and an unusable password :class:`~.errors.PasswordRejectedError`,
both before any statement is sent. The statements work on MySQL 8.0/8.4 and MariaDB 10.6+.
"""

from __future__ import annotations

from typing import LiteralString

from pydantic import SecretStr

from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.accounts.passwords import validate_password
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.errors import AccountExistsError, InvalidAccountError, checked_input
from dbuser_operator.mysql.identifiers import account, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.statement import Statement

_OPERATION_FAILED = 1396  # CREATE/ALTER/DROP USER failed for the account


async def exists(db: Database, user: str, host: str) -> bool:
    """Whether the account ``'user'@'host'`` exists (``mysql.user``: a table on MySQL, a view on MariaDB).

    Host names are case-insensitive: the server stores them lower-cased, so they are compared that way.
    """
    with checked_input():
        statement = Statement(
            "SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s",
            validate_user(user),
            validate_host(host).lower(),
        )
    return bool(await db.fetch(statement))


async def create(
    db: Database,
    user: str,
    host: str,
    password: str | SecretStr | None,
    method: Method | None = None,
    *,
    expired: bool = False,
    attributes: str | None = None,
    require: TLSIdentity | None = None,
) -> None:
    """Create the account, with the server's default plugin or ``method``'s (``password`` None for a
    plugin that takes none); ``expired``: with ``PASSWORD EXPIRE``, which only a change of its password
    lifts (:mod:`.new_password`); ``attributes``: with ``ATTRIBUTE`` (a JSON object, MySQL 8.0.21+:
    :mod:`.account_metadata`); ``require``: with this ``REQUIRE`` (a certificate-only account's issuer and
    subject, in force from the account's first moment). One that exists already is left as it is,
    password included, and the server's refusal raised (:class:`~.errors.AccountExistsError`): the caller
    did not create it.

    The server's error 1396 means "operation failed", not "exists": MySQL answers a password longer than
    its plugin takes with it too. So the account is looked for; when it is not there, the refusal is an
    :class:`~.errors.InvalidAccountError` that says so."""
    with checked_input():
        suffix: LiteralString = ""
        params: tuple[str, ...] = ()
        if require:
            clause, params = require.require_clause()
            suffix = " REQUIRE " + clause
        suffix += " PASSWORD EXPIRE" if expired else ""
        if attributes is not None:
            suffix += " ATTRIBUTE %s"
            params += (attributes,)
        if method is not None:
            statement = method.identified("CREATE USER", account(user, host), password, suffix, params)
        else:
            secret = validate_password("" if password is None else password)
            statement = Statement(
                "CREATE USER {account} IDENTIFIED BY %s" + suffix,
                secret,
                *params,
                account=account(user, host),
            )
    try:
        await db.execute(statement, idempotent=False)  # sent again, it would find its own account
    except InvalidAccountError as error:
        if error.code != _OPERATION_FAILED:
            raise
        if await exists(db, user, host):
            raise AccountExistsError(f"'{user}'@'{host}' exists already", error.code) from None
        raise InvalidAccountError(
            f"the server refused to create '{user}'@'{host}' (MySQL error {error.code}), and the account"
            " does not exist: the password, plugin or name is not one it takes",
            error.code,
        ) from None


async def set_password(
    db: Database, user: str, host: str, password: str | SecretStr | None, method: Method | None = None
) -> None:
    """Set the account's password (InvalidAccountError, code 1396, when the account does not exist);
    with ``method``, its plugin too (the password None for a plugin that takes none)."""
    with checked_input():
        if method is not None:
            statement = method.identified("ALTER USER", account(user, host), password)
        else:
            statement = Statement(
                "ALTER USER {account} IDENTIFIED BY %s",
                validate_password("" if password is None else password),
                account=account(user, host),
            )
    await db.execute(statement)


async def drop(db: Database, user: str, host: str) -> None:
    """Drop the account if it exists. Its open sessions stay open until they end (the server's choice)."""
    with checked_input():
        statement = Statement("DROP USER IF EXISTS {account}", account=account(user, host))
    await db.execute(statement)
