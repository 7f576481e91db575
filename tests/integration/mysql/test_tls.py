"""TLS against a second local server: verification, no plaintext fallback, client certificates."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import SecretStr

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.mysql import (
    AccessDeniedError,
    ConnectionSettings,
    Database,
    Statement,
    TLSError,
    accounts,
)
from dbuser_operator.mysql.identifiers import account

pytestmark = pytest.mark.integration


@dataclass
class TLSServer:
    """A second local server of the session's flavour, its certificate from a CA of this module, and
    ``tls``: that CA, another one and a client certificate of the first."""

    server: LocalMySQLServer
    tls: Path


@pytest.fixture(scope="module")
def tls_server(
    mysql_provider: MySQLServer | LocalMySQLServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TLSServer]:
    """A second local server (only where the session has one: not with MYSQL_URL or containers)."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("needs a local server of the session's flavour (MYSQL_URL or a container is in use)")
    tls = tmp_path_factory.mktemp("tls")
    ca, other_ca = CertificateAuthority(), CertificateAuthority("another-ca")
    client = ca.issue_client("operator")
    for name, data in {
        "ca.crt": ca.cert_pem,
        "other-ca.crt": other_ca.cert_pem,
        "client.crt": client.cert_pem,
        "client.key": client.key_pem,
    }.items():
        (tls / name).write_bytes(data)
    server = LocalMySQLServer(tmp_path_factory.mktemp("tls-server"), mysql_provider.flavour, ca=ca)
    server.start()
    yield TLSServer(server, tls)
    server.stop()


def settings(server: TLSServer, **overrides: object) -> ConnectionSettings:
    admin = server.server.admin
    values: dict[str, object] = {
        "host": admin.host,
        "port": admin.port,
        "user": admin.user,
        "password": admin.password,
        "connect_timeout": 3,
        **overrides,
    }
    return ConnectionSettings.model_validate(values)


async def test_verified_tls(tls_server: TLSServer) -> None:
    async with Database(settings(tls_server, ca_file=tls_server.tls / "ca.crt", tls_required=True)) as db:
        [(_, cipher)] = await db.fetch(Statement("SHOW SESSION STATUS LIKE 'Ssl_cipher'"))
        assert cipher  # empty without TLS
        assert (await db.server_info()).version > (0, 0, 0)


async def test_a_server_certificate_from_another_ca_is_refused(tls_server: TLSServer) -> None:
    async with Database(settings(tls_server, ca_file=tls_server.tls / "other-ca.crt")) as db:
        with pytest.raises(TLSError, match="certificate verify failed") as raised:
            await db.fetch(Statement("SELECT 1"))
    assert raised.value.reason == "TLSError"


async def test_a_client_certificate(tls_server: TLSServer) -> None:
    tls = tls_server.tls
    async with Database(settings(tls_server, ca_file=tls / "ca.crt")) as admin:
        await admin.execute(
            Statement(
                "CREATE USER {account} IDENTIFIED BY %s REQUIRE X509",
                "cert-pw",
                account=account("x509_op", "%"),
            )
        )
        try:
            with_cert = settings(
                tls_server,
                user="x509_op",
                password=SecretStr("cert-pw"),
                ca_file=tls / "ca.crt",
                cert_file=tls / "client.crt",
                key_file=tls / "client.key",
                tls_required=True,
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
