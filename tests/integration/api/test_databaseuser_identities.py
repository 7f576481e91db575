"""TLS identities and authentication plugins of the DatabaseUser CRD on a real API server: what admission
accepts and rejects (hostile issuers, subjects and ciphers included), with which message, and that the
pydantic models agree on every case."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import DatabaseUser
from tests.integration.api.test_databaseuser_crd import body, create, patch, refused_like_the_models, rejected

pytestmark = pytest.mark.integration

PASSWORD = {"password": {"name": "app-db", "key": "password"}}

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("x509", {"tls": {"x509": True}}),
    ("subject", {"tls": {"subject": "/O=Example/CN=app"}}),
    (
        "all-three",
        {
            "tls": {
                "issuer": "/C=SE/O=Example/CN=Example CA",
                "subject": "/O=Example/CN=app",
                "cipher": "TLS_AES_256_GCM_SHA384",
            },
            "requireTLS": True,
        },
    ),
    # Printable ASCII is taken as it is: a parameter of ALTER USER, never spliced into it.
    ("quotes", {"tls": {"subject": '/CN=it\'s "quoted" `and` \\ back\\slashed; DROP USER root -- %_'}}),
    ("escaped-utf8", {"tls": {"subject": "/CN=caf\\xC3\\xA9"}}),
    ("longest-subject", {"tls": {"subject": "/" + "a" * 1023}}),
    ("empty-tls", {"tls": {}}),
    ("plugin", {"authentication": {"plugin": "caching_sha2_password"}}),
    ("ed25519", {"authentication": {"plugin": "ed25519"}}),
    ("socket-without-password", {"authentication": {"plugin": "auth_socket"}, "password": None}),
    ("aws-without-password", {"authentication": {"plugin": "AWSAuthenticationPlugin"}, "password": None}),
]


def spec_of(changes: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in (PASSWORD | changes).items() if value is not None}


@pytest.mark.parametrize(("name", "spec"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
async def test_accepted(
    crds: list[str], kube_api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any]
) -> None:
    obj = body(name)
    obj["spec"] = spec_of(spec)
    created = await create(kube_api, namespace, obj)
    for key, value in spec_of(spec).items():
        if key == "tls":
            assert created["spec"]["tls"] == {"x509": False, **value}  # x509 defaults to false
        else:
            assert created["spec"][key] == value
    parsed = DatabaseUser.model_validate(created).spec  # the models read what the API server admitted
    assert (parsed.tls is not None) == ("tls" in spec)
    assert (parsed.password is None) == (spec.get("password", PASSWORD) is None)


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("nul", {"tls": {"subject": "/CN=a\x00b"}}, "spec.tls.subject: Invalid value"),
    ("newline", {"tls": {"issuer": "/CN=a\nb"}}, "spec.tls.issuer: Invalid value"),
    ("tab", {"tls": {"subject": "/CN=a\tb"}}, "spec.tls.subject: Invalid value"),
    ("unicode", {"tls": {"subject": "/CN=café"}}, "spec.tls.subject: Invalid value"),
    ("right-to-left", {"tls": {"subject": "/CN=\u202eppa"}}, "spec.tls.subject: Invalid value"),
    ("no-slash", {"tls": {"subject": "CN=app"}}, "spec.tls.subject: Invalid value"),
    ("too-long", {"tls": {"subject": "/" + "a" * 1024}}, "spec.tls.subject: Too long"),
    ("cipher-quote", {"tls": {"cipher": "AES' OR '1'='1"}}, "spec.tls.cipher: Invalid value"),
    ("cipher-list", {"tls": {"cipher": "AES256-SHA:AES128-SHA"}}, "spec.tls.cipher: Invalid value"),
    ("cipher-too-long", {"tls": {"cipher": "A" * 65}}, "spec.tls.cipher: Too long"),
    ("x509-and-subject", {"tls": {"x509": True, "subject": "/CN=app"}}, "x509 stands alone"),
    ("x509-string", {"tls": {"x509": "true"}}, "spec.tls.x509: Invalid value"),
    (
        "unknown-plugin",
        {"authentication": {"plugin": "pam"}},
        "spec.authentication.plugin: Unsupported value",
    ),
    ("sql-plugin", {"authentication": {"plugin": "x' OR 1"}}, "spec.authentication.plugin: Unsupported"),
    ("no-plugin", {"authentication": {}}, "spec.authentication takes exactly one of plugin and workload"),
    (
        "no-password",
        {"password": None},
        "spec.password: Required value: spec.password or spec.generatedPassword is required unless",
    ),
    (
        "password-with-socket",
        {"authentication": {"plugin": "unix_socket"}},
        "spec.password: Invalid value: the plugin unix_socket takes no password: leave spec.password and "
        "spec.generatedPassword out",
    ),
    (
        "no-password-with-ed25519",
        {"authentication": {"plugin": "ed25519"}, "password": None},
        "spec.password or spec.generatedPassword is required unless spec.authentication.plugin takes no "
        "password",
    ),
]


@pytest.mark.parametrize(("name", "spec", "complaint"), REJECTED, ids=[name for name, _, _ in REJECTED])
async def test_rejected_with_the_rules_message(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    complaint: str,
) -> None:
    obj = body(name)
    obj["spec"] = spec_of(spec)
    await refused_like_the_models(kube_api, namespace, obj, complaint)


async def test_the_plugin_and_tls_can_change(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    await create(kube_api, namespace, body("changing", authentication={"plugin": "mysql_native_password"}))
    changed = await patch(
        kube_api,
        namespace,
        "changing",
        {"spec": {"authentication": {"plugin": "caching_sha2_password"}, "tls": {"subject": "/CN=app"}}},
    )
    assert changed["spec"]["authentication"] == {"plugin": "caching_sha2_password"}
    assert changed["spec"]["tls"] == {"x509": False, "subject": "/CN=app"}
    message = await rejected(
        patch(kube_api, namespace, "changing", {"spec": {"authentication": {"plugin": "auth_socket"}}})
    )
    assert "the plugin auth_socket takes no password" in message
    passwordless = {"authentication": {"plugin": "auth_socket"}, "password": None}
    socket = await patch(kube_api, namespace, "changing", {"spec": passwordless})
    assert "password" not in socket["spec"]
