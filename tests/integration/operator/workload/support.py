"""Helpers of the signer's tests: a DatabaseUser bound to a ServiceAccount, what a certificate must be, and a
login to MySQL with a pod's certificate."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pymysql
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.workload.ca import one_line
from dbuser_operator.workload.identity import client_subject
from tests.integration.mysql.support import login
from tests.integration.operator.support.instances import own_target
from tests.integration.operator.support.kubelet import Credentials


def bound_user(name: str, service_account: str, target: str | None = None, **spec: Any) -> dict[str, Any]:
    """A DatabaseUser bound to ``service_account`` (no password), labelled with ``target`` (by default the
    target of the test's own operator)."""
    return {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": target or own_target()}},
        "spec": {"authentication": {"workload": {"serviceAccountName": service_account}}, **spec},
    }


def condition(request: dict[str, Any]) -> dict[str, Any]:
    """The request's one condition (Issued, Denied or Failed)."""
    [decided] = request["status"]["conditions"]
    return dict(decided)


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def check_issued(
    request: dict[str, Any], credentials: Credentials, ca: CertificateAuthority, namespace: str, account: str
) -> x509.Certificate:
    """Assert what the signer promises of an issued certificate; the leaf."""
    decided = condition(request)
    assert decided["type"] == "Issued", decided
    chain = x509.load_pem_x509_certificates(credentials.chain_pem.encode())
    assert len(chain) == 1, "a root CA signs: the chain is the leaf alone"
    leaf = chain[0]
    ca_certificate = x509.load_pem_x509_certificate(ca.cert_pem)
    leaf.verify_directly_issued_by(ca_certificate)  # the chain verifies against the signing CA
    assert one_line(leaf.subject) == client_subject(namespace, account)
    assert one_line(leaf.issuer) == ca.subject_oneline
    usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not any(isinstance(e.value, x509.SubjectAlternativeName) for e in leaf.extensions)
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    assert leaf.public_key().public_bytes(
        serialization.Encoding.DER, public
    ) == credentials.key.public_key().public_bytes(serialization.Encoding.DER, public)
    status = request["status"]
    assert parse_time(status["notBefore"]) == leaf.not_valid_before_utc
    assert parse_time(status["notAfter"]) == leaf.not_valid_after_utc
    return leaf


def certificate_login(mysql: MySQLServer, user: str, cert: Path | None, key: Path | None) -> str:
    """Log in as ``user`` over TLS (the server's certificate verified) with a client certificate and no
    password; ``CURRENT_USER()``. Raises pymysql's OperationalError when refused."""
    assert mysql.ca_file is not None, "the local server's CA"
    options = {"ssl_cert": str(cert), "ssl_key": str(key)} if cert is not None and key is not None else {}
    return login(mysql, user, "", tls=True, **options)


def refused_login(mysql: MySQLServer, user: str, cert: Path | None, key: Path | None) -> int:
    """The error code of a login that must be refused (1045: access denied)."""
    try:
        certificate_login(mysql, user, cert, key)
    except pymysql.err.OperationalError as refused:
        return int(refused.args[0])
    raise AssertionError(f"{user} logged in")
