"""The generated DatabaseUser CRD on a real API server: admission, CEL rules, kubectl columns and explain."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import (
    API_VERSION,
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    DatabaseUser,
    DatabaseUserSpec,
)
from tests.conftest import REPO, Runner
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

TIMEOUT = 30
MERGE_PATCH = "application/merge-patch+json"
# The optional fields the API server fills in with their defaults (a decision: describe shows it).
SPEC_DEFAULTS: dict[str, Any] = {"deletionPolicy": "Delete", "managementPolicy": "Manage"}
# The optional fields the models default to empty or zero and the API server leaves out (absent == empty):
# describe shows no empty list or zero limit that nobody set.
MODEL_DEFAULTS: dict[str, Any] = {
    "privileges": [],
    "maxUserConnections": 0,
    "maxQueriesPerHour": 0,
    "maxUpdatesPerHour": 0,
    "maxConnectionsPerHour": 0,
    "requireTLS": False,
    "roles": [],
    "defaultRoles": [],
    "hosts": [],
}


def body(name: str, **spec: Any) -> dict[str, Any]:
    """A DatabaseUser named ``name``; ``spec`` overrides the fields of a valid spec."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {"password": {"name": "app-db", "key": "password"}} | spec,
    }


async def explain(kubectl: Runner, field: str) -> subprocess.CompletedProcess[str]:
    """``kubectl explain field`` once the API server publishes the CRD's OpenAPI (a moment after the CRD
    is Established)."""

    def explained() -> subprocess.CompletedProcess[str]:
        answer = kubectl("explain", field, check=False)
        assert answer.returncode == 0, answer.stderr
        return answer

    return await eventually(explained, interval=0.5, message=f"kubectl explain {field}")


async def create(api: client.ApiClient, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = await client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, obj, _request_timeout=TIMEOUT
    )
    return created


async def patch(api: client.ApiClient, namespace: str, name: str, changes: dict[str, Any]) -> dict[str, Any]:
    patched: dict[str, Any] = await client.CustomObjectsApi(api).patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        name,
        changes,
        _content_type=MERGE_PATCH,  # type: ignore[call-arg]  # the stubs omit it
        _request_timeout=TIMEOUT,
    )
    return patched


async def rejected(call: Any) -> str:
    """The message of the 422 that the awaitable ``call`` must fail with."""
    with pytest.raises(ApiException) as error:
        await call
    assert error.value.status == 422, error.value.body
    message: str = json.loads(error.value.body or "{}")["message"]
    return message


async def refused_like_the_models(
    api: client.ApiClient, namespace: str, obj: dict[str, Any], complaint: str
) -> None:
    """The API server refuses ``obj`` with ``complaint`` in its message; the models refuse its spec too."""
    message = await rejected(create(api, namespace, obj))
    assert complaint in message
    with pytest.raises(ValidationError):
        DatabaseUserSpec.model_validate(obj["spec"])


async def test_the_sample_is_accepted_and_host_defaults_to_any(
    crds: list[str], kubectl: Runner, kube_api: client.ApiClient, namespace: str
) -> None:
    assert "databaseusers.mysql.dbuser-operator.dev" in crds
    applied = kubectl("apply", "-k", str(REPO / "config" / "samples"), "-n", namespace)
    assert "databaseuser.mysql.dbuser-operator.dev/app created" in applied.stdout
    assert "secret/app-db-password created" in applied.stdout
    assert "databaserole.mysql.dbuser-operator.dev/app-reader created" in applied.stdout
    assert "mysqlserver.mysql.dbuser-operator.dev/reporting created" in applied.stdout
    assert "secret/reporting-mysql-admin created" in applied.stdout
    # The ClusterMySQLServer sample (applied on its own: its Secret is in the operator's namespace).
    cluster = REPO / "config" / "samples" / "mysql_v1alpha1_clustermysqlserver.yaml"
    checked = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", str(cluster))
    assert "clustermysqlserver.mysql.dbuser-operator.dev/analytics created (server dry run)" in checked.stdout

    obj = await client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "app", _request_timeout=TIMEOUT
    )
    assert obj["spec"]["host"] == "%"
    assert "user" not in obj["spec"]
    user = DatabaseUser.model_validate(obj)
    assert user.mysql_name() == "app"
    assert user.metadata.generation == 1


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"user": "u" * 33}, "spec.user"),
        ({"user": ""}, "spec.user"),
        ({"user": "app'; DROP USER root; --"}, "spec.user"),
        ({"user": "a'b"}, "spec.user"),
        ({"user": "a;b"}, "spec.user"),
        ({"user": "a`b"}, "spec.user"),
        ({"user": ".hidden"}, "spec.user"),
        ({"user": "\u0430dmin"}, "spec.user"),  # a Cyrillic a that looks like "admin"
        ({"user": "admin\n"}, "spec.user"),
        ({"host": ""}, "spec.host"),
        ({"host": "h" * 256}, "spec.host"),
        ({"host": "10.0.0.1' OR '1'='1"}, "spec.host"),
        ({"host": "host name"}, "spec.host"),
        ({"password": {"name": "app-db"}}, "spec.password.key"),
        ({"password": {"key": "password"}}, "spec.password.name"),
        ({"password": {"name": "App_DB", "key": "password"}}, "spec.password.name"),
        ({"password": {"name": "app-db", "key": "a/b"}}, "spec.password.key"),
    ],
)
async def test_invalid_specs_are_rejected_at_admission(
    crds: list[str], kube_api: client.ApiClient, namespace: str, spec: dict[str, Any], field: str
) -> None:
    message = await rejected(create(kube_api, namespace, body("bad", **spec)))
    assert field in message


async def test_a_missing_password_is_rejected(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    obj = body("no-password")
    del obj["spec"]["password"]
    assert "spec.password" in await rejected(create(kube_api, namespace, obj))


async def test_a_long_name_needs_spec_user(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    long_name = "a-database-user-with-a-name-over-32-characters"
    message = await rejected(create(kube_api, namespace, body(long_name)))
    assert "spec.user: Required value: metadata.name is longer than 32 characters: set spec.user" in message

    created = await create(kube_api, namespace, body(long_name, user="short"))
    assert created["spec"]["user"] == "short"
    exactly_32 = await create(kube_api, namespace, body("n" * 32))
    assert "user" not in exactly_32["spec"]


async def test_user_and_host_are_immutable(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    await create(kube_api, namespace, body("fixed", user="app_rw", host="10.0.%"))
    await create(kube_api, namespace, body("defaulted"))

    attempts: list[tuple[str, dict[str, Any], str]] = [
        ("fixed", {"spec": {"user": "other"}}, "spec.user is immutable"),
        ("fixed", {"spec": {"user": None}}, "spec.user is immutable"),
        ("defaulted", {"spec": {"user": "defaulted"}}, "spec.user is immutable"),
        ("fixed", {"spec": {"host": "%"}}, "spec.host is immutable"),
        ("defaulted", {"spec": {"host": "localhost"}}, "spec.host is immutable"),
    ]
    for name, changes, complaint in attempts:
        assert complaint in await rejected(patch(kube_api, namespace, name, changes)), changes

    # Everything else may change: the password reference, labels.
    changed = await patch(
        kube_api,
        namespace,
        "fixed",
        {"metadata": {"labels": {"x": "y"}}, "spec": {"password": {"name": "rotated", "key": "pw"}}},
    )
    assert (
        changed["spec"]
        == {
            "user": "app_rw",
            "host": "10.0.%",
            "password": {"name": "rotated", "key": "pw"},
        }
        | SPEC_DEFAULTS
    )
    assert changed["metadata"]["generation"] == 2


async def test_status_is_a_subresource(crds: list[str], kube_api: client.ApiClient, namespace: str) -> None:
    obj = body("with-status")
    obj["status"] = {"user": "ignored"}
    created = await create(kube_api, namespace, obj)
    assert "status" not in created  # the main resource ignores status

    status = {"observedGeneration": 1, "user": "with-status", "host": "%"}
    updated = await client.CustomObjectsApi(kube_api).patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "with-status",
        {"status": status, "spec": {"host": "ignored"}},
        _content_type=MERGE_PATCH,  # type: ignore[call-arg]  # the stubs omit it
        _request_timeout=TIMEOUT,
    )
    assert updated["status"] == status
    assert updated["spec"]["host"] == "%"  # the status subresource ignores spec
    assert updated["metadata"]["generation"] == 1


async def test_kubectl_get_shows_user_host_ready_reason_age(
    crds: list[str], kubectl: Runner, kube_api: client.ApiClient, namespace: str
) -> None:
    await create(kube_api, namespace, body("shown", host="10.0.%"))
    parsed = DatabaseUser.model_validate(
        await client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "shown", _request_timeout=TIMEOUT
        )
    )
    status = {
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "observedGeneration": 1,
                "lastTransitionTime": "2025-01-01T00:00:00Z",
                "reason": "SecretNotFound",
                "message": "Secret app-db not found",
            }
        ],
        "observedGeneration": 1,
        "user": parsed.mysql_name(),
        "host": parsed.spec.host,
    }
    await client.CustomObjectsApi(kube_api).patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "shown",
        {"status": status},
        _content_type=MERGE_PATCH,  # type: ignore[call-arg]  # the stubs omit it
        _request_timeout=TIMEOUT,
    )

    for resource in ("dbu", "databaseusers", "dbuser"):  # short name, plural, category
        header, row = kubectl("get", resource, "-n", namespace).stdout.splitlines()
        assert header.split() == ["NAME", "USER", "HOST", "READY", "REASON", "AGE"], resource
        assert row.split()[:5] == ["shown", "shown", "10.0.%", "False", "SecretNotFound"], resource


async def test_kubectl_explain_prints_the_descriptions(crds: list[str], kubectl: Runner) -> None:
    # The API server publishes a new CRD's OpenAPI a moment after it is Established.
    explained = await explain(kubectl, "dbu.spec.password")
    text = " ".join(explained.stdout.split())
    assert "KIND: DatabaseUser" in text
    assert "The Secret key that holds the account's password" in text
    assert "key <string> -required-" in text
    assert "name <string> -required-" in text
    spec = " ".join(kubectl("explain", "dbu.spec").stdout.split())
    assert "host <string>" in spec
    assert "Defaults to '%'" in spec
