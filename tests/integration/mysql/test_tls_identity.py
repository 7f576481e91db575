"""TLS identities against the real server: REQUIRE X509, ISSUER, SUBJECT and CIPHER set, read back, and
proven with real client certificates from the server's own test CA (a certificate of the right subject
logs in, one of another subject, or none, is refused)."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.mysql import Database, InvalidOptionsError, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.accounts.limits import Limits, apply_limits, read_limits
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from tests.integration.mysql.support import (
    Accounts,
    Certificates,
    admin,
    admin_rows,
    certificate_subject,
    plain_login,
    tls_login,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def certificates(
    mysql_provider: MySQLServer | LocalMySQLServer, tmp_path_factory: pytest.TempPathFactory
) -> Certificates:
    """Needs the local server's CA (a MYSQL_URL or container server's CA key is not ours to sign with)."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("needs a local server of the session's flavour (MYSQL_URL or a container is in use)")
    return Certificates(mysql_provider.ca, tmp_path_factory.mktemp("client-certificates"))


async def new_account(db: Database, accounts_made: Accounts) -> str:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    return user


def required(identity: TLSIdentity) -> Limits:
    return Limits(require_tls=True, tls_identity=identity)


async def test_x509_needs_a_certificate_of_the_servers_ca(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, certificates: Certificates
) -> None:
    user = await new_account(db, accounts_made)
    wanted = required(TLSIdentity(x509=True))
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted
    assert admin_rows(mysql, "SELECT ssl_type FROM mysql.user WHERE User = %s", user) == [("X509",)]
    assert await apply_limits(db, user, "%", wanted) is False

    assert tls_login(mysql, user, **certificates.issue("anyone")) == f"{user}@%"
    assert tls_login(mysql, user) == 1045  # TLS, but no certificate
    assert plain_login(mysql, user) == 1045


async def test_subject_lets_in_that_certificate_only(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, certificates: Certificates
) -> None:
    user = await new_account(db, accounts_made)
    wanted = required(TLSIdentity(subject=certificate_subject(user)))
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted
    assert await apply_limits(db, user, "%", wanted) is False

    assert tls_login(mysql, user, **certificates.issue(user)) == f"{user}@%"
    assert tls_login(mysql, user, **certificates.issue("somebody-else")) == 1045
    assert tls_login(mysql, user) == 1045
    assert plain_login(mysql, user) == 1045


async def test_issuer_is_compared_with_the_certificates_issuer(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, certificates: Certificates
) -> None:
    user = await new_account(db, accounts_made)
    right = required(TLSIdentity(issuer=certificates.ca.subject_oneline, subject=certificate_subject(user)))
    assert await apply_limits(db, user, "%", right) is True
    assert tls_login(mysql, user, **certificates.issue(user)) == f"{user}@%"

    wrong = required(TLSIdentity(issuer="/CN=another-ca", subject=certificate_subject(user)))
    assert await apply_limits(db, user, "%", wrong) is True
    assert await read_limits(db, user, "%") == wrong
    assert tls_login(mysql, user, **certificates.issue(user)) == 1045


async def test_cipher(
    db: Database,
    mysql: MySQLServer,
    server: ServerInfo,
    accounts_made: Accounts,
    certificates: Certificates,
) -> None:
    """The session's cipher logs in, another is refused; on MySQL a cipher requirement needs a
    certificate too (SPECIFIED), on MariaDB not."""
    cipher = str(admin_rows(mysql, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1])
    user = await new_account(db, accounts_made)
    wanted = required(TLSIdentity(cipher=cipher))
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted

    assert tls_login(mysql, user, **certificates.issue("anyone")) == f"{user}@%"
    assert tls_login(mysql, user) == (1045 if server.flavour == "mysql" else f"{user}@%")
    assert plain_login(mysql, user) == 1045

    other = "ECDHE-RSA-AES128-SHA" if cipher != "ECDHE-RSA-AES128-SHA" else "ECDHE-RSA-AES256-SHA"
    assert await apply_limits(db, user, "%", required(TLSIdentity(cipher=other))) is True
    assert tls_login(mysql, user, **certificates.issue("anyone")) == 1045


async def test_a_name_outside_ascii_is_written_as_openssl_escapes_it(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, certificates: Certificates
) -> None:
    """A subject with 'é' is compared as /CN=caf\\xC3\\xA9: the backslashes are part of the value, and
    arrive intact (a parameter, not text spliced into the statement)."""
    user = await new_account(db, accounts_made)
    escaped = certificate_subject("caf\\xC3\\xA9")
    assert await apply_limits(db, user, "%", required(TLSIdentity(subject=escaped))) is True
    [(stored,)] = admin_rows(mysql, "SELECT x509_subject FROM mysql.user WHERE User = %s", user)
    assert (stored.decode() if isinstance(stored, bytes) else stored) == escaped
    assert tls_login(mysql, user, **certificates.issue("café")) == f"{user}@%"
    assert tls_login(mysql, user, **certificates.issue("cafe")) == 1045


HOSTILE = [
    "/CN=it's",
    '/CN=say "hi"',
    "/CN=a\\' OR 1=1 -- ",
    "/CN=back\\\\slash\\",
    "/CN=`tick`; DROP USER root",
    "/CN=100%_",
    "/CN=%s %%s {account}",
]


@pytest.mark.parametrize("value", HOSTILE)
async def test_hostile_subjects_and_issuers_are_stored_as_they_are_and_touch_nothing_else(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, value: str
) -> None:
    user = await new_account(db, accounts_made)
    others = (
        "SELECT User, Host, ssl_type, x509_issuer, x509_subject, ssl_cipher FROM mysql.user WHERE User <> %s"
    )
    before = admin_rows(mysql, others, user)
    wanted = required(TLSIdentity(issuer=value, subject=value))
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted
    assert await apply_limits(db, user, "%", wanted) is False
    assert admin_rows(mysql, others, user) == before


@pytest.mark.parametrize(
    "identity",
    [
        TLSIdentity(subject="/CN=nul\x00byte"),
        TLSIdentity(subject="/CN=new\nline"),
        TLSIdentity(issuer="/CN=café"),
        TLSIdentity(subject="CN=no-slash"),
        TLSIdentity(cipher="AES' OR '1'='1"),
        TLSIdentity(x509=True, subject="/CN=both"),
    ],
)
async def test_unusable_identities_are_refused_before_anything_is_sent(
    db: Database, accounts_made: Accounts, identity: TLSIdentity
) -> None:
    user = await new_account(db, accounts_made)
    read, written = db.statements_read, db.statements_written
    with pytest.raises(InvalidOptionsError):
        await apply_limits(db, user, "%", required(identity))
    assert (db.statements_read, db.statements_written) == (read, written)
    assert await read_limits(db, user, "%") == Limits()


async def test_an_identity_changed_by_hand_is_drift_and_put_back(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, certificates: Certificates
) -> None:
    user = await new_account(db, accounts_made)
    wanted = required(TLSIdentity(subject=certificate_subject(user)))
    await apply_limits(db, user, "%", wanted)
    admin(mysql, f"ALTER USER '{user}'@'%' REQUIRE SUBJECT '/CN=intruder'")
    assert await read_limits(db, user, "%") == required(TLSIdentity(subject="/CN=intruder"))
    assert await apply_limits(db, user, "%", wanted) is True
    assert tls_login(mysql, user, **certificates.issue(user)) == f"{user}@%"

    admin(mysql, f"ALTER USER '{user}'@'%' REQUIRE SSL")
    assert await read_limits(db, user, "%") == Limits(require_tls=True)
    assert await apply_limits(db, user, "%", wanted) is True
    assert await read_limits(db, user, "%") == wanted
