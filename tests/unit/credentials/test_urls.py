"""Connection URLs: every part percent-encoded, read back exactly by real URL parsers."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from dbuser_operator.credentials.urls import database_url, jdbc_url

# Any text a password may hold (no NUL: the password step refuses it), user names as the API allows them.
PASSWORDS = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), min_size=1)
USERS = st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\Z")
DATABASES = st.one_of(st.none(), st.from_regex(r"\A[A-Za-z0-9_$-]{1,64}\Z"))


@given(user=USERS, password=PASSWORDS, database=DATABASES)
def test_database_url_round_trips_through_sqlalchemy(user: str, password: str, database: str | None) -> None:
    url = make_url(database_url(user, password, "mysql.databases.svc", 3306, database))
    assert (url.drivername, url.username, url.password) == ("mysql", user, password)
    assert (url.host, url.port, url.database) == ("mysql.databases.svc", 3306, database)


@given(user=USERS, password=PASSWORDS, database=DATABASES)
def test_database_url_round_trips_through_urllib(user: str, password: str, database: str | None) -> None:
    parts = urlsplit(database_url(user, password, "10.0.0.7", 6033, database))
    assert (unquote(parts.username or ""), unquote(parts.password or "")) == (user, password)
    assert (parts.hostname, parts.port, unquote(parts.path.lstrip("/")) or None) == (
        "10.0.0.7",
        6033,
        database,
    )


def test_every_reserved_character_is_encoded() -> None:
    url = database_url("app", "p@ss:w/rd?#[]%+ é", "db", 3306, "shop")
    assert url == "mysql://app:p%40ss%3Aw%2Frd%3F%23%5B%5D%25%2B%20%C3%A9@db:3306/shop"


def test_ipv6_hosts_are_bracketed() -> None:
    url = make_url(database_url("app", "pw", "fd00::1", 3306, None))
    assert (url.host, url.port, url.database) == ("fd00::1", 3306, None)


@pytest.mark.parametrize("database", ["shop", None])
def test_jdbc_url(database: str | None) -> None:
    url = jdbc_url("app", "p&ss=w?rd", "db", 3306, database)
    assert url.startswith(f"jdbc:mysql://db:3306/{database or ''}?")
    query = parse_qs(urlsplit(url.removeprefix("jdbc:")).query)
    assert query == {"user": ["app"], "password": ["p&ss=w?rd"]}


def test_without_a_tls_mode_the_urls_are_as_before() -> None:
    assert database_url("app", "pw", "db", 3306, "shop") == "mysql://app:pw@db:3306/shop"
    assert jdbc_url("app", "pw", "db", 3306, None) == "jdbc:mysql://db:3306/?user=app&password=pw"


@pytest.mark.parametrize("database", ["shop", None])
def test_a_tls_mode_is_a_query_parameter_of_each_convention(database: str | None) -> None:
    url = database_url("app", "p?w&d", "db", 3306, database, ssl_mode="VERIFY_IDENTITY")
    path = f"/{database}" if database else ""
    assert url == f"mysql://app:p%3Fw%26d@db:3306{path}?ssl-mode=VERIFY_IDENTITY"
    assert make_url(url).query == {"ssl-mode": "VERIFY_IDENTITY"}
    assert make_url(url).password == "p?w&d"
    jdbc = jdbc_url("app", "p?w&d", "db", 3306, database, ssl_mode="REQUIRED")
    query = parse_qs(urlsplit(jdbc.removeprefix("jdbc:")).query)
    assert query == {"user": ["app"], "password": ["p?w&d"], "sslMode": ["REQUIRED"]}
