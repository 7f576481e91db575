"""Error classification: driver, network and input errors map to stable reasons; no secret leaks."""

from __future__ import annotations

import re
import ssl

import pymysql
import pytest

from dbuser_operator.mysql.errors import (
    AccessDeniedError,
    AdminPrivilegeMissingError,
    DatabaseUnavailableError,
    InvalidAccountError,
    InvalidGrantError,
    InvalidNameError,
    InvalidPasswordError,
    MySQLError,
    PasswordRejectedError,
    ServerError,
    TLSError,
    classify,
)
from dbuser_operator.mysql.identifiers import InvalidIdentifierError, validate_database, validate_user

CONDITION_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")  # apimachinery's rule

Op = pymysql.err.OperationalError


def _raised_from(exc: BaseException, cause: BaseException) -> BaseException:
    try:
        raise exc from cause
    except BaseException as raised:
        return raised


TABLE: list[tuple[BaseException, type[MySQLError], int | None]] = [
    (Op(2003, "Can't connect to MySQL server on '127.0.0.1'"), DatabaseUnavailableError, 2003),
    (Op(2006, "MySQL server has gone away"), DatabaseUnavailableError, 2006),
    (Op(2013, "Lost connection to MySQL server during query"), DatabaseUnavailableError, 2013),
    (Op(1053, "Server shutdown in progress"), DatabaseUnavailableError, 1053),
    (Op(1040, "Too many connections"), DatabaseUnavailableError, 1040),
    (Op(1927, "Connection was killed"), DatabaseUnavailableError, 1927),
    (pymysql.err.InterfaceError("(0, 'Not connected')"), DatabaseUnavailableError, None),
    (pymysql.err.InterfaceError(0, ""), DatabaseUnavailableError, None),
    (ConnectionRefusedError(111, "Connection refused"), DatabaseUnavailableError, None),
    (ConnectionResetError(104, "Connection reset by peer"), DatabaseUnavailableError, None),
    (OSError(113, "No route to host"), DatabaseUnavailableError, None),
    (TimeoutError(), DatabaseUnavailableError, None),
    (EOFError(), DatabaseUnavailableError, None),
    (Op(1045, "Access denied for user 'op'@'10.0.0.1' (using password: YES)"), AccessDeniedError, 1045),
    (Op(1130, "Host '10.0.0.1' is not allowed to connect"), AccessDeniedError, 1130),
    (Op(3118, "Access denied for user 'op'@'%'. Account is locked."), AccessDeniedError, 3118),
    (Op(1862, "Your password has expired."), AccessDeniedError, 1862),
    (
        Op(1227, "Access denied; you need (at least one of) the CREATE USER privilege(s)"),
        AdminPrivilegeMissingError,
        1227,
    ),
    (
        pymysql.err.ProgrammingError(1142, "SELECT command denied to user 'op'@'%' for table `mysql`.`user`"),
        AdminPrivilegeMissingError,
        1142,
    ),
    (Op(1044, "Access denied for user 'op'@'%' to database 'mysql'"), AdminPrivilegeMissingError, 1044),
    (Op(1410, "You are not allowed to create a user with GRANT"), AdminPrivilegeMissingError, 1410),
    (Op(1396, "Operation ALTER USER failed for 'app'@'%'"), InvalidAccountError, 1396),
    (
        Op(1470, "String 'x' is too long for user name (should be no longer than 32)"),
        InvalidNameError,
        1470,
    ),
    (Op(1102, "Incorrect database name 'a\\_b'"), InvalidNameError, 1102),  # MariaDB
    (Op(1059, "Identifier name 'a\\_b' is too long"), InvalidNameError, 1059),  # MySQL
    (Op(1103, "Incorrect table name 'x'"), InvalidNameError, 1103),
    (Op(1819, "Your password does not satisfy the current policy requirements"), PasswordRejectedError, 1819),
    (Op(2026, "SSL connection error"), TLSError, 2026),
    (ssl.SSLCertVerificationError(1, "certificate verify failed"), TLSError, None),
    (_raised_from(Op(2003, "Can't connect"), ssl.SSLError(1, "wrong version number")), TLSError, None),
    (pymysql.err.InternalError(1205, "Lock wait timeout exceeded"), ServerError, 1205),
    (pymysql.err.IntegrityError(1062, "Duplicate entry"), ServerError, 1062),
    (Op(1290, "The MariaDB server is running with the --read-only option"), ServerError, 1290),
    (pymysql.err.InternalError("Packet sequence number wrong"), ServerError, None),
    (RuntimeError("bug"), ServerError, None),
]


@pytest.mark.parametrize(
    ("exc", "kind", "code"), TABLE, ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None
)
def test_classification(exc: BaseException, kind: type[MySQLError], code: int | None) -> None:
    error = classify(exc)
    assert type(error) is kind
    assert error.code == code
    assert error.reason == kind.reason
    assert CONDITION_REASON.match(error.reason)
    if code is not None:
        assert f"(MySQL error {code})" in str(error)


def test_reasons_are_distinct_and_stable() -> None:
    reasons = {
        kind.reason
        for kind in (
            DatabaseUnavailableError,
            AccessDeniedError,
            AdminPrivilegeMissingError,
            InvalidAccountError,
            InvalidGrantError,
            InvalidNameError,
            PasswordRejectedError,
            TLSError,
            ServerError,
        )
    }
    assert reasons == {
        "DatabaseUnavailable",
        "AccessDenied",
        "AdminPrivilegeMissing",
        "InvalidAccount",
        "InvalidGrant",
        "InvalidName",
        "PasswordRejected",
        "TLSError",
        "ServerError",
    }


def test_a_classified_error_is_returned_as_it_is() -> None:
    error = AccessDeniedError("no", 1045)
    assert classify(error) is error


def test_input_errors() -> None:
    with pytest.raises(InvalidIdentifierError) as bad_user:
        validate_user("a'b")
    assert type(classify(bad_user.value)) is InvalidAccountError
    assert "a'b" in classify(bad_user.value).message  # the offending name is no secret
    with pytest.raises(InvalidIdentifierError) as bad_database:
        validate_database("a.b")
    assert type(classify(bad_database.value)) is InvalidGrantError
    assert type(classify(InvalidPasswordError("a password must not be empty"))) is PasswordRejectedError


def test_syntax_errors_withhold_the_server_message_which_quotes_the_statement() -> None:
    exc = pymysql.err.ProgrammingError(
        1064, "You have an error in your SQL syntax; ... near 'IDENTIFIED BY 'Sup3r-s3cret'' at line 1"
    )
    error = classify(exc)
    assert type(error) is ServerError
    assert error.code == 1064
    assert "Sup3r" not in str(error)
    assert "Sup3r" not in repr(error)
    assert "syntax" in str(error)


@pytest.mark.parametrize("secret", ["Sup3r-s3cret", 'it\'s a "secret"\\'])
def test_secrets_are_redacted_raw_and_escaped(secret: str) -> None:
    escaped = pymysql.converters.escape_string(secret)
    exc = Op(1290, f"echo {secret} and {escaped}")
    error = classify(exc, secrets=[secret])
    assert secret not in str(error)
    assert escaped not in str(error)
    assert str(error) == "echo *** and *** (MySQL error 1290)"
    assert secret not in str(classify(RuntimeError(f"bug with {secret}"), secrets=[secret]))


def test_repr_shows_message_and_code() -> None:
    assert (
        repr(classify(Op(1045, "Access denied")))
        == "AccessDeniedError('Access denied (MySQL error 1045)', code=1045)"
    )
