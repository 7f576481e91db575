"""spec.tls.certificate as a hostile tenant uses it, against the real cert-manager controller and MySQL: a
ClusterIssuer nobody admitted, one the operator admits but the server's policy does not, a subject outside
the policy's patterns, an Issuer of another namespace, a CA the server does not trust (pinned or not), and
names someone else holds. Each is refused with a reason, and no certificate is issued for it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1.mysqlserver import KIND as MYSQL_SERVER
from dbuser_operator.controllers.databaseuser.cert_manager import CERTIFICATES
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.certmanager import CertManager
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, server_object, server_spec, unique
from tests.integration.operator.support.certmanager import (
    ca_issuer,
    certificate,
    certificate_requests,
    connect_with,
    data,
)
from tests.integration.operator.support.instances import Instances, forget_own, own_schema
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    ready,
    secret_exists,
    wait_for_condition,
    wait_for_ready,
    wait_for_secret,
)
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

SUBJECT = "/O=dbuser-operator-tests/OU={namespace}/CN={name}"


def user(name: str, namespace: str, issuer_ref: dict[str, Any], **spec: Any) -> dict[str, Any]:
    subject = SUBJECT.format(namespace=namespace, name=name)
    tls = {"subject": subject, "certificate": {"issuerRef": issuer_ref}}
    return database_user(name, "pw", tls={**tls, **spec.pop("tls", {})}, **spec)


async def refused(kube: KubeClient, namespace: str, name: str, reason: str) -> str:
    """The Ready=False message once the DatabaseUser is refused with ``reason``."""
    obj = await wait_for_ready(kube, namespace, name, "False", reason, limit=90)
    condition = ready(obj)
    assert condition is not None
    return str(condition["message"])


async def pending_with(kube: KubeClient, namespace: str, name: str, text: str) -> None:
    """Wait until the DatabaseUser is CertificatePending with ``text`` (cert-manager's words) in the message:
    the operator looks again while it is pending."""

    async def check() -> bool:
        condition = ready(await kube.get(DATABASE_USERS, name, namespace))
        assert condition is not None, "no Ready condition"
        assert condition["reason"] == "CertificatePending", condition
        assert text in condition["message"], condition["message"]
        return True

    await eventually(check, limit=90, interval=0.5, message=f"{name} never pending with {text!r}")


async def nothing_issued(kube: KubeClient, namespace: str, name: str) -> None:
    assert await certificate(kube, namespace, name) is None
    assert await certificate_requests(kube, namespace) == []
    assert not await secret_exists(kube, namespace, f"{name}-client-tls")


@pytest.fixture
async def admitting_operator(
    instances: Instances, cert_manager: CertManager
) -> AsyncIterator[RunningOperator]:
    """An operator that admits one ClusterIssuer, "admitted-<test>", where no policy decides."""
    try:
        yield await instances.start_own(
            resync_period=1.0, cert_manager=True, cert_manager_cluster_issuers=[f"admitted-{TOKEN}"]
        )
    finally:
        forget_own()


TOKEN = uuid.uuid4().hex[:6]  # ClusterIssuers are cluster-wide: names of this session's own


async def test_a_cluster_issuer_is_refused_unless_admitted(
    admitting_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    server_ca: CertificateAuthority,
    secret: str,
    tmp_path: Path,
) -> None:
    """The default server has no policy: --cert-manager-cluster-issuers decides. A ClusterIssuer signing
    with the very CA the server trusts is still refused when it is not listed."""
    forbidden, admitted = f"forbidden-{TOKEN}", f"admitted-{TOKEN}"
    await ca_issuer(kube_client, server_ca, forbidden)
    await ca_issuer(kube_client, server_ca, admitted)
    name = unique("climb")
    issuer_ref = {"name": forbidden, "kind": "ClusterIssuer"}
    body = user(name, namespace, issuer_ref, connectionSecret={"name": name})
    await kube_client.create(DATABASE_USERS, body, namespace)
    message = await refused(kube_client, namespace, name, "CertificateNotAllowed")
    listed = f"(--cert-manager-cluster-issuers: {admitted})"
    assert f"ClusterIssuer {forbidden} is not admitted {listed}" in message
    await nothing_issued(kube_client, namespace, name)
    assert not await secret_exists(kube_client, namespace, name)  # no connection Secret either

    patch = {"spec": {"tls": {"certificate": {"issuerRef": {"name": admitted, "kind": "ClusterIssuer"}}}}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    await wait_for_ready(kube_client, namespace, name, limit=120)
    connection = await wait_for_secret(kube_client, namespace, name, lambda s: "tls.crt" in s["data"])
    assert connect_with(connection, tmp_path) == f"{name}@%"


async def test_a_server_policy_decides_cluster_issuers_and_subjects(
    admitting_operator: RunningOperator,
    kube_client: KubeClient,
    kube_api: client.ApiClient,
    namespace: str,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    secret: str,
) -> None:
    """On a server resource with a policy, its entry decides, not the operator's list: the ClusterIssuer
    the operator admits is refused there; the entry's own is admitted, for the subjects of its patterns."""
    entry_issuer, operator_issuer = f"entry-{TOKEN}", f"admitted-{TOKEN}"
    await ca_issuer(kube_client, server_ca, entry_issuer)
    await admin_secrets(kube_client, namespace, mysql, "admin")
    spec = server_spec(mysql, "admin", own_schema())
    bounds = {"clusterIssuers": [entry_issuer], "subjects": ["/O=dbuser-operator-tests/OU={namespace}/CN=*"]}
    spec["policy"] = {"namespaces": [{"namespaceSelector": {}, "certificates": bounds}]}
    await kube_client.create(MYSQL_SERVERS, server_object(MYSQL_SERVER, "db", spec), namespace)
    await wait_for_condition(kube_client, MYSQL_SERVERS, namespace, "db")
    server = {"serverRef": {"kind": MYSQL_SERVER, "name": "db"}}
    where = f"MySQLServer {namespace}/db policy.namespaces[0]"

    name = unique("operator-list")
    body = user(name, namespace, {"name": operator_issuer, "kind": "ClusterIssuer"}, **server)
    await kube_client.create(DATABASE_USERS, body, namespace)
    message = await refused(kube_client, namespace, name, "CertificateNotAllowed")
    listed = f"(certificates.clusterIssuers: {entry_issuer})"
    assert f"ClusterIssuer {operator_issuer} is not admitted {listed}" in message
    assert where in message

    # Another tenant's subject (OU=kube-system) from the admitted ClusterIssuer: refused.
    stolen = unique("stolen")
    body = user(stolen, namespace, {"name": entry_issuer, "kind": "ClusterIssuer"}, **server)
    body["spec"]["tls"]["subject"] = f"/O=dbuser-operator-tests/OU=kube-system/CN={stolen}"
    await kube_client.create(DATABASE_USERS, body, namespace)
    message = await refused(kube_client, namespace, stolen, "CertificateNotAllowed")
    assert f"is outside certificates.subjects /O=dbuser-operator-tests/OU={namespace}/CN=*" in message

    own = unique("own")
    body = user(own, namespace, {"name": entry_issuer, "kind": "ClusterIssuer"}, **server)
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, own, limit=120)
    for refused_name in (name, stolen):
        assert await certificate(kube_client, namespace, refused_name) is None
    requests = await certificate_requests(kube_client, namespace)
    assert {r["metadata"]["annotations"]["cert-manager.io/certificate-name"] for r in requests} == {own}


async def test_an_issuer_of_another_namespace_cannot_be_named(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    kube_api: client.ApiClient,
    namespace: str,
    server_ca: CertificateAuthority,
    secret: str,
) -> None:
    """The tenant names an Issuer that exists only in another namespace (and writes that namespace into the
    reference): cert-manager looks for it in the tenant's namespace only, and nothing is issued."""
    other = f"other-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(kube_api)
    home = client.V1Namespace(metadata=client.V1ObjectMeta(name=other))
    await core.create_namespace(home, _request_timeout=30)
    try:
        await ca_issuer(kube_client, server_ca, "platform-ca", other)
        name = unique("borrow")
        body = user(name, namespace, {"name": "platform-ca", "kind": "Issuer", "namespace": other})
        await kube_client.create(DATABASE_USERS, body, namespace)
        await pending_with(kube_client, namespace, name, 'issuer.cert-manager.io "platform-ca" not found')
        made = await certificate(kube_client, namespace, name)
        assert made is not None
        reference = {"name": "platform-ca", "kind": "Issuer", "group": "cert-manager.io"}
        assert made["spec"]["issuerRef"] == reference  # no namespace: cert-manager looks in the Certificate's
        assert not await secret_exists(kube_client, namespace, f"{name}-client-tls")
        assert not await secret_exists(kube_client, other, f"{name}-client-tls")
    finally:
        await core.delete_namespace(other, _request_timeout=30)


async def test_a_ca_the_server_does_not_trust_cannot_log_in(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    secret: str,
    tmp_path: Path,
) -> None:
    """A tenant's own CA (an Issuer of its namespace) issues the right subject; the account pinned to the
    server's CA reports the mismatch and its connection Secret gets nothing; an account that pins no issuer
    gets the certificate, and the server, which trusts only its own CA, still refuses it."""
    rogue = CertificateAuthority("rogue-ca")
    await ca_issuer(kube_client, rogue, "rogue", namespace)
    pinned = unique("pinned")
    body = user(
        pinned,
        namespace,
        {"name": "rogue"},
        tls={"issuer": server_ca.subject_oneline},
        connectionSecret={"name": pinned},
    )
    await kube_client.create(DATABASE_USERS, body, namespace)
    message = await refused(kube_client, namespace, pinned, "CertificateIssuerMismatch")
    required = f"spec.tls.issuer requires '{server_ca.subject_oneline}'"
    assert f"was issued by '/CN=rogue-ca', but {required}" in message
    assert not await secret_exists(kube_client, namespace, pinned)
    assert await secret_exists(kube_client, namespace, f"{pinned}-client-tls")  # cert-manager's, kept

    unpinned = unique("unpinned")
    body = user(unpinned, namespace, {"name": "rogue"}, connectionSecret={"name": unpinned})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, unpinned, limit=120)
    connection = await wait_for_secret(kube_client, namespace, unpinned, lambda s: "tls.crt" in s["data"])
    assert connect_with(connection, tmp_path, ssl_ca=str(mysql.ca_file)) != f"{unpinned}@%"


async def test_names_someone_else_holds_are_refused(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    server_ca: CertificateAuthority,
    secret: str,
) -> None:
    """A Certificate of the DatabaseUser's name that is not its own is never changed; a Secret of the
    certificate's Secret name that cert-manager did not write for it is never handed to cert-manager."""
    await ca_issuer(kube_client, server_ca, "clients", namespace)
    taken = unique("taken")
    theirs = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": taken},
        "spec": {"secretName": "theirs", "commonName": "theirs", "issuerRef": {"name": "clients"}},
    }
    await kube_client.create(CERTIFICATES, theirs, namespace)
    await kube_client.create(DATABASE_USERS, user(taken, namespace, {"name": "clients"}), namespace)
    message = await refused(kube_client, namespace, taken, "CertificateNotOwned")
    assert f"Certificate {namespace}/{taken} exists and is not owned by this DatabaseUser" in message
    kept = await certificate(kube_client, namespace, taken)
    assert kept is not None
    assert kept["spec"]["secretName"] == "theirs"

    clash = unique("clash")
    await create_secret(kube_client, namespace, f"{clash}-client-tls", {"app.conf": "mine"})
    await kube_client.create(DATABASE_USERS, user(clash, namespace, {"name": "clients"}), namespace)
    message = await refused(kube_client, namespace, clash, "SecretNotOwned")
    assert f"{clash}-client-tls exists and is not cert-manager's Secret" in message
    assert await certificate(kube_client, namespace, clash) is None
    assert data(await kube_client.get(SECRETS, f"{clash}-client-tls", namespace), "app.conf") == "mine"


async def test_without_cert_manager_the_operator_says_so(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, secret: str
) -> None:
    name = unique("off")
    await kube_client.create(DATABASE_USERS, user(name, namespace, {"name": "clients"}), namespace)
    message = await refused(kube_client, namespace, name, "CertManagerDisabled")
    assert "started without --cert-manager: chart value certManager.enabled" in message


async def test_the_workload_signers_subjects_are_never_requested(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    server_ca: CertificateAuthority,
    secret: str,
) -> None:
    """A subject of the workload signer's form (another namespace's ServiceAccount) from an Issuer of the
    tenant's own namespace, signing with the CA the server trusts: refused before any Certificate."""
    await ca_issuer(kube_client, server_ca, "clients", namespace)
    name = unique("workload")
    body = user(name, namespace, {"name": "clients"})
    body["spec"]["tls"]["subject"] = "/O=dbuser-operator/OU=kube-system/CN=default"
    await kube_client.create(DATABASE_USERS, body, namespace)
    message = await refused(kube_client, namespace, name, "CertificateNotAllowed")
    assert "subjects /O=dbuser-operator/… are the workload signer's" in message
    await nothing_issued(kube_client, namespace, name)
