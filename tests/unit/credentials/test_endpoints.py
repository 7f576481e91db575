"""The endpoints of a connection Secret: which one its standard keys carry, and the prefixed keys of more."""

from __future__ import annotations

import pytest

from dbuser_operator.credentials.endpoints import (
    Endpoint,
    EndpointNotFound,
    connection_values,
    prefix,
    select,
)

FALLBACK = Endpoint("mysql.admin.svc", 3306)
PRIMARY = Endpoint("mysql.db.svc", 3306, None, "primary")
READONLY = Endpoint("mysql-ro.db.svc", 3307, "REQUIRED", "read-only")


def test_the_first_endpoint_is_the_default_and_the_fallback_serves_a_server_without_any() -> None:
    assert select([PRIMARY, READONLY], FALLBACK, None) == (PRIMARY, [])
    assert select([], FALLBACK, None) == (FALLBACK, [])
    assert select([PRIMARY, READONLY], FALLBACK, "read-only", ["primary", "primary"]) == (READONLY, [PRIMARY])


@pytest.mark.parametrize(
    ("endpoints", "wanted", "more", "message"),
    [
        ([PRIMARY, READONLY], "proxy", (), "no endpoint proxy (its endpoints: primary, read-only)"),
        ([], "primary", (), "no endpoint primary (its endpoints: none)"),
        ([PRIMARY], None, ("x", "y"), "no endpoint x, y (its endpoints: primary)"),
    ],
)
def test_an_unknown_name_is_refused_naming_the_known_ones(
    endpoints: list[Endpoint], wanted: str | None, more: tuple[str, ...], message: str
) -> None:
    with pytest.raises(EndpointNotFound, match=message.replace("(", r"\(").replace(")", r"\)")):
        select(endpoints, FALLBACK, wanted, more)


def test_without_tls_and_more_endpoints_the_keys_are_those_of_before() -> None:
    values = connection_values("app", "pw", FALLBACK, "shop")
    assert values == {
        "host": "mysql.admin.svc",
        "port": "3306",
        "username": "app",
        "password": "pw",
        "database": "shop",
        "DATABASE_URL": "mysql://app:pw@mysql.admin.svc:3306/shop",
        "JDBC_URL": "jdbc:mysql://mysql.admin.svc:3306/shop?user=app&password=pw",
    }


def test_more_endpoints_get_prefixed_keys_and_the_tls_mode_reaches_the_urls() -> None:
    values = connection_values("app", "pw", PRIMARY, None, [READONLY])
    assert prefix("read-only") == "read_only_"
    assert values["host"] == "mysql.db.svc"
    assert "sslMode" not in values
    assert values["read_only_host"] == "mysql-ro.db.svc"
    assert values["read_only_port"] == "3307"
    assert values["read_only_sslMode"] == "REQUIRED"
    assert values["read_only_DATABASE_URL"] == "mysql://app:pw@mysql-ro.db.svc:3307?ssl-mode=REQUIRED"
    assert values["read_only_JDBC_URL"] == (
        "jdbc:mysql://mysql-ro.db.svc:3307/?user=app&password=pw&sslMode=REQUIRED"
    )
    assert {key for key in values if not key.startswith("read_only_")} == {
        "host",
        "port",
        "username",
        "password",
        "DATABASE_URL",
        "JDBC_URL",
    }
