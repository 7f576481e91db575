"""RBAC narrowed after the caches synced: the controllers keep running on their caches while every write
is refused. /readyz must say so, naming the writes, and be ready again once writes go through."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster
from dbuser_operator.envtest.kubeconfig import current_cluster
from dbuser_operator.envtest.ports import free_port
from dbuser_operator.runtime.client import KubeClient
from tests.integration.operator.rbac.test_chart_rbac import service_account_token, write_token_kubeconfig
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, wait_for_ready
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.wait import eventually

pytestmark = [pytest.mark.integration, pytest.mark.one_flavour]  # the same on every MySQL flavour


async def readyz(port: int) -> tuple[int, str]:
    url = f"http://127.0.0.1:{port}/readyz?verbose"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def wait_readyz(port: int, status: int, limit: float = 30) -> str:
    async def check() -> tuple[str]:
        code, text = await readyz(port)
        assert code == status, f"{code} {text}"
        return (text,)  # a text of its own may be empty: the answer is truthy

    (text,) = await eventually(check, limit=limit, interval=0.2, message=f"/readyz never answered {status}")
    return text


async def bind(rbac: client.RbacAuthorizationV1Api, name: str, account: str, namespace: str) -> None:
    body = client.V1ClusterRoleBinding(
        metadata=client.V1ObjectMeta(name=name),
        role_ref=client.V1RoleRef(
            api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="cluster-admin"
        ),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name=account, namespace=namespace)],
    )
    await rbac.create_cluster_role_binding(body, _request_timeout=30)


async def test_writes_refused_after_the_start_make_readyz_fail_naming_them(
    start_operator: StartOperator,
    kube: KubeCluster,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    tmp_path: Path,
) -> None:
    core, rbac = client.CoreV1Api(kube_api), client.RbacAuthorizationV1Api(kube_api)
    account, binding = f"rbac-ready-{uuid.uuid4().hex[:6]}", f"rbac-ready-{uuid.uuid4().hex[:6]}"
    await core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=account)), _request_timeout=30
    )
    await bind(rbac, binding, account, namespace)
    token = await service_account_token(kube_api, account, namespace)
    user = f"system:serviceaccount:{namespace}:{account}"
    kubeconfig = write_token_kubeconfig(
        tmp_path / "sa.kubeconfig", current_cluster(kube.kubeconfig), user, token
    )
    target, port = f"rbac-{uuid.uuid4().hex[:6]}", free_port()
    instance = await start_operator(
        kubeconfig=kubeconfig, target=target, health_probe_bind_address=f"127.0.0.1:{port}"
    )
    try:
        await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
        first = unique("rbac-ok")
        await kube_client.create(DATABASE_USERS, database_user(first, "pw", target=target), namespace)
        await wait_for_ready(kube_client, namespace, first, limit=60)
        await wait_readyz(port, 200)

        await rbac.delete_cluster_role_binding(binding, _request_timeout=30)
        refused = unique("rbac-no")  # the watch still delivers it; its finalizer write is refused
        await kube_client.create(DATABASE_USERS, database_user(refused, "pw", target=target), namespace)
        text = await wait_readyz(port, 503)
        assert "the API server refuses writes: PATCH databaseusers (403 Forbidden" in text, text

        await bind(rbac, binding, account, namespace)
        again = unique("rbac-again")  # a write of each refused kind goes through again
        await kube_client.create(DATABASE_USERS, database_user(again, "pw", target=target), namespace)
        await wait_for_ready(kube_client, namespace, again, limit=60)
        await wait_readyz(port, 200, limit=60)
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, 30)
        await rbac.delete_cluster_role_binding(binding, _request_timeout=30)
