"""Account options without a server: ranges, reading mysql.user rows, the ALTER USER statement."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql import InvalidAccountError, InvalidOptionsError
from dbuser_operator.mysql.limits import LIMIT_MAX, USER_CONNECTIONS_MAX, AccountOptions, alter_statement


def test_defaults_mean_no_limits_and_no_tls() -> None:
    options = AccountOptions()
    assert (options.max_user_connections, options.max_queries_per_hour) == (0, 0)
    assert (options.max_updates_per_hour, options.max_connections_per_hour) == (0, 0)
    assert options.require_tls is False
    assert options.other_tls_requirement == ""


def test_largest_values() -> None:
    options = AccountOptions(USER_CONNECTIONS_MAX, LIMIT_MAX, LIMIT_MAX, LIMIT_MAX, True)
    assert options.max_user_connections == 2147483647
    assert options.max_queries_per_hour == 4294967295


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_user_connections", -1),
        ("max_user_connections", USER_CONNECTIONS_MAX + 1),  # MariaDB: a syntax error
        ("max_queries_per_hour", LIMIT_MAX + 1),  # MariaDB silently stores 0
        ("max_updates_per_hour", -5),
        ("max_connections_per_hour", 1.5),
        ("max_connections_per_hour", "10"),
        ("max_queries_per_hour", True),
        ("max_queries_per_hour", "1 MAX_USER_CONNECTIONS 5"),
        ("require_tls", 1),
        ("require_tls", "false"),
        ("other_tls_requirement", "CIPHER 'x'"),
    ],
)
def test_out_of_range_or_of_the_wrong_type(field: str, value: object) -> None:
    with pytest.raises(InvalidOptionsError, match=field) as refused:
        AccountOptions(**{field: value})  # type: ignore[arg-type]
    assert refused.value.reason == "InvalidOptions"


def test_a_stricter_requirement_implies_tls() -> None:
    with pytest.raises(InvalidOptionsError, match="implies require_tls"):
        AccountOptions(other_tls_requirement="X509")


@pytest.mark.parametrize(
    ("ssl_type", "require_tls", "other"),
    [
        ("", False, ""),
        (None, False, ""),
        ("ANY", True, ""),
        ("X509", True, "X509"),
        ("SPECIFIED", True, "SPECIFIED"),
    ],
)
def test_from_a_mysql_user_row(ssl_type: str | None, require_tls: bool, other: str) -> None:
    options = AccountOptions.from_row(1, "2", 3, 4, ssl_type)
    assert options == AccountOptions(1, 2, 3, 4, require_tls, other)
    if other:
        assert options != AccountOptions(1, 2, 3, 4, True)  # a requirement set by hand is drift


def test_the_alter_user_statement() -> None:
    statement = alter_statement("app", "10.0.%", AccountOptions(1, 2, 3, 4, require_tls=True))
    assert statement.params == ()
    assert statement.text == (
        "ALTER USER 'app'@'10.0.%' REQUIRE SSL WITH MAX_QUERIES_PER_HOUR 2 MAX_UPDATES_PER_HOUR 3"
        " MAX_CONNECTIONS_PER_HOUR 4 MAX_USER_CONNECTIONS 1"
    )
    assert alter_statement("app", "%", AccountOptions()).text == (
        "ALTER USER 'app'@'%' REQUIRE NONE WITH MAX_QUERIES_PER_HOUR 0 MAX_UPDATES_PER_HOUR 0"
        " MAX_CONNECTIONS_PER_HOUR 0 MAX_USER_CONNECTIONS 0"
    )


def test_the_statement_refuses_bad_accounts_and_unsettable_requirements() -> None:
    with pytest.raises(InvalidAccountError):
        alter_statement("a b", "%", AccountOptions())
    with pytest.raises(InvalidOptionsError, match="not an option to set"):
        alter_statement("app", "%", AccountOptions(require_tls=True, other_tls_requirement="X509"))
