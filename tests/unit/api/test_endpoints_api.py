"""Endpoints in the API and the settings: names unique and DNS labels, one way to name the default's."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_settings import CliApp

from dbuser_operator.api.v1alpha1 import ConnectionSecret
from dbuser_operator.api.v1alpha1.mysqlserver import ENDPOINT_NAMES_MESSAGE, MySQLServerSpec
from dbuser_operator.settings import Settings

CREDENTIALS = {"user": {"name": "a", "key": "u"}, "password": {"name": "a", "key": "p"}}


def spec(*endpoints: dict[str, Any]) -> MySQLServerSpec:
    return MySQLServerSpec.model_validate({"host": "db", "credentials": CREDENTIALS, "endpoints": endpoints})


def test_endpoints_default_to_port_3306_and_no_tls_mode() -> None:
    (endpoint,) = spec({"name": "primary", "host": "db.svc"}).endpoints or []
    assert (endpoint.port, endpoint.tls) == (3306, None)
    (other,) = (
        spec({"name": "ro", "host": "fd00::1", "port": 6033, "tls": {"mode": "VERIFY_CA"}}).endpoints or []
    )
    assert other.tls is not None
    assert other.tls.mode == "VERIFY_CA"


@pytest.mark.parametrize(
    ("endpoints", "words"),
    [
        ([{"name": "a", "host": "x"}, {"name": "a", "host": "y"}], ENDPOINT_NAMES_MESSAGE),
        ([{"name": "Primary", "host": "x"}], "String should match pattern"),
        ([{"name": "a_b", "host": "x"}], "String should match pattern"),
        ([{"name": "a", "host": "x y"}], "String should match pattern"),
        ([{"name": "a", "host": "x", "tls": {"mode": "required"}}], "Input should be"),
        ([{"name": "a", "host": "x", "port": 0}], "greater than or equal to 1"),
        ([{"name": f"e{i}", "host": "x"} for i in range(17)], "at most 16 items"),
    ],
)
def test_malformed_endpoints_are_refused(endpoints: list[dict[str, Any]], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        spec(*endpoints)


def test_a_connection_secret_names_endpoints_by_dns_label() -> None:
    chosen = ConnectionSecret.model_validate(
        {"name": "db", "endpoint": "primary", "endpoints": ["read-only"]}
    )
    assert (chosen.endpoint, chosen.endpoints) == ("primary", ["read-only"])
    with pytest.raises(ValidationError, match="String should match pattern"):
        ConnectionSecret.model_validate({"name": "db", "endpoint": "../x"})


def test_the_default_servers_endpoints_come_from_one_flag_or_the_others() -> None:
    named = '[{"name":"primary","host":"db.svc"},{"name":"ro","host":"ro.svc","tls":{"mode":"REQUIRED"}}]'
    settings = CliApp.run(Settings, cli_args=["--connection-endpoints", named])
    assert [endpoint.name for endpoint in settings.connection_endpoints] == ["primary", "ro"]
    assert CliApp.run(Settings, cli_args=["--connection-ssl-mode=required"]).connection_ssl_mode == "REQUIRED"
    with pytest.raises(ValidationError, match="replaces --connection-host"):
        CliApp.run(Settings, cli_args=["--connection-endpoints", named, "--connection-port=6033"])
    with pytest.raises(ValidationError, match=ENDPOINT_NAMES_MESSAGE):
        CliApp.run(
            Settings, cli_args=["--connection-endpoints", '[{"name":"a","host":"x"},{"name":"a","host":"y"}]']
        )
