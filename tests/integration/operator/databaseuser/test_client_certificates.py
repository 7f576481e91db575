"""spec.tls.certificate end to end: the real cert-manager controller issues the client certificate from a CA
Issuer whose CA the MySQL server trusts, the connection Secret carries it, and a login with nothing but that
Secret works on every flavour; a forced renewal keeps logins working and writes nothing to MySQL; deleting
the DatabaseUser removes what it made."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.certificates.certificate import CERTIFICATE_NAME_ANNOTATION
from dbuser_operator.controllers.databaseuser.cert_manager import CERTIFICATES
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.certmanager import (
    ca_issuer,
    certificate,
    connect_with,
    data,
    renew,
    serial,
)
from tests.integration.operator.support.kube import deleted, events_of, wait_for_ready, wait_for_secret
from tests.integration.operator.support.mysql import account_exists, mysql_query
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.support.replicas import GeneralLog
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

ISSUER = "mysql-clients"
# Every character that needs care on the way: '/' and '+' (escaped in OpenSSL's one-line form), RFC 4514's
# specials (escaped in the literal subject), a leading space and '#', a byte outside ASCII (\xHH).
TRICKY = '/O=dbuser-operator-tests/OU=a\\/b\\+c, d;e<f>="g"/CN= #{name} caf\\xC3\\xA9'
WRITES = re.compile(r"^\s*(CREATE|ALTER|DROP|RENAME|GRANT|REVOKE|SET\s+(PASSWORD|DEFAULT\s+ROLE))\b", re.I)


def certificate_user(name: str, issuer_ref: dict[str, str], **tls: Any) -> dict[str, Any]:
    return database_user(
        name,
        "pw",
        tls={"subject": TRICKY.format(name=name), "certificate": {"issuerRef": issuer_ref}, **tls},
        connectionSecret={"name": f"{name}-connection"},
    )


async def copied(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """The connection Secret, once it carries exactly what cert-manager's Secret holds."""
    connection = await kube.get(SECRETS, f"{name}-connection", namespace)
    tls = await kube.get(SECRETS, f"{name}-client-tls", namespace)
    for key in ("tls.crt", "tls.key", "ca.crt"):
        assert key in connection["data"], f"no {key} yet"
        assert data(connection, key) == data(tls, key), f"{key} differs"
    return connection


async def said_of(kube: KubeClient, namespace: str, name: str, expected: str) -> str:
    """The messages of the DatabaseUser's Events, once one says ``expected``."""
    events = await events_of(kube, namespace, name)
    said = " ".join(e["message"] for e in events if e["involvedObject"]["kind"] == "DatabaseUser")
    assert expected in said, said
    return said


async def status_serial(kube: KubeClient, namespace: str, name: str, expected: str) -> None:
    """Wait until status shows the certificate of serial ``expected`` in use."""

    async def shown() -> bool:
        status = (await kube.get(DATABASE_USERS, name, namespace)).get("status") or {}
        assert (status.get("clientCertificate") or {}).get("serialNumber") == expected, status
        return True

    await eventually(shown, limit=60, message=f"status never showed serial {expected}")


async def ready_user(kube: KubeClient, namespace: str, ca: CertificateAuthority, prefix: str) -> str:
    """A CA Issuer of ``ca`` in the namespace, and a DatabaseUser with a certificate from it, once Ready."""
    await ca_issuer(kube, ca, ISSUER, namespace)
    name = unique(prefix)
    await kube.create(DATABASE_USERS, certificate_user(name, {"name": ISSUER}), namespace)
    await wait_for_ready(kube, namespace, name, limit=120)
    return name


async def issued(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """The connection Secret once it carries a certificate."""
    return await wait_for_secret(
        kube, namespace, f"{name}-connection", lambda secret: "tls.crt" in secret["data"], limit=120
    )


async def test_a_certificate_is_issued_carried_by_the_connection_secret_and_logs_in(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    secret: str,
    tmp_path: Path,
) -> None:
    await ca_issuer(kube_client, server_ca, ISSUER, namespace)
    name = unique("cm")
    subject = TRICKY.format(name=name)
    body = certificate_user(name, {"name": ISSUER}, issuer=server_ca.subject_oneline)
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name, limit=120)

    made = await certificate(kube_client, namespace, name)
    assert made is not None
    assert made["spec"]["literalSubject"] == (
        f'CN=\\ #{name} caf\\c3\\a9,OU=a/b\\+c\\, d\\;e\\<f\\>=\\"g\\",O=dbuser-operator-tests'
    )
    assert made["spec"]["usages"] == ["digital signature", "client auth"]
    assert made["spec"]["issuerRef"] == {"name": ISSUER, "kind": "Issuer", "group": "cert-manager.io"}
    assert [ref["uid"] for ref in made["metadata"]["ownerReferences"]] == [obj["metadata"]["uid"]]
    status = obj["status"]["clientCertificate"]
    assert status["certificate"] == name
    assert status["secretName"] == f"{name}-client-tls"
    assert status["issuer"] == server_ca.subject_oneline

    # cert-manager may issue twice at first (its trigger, before its cache has the new Secret, sees none):
    # the connection Secret follows its Secret to the last one.
    connection = await eventually(
        lambda: copied(kube_client, namespace, name), limit=60, message="the connection Secret never followed"
    )
    assert data(connection, "ca.crt") == server_ca.cert_pem.decode()
    await status_serial(kube_client, namespace, name, serial(connection))
    # The account requires the subject as written; the certificate cert-manager issued has it, as the
    # server reads it (the login below is the proof that counts).
    [(required,)] = mysql_query(mysql, "SELECT x509_subject FROM mysql.user WHERE User = %s", name)
    assert (required.decode() if isinstance(required, bytes) else required) == subject
    assert connect_with(connection, tmp_path / "issued") == f"{name}@%"
    assert connect_with(connection, tmp_path / "none", ssl_cert=None, ssl_key=None) == 1045
    # A pass's Normal Events are one (its first reason, every message), written in the background.
    issued_event = f"Certificate {name}: serial {serial(connection)}"
    said = await eventually(lambda: said_of(kube_client, namespace, name, issued_event), limit=90)
    assert f"created Certificate {name}" in said
    assert "updated Certificate" not in said  # nothing of cert-manager's own is fought over
    # The key is in the two Secrets only: not in the operator's log, its Events, status, the Certificate.
    key_line = data(connection, "tls.key").splitlines()[1]
    everywhere = [
        cert_manager_operator.log_path.read_text(),
        json.dumps(await events_of(kube_client, namespace, name)),
        json.dumps(await kube_client.get(DATABASE_USERS, name, namespace)),
        json.dumps(await certificate(kube_client, namespace, name)),
    ]
    assert not [text for text in everywhere if key_line in text]


async def test_a_forced_renewal_keeps_logins_working_and_writes_nothing_to_mysql(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    secret: str,
    tmp_path: Path,
) -> None:
    name = await ready_user(kube_client, namespace, server_ca, "renew")
    before = await eventually(lambda: copied(kube_client, namespace, name), limit=60)
    assert connect_with(before, tmp_path / "before") == f"{name}@%"

    with GeneralLog(mysql) as log:
        await renew(kube_client, namespace, name)
        after = await wait_for_secret(
            kube_client,
            namespace,
            f"{name}-connection",
            lambda s: "tls.crt" in s["data"] and serial(s) != serial(before),
            limit=120,
        )
        assert connect_with(after, tmp_path / "after") == f"{name}@%"
        assert connect_with(before, tmp_path / "before") == f"{name}@%"  # the old one stays valid
        await status_serial(kube_client, namespace, name, serial(after))
        writes = [text for text in log.arguments() if WRITES.match(text)]
    assert writes == []
    assert data(after, "tls.key") != data(before, "tls.key")  # a new key at every issuance


async def test_deleting_the_user_removes_its_certificate_and_secrets(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    secret: str,
) -> None:
    name = await ready_user(kube_client, namespace, server_ca, "gone")
    tls = await kube_client.get(SECRETS, f"{name}-client-tls", namespace)
    assert tls["metadata"]["annotations"][CERTIFICATE_NAME_ANNOTATION] == name

    await kube_client.delete(DATABASE_USERS, name, namespace)
    for resource, object_name in (
        (DATABASE_USERS, name),
        (CERTIFICATES, name),
        (SECRETS, f"{name}-client-tls"),
        (SECRETS, f"{name}-connection"),
    ):
        await eventually(
            functools.partial(deleted, kube_client, resource, namespace, object_name),
            limit=60,
            message=f"{resource.kind} {object_name} was not deleted",
        )
    assert not account_exists(mysql, name)


async def test_removing_the_certificate_from_the_spec_deletes_it(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    secret: str,
) -> None:
    name = await ready_user(kube_client, namespace, server_ca, "drop")
    await issued(kube_client, namespace, name)

    patch = {"spec": {"tls": {"certificate": None}}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    assert "clientCertificate" not in obj["status"]
    await eventually(lambda: deleted(kube_client, CERTIFICATES, namespace, name), limit=30)
    await eventually(lambda: deleted(kube_client, SECRETS, namespace, f"{name}-client-tls"), limit=30)
    connection = await wait_for_secret(
        kube_client, namespace, f"{name}-connection", lambda s: "tls.crt" not in s["data"]
    )
    assert data(connection, "username") == name
