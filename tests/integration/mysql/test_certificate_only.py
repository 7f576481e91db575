"""Certificate-only accounts against the real server of each flavour: created with their REQUIRE ISSUER and
SUBJECT in one statement and an empty authentication string; only a certificate of the signing CA with the
exact subject logs in, and only with the empty password; a password set by hand is taken away again."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts, authentication
from dbuser_operator.mysql.accounts.limits import read_limits
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.workload.identity import client_subject
from tests.integration.mysql.support import (
    Accounts,
    admin,
    admin_rows,
    bundle_login,
    plain_login,
)
from tests.support.pod_certificates import REFUSED, UNTRUSTED, PodCertificates

pytestmark = pytest.mark.integration


def columns(mysql: MySQLServer, user: str) -> tuple[str, ...]:
    [row] = admin_rows(
        mysql,
        "SELECT plugin, authentication_string, ssl_type, x509_issuer, x509_subject, password_expired"
        " FROM mysql.user WHERE User = %s",
        user,
    )
    return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in row)


async def certificate_account(
    db: Database, server: ServerInfo, accounts_made: Accounts, pod_certificates: PodCertificates
) -> tuple[str, TLSIdentity]:
    """A new certificate-only account of shop/app's subject, as the operator creates it."""
    user = accounts_made.track(accounts_made.name(), "%")
    identity = TLSIdentity(issuer=pod_certificates.ca.subject_oneline, subject=client_subject("shop", "app"))
    method = authentication.certificate_only(server.flavour)
    await accounts.create(db, user, "%", None, method, require=identity)
    return user, identity


async def test_only_the_subjects_certificate_of_the_signing_ca_logs_in(
    db: Database,
    mysql: MySQLServer,
    server: ServerInfo,
    accounts_made: Accounts,
    pod_certificates: PodCertificates,
) -> None:
    user, identity = await certificate_account(db, server, accounts_made, pod_certificates)
    subject = identity.subject
    plugin = "caching_sha2_password" if server.flavour == "mysql" else "mysql_native_password"
    issuer = pod_certificates.ca.subject_oneline
    assert columns(mysql, user) == (plugin, "", "SPECIFIED", issuer, subject, "N")
    options = await read_limits(db, user, "%")
    assert options is not None
    assert options.tls_identity == identity

    bundle = pod_certificates.bundle("shop", "app")
    assert bundle_login(mysql, user, bundle) == f"{user}@%"
    assert bundle_login(mysql, user, bundle, "any password") in REFUSED  # the empty one only
    assert bundle_login(mysql, user, None) in REFUSED  # TLS, no certificate, the empty password
    assert bundle_login(mysql, user, None, "any password") in REFUSED
    assert plain_login(mysql, user, "") in REFUSED
    assert (
        bundle_login(mysql, user, pod_certificates.bundle("other", "app")) in REFUSED
    )  # another namespace's subject
    assert bundle_login(mysql, user, pod_certificates.bundle("shop", "app2")) in REFUSED
    # Another CA with the very same name as the signing CA, issuing the very same subject: the server
    # verifies the chain against its ssl_ca and ends the handshake.
    forged = pod_certificates.bundle("shop", "app", ca=pod_certificates.forger())
    assert bundle_login(mysql, user, forged) in UNTRUSTED


async def test_a_password_set_by_hand_is_taken_away_and_the_fingerprint_is_known(
    db: Database,
    mysql: MySQLServer,
    server: ServerInfo,
    accounts_made: Accounts,
    pod_certificates: PodCertificates,
) -> None:
    """The empty string is set as a hash (MySQL: no expiry, which ``IDENTIFIED WITH`` a plugin alone would
    set), and its SHA2 is what the bookkeeping expects beforehand."""
    user, identity = await certificate_account(db, server, accounts_made, pod_certificates)
    method = authentication.certificate_only(server.flavour)
    [(stored,)] = admin_rows(
        mysql, "SELECT SHA2(authentication_string, 256) FROM mysql.user WHERE User = %s", user
    )
    assert stored == ownership.expected_fingerprint(server, None, method)

    admin(mysql, f"ALTER USER '{user}'@'%' IDENTIFIED BY 'by-hand'")
    bundle = pod_certificates.bundle("shop", "app")
    assert bundle_login(mysql, user, bundle) in REFUSED
    assert bundle_login(mysql, user, bundle, "by-hand") == f"{user}@%"  # certificate and password now
    await accounts.set_password(db, user, "%", None, method)
    assert columns(mysql, user)[1:] == (
        "",
        "SPECIFIED",
        pod_certificates.ca.subject_oneline,
        identity.subject,
        "N",
    )
    assert bundle_login(mysql, user, bundle) == f"{user}@%"
    assert bundle_login(mysql, user, bundle, "by-hand") in REFUSED
