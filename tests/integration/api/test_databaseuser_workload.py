"""spec.authentication.workload on a real API server: what admission accepts, what it refuses (names that
could make one subject look like another, what a workload excludes), that the binding never changes once
made (CEL transition rules), and the Pod Certificates API the docs tell pods to use, as real kubectl explains
it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import (
    WORKLOAD_IMMUTABLE_MESSAGE,
    WORKLOAD_NO_PASSWORD_MESSAGE,
    WORKLOAD_ROTATION_MESSAGE,
    WORKLOAD_TLS_MESSAGE,
    DatabaseUser,
)
from dbuser_operator.workload.identity import SIGNER_NAME, client_subject
from tests.conftest import Runner
from tests.integration.api.test_databaseuser_crd import (
    body,
    create,
    explain,
    patch,
    refused_like_the_models,
    rejected,
)

pytestmark = pytest.mark.integration


def bound(name: str, service_account: str = "app", **spec: Any) -> dict[str, Any]:
    """A DatabaseUser bound to ``service_account``: no password."""
    obj = body(name, authentication={"workload": {"serviceAccountName": service_account}}, **spec)
    del obj["spec"]["password"]
    return obj


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("alone", {}),
    ("dotted", {"authentication": {"workload": {"serviceAccountName": "billing.api-v2"}}}),
    ("longest", {"authentication": {"workload": {"serviceAccountName": "a" * 64}}}),
    ("cipher", {"tls": {"cipher": "TLS_AES_256_GCM_SHA384"}, "requireTLS": True}),
    ("connection-secret", {"connectionSecret": {"name": "app-db"}, "hosts": ["10.0.%"]}),
]


@pytest.mark.parametrize(("name", "spec"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
async def test_accepted(
    crds: list[str], kube_api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any]
) -> None:
    created = await create(kube_api, namespace, bound(name) | {"spec": bound(name)["spec"] | spec})
    parsed = DatabaseUser.model_validate(created)  # the models read what the API server admitted
    method = parsed.spec.authentication
    assert method is not None
    assert method.workload is not None
    assert method.plugin is None
    assert parsed.spec.password is None
    # Whatever name was admitted makes a subject of this namespace, in the one form the signer writes.
    subject = client_subject(namespace, method.workload.service_account_name)
    assert subject == f"/O=dbuser-operator/OU={namespace}/CN={method.workload.service_account_name}"


# A name could make a subject that reads as another namespace's, or as more attributes: '/', '=', ',', ':'
# and '+' never pass; nor does anything but a Kubernetes object name, or more than a common name holds.
HOSTILE_NAMES = [
    "other/app",
    "app/OU=other",
    "OU=other",
    "app,OU=other",
    "system:serviceaccount:other:app",
    "app+CN=x",
    "App",
    "app ",
    "-app",
    "a" * 65,
    "",
]


@pytest.mark.parametrize("service_account", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
async def test_a_name_that_could_forge_a_subject_is_refused(
    crds: list[str], kube_api: client.ApiClient, namespace: str, service_account: str
) -> None:
    await refused_like_the_models(
        kube_api,
        namespace,
        bound("hostile", service_account),
        "spec.authentication.workload.serviceAccountName",
    )


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("password", {"password": {"name": "app-db", "key": "password"}}, WORKLOAD_NO_PASSWORD_MESSAGE),
    ("generated", {"generatedPassword": {}}, WORKLOAD_NO_PASSWORD_MESSAGE),
    ("subject", {"tls": {"subject": "/O=dbuser-operator/OU=other/CN=app"}}, WORKLOAD_TLS_MESSAGE),
    ("issuer", {"tls": {"issuer": "/CN=another CA"}}, WORKLOAD_TLS_MESSAGE),
    ("x509", {"tls": {"x509": True}}, WORKLOAD_TLS_MESSAGE),
    ("rotation", {"rotation": {"strategy": "Immediate"}}, WORKLOAD_ROTATION_MESSAGE),
    (
        "and-plugin",
        {"authentication": {"plugin": "caching_sha2_password", "workload": {"serviceAccountName": "app"}}},
        "spec.authentication takes exactly one of plugin and workload",
    ),
]


@pytest.mark.parametrize(("name", "spec", "complaint"), REJECTED, ids=[name for name, _, _ in REJECTED])
async def test_what_a_workload_excludes_is_refused(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    complaint: str,
) -> None:
    obj = bound(name)
    obj["spec"] |= spec
    await refused_like_the_models(kube_api, namespace, obj, complaint)


async def test_the_binding_is_made_once_and_never_changes(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    await create(kube_api, namespace, bound("bound"))
    await create(kube_api, namespace, body("password"))
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("bound", {"spec": {"authentication": {"workload": {"serviceAccountName": "other"}}}}),
        (
            "bound",
            {
                "spec": {
                    "authentication": {"workload": None, "plugin": "caching_sha2_password"},
                    "password": {"name": "app-db", "key": "password"},
                }
            },
        ),
        (
            "password",
            {"spec": {"authentication": {"workload": {"serviceAccountName": "app"}}, "password": None}},
        ),
    ]
    for name, changes in attempts:
        assert WORKLOAD_IMMUTABLE_MESSAGE in await rejected(patch(kube_api, namespace, name, changes)), (
            changes
        )
    # Everything else of a bound one may change.
    changed = await patch(kube_api, namespace, "bound", {"spec": {"maxUserConnections": 5}})
    assert changed["spec"]["authentication"] == {"workload": {"serviceAccountName": "app"}}
    assert changed["metadata"]["generation"] == 2


async def test_kubectl_explains_the_field_and_the_pod_certificate_volume(
    crds: list[str], kubectl: Runner
) -> None:
    """The docs' pod spec uses these fields of Kubernetes 1.37's podCertificate projection."""
    field = " ".join((await explain(kubectl, "dbu.spec.authentication.workload")).stdout.split())
    assert "serviceAccountName <string> -required-" in field
    assert "certificate-only" in " ".join(kubectl("explain", "dbu.spec.authentication").stdout.split())
    volume = " ".join(kubectl("explain", "pod.spec.volumes.projected.sources.podCertificate").stdout.split())
    for name in ("signerName", "keyType", "maxExpirationSeconds", "credentialBundlePath"):
        assert f"{name} <" in volume, name
    assert SIGNER_NAME == "mysql.dbuser-operator.dev/client"
