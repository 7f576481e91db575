"""The signer end to end: a kubelet (played by the test, as ``system:node:<name>``) asks the real API server
for a pod's certificate, the operator decides, and the request says what it decided and why."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dbuser_operator.api.v1alpha1.mysqlserver import KIND
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.workload.requests import POD_CERTIFICATE_REQUESTS, PODS, SERVICE_ACCOUNTS
from tests.conftest import Runner
from tests.integration.operator.support.builders import server_object, server_spec, unique
from tests.integration.operator.support.kube import admin_secrets
from tests.integration.operator.support.kubelet import (
    Kubelet,
    new_key,
    pod_certificate_pod,
    stub_request,
)
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.workload.conftest import StartSigner
from tests.integration.operator.workload.support import bound_user, check_issued, condition

pytestmark = pytest.mark.integration


async def test_a_bound_service_account_gets_a_client_certificate_of_its_subject(
    signer: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    node: Kubelet,
    signing_ca: CertificateAuthority,
) -> None:
    """The subject is exactly /O=dbuser-operator/OU=<namespace>/CN=<service account>, the only usage client
    authentication, the chain verifies against the signing CA, the status repeats the certificate's times,
    and the lifetime is the request's maxExpirationSeconds (24 h by default) with a refresh a third of it
    before expiry."""
    await kube_client.create(DATABASE_USERS, bound_user("app-db", "app"), namespace)
    pod = await node.pod(namespace, "app-0", "app")
    credentials = await node.request(pod)
    request = await node.decided(namespace, credentials)
    leaf = check_issued(request, credentials, signing_ca, namespace, "app")
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == datetime.timedelta(hours=24)
    refresh = datetime.datetime.fromisoformat(request["status"]["beginRefreshAt"].replace("Z", "+00:00"))
    assert leaf.not_valid_after_utc - refresh == datetime.timedelta(hours=8)
    assert condition(request)["reason"] == "Issued"
    assert f"DatabaseUser {namespace}/app-db" in condition(request)["message"]


def new_schema() -> str:
    return f"dbu_{unique('wl').replace('-', '_')}"


def forged_request() -> x509.CertificateSigningRequestBuilder:
    """A PKCS#10 request that asks for what a hostile tenant would want: another subject, names, usages."""
    return (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "root")]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("mysql.db.svc")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )


async def delete_now(kube: KubeClient, namespace: str, pod: str) -> None:
    """Delete a pod at once (a pod bound to a node otherwise waits for its kubelet, which is not there)."""
    await kube.request("DELETE", PODS.path(namespace, pod), body={"gracePeriodSeconds": 0})


async def test_requests_it_will_not_sign_are_denied_with_a_reason_a_person_can_read(
    signer: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    other_namespace: str,
    node: Kubelet,
    kubectl: Runner,
) -> None:
    """A ServiceAccount no DatabaseUser binds (in the namespace, or in another one where the same name is
    bound), a request that asks for a subject, names and usages, or carries annotations, a key type the
    signer does not take, a request naming another ServiceAccount, node or a pod with no podCertificate
    volume of this signer (made by someone other than the node): each is denied with its reason and no
    certificate; the one bound request beside them is issued. kubectl shows why."""
    await kube_client.create(DATABASE_USERS, bound_user("app-db", "app"), namespace)
    app = await node.pod(namespace, "app-0", "app")
    other = await node.pod(namespace, "other-0", "other")
    elsewhere = await node.pod(other_namespace, "app-0", "app")
    plain = pod_certificate_pod("plain-0", "app", node.name)
    plain["spec"]["volumes"] = plain["spec"]["containers"][0]["volumeMounts"] = []
    plain = await kube_client.create(PODS, plain, namespace)
    account = await kube_client.get(SERVICE_ACCOUNTS, "app", namespace)
    expected = {
        "Issued": await node.request(app),
        "ServiceAccountNotBound": await node.request(other),
        "ServiceAccountNotBound ": await node.request(elsewhere),
        "RequestNotEmpty": await node.request(app, stub=stub_request(new_key("ECDSAP256"), forged_request())),
        "InvalidUnverifiedUserAnnotations": await node.request(
            app, unverifiedUserAnnotations={"example.com/grant": "ALL"}
        ),
        "UnsupportedKeyType": await node.request(app, key_type="ED25519"),
        "ServiceAccountMismatch": await node.request(
            other,
            as_admin=True,
            serviceAccountName="app",
            serviceAccountUID=account["metadata"]["uid"],
        ),
        "NodeMismatch": await node.request(app, as_admin=True, nodeName="node-elsewhere"),
        "NoPodCertificateVolume": await node.request(plain, as_admin=True),
    }
    for reason, credentials in expected.items():
        where = other_namespace if reason.endswith(" ") else namespace
        request = await node.decided(where, credentials)
        decided = condition(request)
        assert (decided["type"], decided["reason"]) == (
            ("Issued", "Issued") if reason == "Issued" else ("Denied", reason.strip())
        ), decided
        if reason != "Issued":
            assert "certificateChain" not in request["status"]
            assert decided["message"].endswith("no certificate was issued"), decided["message"]
    forged = expected["RequestNotEmpty"].request  # no short name (pcr) in Kubernetes 1.37
    described = kubectl("describe", "podcertificaterequests", "-n", namespace, forged).stdout
    assert "RequestNotEmpty" in described
    assert "asks for the subject CN=root; names (subjectAltName" in described
    listed = kubectl("get", "podcertificaterequests", "-n", other_namespace).stdout
    [row] = [line for line in listed.splitlines() if expected["ServiceAccountNotBound "].request in line]
    assert row.split()[5] == "Denied", listed  # NAME PODNAME SERVICEACCOUNTNAME NODENAME SIGNERNAME STATE


async def test_a_request_whose_pod_or_service_account_changed_before_signing_is_denied(
    start_signer: StartSigner, kube_client: KubeClient, namespace: str, node: Kubelet
) -> None:
    """Requests wait for their binding (a long grace here); meanwhile one's pod is deleted, another's is
    made again under the same name (a new UID), a third's ServiceAccount is made again: once a DatabaseUser
    binds the ServiceAccount, each is denied for what changed, not issued."""
    await start_signer(workload_binding_grace=120.0)
    gone = await node.pod(namespace, "app-0", "app")
    again = await node.pod(namespace, "app-1", "app")
    batch = await node.pod(namespace, "batch-0", "batch")
    requests = {
        "PodNotFound": await node.request(gone),
        "PodMismatch": await node.request(again),
        "ServiceAccountMismatch": await node.request(batch),
    }
    await delete_now(kube_client, namespace, "app-0")
    await delete_now(kube_client, namespace, "app-1")
    await kube_client.create(PODS, pod_certificate_pod("app-1", "app", node.name), namespace)
    await kube_client.delete(SERVICE_ACCOUNTS, "batch", namespace)
    await kube_client.create(SERVICE_ACCOUNTS, {"metadata": {"name": "batch"}}, namespace)
    for pending in requests.values():  # still waiting for a binding
        obj = await kube_client.get(POD_CERTIFICATE_REQUESTS, pending.request, namespace)
        assert not (obj.get("status") or {}).get("conditions")
    await kube_client.create(DATABASE_USERS, bound_user("app-db", "app"), namespace)
    await kube_client.create(DATABASE_USERS, bound_user("batch-db", "batch"), namespace)
    for reason, credentials in requests.items():
        decided = condition(await node.decided(namespace, credentials))
        assert (decided["type"], decided["reason"]) == ("Denied", reason), decided


async def test_a_namespace_whose_server_policy_forbids_workload_identity_gets_no_certificate(
    signer: RunningOperator,
    kube_client: KubeClient,
    mysql: MySQLServer,
    namespace: str,
    other_namespace: str,
    node: Kubelet,
) -> None:
    """The same DatabaseUser on a MySQLServer whose policy says allowWorkloadIdentity: false is denied
    (PolicyViolation, naming the rule), and issued where another server's policy says true."""
    for where, allowed in ((namespace, False), (other_namespace, True)):
        await admin_secrets(kube_client, where, mysql, "admin")
        server = server_object(KIND, "db", server_spec(mysql, "admin", new_schema()))
        entry = {"namespaceSelector": {}, "allowWorkloadIdentity": allowed}
        server["spec"]["policy"] = {"namespaces": [entry]}
        await kube_client.create(MYSQL_SERVERS, server, where)
        user = bound_user("app-db", "app", serverRef={"kind": KIND, "name": "db"})
        await kube_client.create(DATABASE_USERS, user, where)
    forbidden = await node.request(await node.pod(namespace, "app-0", "app"))
    allowed_request = await node.request(await node.pod(other_namespace, "app-0", "app"))
    decided = condition(await node.decided(namespace, forbidden))
    assert (decided["type"], decided["reason"]) == ("Denied", "PolicyViolation"), decided
    assert (
        f"DatabaseUser {namespace}/app-db: MySQLServer {namespace}/db policy.namespaces[0]"
        in (decided["message"])
    )
    assert "allowWorkloadIdentity is false" in decided["message"]
    assert condition(await node.decided(other_namespace, allowed_request))["type"] == "Issued"
