"""The SQL fragments of grants and limits: privilege lists, grant levels, numbers; and grant error codes."""

from __future__ import annotations

import pymysql
import pytest

from dbuser_operator.mysql import InvalidGrantError, classify
from dbuser_operator.mysql.identifiers import (
    InvalidIdentifierError,
    escape_wildcards,
    grant_level,
    privilege_list,
    unsigned_literal,
    validate_privilege_name,
)


@pytest.mark.parametrize(
    "name", ["SELECT", "CREATE TEMPORARY TABLES", "READ_ONLY ADMIN", "BACKUP_ADMIN", "DELETE HISTORY"]
)
def test_privilege_names(name: str) -> None:
    assert validate_privilege_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "select", "SELECT ", " SELECT", "SELECT  X", "SELECT,INSERT", "SELECT;", "_X", "A" * 65, "ÄLTER"],
)
def test_bad_privilege_names(name: str) -> None:
    with pytest.raises(InvalidIdentifierError, match="privilege"):
        validate_privilege_name(name)


def test_privilege_lists() -> None:
    assert privilege_list(["SELECT", "INSERT"]) == "SELECT, INSERT"
    with pytest.raises(ValueError, match="empty"):
        privilege_list([])
    with pytest.raises(InvalidIdentifierError):
        privilege_list(["SELECT", "DROP USER root; --"])


def test_grant_levels() -> None:
    assert grant_level("*") == "*.*"
    assert grant_level("app") == "`app`.*"
    assert grant_level("app_db") == "`app\\_db`.*"
    assert grant_level("a%b_c") == "`a\\%b\\_c`.*"
    assert grant_level("app_%", pattern=True) == "`app_%`.*"
    assert grant_level("app_db", "t_1") == "`app_db`.`t_1`"  # table level: never wildcards
    assert grant_level("we`ird", "t`t") == "`we``ird`.`t``t`"
    with pytest.raises(ValueError, match="a table needs a database"):
        grant_level("*", "t")
    with pytest.raises(ValueError, match="backslash"):
        escape_wildcards("a\\b")


def test_unsigned_literals() -> None:
    assert unsigned_literal(0) == "0"
    assert unsigned_literal(4294967295) == "4294967295"
    for bad in (-1, True, 1.0, "1"):
        with pytest.raises(ValueError, match="non-negative int"):
            unsigned_literal(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("code", [1144, 1221])
def test_grant_errors_from_the_server(code: int) -> None:
    error = classify(pymysql.err.OperationalError(code, "Illegal GRANT/REVOKE command"))
    assert type(error) is InvalidGrantError
    assert error.code == code
