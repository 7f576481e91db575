"""`kubectl dbu certificates` and `why`: the real kubectl runs the plugin as a tenant (a certificate user with
a namespaced Role) against the real API server. For a DatabaseUser bound to a ServiceAccount, the operator has
issued a pod of that ServiceAccount its certificate (the test plays the kubelet) and denied the others; for
one with spec.tls.certificate, the real cert-manager controller has issued its client certificate."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dbuser_operator.controllers.databaseuser.cert_manager import CERTIFICATES
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import POD_CERTIFICATE_REQUESTS
from tests.integration.operator.kubectl_dbu.test_kubectl_dbu import (
    Kubectl,
    as_tenant,
    grant,
    line_of,
    plugin_path,
)
from tests.integration.operator.support.builders import generated_user, unique
from tests.integration.operator.support.certmanager import ca_issuer
from tests.integration.operator.support.kube import wait_for_ready
from tests.integration.operator.support.kubelet import Kubelet
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.support.wait import eventually
from tests.integration.operator.workload.support import bound_user, condition

# The plugin reads the API only: nothing it shows depends on the MySQL server's flavour.
pytestmark = [pytest.mark.integration, pytest.mark.one_flavour]
__all__ = ["as_tenant", "plugin_path"]  # fixtures of the plugin's first test module

KEPT = "Requests are deleted 15 minutes after they are made"


def creation(obj: dict[str, Any]) -> tuple[str, str]:
    """The order of the plugin's list, oldest first: creation time, then name."""
    return obj["metadata"]["creationTimestamp"], obj["metadata"]["name"]


async def test_the_certificates_issued_for_the_bound_service_account_and_not_the_others(
    signer: RunningOperator, kube_client: KubeClient, namespace: str, node: Kubelet, as_tenant: Kubectl
) -> None:
    """A pod of the bound ServiceAccount gets its certificate, a request of it with a key type the signer
    does not take and a pod of another ServiceAccount are denied: `kubectl dbu certificates` lists the two
    of the bound ServiceAccount, newest first, the issued one valid now, and never the other's; `why` shows
    the same. Without `list podcertificaterequests` the tenant gets one line, not a traceback."""
    await kube_client.create(DATABASE_USERS, bound_user("app-db", "app"), namespace)
    app, other = await node.pod(namespace, "app-0", "app"), await node.pod(namespace, "other-0", "other")
    issued = await node.request(app)
    unsupported = await node.request(app, key_type="ED25519")
    elsewhere = await node.request(other)
    request = await node.decided(namespace, issued)
    assert condition(request)["type"] == "Issued"
    assert condition(await node.decided(namespace, unsupported))["reason"] == "UnsupportedKeyType"
    assert condition(await node.decided(namespace, elsewhere))["reason"] == "ServiceAccountNotBound"

    # The tenant's Role lets it read DatabaseUsers, pods, Secrets and Events, not PodCertificateRequests.
    refused = await as_tenant("certificates", "app-db", "-n", namespace, code=1)
    assert refused.startswith("Error from server (Forbidden): ")
    assert 'cannot list resource "podcertificaterequests"' in refused
    assert len(refused.strip().splitlines()) == 1  # one line, no traceback
    why = await as_tenant("why", "app-db", "-n", namespace)
    [said] = [line for line in why.splitlines() if line.startswith("Certificates:")]
    assert said.startswith("Certificates: ? (Forbidden: ")
    assert 'cannot list resource "podcertificaterequests"' in said

    rules = [
        {"apiGroups": ["certificates.k8s.io"], "resources": ["podcertificaterequests"], "verbs": ["list"]}
    ]
    await grant(kube_client, namespace, "dbu-certificates", rules)  # as docs/kubectl-plugin.md asks
    shown = await eventually(  # the API server's RBAC cache takes the new Role a moment later
        lambda: as_tenant("certificates", "app-db", "-n", namespace), limit=30, message="the Role applied"
    )
    lines = shown.splitlines()
    assert lines[0] == (
        f"PodCertificateRequests of ServiceAccount {namespace}/app (signer {SIGNER_NAME}): 2, newest first; "
        "1 certificate(s) valid now"
    )
    # Newest first: by creation time (whole seconds), then name (the two may share a second).
    made = [
        await kube_client.get(POD_CERTIFICATE_REQUESTS, c.request, namespace) for c in (issued, unsupported)
    ]
    newest = [obj["metadata"]["name"] for obj in sorted(made, key=creation, reverse=True)]
    assert [line.split()[0] for line in lines[2:4]] == newest
    row = line_of(shown, issued.request)
    assert row[1:4] == ["app-0", node.name, "Issued"]
    assert row[5].endswith(" ago") or row[5] == "in 0s"  # not before: issued just now
    assert row[6:8] == ["in 15h", "in 23h"]  # refresh at two thirds of 24 h, then expiry
    assert row[8] == "-"
    denied = line_of(shown, unsupported.request)
    assert denied[1:4] == ["app-0", node.name, "Denied (UnsupportedKeyType)"]
    assert denied[5:8] == ["-", "-", "-"]
    assert "ECDSAP256" in denied[8]  # the signer's message: the key types it takes
    assert elsewhere.request not in shown
    assert "other-0" not in shown
    assert KEPT in lines[-1]

    listed = json.loads(await as_tenant("certificates", "app-db", "-n", namespace, "-o", "json"))["items"]
    assert [item["name"] for item in listed] == newest
    records = {item["name"]: item for item in listed}
    stored = await kube_client.get(POD_CERTIFICATE_REQUESTS, issued.request, namespace)
    times = ("notBefore", "beginRefreshAt", "notAfter")
    assert {key: records[issued.request][key] for key in times} == {
        key: stored["status"][key] for key in times
    }
    shows = ("state", "reason", "validNow", "serviceAccount")
    assert [records[issued.request][key] for key in shows] == ["Issued", "Issued", True, "app"]
    assert [records[unsupported.request][key] for key in shows] == [
        "Denied",
        "UnsupportedKeyType",
        False,
        "app",
    ]

    why = await as_tenant("why", "app-db", "-n", namespace)
    section = why.split("\nCertificates:\n", 1)[1]
    assert section.splitlines()[0] == f"  {lines[0]}"
    assert line_of(section, issued.request)[3] == "Issued"
    assert elsewhere.request not in why


async def test_the_cert_manager_certificate_of_a_user(
    cert_manager_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    server_ca: CertificateAuthority,
    as_tenant: Kubectl,
) -> None:
    """The Certificate the operator made: Ready, expiry, renewal and Secret, once the tenant may get
    Certificates; one line before."""
    await ca_issuer(kube_client, server_ca, "mysql-clients", namespace)
    name = unique("kdbu-cm")
    tls = {
        "subject": f"/O=dbuser-operator-tests/CN={name}",
        "certificate": {"issuerRef": {"name": "mysql-clients"}},
    }
    await kube_client.create(DATABASE_USERS, generated_user(name, tls=tls), namespace)
    await wait_for_ready(kube_client, namespace, name, limit=120)

    refused = await as_tenant("certificates", name, "-n", namespace, code=1)
    assert refused.startswith("Error from server (Forbidden): ")
    assert 'cannot get resource "certificates" in API group "cert-manager.io"' in refused
    assert len(refused.strip().splitlines()) == 1  # one line, no traceback
    why = await as_tenant("why", name, "-n", namespace)
    assert "\nCertificates: ? (Forbidden: " in why

    rules = [{"apiGroups": ["cert-manager.io"], "resources": ["certificates"], "verbs": ["get"]}]
    await grant(kube_client, namespace, "dbu-cert-manager", rules)  # as docs/kubectl-plugin.md asks
    shown = await eventually(  # the API server's RBAC cache takes the new Role a moment later
        lambda: as_tenant("certificates", name, "-n", namespace), limit=30, message="the Role applied"
    )
    assert shown.splitlines()[0] == f"cert-manager Certificate {namespace}/{name}"
    row = line_of(shown, name)
    assert row[1:3] == ["True", "Ready"]
    assert row[3] == "in 89d"  # the CA Issuer's default: 90 days, from a moment ago
    assert row[4] == "in 59d"  # renewed at two thirds of the lifetime
    assert row[5] == f"{name}-client-tls"
    [item] = json.loads(await as_tenant("certificates", name, "-n", namespace, "-o", "json"))["items"]
    stored = (await kube_client.get(CERTIFICATES, name, namespace))["status"]
    assert (item["notAfter"], item["renewalTime"]) == (stored["notAfter"], stored["renewalTime"])
    assert (item["kind"], item["ready"], item["ownedByUser"]) == ("Certificate", "True", True)
    why = await as_tenant("why", name, "-n", namespace)
    section = why.split("\nCertificates:\n", 1)[1]
    assert line_of(section, name)[1:3] == ["True", "Ready"]
