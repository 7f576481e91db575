"""spec.tls.certificate of the DatabaseUser CRD on a real API server: what admission accepts and refuses
(a certificate without a subject, durations cert-manager would refuse, a Secret name that collides, a
field naming another namespace's Issuer), with the models' messages, and the models agreeing on each case."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.api.v1alpha1.account import CERTIFICATE_SUBJECT_MESSAGE
from dbuser_operator.api.v1alpha1.client_certificate import (
    CERTIFICATE_SECRET_APART_MESSAGE,
    CERTIFICATE_SECRET_LENGTH_MESSAGE,
    DURATION_MESSAGE,
    RENEW_BEFORE_MESSAGE,
)
from tests.integration.api.test_databaseuser_crd import body, create, rejected

pytestmark = pytest.mark.integration

SUBJECT = "/O=Example/CN=app"
ISSUER = {"issuerRef": {"name": "clients"}}


def user(name: str, certificate: dict[str, Any], **spec: Any) -> dict[str, Any]:
    obj = body(name)
    obj["spec"] = {
        "password": {"name": "app-db", "key": "password"},
        "tls": {"subject": SUBJECT, "certificate": certificate},
        **spec,
    }
    return obj


ACCEPTED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("issuer", ISSUER, {}),
    ("cluster-issuer", {"issuerRef": {"name": "corp", "kind": "ClusterIssuer"}}, {}),
    ("durations", {**ISSUER, "duration": "2160h", "renewBefore": "360h"}, {}),
    ("shortest", {**ISSUER, "duration": "1h", "renewBefore": "5m"}, {}),
    ("secret-name", {**ISSUER, "secretName": "app-tls"}, {"connectionSecret": {"name": "app-connection"}}),
]


@pytest.mark.parametrize(("name", "certificate", "spec"), ACCEPTED, ids=[case[0] for case in ACCEPTED])
async def test_accepted(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    certificate: dict[str, Any],
    spec: dict[str, Any],
) -> None:
    created = await create(kube_api, namespace, user(name, certificate, **spec))
    stored = created["spec"]["tls"]["certificate"]
    assert stored["issuerRef"]["kind"] == certificate["issuerRef"].get("kind", "Issuer")  # the default
    parsed = DatabaseUser.model_validate(created).spec.tls
    assert parsed is not None
    assert parsed.certificate is not None


async def test_no_field_names_another_namespace(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    """An Issuer is of the DatabaseUser's namespace: a namespace given anyway is not kept (cert-manager
    resolves the name in the Certificate's namespace, which is the DatabaseUser's)."""
    certificate = {"issuerRef": {"name": "clients", "kind": "Issuer", "namespace": "kube-system"}}
    created = await create(kube_api, namespace, user("elsewhere", certificate))
    assert created["spec"]["tls"]["certificate"]["issuerRef"] == {"name": "clients", "kind": "Issuer"}


LONG = "a" * 243  # a name with no room for "-client-tls" in a Secret name (253 characters at most)

REJECTED: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("no-subject", ISSUER, {"tls": {"certificate": ISSUER}}, CERTIFICATE_SUBJECT_MESSAGE),
    ("x509", ISSUER, {"tls": {"x509": True, "certificate": ISSUER}}, CERTIFICATE_SUBJECT_MESSAGE),
    ("short", {**ISSUER, "duration": "59m"}, {}, DURATION_MESSAGE),
    ("renew-at-once", {**ISSUER, "renewBefore": "4m"}, {}, RENEW_BEFORE_MESSAGE),
    ("renew-before-issued", {**ISSUER, "duration": "2h", "renewBefore": "2h"}, {}, RENEW_BEFORE_MESSAGE),
    ("bad-duration", {**ISSUER, "duration": "90d"}, {}, "spec.tls.certificate.duration: Invalid value"),
    ("kind", {"issuerRef": {"name": "x", "kind": "AWSPCAClusterIssuer"}}, {}, "Unsupported value"),
    ("issuer-name", {"issuerRef": {"name": "../x"}}, {}, "spec.tls.certificate.issuerRef.name: Invalid"),
    (
        "the-password-secret",
        {**ISSUER, "secretName": "app-db"},
        {},
        CERTIFICATE_SECRET_APART_MESSAGE,
    ),
    (
        "the-connection-secret",
        {**ISSUER, "secretName": "app-connection"},
        {"connectionSecret": {"name": "app-connection"}},
        CERTIFICATE_SECRET_APART_MESSAGE,
    ),
    (
        "the-generated-password",
        ISSUER,
        {"password": None, "generatedPassword": {"secretName": "{name}-client-tls"}},
        CERTIFICATE_SECRET_APART_MESSAGE,
    ),
]


@pytest.mark.parametrize(
    ("name", "certificate", "spec", "complaint"), REJECTED, ids=[case[0] for case in REJECTED]
)
async def test_rejected(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    certificate: dict[str, Any],
    spec: dict[str, Any],
    complaint: str,
) -> None:
    obj = user(name, certificate)
    for key, value in spec.items():
        if key == "tls":
            obj["spec"]["tls"] = value
        elif value is None:
            del obj["spec"][key]
        else:
            obj["spec"][key] = {k: v.format(name=name) if isinstance(v, str) else v for k, v in value.items()}
    assert complaint in await rejected(create(kube_api, namespace, obj))
    with pytest.raises(ValidationError):
        DatabaseUser.model_validate(obj)


async def test_a_long_name_needs_a_secret_name(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    obj = user(LONG, ISSUER, user="app")
    assert CERTIFICATE_SECRET_LENGTH_MESSAGE in await rejected(create(kube_api, namespace, obj))
    with pytest.raises(ValidationError):
        DatabaseUser.model_validate(obj)
    obj["spec"]["tls"]["certificate"]["secretName"] = "app-tls"
    created = await create(kube_api, namespace, obj)
    assert created["spec"]["tls"]["certificate"]["secretName"] == "app-tls"
