"""Connection settings: secrets stay hidden, TLS contexts are built from the files, versions parse."""

from __future__ import annotations

import ssl
from pathlib import Path

import pydantic
import pytest
from pydantic import SecretStr

from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.mysql.accounts.passwords import validate_password
from dbuser_operator.mysql.errors import InvalidPasswordError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.tls import SSLMode

PASSWORD = "Sup3r-s3cret-admin"


def settings(**overrides: object) -> ConnectionSettings:
    values: dict[str, object] = {"host": "db.example", "user": "operator", "password": PASSWORD, **overrides}
    return ConnectionSettings.model_validate(values)


def test_the_password_never_shows() -> None:
    s = settings()
    for text in (repr(s), str(s), s.model_dump_json(), repr(s.model_dump()), repr(Database(s))):
        assert PASSWORD not in text
    assert s.password.get_secret_value() == PASSWORD


def test_defaults_and_frozen() -> None:
    s = settings()
    assert (s.port, s.connect_timeout, s.statement_timeout, s.pool_size, s.tls_required) == (
        3306,
        5,
        30,
        4,
        False,
    )
    with pytest.raises(pydantic.ValidationError):
        s.port = 1  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        settings(port=0)
    with pytest.raises(pydantic.ValidationError):
        settings(pool_size=0)
    with pytest.raises(pydantic.ValidationError):
        settings(unknown=1)


def test_without_tls_settings_tls_is_preferred_like_the_mysql_clients() -> None:
    s = settings()
    assert (s.ssl_mode, s.mode, s.tls) == (None, SSLMode.PREFERRED, True)
    context = s.ssl_context()
    assert context is not None
    assert context.verify_mode == ssl.CERT_NONE
    assert settings(ssl_mode="DISABLED").ssl_context() is None
    assert not settings(ssl_mode="DISABLED").tls


def test_tls_required_alone_verifies_against_the_system_cas_as_before() -> None:
    s = settings(tls_required=True)
    assert s.mode is SSLMode.VERIFY_IDENTITY
    context = s.ssl_context()
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("tls")
    ca = CertificateAuthority()
    client = ca.issue_client("operator")
    files = {
        "ca_file": directory / "ca.crt",
        "cert_file": directory / "tls.crt",
        "key_file": directory / "tls.key",
    }
    files["ca_file"].write_bytes(ca.cert_pem)
    files["cert_file"].write_bytes(client.cert_pem)
    files["key_file"].write_bytes(client.key_pem)
    return files


def test_ca_and_client_certificate(tls_files: dict[str, Path]) -> None:
    s = settings(**tls_files)
    assert s.mode is SSLMode.VERIFY_IDENTITY  # as before modes existed
    assert not s.tls_required
    context = s.ssl_context()
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "dbuser-operator-envtest-ca"),),)
    ]


def test_tls_file_errors(tls_files: dict[str, Path], tmp_path: Path) -> None:
    for alone in ("key_file", "cert_file"):
        with pytest.raises(pydantic.ValidationError, match="cert_file and key_file go together"):
            settings(**{alone: tls_files[alone]})
    with pytest.raises(pydantic.ValidationError, match="ca_file"):
        settings(ca_file=tmp_path / "missing.crt")
    garbage = tmp_path / "garbage.crt"
    garbage.write_text("not a certificate")
    with pytest.raises(ssl.SSLError):
        settings(ca_file=garbage).ssl_context()


@pytest.mark.parametrize(
    ("version", "flavour", "parsed"),
    [
        ("10.11.19-MariaDB-0+deb12u1", "mariadb", (10, 11, 19)),
        ("11.4.2-MariaDB-ubu2404", "mariadb", (11, 4, 2)),
        ("5.5.5-10.6.12-MariaDB-log", "mariadb", (10, 6, 12)),
        ("8.4.3", "mysql", (8, 4, 3)),
        ("8.0.36-28", "mysql", (8, 0, 36)),
        ("8.0.40-0ubuntu0.22.04.1", "mysql", (8, 0, 40)),
        ("5.5.5-log", "mysql", (5, 5, 5)),
    ],
)
def test_server_versions(version: str, flavour: str, parsed: tuple[int, int, int]) -> None:
    assert ServerInfo.parse(version) == ServerInfo(flavour, parsed)  # type: ignore[arg-type]


def test_an_unparseable_version_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        ServerInfo.parse("MySQL")


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("", "must not be empty"),
        ("abc\0def", "NUL"),
        (SecretStr(""), "must not be empty"),
        (b"bytes", "a string"),
    ],
)
def test_unusable_passwords_are_rejected_without_showing_them(password: object, message: str) -> None:
    with pytest.raises(InvalidPasswordError, match=message) as raised:
        validate_password(password)  # type: ignore[arg-type]
    assert "abc" not in str(raised.value)


def test_a_password_becomes_a_secret() -> None:
    secret = validate_password("p'%;-- ü")
    assert isinstance(secret, SecretStr)
    assert secret.get_secret_value() == "p'%;-- ü"
    assert validate_password(secret).get_secret_value() == "p'%;-- ü"
