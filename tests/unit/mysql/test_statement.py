"""Statements: fragments, parameters, and the % that PyMySQL formats with."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from pymysql.converters import escape_string

from dbuser_operator.mysql.identifiers import SQL, account
from dbuser_operator.mysql.session.statement import Statement


def as_pymysql_formats(statement: Statement) -> str:
    """The query text the server gets: what PyMySQL's cursor does with the text and the parameters."""
    if not statement.params:
        return statement.text
    return statement.text % tuple(f"'{escape_string(str(p))}'" for p in statement.params)


def test_without_parameters_a_host_pattern_stays_as_it_is() -> None:
    statement = Statement("DROP USER IF EXISTS {account}", account=account("app", "%"))
    assert statement.text == "DROP USER IF EXISTS 'app'@'%'"
    assert statement.params == ()
    assert as_pymysql_formats(statement) == "DROP USER IF EXISTS 'app'@'%'"


@pytest.mark.parametrize("host", ["%", "10.0.%", "%s", "%%", "fe80::%"])
def test_with_parameters_a_host_pattern_reaches_the_server_unchanged(host: str) -> None:
    statement = Statement(
        "CREATE USER IF NOT EXISTS {account} IDENTIFIED BY %s",
        SecretStr("pa%ss'word"),
        account=account("app", host),
    )
    assert statement.text == f"CREATE USER IF NOT EXISTS 'app'@'{host.replace('%', '%%')}' IDENTIFIED BY %s"
    assert (
        as_pymysql_formats(statement)
        == f"CREATE USER IF NOT EXISTS 'app'@'{host}' IDENTIFIED BY 'pa%ss\\'word'"
    )


def test_secret_parameters_are_unwrapped_for_the_driver_and_remembered() -> None:
    statement = Statement("SELECT %s, %s", "visible", SecretStr("hidden"))
    assert statement.params == ("visible", "hidden")
    assert statement.secrets == ("hidden",)


def test_repr_never_shows_parameters() -> None:
    statement = Statement(
        "ALTER USER {account} IDENTIFIED BY %s", SecretStr("s3cret!"), account=account("a", "%")
    )
    assert "s3cret" not in repr(statement)
    assert "ALTER USER 'a'@'%%' IDENTIFIED BY %s" in repr(statement)
    assert "1 parameter(s) hidden" in repr(statement)


def test_a_host_interpolated_into_the_template_is_caught() -> None:
    # The mistake the class exists to prevent: a literal % in text that PyMySQL will format.
    text = "CREATE USER 'app'@'%' IDENTIFIED BY %s"
    with pytest.raises(ValueError, match="% only as %s placeholders"):
        Statement(text, "pw")
    with pytest.raises(ValueError, match="2 %s placeholder"):
        Statement("CREATE USER 'app'@'%s' IDENTIFIED BY %s", "pw")
    with pytest.raises(ValueError, match="% only as %s placeholders"):
        Statement("CREATE USER 'app'@'%%' IDENTIFIED BY %s", "pw")


def test_placeholders_must_match_the_parameters() -> None:
    with pytest.raises(ValueError, match="1 %s placeholder"):
        Statement("SELECT %s", "a", "b")
    with pytest.raises(ValueError, match="0 %s placeholder"):
        Statement("SELECT 1", "a")


def test_fragments_must_be_quoted_sql() -> None:
    with pytest.raises(TypeError, match="must be SQL"):
        Statement("DROP USER {account}", account="'app'@'%'")  # type: ignore[arg-type]
    assert Statement("DROP USER {account}", account=SQL("'app'@'%'")).text == "DROP USER 'app'@'%'"


def test_literal_braces_are_doubled() -> None:
    assert Statement("SELECT '{{}}'").text == "SELECT '{}'"
