"""Logging in with the signer's certificates on the session's flavour (MySQL 9.7, MariaDB 10.11 and 11.8):
the server verifies the chain against its ssl_ca (the signing CA) and compares issuer and subject exactly,
so a pod's certificate is its ServiceAccount's only credential, and nothing else gets in.

The account is the DatabaseUser's (REQUIRE ISSUER <CA> SUBJECT <subject>, no password): binding the
ServiceAccount both makes it and entitles the ServiceAccount's pods to certificates."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import SECRETS
from dbuser_operator.workload import ca as signing_ca_files
from dbuser_operator.workload.certificate import issue
from dbuser_operator.workload.identity import client_subject
from tests.integration.operator.support.kube import wait_for_ready
from tests.integration.operator.support.kubelet import Credentials, Kubelet
from tests.integration.operator.support.mysql import mysql_query
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.workload.support import (
    bound_user,
    certificate_login,
    check_issued,
    condition,
    refused_login,
)

pytestmark = pytest.mark.integration

ACCESS_DENIED = 1045
# Access denied; or the connection ended by the server during the TLS handshake (gone away, lost, TLS error).
REFUSED = {ACCESS_DENIED, 2006, 2013, 2026}


APP_ACCOUNT = "app-db"  # the MySQL name of DatabaseUser app-db, which binds ServiceAccount app


async def test_a_pod_logs_in_with_its_certificate_and_nothing_else_gets_in(
    signer: RunningOperator,
    kube_client: KubeClient,
    mysql: MySQLServer,
    namespace: str,
    node: Kubelet,
    signing_ca: CertificateAuthority,
    signing_ca_dir: Path,
    tmp_path: Path,
) -> None:
    """The pod's key and the issued chain log in to the account, with no password, over TLS. Refused: no
    certificate; a certificate the signer issued to another ServiceAccount of the namespace (bound too);
    and a certificate of the right subject from another CA whose subject is the signing CA's, byte for
    byte — only the chain tells it apart, and the server checks it (MySQL ends the handshake)."""
    for name, account in ((APP_ACCOUNT, "app"), ("other-db", "other")):
        await kube_client.create(DATABASE_USERS, bound_user(name, account), namespace)
        await wait_for_ready(kube_client, namespace, name)
    app_account = APP_ACCOUNT
    credentials = await node.request(await node.pod(namespace, "app-0", "app"), key_type="ECDSAP384")
    check_issued(await node.decided(namespace, credentials), credentials, signing_ca, namespace, "app")
    cert, key = credentials.write(tmp_path / "app")
    assert certificate_login(mysql, app_account, cert, key) == f"{app_account}@%"

    assert refused_login(mysql, app_account, None, None) == ACCESS_DENIED
    other = await node.request(await node.pod(namespace, "other-0", "other"), key_type="RSA3072")
    assert condition(await node.decided(namespace, other))["type"] == "Issued"
    assert refused_login(mysql, app_account, *other.write(tmp_path / "other")) == ACCESS_DENIED

    impostor_ca = CertificateAuthority("dbuser-operator-envtest-mysql-ca")  # the same name, another key
    assert impostor_ca.subject_oneline == signing_ca.subject_oneline
    impostor = signing_ca_files.load(impostor_ca.write_tls(tmp_path / "impostor-ca"))
    key_pair = ec.generate_private_key(ec.SECP256R1())
    hour = datetime.timedelta(hours=1)
    forged = issue(impostor, key_pair.public_key(), namespace, "app", hour)
    forged_credentials = Credentials("forged", key_pair, forged.chain_pem)
    assert forged_credentials.leaf.subject == credentials.leaf.subject
    # The server ends the TLS handshake (a chain it cannot verify), or refuses the login: no way in.
    assert refused_login(mysql, app_account, *forged_credentials.write(tmp_path / "forged")) in REFUSED
    # The control: the same key and subject, signed by the signing CA, logs in. Only the chain differed.
    genuine = issue(signing_ca_files.load(signing_ca_dir), key_pair.public_key(), namespace, "app", hour)
    control = Credentials("control", key_pair, genuine.chain_pem)
    assert certificate_login(mysql, app_account, *control.write(tmp_path / "control")) == f"{app_account}@%"


async def test_fifty_pods_of_one_service_account_get_fifty_certificates_for_one_account(
    signer: RunningOperator,
    kube_client: KubeClient,
    mysql: MySQLServer,
    namespace: str,
    node: Kubelet,
    signing_ca: CertificateAuthority,
    tmp_path: Path,
) -> None:
    """50 replicas: 50 requests, 50 certificates (50 keys, one subject), each logs in to the one account
    of the ServiceAccount; no Secret is made in the namespace."""
    await kube_client.create(DATABASE_USERS, bound_user(APP_ACCOUNT, "app"), namespace)
    await wait_for_ready(kube_client, namespace, APP_ACCOUNT)
    app_account = APP_ACCOUNT
    pods = [await node.pod(namespace, f"app-{index}", "app") for index in range(50)]
    requested = await asyncio.gather(*(node.request(pod) for pod in pods))
    for credentials in requested:
        check_issued(await node.decided(namespace, credentials), credentials, signing_ca, namespace, "app")
    assert len({credentials.leaf.serial_number for credentials in requested}) == 50
    subject = client_subject(namespace, "app")
    accounts = mysql_query(mysql, "SELECT User FROM mysql.user WHERE x509_subject = %s", subject)
    assert [str(user) for (user,) in accounts] == [app_account]
    for index, credentials in enumerate(requested):
        cert, key = credentials.write(tmp_path / f"pod-{index}")
        assert certificate_login(mysql, app_account, cert, key) == f"{app_account}@%"
    assert (await kube_client.list(SECRETS, namespace))["items"] == []
