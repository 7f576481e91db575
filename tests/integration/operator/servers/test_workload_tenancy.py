"""Workload identity on a shared server: the policy entry that allows it (allowWorkloadIdentity), and a
hostile tenant A against tenant B. spec.authentication.workload names no namespace, so the subject an account
requires is always its own namespace's: A's pods cannot log in to B's account nor B's to A's, A cannot take
B's account over, and no ServiceAccount name makes one subject read as another (refused at admission)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.workload.identity import client_subject
from tests.integration.mysql.support import bundle_login
from tests.integration.operator.servers import test_server_policy
from tests.integration.operator.servers.test_server_policy import BOUNDS, Tenancy, refused, snapshot
from tests.integration.operator.support.builders import unique
from tests.integration.operator.support.kube import ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists
from tests.integration.operator.support.workload import account_columns, workload_user
from tests.support.pod_certificates import REFUSED, PodCertificates

pytestmark = pytest.mark.integration

shared_tenancy = test_server_policy.tenancy  # the policy tests' fixture (its operator has the signing CA)
ALLOWED = BOUNDS | {"allowWorkloadIdentity": True}


def bound(env: Tenancy, name: str, service_account: str = "app", **spec: Any) -> dict[str, Any]:
    """A DatabaseUser of the shared server bound to ``service_account``."""
    obj = workload_user(name, service_account, target=env.target, **spec)
    obj["spec"]["serverRef"] = {"kind": CLUSTER_KIND, "name": env.server}
    return obj


@pytest.fixture
async def victim(shared_tenancy: Tenancy, kube_api: client.ApiClient) -> AsyncIterator[str]:
    """Tenant B: a namespace the same policy entry admits."""
    core = client.CoreV1Api(kube_api)
    namespace = f"victim-{uuid.uuid4().hex[:6]}"
    meta = client.V1ObjectMeta(name=namespace, labels={shared_tenancy.label: "tenant"})
    await core.create_namespace(client.V1Namespace(metadata=meta), _request_timeout=30)
    yield namespace
    for obj in (await shared_tenancy.kube.list(DATABASE_USERS, namespace))["items"]:
        await shared_tenancy.kube.delete(DATABASE_USERS, obj["metadata"]["name"], namespace)
        await wait_until_gone(shared_tenancy.kube, namespace, obj["metadata"]["name"], limit=60)
    await core.delete_namespace(namespace, _request_timeout=30)


async def test_workload_identity_is_the_policys_to_allow(
    shared_tenancy: Tenancy, pod_certificates: PodCertificates
) -> None:
    env, ns = shared_tenancy, shared_tenancy.tenant
    await env.set_policy(**BOUNDS)  # allowWorkloadIdentity defaults to false
    name = unique("wl-pol")
    found = await refused(
        env, ns, bound(env, name), "workload identity is not allowed (allowWorkloadIdentity"
    )
    assert "ServiceAccount app" in ready(found)["message"]  # type: ignore[index]
    # A namespace no entry selects may not use the server at all.
    await refused(env, env.outsider, bound(env, unique("wl-out")), "may not use it")

    await env.set_policy(**ALLOWED)
    found = await wait_for_ready(env.kube, ns, name, limit=60)
    subject = client_subject(ns, "app")
    assert found["status"]["workload"]["subject"] == subject
    assert (account_columns(env.mysql, name) or {}).get("x509_subject") == subject
    assert bundle_login(env.mysql, name, pod_certificates.bundle(ns, "app")) == f"{name}@%"

    # Forbidden again: reported, the account left as it is (a refusal never drops); deletion drops it.
    await env.set_policy(**BOUNDS)
    await wait_for_ready(env.kube, ns, name, "False", "PolicyViolation", limit=60)
    assert account_exists(env.mysql, name)
    await env.kube.delete(DATABASE_USERS, name, ns)
    await wait_until_gone(env.kube, ns, name, limit=60)
    assert not account_exists(env.mysql, name)
    assert snapshot(env, {name}) == {}


async def test_a_tenant_reaches_only_its_own_namespaces_workload(
    shared_tenancy: Tenancy, victim: str, pod_certificates: PodCertificates
) -> None:
    env, a, b = shared_tenancy, shared_tenancy.tenant, victim
    await env.set_policy(**ALLOWED)
    theirs, mine = unique("wl-b"), unique("wl-a")
    await env.kube.create(DATABASE_USERS, bound(env, theirs), b)
    await env.kube.create(DATABASE_USERS, bound(env, mine), a)  # the same ServiceAccount name, in A
    await wait_for_ready(env.kube, b, theirs, limit=60)
    await wait_for_ready(env.kube, a, mine, limit=60)
    before = snapshot(env, {theirs})

    # The same name binds each namespace's own ServiceAccount: each subject names its namespace.
    assert (account_columns(env.mysql, theirs) or {}).get("x509_subject") == client_subject(b, "app")
    assert (account_columns(env.mysql, mine) or {}).get("x509_subject") == client_subject(a, "app")
    a_pod, b_pod = pod_certificates.bundle(a, "app"), pod_certificates.bundle(b, "app")
    assert bundle_login(env.mysql, theirs, a_pod) in REFUSED
    assert bundle_login(env.mysql, mine, b_pod) in REFUSED
    assert bundle_login(env.mysql, theirs, b_pod) == f"{theirs}@%"
    assert bundle_login(env.mysql, mine, a_pod) == f"{mine}@%"

    # A takes B's account over: claimed by B's resource, with or without the adopt annotation.
    for adopt in ({}, {ADOPT_ANNOTATION: "true"}):
        grab = bound(env, unique("wl-grab"), user=theirs)
        grab["metadata"]["annotations"] = adopt
        await env.kube.create(DATABASE_USERS, grab, a)
        found = await wait_for_ready(
            env.kube, a, grab["metadata"]["name"], "False", "AccountClaimed", limit=60
        )
        assert "is managed by" in ready(found)["message"]  # type: ignore[index]
        await env.kube.delete(DATABASE_USERS, grab["metadata"]["name"], a)
        await wait_until_gone(env.kube, a, grab["metadata"]["name"], limit=60)

    # A names B's ServiceAccount the only ways a name could: refused by the API server, nothing made.
    for hostile in (f"{b}/app", f"app/OU={b}", f"app,OU={b}", f"system:serviceaccount:{b}:app"):
        with pytest.raises(ApiException) as rejected:
            await env.kube.create(DATABASE_USERS, bound(env, unique("wl-forge"), hostile), a)
        assert rejected.value.status == 422, hostile

    assert snapshot(env, {theirs}) == before
    assert bundle_login(env.mysql, theirs, b_pod) == f"{theirs}@%"
    obj = await env.kube.get(DATABASE_USERS, theirs, b)
    assert ready(obj)["status"] == "True"  # type: ignore[index]
