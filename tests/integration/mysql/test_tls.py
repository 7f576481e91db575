"""TLS modes against real servers, as the mysql client knows them: each connects or fails as it would.

Two local servers of their own (the shared one stays as it is): one with a certificate of a test CA that
names ``mysql.test`` only — not the 127.0.0.1 the tests connect to, like the certificates MySQL generates
for itself, which name no host at all — and one without TLS.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import SecretStr
from pymysql.constants import CLIENT

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.mysql import AccessDeniedError, ConnectionSettings, Database, Statement, TLSError
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.identifiers import account
from dbuser_operator.mysql.session.tls import SSLMode
from tests.support.tcp_proxy import StallingProxy

pytestmark = pytest.mark.integration

SERVER_NAME = "mysql.test"  # the only name in the server certificate


@dataclass
class TLSServer:
    """A local server of the session's flavour whose certificate, from a CA of this module, names
    ``mysql.test`` only; ``files``: that CA, another one and a client certificate of the first."""

    server: LocalMySQLServer
    files: Path

    @property
    def admin(self) -> MySQLServer:
        return self.server.admin


def _local_only(provider: MySQLServer | LocalMySQLServer) -> LocalMySQLServer:
    if not isinstance(provider, LocalMySQLServer):
        pytest.skip("needs a local server of the session's flavour (MYSQL_URL or a container is in use)")
    return provider


@pytest.fixture(scope="module")
def tls_server(
    mysql_provider: MySQLServer | LocalMySQLServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TLSServer]:
    """A second local server with TLS (only where the session has one: not with MYSQL_URL or containers)."""
    flavour = _local_only(mysql_provider).flavour
    files = tmp_path_factory.mktemp("tls")
    ca, other_ca = CertificateAuthority(), CertificateAuthority("another-ca")
    client = ca.issue_client("operator")
    for name, data in {
        "ca.crt": ca.cert_pem,
        "other-ca.crt": other_ca.cert_pem,
        "client.crt": client.cert_pem,
        "client.key": client.key_pem,
    }.items():
        (files / name).write_bytes(data)
    server = LocalMySQLServer(
        tmp_path_factory.mktemp("tls-server"), flavour, ca=ca, certificate_names=([SERVER_NAME], [])
    )
    server.start()
    yield TLSServer(server, files)
    server.stop()


@pytest.fixture(scope="module")
def plain_server(
    mysql_provider: MySQLServer | LocalMySQLServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalMySQLServer]:
    """A third local server, without TLS."""
    flavour = _local_only(mysql_provider).flavour
    server = LocalMySQLServer(tmp_path_factory.mktemp("plain-server"), flavour, tls=False)
    server.start()
    yield server
    server.stop()


def settings(server: LocalMySQLServer | TLSServer, **overrides: object) -> ConnectionSettings:
    admin = server.admin
    values: dict[str, object] = {
        "host": admin.host,
        "port": admin.port,
        "user": admin.user,
        "password": admin.password,
        "connect_timeout": 3,
        **overrides,
    }
    return ConnectionSettings.model_validate(values)


async def cipher(settings: ConnectionSettings) -> str:
    """The session's TLS cipher ('' in plain text), as the server sees it."""
    async with Database(settings) as db:
        [(_, value)] = await db.fetch(Statement("SHOW SESSION STATUS LIKE 'Ssl_cipher'"))
    return str(value)


async def tls_failure(settings: ConnectionSettings) -> TLSError:
    """The error a connection with ``settings`` fails with: a TLSError, without the password or a cause."""
    async with Database(settings) as db:
        with pytest.raises(TLSError) as raised:
            await db.fetch(Statement("SELECT 1"))
        assert db.statements_read == 0
    error = raised.value
    assert error.reason == "TLSError"
    assert settings.password.get_secret_value() not in str(error)
    assert error.__cause__ is None
    assert error.__context__ is None  # no driver traceback chained to it
    return error


async def test_required_encrypts_without_verifying(tls_server: TLSServer) -> None:
    # No CA given: the server's certificate is from a CA nobody trusts here, and it names another host.
    assert await cipher(settings(tls_server, ssl_mode="REQUIRED"))


async def test_verify_ca_verifies_the_chain_but_not_the_name(tls_server: TLSServer) -> None:
    ca, other_ca = tls_server.files / "ca.crt", tls_server.files / "other-ca.crt"
    assert await cipher(settings(tls_server, ssl_mode="VERIFY_CA", ca_file=ca))
    error = await tls_failure(settings(tls_server, ssl_mode="VERIFY_CA", ca_file=other_ca))
    assert "certificate verify failed" in error.message


async def test_verify_identity_checks_the_name_or_server_name(tls_server: TLSServer) -> None:
    ca = tls_server.files / "ca.crt"
    error = await tls_failure(settings(tls_server, ssl_mode="VERIFY_IDENTITY", ca_file=ca))
    assert "certificate verify failed" in error.message
    assert "127.0.0.1" in error.message  # the address the certificate does not name
    named = settings(tls_server, ssl_mode="VERIFY_IDENTITY", ca_file=ca, server_name=SERVER_NAME)
    assert await cipher(named)
    misnamed = named.model_copy(update={"server_name": "other.test"})
    assert "other.test" in (await tls_failure(misnamed)).message
    # Without a CA file, the system's CAs: they do not know the test CA.
    unknown = settings(tls_server, ssl_mode="VERIFY_IDENTITY", server_name=SERVER_NAME)
    assert "certificate verify failed" in (await tls_failure(unknown)).message


async def test_the_older_settings_still_mean_verify_identity(tls_server: TLSServer) -> None:
    ca = tls_server.files / "ca.crt"
    for legacy in ({"ca_file": ca}, {"ca_file": ca, "tls_required": True}):
        assert "127.0.0.1" in (await tls_failure(settings(tls_server, **legacy))).message
        assert await cipher(settings(tls_server, server_name=SERVER_NAME, **legacy))


async def test_disabled_stays_in_plain_text_when_tls_is_offered(tls_server: TLSServer) -> None:
    # On MySQL the admin's caching_sha2_password login then goes through RSA key exchange.
    assert await cipher(settings(tls_server, ssl_mode="DISABLED")) == ""


async def test_preferred_takes_tls_when_offered_and_plain_text_otherwise(
    tls_server: TLSServer, plain_server: LocalMySQLServer
) -> None:
    assert await cipher(settings(tls_server)) != ""  # PREFERRED is the default
    assert await cipher(settings(tls_server, ssl_mode="PREFERRED")) != ""
    assert await cipher(settings(plain_server)) == ""
    assert await cipher(settings(plain_server, ssl_mode="DISABLED")) == ""


@pytest.mark.parametrize("mode", [SSLMode.REQUIRED, SSLMode.VERIFY_CA, SSLMode.VERIFY_IDENTITY])
async def test_a_mode_that_requires_tls_sends_nothing_to_a_server_without_it(
    plain_server: LocalMySQLServer, tls_server: TLSServer, mode: SSLMode
) -> None:
    async with StallingProxy(plain_server.admin.host, plain_server.port) as proxy:
        ca = tls_server.files / "ca.crt" if mode.verifies else None
        server_name = SERVER_NAME if mode is SSLMode.VERIFY_IDENTITY else None
        required = settings(plain_server, port=proxy.port, ssl_mode=mode, ca_file=ca, server_name=server_name)
        error = await tls_failure(required)
        assert error.message.startswith("TLS is required but the server does not offer it")
        assert proxy.from_clients == b""  # refused before the handshake response: no user name, no password
        assert await cipher(settings(plain_server, port=proxy.port)) == ""
        assert proxy.from_clients  # a PREFERRED login through the same proxy does send


def _client_capabilities(first_packet: bytes | bytearray) -> int:
    """The capability flags of a client's first packet (after the 4-byte packet header)."""
    return int.from_bytes(first_packet[4:8], "little")


async def test_preferred_does_not_claim_tls_to_a_server_without_it(
    plain_server: LocalMySQLServer, tls_server: TLSServer
) -> None:
    # MySQL refuses a login whose handshake response claims TLS without doing it ("Bad handshake").
    async with StallingProxy(plain_server.admin.host, plain_server.port) as proxy:
        assert await cipher(settings(plain_server, port=proxy.port)) == ""
        assert not _client_capabilities(proxy.from_clients) & CLIENT.SSL
    async with StallingProxy(tls_server.admin.host, tls_server.admin.port) as proxy:
        assert await cipher(settings(tls_server, port=proxy.port)) != ""
        assert _client_capabilities(proxy.from_clients) & CLIENT.SSL  # the TLS request


async def test_a_client_certificate_with_any_mode(tls_server: TLSServer) -> None:
    tls = tls_server.files
    async with Database(settings(tls_server, ssl_mode="VERIFY_CA", ca_file=tls / "ca.crt")) as admin:
        await admin.execute(
            Statement(
                "CREATE USER {account} IDENTIFIED BY %s REQUIRE X509",
                "cert-pw",
                account=account("x509_op", "%"),
            )
        )
        try:
            for mode, ca in (
                (SSLMode.REQUIRED, None),
                (SSLMode.VERIFY_CA, tls / "ca.crt"),
                (SSLMode.PREFERRED, None),
            ):
                with_cert = settings(
                    tls_server,
                    user="x509_op",
                    password=SecretStr("cert-pw"),
                    ssl_mode=mode,
                    ca_file=ca,
                    cert_file=tls / "client.crt",
                    key_file=tls / "client.key",
                )
                async with Database(with_cert) as db:
                    assert await db.fetch(Statement("SELECT CURRENT_USER()")) == [("x509_op@%",)]
                without_cert = with_cert.model_copy(update={"cert_file": None, "key_file": None})
                async with Database(without_cert) as db:
                    with pytest.raises(AccessDeniedError) as raised:
                        await db.fetch(Statement("SELECT 1"))
                assert raised.value.code == 1045
        finally:
            await accounts.drop(admin, "x509_op", "%")
        assert not await accounts.exists(admin, "x509_op", "%")
