"""A MySQL failure as the Ready condition: a name the server refuses is permanent, the rest is retried."""

from __future__ import annotations

import pymysql
import pytest

from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.mysql.errors import classify


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
