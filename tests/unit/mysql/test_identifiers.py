"""Identifier validation and quoting: hostile names are rejected with a message that names the rule."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql.identifiers import (
    SQL,
    InvalidIdentifierError,
    account,
    quote_identifier,
    quote_string,
    validate_database,
    validate_host,
    validate_table,
    validate_user,
)

HOSTILE = [
    pytest.param("", "empty", id="empty"),
    pytest.param("a" * 33, "33 characters, at most 32", id="33-chars"),
    pytest.param("app'", 'character "\'" not allowed', id="quote"),
    pytest.param('app"', "character '\"' not allowed", id="double-quote"),
    pytest.param("app`", "character '`' not allowed", id="backtick"),
    pytest.param("app\\", r"character '\\' not allowed", id="backslash"),
    pytest.param("app;DROP", "character ';' not allowed", id="semicolon"),
    pytest.param("app--x", None, id="dashes-are-fine"),
    pytest.param("app /*", "character ' ' not allowed", id="comment"),
    pytest.param("app\0", r"character '\x00' not allowed", id="nul"),
    pytest.param("app\n", r"character '\n' not allowed", id="newline"),
    pytest.param("app\x1b[31m", r"character '\x1b' not allowed", id="escape"),
    pytest.param("app\u202e", r"character '\u202e' not allowed", id="bidi-override"),
    pytest.param("\uff52\uff4f\uff4f\uff54", r"character '\uff52' not allowed", id="fullwidth-root"),
    pytest.param("r\u043e\u043et", r"character '\u043e' not allowed", id="cyrillic-o"),
    pytest.param("app%", "character '%' not allowed", id="wildcard"),
    pytest.param("app@host", "character '@' not allowed", id="at"),
    pytest.param(".app", "starts with '.'", id="leading-dot"),
    pytest.param("-app", "starts with '-'", id="leading-dash"),
    pytest.param("٣app", r"character '\u0663' not allowed", id="arabic-digit"),
]


@pytest.mark.parametrize(("name", "problem"), HOSTILE)
def test_hostile_user_names_are_rejected_with_the_rule(name: str, problem: str | None) -> None:
    if problem is None:
        assert validate_user(name) == name
        return
    with pytest.raises(InvalidIdentifierError) as raised:
        validate_user(name)
    message = str(raised.value)
    assert problem in message
    assert "allowed: 1 to 32 characters from A-Z a-z 0-9 _ . -" in message
    assert message.isascii()
    assert message.isprintable()
    assert raised.value.kind == "user name"
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("name", ["a", "app", "app_user-1.2", "_x", "A" * 32, "0day"])
def test_good_user_names_pass(name: str) -> None:
    assert validate_user(name) == name


def test_a_long_value_is_shown_bounded() -> None:
    with pytest.raises(InvalidIdentifierError) as raised:
        validate_user("x" * 10_000)
    assert len(str(raised.value)) < 250
    assert "10000 characters" in str(raised.value)


def test_a_non_string_is_rejected() -> None:
    with pytest.raises(InvalidIdentifierError, match="not a string"):
        validate_user(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "host", ["%", "localhost", "127.0.0.1", "10.0.%", "192.168.1.0/255.255.255.0", "::1", "fe80::1%", "db_1"]
)
def test_good_hosts_pass(host: str) -> None:
    assert validate_host(host) == host


@pytest.mark.parametrize(
    "host", ["", "a" * 256, "host'", "host`", "host\\", "host;", "ho st", "host\0", "hóst", "host\n", "a@b"]
)
def test_hostile_hosts_are_rejected(host: str) -> None:
    with pytest.raises(
        InvalidIdentifierError, match=r"invalid host .*allowed: 1 to 255 characters"
    ) as raised:
        validate_host(host)
    assert str(raised.value).isascii()


def test_a_255_character_host_passes() -> None:
    assert validate_host("h" * 255) == "h" * 255


@pytest.mark.parametrize("validate", [validate_database, validate_table])
def test_database_and_table_names(validate: object) -> None:
    assert callable(validate)
    for good in ["app", "app_db", "a$b", "my-db", "x" * 64, "*"]:
        assert validate(good) == good
    for bad in ["", "x" * 65, "a.b", "a`b", "a'b", "a b", "a;b", "a\0", "**", "\uff41pp"]:
        with pytest.raises(InvalidIdentifierError, match="allowed: 1 to 64 characters"):
            validate(bad)


def test_account_literal() -> None:
    assert account("app", "%") == "'app'@'%'"
    assert account("app.user-1", "10.0.0.0/255.0.0.0") == "'app.user-1'@'10.0.0.0/255.0.0.0'"
    assert isinstance(account("app", "%"), SQL)


@pytest.mark.parametrize(("user", "host"), [("app'", "%"), ("app", "%'; DROP USER root; --"), ("", "%")])
def test_account_validates_first(user: str, host: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        account(user, host)


def test_quote_string_escapes_quotes_and_backslashes() -> None:
    assert quote_string("plain") == "'plain'"
    assert quote_string("it's") == "'it''s'"
    assert quote_string("a\\' OR 1=1 -- ") == "'a\\\\'' OR 1=1 -- '"
    assert isinstance(quote_string("x"), SQL)
    with pytest.raises(ValueError, match="NUL"):
        quote_string("a\0b")


def test_quote_identifier_doubles_backticks() -> None:
    assert quote_identifier("app") == "`app`"
    assert quote_identifier("a`b") == "`a``b`"
    assert quote_identifier("`; DROP DATABASE x; --") == "```; DROP DATABASE x; --`"
    with pytest.raises(ValueError, match="non-empty"):
        quote_identifier("")
    with pytest.raises(ValueError, match="NUL"):
        quote_identifier("a\0")
