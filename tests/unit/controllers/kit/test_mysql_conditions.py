"""A MySQL failure as the Ready condition: a name the server refuses is permanent, the rest is retried."""

from __future__ import annotations

import pymysql
import pytest

from dbuser_operator.controllers.kit.errors import UNREACHABLE_RECHECK, mysql_condition
from dbuser_operator.mysql.errors import DatabaseUnavailableError, ServerUnreachableError, classify


@pytest.mark.parametrize(
    ("code", "message", "reason", "retry"),
    [
        (1102, "Incorrect database name 'dd\\_'", "InvalidName", False),  # MariaDB
        (1059, "Identifier name 'dd\\_' is too long", "InvalidName", False),  # MySQL
        (1103, "Incorrect table name 'tt'", "InvalidName", False),
        (1205, "Lock wait timeout exceeded", "ServerError", True),
        (2013, "Lost connection to server during query", "DatabaseUnavailable", True),
    ],
)
def test_refused_names_are_not_retried(code: int, message: str, reason: str, retry: bool) -> None:
    condition = mysql_condition(classify(pymysql.err.OperationalError(code, message)), "'app'@'%'")
    assert (condition.reason, condition.retry) == (reason, retry)
    assert condition.message.startswith("'app'@'%': ")
    assert f"(MySQL error {code})" in condition.message


def test_a_server_its_probe_found_down_is_waited_for_not_retried_with_backoff() -> None:
    cause = "the default server (db:3306): unreachable: no login within 5 s of connecting"
    condition = mysql_condition(ServerUnreachableError(cause), "'app'@'%'")
    assert (condition.reason, condition.retry) == ("DatabaseUnavailable", False)
    assert condition.requeue_after == UNREACHABLE_RECHECK  # the server's return requeues it sooner
    assert condition.message == f"'app'@'%': {cause}"
    unavailable = mysql_condition(
        DatabaseUnavailableError("the server did not answer within 10 s"), "'app'@'%'"
    )
    assert (unavailable.retry, unavailable.requeue_after) == (True, None)  # not known down: backoff
