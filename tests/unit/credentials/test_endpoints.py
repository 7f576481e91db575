"""The endpoints of a connection Secret: which one its standard keys carry, and the prefixed keys of more."""

from __future__ import annotations

import pytest

from dbuser_operator.credentials.endpoints import (
    CREDENTIAL_BUNDLE,
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


def test_a_certificate_only_account_offers_where_its_certificate_is_and_no_password() -> None:
    """A workload's Secret: sslCert and sslKey (the pod's credential bundle holds both), a mode that
    requires TLS (the endpoint's when it does: VERIFY_CA stays), and URLs without a password."""
    verified = Endpoint("mysql-ro.db.svc", 3307, "VERIFY_CA", "read-only")
    values = connection_values("app", None, FALLBACK, "shop", [verified], certificate=CREDENTIAL_BUNDLE)
    bundle = "%2Fvar%2Frun%2Fsecrets%2Fdbuser-operator%2Fcredentialbundle.pem"
    assert values == {
        "host": "mysql.admin.svc",
        "port": "3306",
        "username": "app",
        "sslCert": CREDENTIAL_BUNDLE,
        "sslKey": CREDENTIAL_BUNDLE,
        "sslMode": "REQUIRED",
        "database": "shop",
        "DATABASE_URL": f"mysql://app@mysql.admin.svc:3306/shop?ssl-mode=REQUIRED&ssl-cert={bundle}&ssl-key={bundle}",
        "JDBC_URL": "jdbc:mysql://mysql.admin.svc:3306/shop?user=app&sslMode=REQUIRED",
        "read_only_host": "mysql-ro.db.svc",
        "read_only_port": "3307",
        "read_only_sslMode": "VERIFY_CA",
        "read_only_DATABASE_URL": (
            f"mysql://app@mysql-ro.db.svc:3307/shop?ssl-mode=VERIFY_CA&ssl-cert={bundle}&ssl-key={bundle}"
        ),
        "read_only_JDBC_URL": "jdbc:mysql://mysql-ro.db.svc:3307/shop?user=app&sslMode=VERIFY_CA",
    }
    assert CREDENTIAL_BUNDLE == "/var/run/secrets/dbuser-operator/credentialbundle.pem"
    with pytest.raises(ValueError, match="a password or a certificate"):
        connection_values("app", None, FALLBACK, "shop")
