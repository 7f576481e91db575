"""The errors of the MySQL layer, each with a stable ``reason`` for status conditions.

:func:`classify` turns whatever the driver, the network or the input checks raised into one of them. The
messages are built from the error code and the server's message only: never from statement text or
parameters, and a server message that quotes statement text (a syntax error) is withheld.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import ClassVar

import pymysql

from dbuser_operator.mysql.identifiers import InvalidIdentifierError


class MySQLError(Exception):
    """Base of the layer's errors: ``reason`` (CamelCase, for conditions), ``code`` (the server's, if any)."""

    reason: ClassVar[str] = "ServerError"

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"


class DatabaseUnavailableError(MySQLError):
    """The server cannot be reached, went away, or did not answer in time (transient)."""

    reason = "DatabaseUnavailable"


class ServerUnreachableError(DatabaseUnavailableError):
    """A health check found the server unreachable: the call failed without trying (see ``Database``)."""


class AccessDeniedError(MySQLError):
    """The server refused the operator's own login (wrong credentials, locked or expired account)."""

    reason = "AccessDenied"


class AdminPrivilegeMissingError(MySQLError):
    """The operator's account lacks a privilege the statement needs (CREATE USER, SELECT on mysql.user…)."""

    reason = "AdminPrivilegeMissing"


class InvalidAccountError(MySQLError):
    """The account name or host is invalid, or the server refused the operation on it (error 1396)."""

    reason = "InvalidAccount"


class AccountExistsError(InvalidAccountError):
    """``CREATE USER`` found the account there already (error 1396): whoever made it, the caller did not."""

    reason = "AccountExists"


class InvalidNameError(MySQLError):
    """The server refused a name as too long or malformed (a database name over 64 characters once its
    wildcards are escaped, an identifier or account name too long): permanent until the spec changes."""

    reason = "InvalidName"


class InvalidGrantError(MySQLError):
    """A grant is invalid: a bad database, table or privilege name, or a privilege not valid at its level."""

    reason = "InvalidGrant"


class PrivilegeUnknownError(InvalidGrantError):
    """A wanted privilege the server does not have (not in its ``SHOW PRIVILEGES``, or of the other flavour),
    or a name that is no privilege: refused before any SQL, until the spec changes."""

    reason = "PrivilegeUnknown"


class PrivilegeMisplacedError(InvalidGrantError):
    """A wanted privilege the server has, but not at the level it is wanted (a global privilege on a
    database, a routine privilege on a table): refused before any SQL, until the spec changes."""

    reason = "PrivilegeMisplaced"


class TableNotFoundError(InvalidGrantError):
    """A table-level grant names a table that does not exist (yet): the server refuses it (error 1146)."""

    reason = "TableNotFound"


class ColumnNotFoundError(InvalidGrantError):
    """A column grant names a column (or table) that does not exist (yet): error 1054."""

    reason = "ColumnNotFound"


class RoutineNotFoundError(InvalidGrantError):
    """A routine grant names a stored procedure or function that does not exist (yet): error 1305."""

    reason = "RoutineNotFound"


class InvalidOptionsError(MySQLError):
    """Account options (connection and query limits) out of range."""

    reason = "InvalidOptions"


class PasswordRejectedError(MySQLError):
    """The password is unusable: empty, with NUL, or refused by the server's password policy."""

    reason = "PasswordRejected"


class PasswordTooLongError(PasswordRejectedError):
    """The password is longer than the account's plugin takes (MySQL's SHA-2 plugins: 256 bytes)."""

    reason = "PasswordTooLong"


class TLSError(MySQLError):
    """TLS was required but not negotiated, or the TLS handshake or certificate check failed."""

    reason = "TLSError"


class PluginUnavailableError(MySQLError):
    """The authentication plugin is not loaded in the server."""

    reason = "PluginUnavailable"


class ServerError(MySQLError):
    """Any other error; ``code`` says which."""

    reason = "ServerError"


class InvalidPasswordError(ValueError):
    """A password that is not a non-empty string without NUL (the message never contains it)."""


class PasswordLengthError(InvalidPasswordError):
    """A password longer than the plugin takes (the message names the limit, never the password)."""


# Client-side (2xxx) and server-side codes that mean the server is gone, going, or too busy.
_UNAVAILABLE = frozenset(
    {
        1040,  # too many connections
        1053,  # server shutdown in progress
        1152,  # aborted connection
        1158,  # network read error
        1159,  # network read timeout
        1160,  # network write error
        1161,  # network write timeout
        1203,  # the account's max_user_connections reached
        1317,  # query interrupted
        1927,  # connection killed (MariaDB)
        2002,  # cannot connect through the socket
        2003,  # cannot connect to the host
        2005,  # unknown host
        2006,  # server has gone away
        2013,  # lost connection during query
        2055,  # lost connection (extended)
        4031,  # disconnected for inactivity (MySQL)
    }
)
_ACCESS_DENIED = frozenset(
    {
        1045,  # access denied (login)
        1129,  # host blocked after connection errors
        1130,  # host not allowed to connect
        1251,  # authentication method not supported by the client
        1698,  # access denied, no password given
        1820,  # must change password
        1862,  # password expired
        3118,  # account locked (MySQL)
        4151,  # account locked (MariaDB)
    }
)
_PRIVILEGE_MISSING = frozenset(
    {
        1044,  # database access denied
        1095,  # not the owner of the thread
        1142,  # table access denied (for instance SELECT on mysql.user)
        1143,  # column access denied
        1211,  # not allowed to create users
        1227,  # specific privilege needed (CREATE USER, SUPER, …)
        1370,  # routine access denied
        1410,  # not allowed to create a user with GRANT
    }
)
_INVALID_ACCOUNT = frozenset(
    {
        1396,  # operation CREATE/ALTER/DROP USER failed for the account
    }
)
# Names the server refuses. The GRANT of a database named with 64 characters, some of them '_', sends the
# name escaped ('\_', 65 characters): MySQL 9.7 answers 1059, MariaDB 11.8 1102 (1103 for a table name).
_INVALID_NAME = frozenset(
    {
        1059,  # identifier name too long (ER_TOO_LONG_IDENT)
        1102,  # incorrect database name (ER_WRONG_DB_NAME)
        1103,  # incorrect table name (ER_WRONG_TABLE_NAME)
        1470,  # string too long for a user name or host (ER_WRONG_STRING_LENGTH)
    }
)
_PASSWORD_REJECTED = frozenset(
    {
        1819,  # password does not satisfy the policy
        1827,  # password hash format
    }
)
_INVALID_GRANT = frozenset(
    {
        1144,  # illegal GRANT/REVOKE command (a privilege not valid at the table level)
        1221,  # incorrect usage of DB GRANT and GLOBAL PRIVILEGES
    }
)
_PLUGIN_UNAVAILABLE = frozenset({1524})  # plugin is not loaded
_STATEMENT_ECHO = frozenset({1064, 1149})  # syntax errors quote the statement text near the error
_TLS = frozenset({2026})  # SSL connection error

_CLASSES: tuple[tuple[frozenset[int], type[MySQLError]], ...] = (
    (_UNAVAILABLE, DatabaseUnavailableError),
    (_ACCESS_DENIED, AccessDeniedError),
    (_PRIVILEGE_MISSING, AdminPrivilegeMissingError),
    (_INVALID_ACCOUNT, InvalidAccountError),
    (_INVALID_NAME, InvalidNameError),
    (_PASSWORD_REJECTED, PasswordRejectedError),
    (_INVALID_GRANT, InvalidGrantError),
    (_TLS, TLSError),
    (_PLUGIN_UNAVAILABLE, PluginUnavailableError),
)


def classify(exc: BaseException, secrets: Iterable[object] = ()) -> MySQLError:
    """The :class:`MySQLError` for ``exc``; ``secrets`` (password values) are redacted from the message."""
    if isinstance(exc, MySQLError):
        return exc
    if isinstance(exc, InvalidIdentifierError | InvalidPasswordError):
        return _classify_input(exc)
    tls = next((e for e in _chain(exc) if isinstance(e, ssl.SSLError)), None)
    if tls is not None:
        return TLSError(f"TLS failed: {_redact(str(tls), secrets)}")
    if isinstance(exc, pymysql.err.MySQLError):
        return _classify_driver(exc, secrets)
    if isinstance(exc, TimeoutError):  # before OSError, its base class
        return DatabaseUnavailableError("the database did not answer in time")
    return _classify_other(exc, secrets)


@contextmanager
def checked_input() -> Iterator[None]:
    """Turn input errors (bad names, unusable passwords: ValueErrors) raised inside into MySQLErrors."""
    try:
        yield
    except (InvalidIdentifierError, InvalidPasswordError) as exc:
        raise classify(exc) from exc


def _classify_input(exc: InvalidIdentifierError | InvalidPasswordError) -> MySQLError:
    if isinstance(exc, PasswordLengthError):
        return PasswordTooLongError(str(exc))
    if isinstance(exc, InvalidPasswordError):
        return PasswordRejectedError(str(exc))
    kind = InvalidAccountError if exc.kind in {"user name", "host"} else InvalidGrantError
    return kind(str(exc))


def _classify_other(exc: BaseException, secrets: Iterable[object]) -> MySQLError:
    if isinstance(exc, OSError | EOFError):
        return DatabaseUnavailableError(f"cannot reach the database: {_redact(str(exc), secrets)}")
    return ServerError(f"{type(exc).__name__}: {_redact(str(exc), secrets)}")


def _classify_driver(exc: pymysql.err.MySQLError, secrets: Iterable[object]) -> MySQLError:
    code, message = _code_and_message(exc)
    if code is None:
        if isinstance(exc, pymysql.err.InterfaceError):  # "(0, 'Not connected')", "Cursor closed"
            return DatabaseUnavailableError(f"the connection is closed: {_redact(message, secrets)}")
        return ServerError(_redact(message, secrets))
    if code in _STATEMENT_ECHO:
        return ServerError(f"SQL syntax error; the server's message is withheld (MySQL error {code})", code)
    text = f"{_redact(message, secrets)} (MySQL error {code})"
    for codes, kind in _CLASSES:
        if code in codes:
            return kind(text, code)
    return ServerError(text, code)


def _code_and_message(exc: pymysql.err.MySQLError) -> tuple[int | None, str]:
    """PyMySQL raises ``Error(code, message)``; aiomysql sometimes ``Error(message)``; code 0 is none."""
    args = exc.args
    if len(args) >= 2 and isinstance(args[0], int) and args[0] != 0:
        return args[0], str(args[1])
    if len(args) >= 2 and isinstance(args[0], int):
        return None, str(args[1])
    return None, str(args[0]) if args else type(exc).__name__


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes and contexts (each once)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _redact(text: str, secrets: Iterable[object]) -> str:
    """``text`` with every string secret, raw or as the driver escapes it, replaced by ``***``."""
    for secret in secrets:
        if isinstance(secret, str) and secret:
            for form in {secret, pymysql.converters.escape_string(secret)}:
                text = text.replace(form, "***")
    return text
