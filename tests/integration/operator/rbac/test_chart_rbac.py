"""The chart's RBAC is enough, and no more: the operator runs with a token of the chart's ServiceAccount
(TokenRequest API) and passes the main scenario (create → Ready and the account logs in, rotate → the new
password works, delete → the account is gone) without a single 403, while anything else the token tries is
refused. Once with the ClusterRole (every namespace), once with Roles in the watched namespaces only."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.envtest.kubeconfig import current_cluster
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.conftest import Runner
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.fleet import (
    FleetOperator,
    ServerHandle,
    add_user,
    create_admin,
    create_server,
    drop_admin,
    forget_server,
    remove_servers,
    server_gone,
    wait_for_server,
    wait_for_users,
)
from tests.integration.operator.support.kube import (
    create_secret,
    finalizers_become,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query, wait_for_login
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.wait import eventually
from tests.unit.chart.chart import CHART

pytestmark = [pytest.mark.integration, pytest.mark.one_flavour]  # the same on every MySQL flavour


@dataclass
class Release:
    name: str  # the chart's <fullname>: Deployment, ServiceAccount, Lease
    namespace: str
    target: str
    watched: list[str]  # empty: every namespace
    app_namespace: str  # where the test's DatabaseUsers live
    other_namespace: str  # a namespace the operator has no business in (when namespaced)


async def _create_namespace(core: client.CoreV1Api, name: str) -> None:
    await core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name)), _request_timeout=30
    )


@pytest.fixture(params=["cluster-wide", "namespaced"])
async def release(
    request: pytest.FixtureRequest, helm: Runner, kube_api: client.ApiClient, namespace: str, crds: list[str]
) -> AsyncIterator[Release]:
    """The chart installed in ``namespace`` (no pod runs: replicaCount 0), leader election on."""
    core = client.CoreV1Api(kube_api)
    app_namespace, other_namespace = f"{namespace}-app", f"{namespace}-other"
    for name in (app_namespace, other_namespace):
        await _create_namespace(core, name)
    suffix = uuid.uuid4().hex[:6]
    release_name, target = f"rbac-{suffix}", f"chart-rbac-{suffix}"
    watched = [app_namespace] if request.param == "namespaced" else []
    arguments = ["--set", f"target={target}", "--set", "leaderElection.enabled=true"]
    # No pod: on a real cluster, a pod of an image nobody built must not compete with the test's operator.
    arguments += ["--set", "replicaCount=0"]
    if watched:
        arguments += ["--set", f"watchNamespaces={{{','.join(watched)}}}"]
    helm("install", release_name, str(CHART), "--namespace", namespace, "--skip-crds", *arguments)
    yield Release(
        name=f"{release_name}-dbuser-operator",
        namespace=namespace,
        target=target,
        watched=watched,
        app_namespace=app_namespace,
        other_namespace=other_namespace,
    )
    helm("uninstall", release_name, "--namespace", namespace, "--wait", "--timeout", "60s")
    for name in (app_namespace, other_namespace):
        await core.delete_namespace(name, _request_timeout=30)


async def service_account_token(api: client.ApiClient, account: str, namespace: str) -> str:
    """A fresh token of the ServiceAccount (TokenRequest API), valid for an hour."""
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    response = await client.CoreV1Api(api).create_namespaced_service_account_token(
        account, namespace, request, _request_timeout=30
    )
    return str(response.status.token)


def write_token_kubeconfig(path: Path, cluster: dict[str, Any], user: str, token: str) -> Path:
    """A kubeconfig for ``cluster`` (a kubeconfig cluster entry) that authenticates with a bearer token."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "token", "context": {"cluster": "cluster", "user": user}}],
        "current-context": "token",
    }
    path.write_text(yaml.safe_dump(document))
    path.chmod(0o600)
    return path


def forbidden_responses() -> float:
    """403s that any KubeClient of this process (the operator's) received."""
    return sum(
        REGISTRY.get_sample_value("rest_client_requests_total", {"method": method, "code": "403"}) or 0
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
    )


async def assert_forbidden(call: Callable[[], Awaitable[Any]], what: str) -> None:
    with pytest.raises(ApiException) as refused:
        await call()
    assert refused.value.status == 403, f"{what}: {refused.value.status} {refused.value.reason}"


async def _event_count(api: client.ApiClient, namespace: str, name: str, reason: str) -> int:
    events = await client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name},reason={reason}", _request_timeout=30
    )
    return sum(event.count or 1 for event in events.items)


async def test_the_operator_runs_with_exactly_the_charts_permissions(
    release: Release,
    kube: KubeCluster,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    start_operator: StartOperator,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    tmp_path: Path,
) -> None:
    intruder_name = unique("intruder")
    token = await service_account_token(kube_api, release.name, release.namespace)
    account = f"system:serviceaccount:{release.namespace}:{release.name}"
    cluster = current_cluster(kube.kubeconfig)  # the API server's address and CA, from the admin kubeconfig
    kubeconfig = write_token_kubeconfig(tmp_path / "sa.kubeconfig", cluster, account, token)
    forbidden_before = forbidden_responses()
    instance = await start_operator(
        kubeconfig=kubeconfig,
        target=release.target,
        namespaces=release.watched,
        leader_elect=True,
        leader_election_id=release.name,
        leader_election_namespace=release.namespace,
        leader_election_identity=f"chart-rbac-test-{uuid.uuid4().hex[:6]}",
        resync_period=1.0,  # the drift check (leader-only) runs with these permissions too
    )
    namespace, user = release.app_namespace, f"rbac-{uuid.uuid4().hex[:8]}"
    try:
        first, second = passwords.new(), passwords.new()
        await create_secret(kube_client, namespace, "app-pw", {"password": first})
        await kube_client.create(
            DATABASE_USERS, database_user(user, "app-pw", target=release.target), namespace
        )
        await wait_for_ready(kube_client, namespace, user, limit=60)
        assert can_log_in(mysql, user, first)

        # A generated password and a connection Secret: created, written, and deleted with the resource.
        generated = f"{user}-gen"
        spec: dict[str, Any] = {"generatedPassword": {}, "connectionSecret": {"name": f"{generated}-db"}}
        obj = database_user(generated, "unused", target=release.target, **spec)
        del obj["spec"]["password"]
        await kube_client.create(DATABASE_USERS, obj, namespace)
        await wait_for_ready(kube_client, namespace, generated, limit=60)
        connection = await kube_client.get(SECRETS, f"{generated}-db", namespace)
        generated_password = base64.b64decode(connection["data"]["password"]).decode()
        passwords.values.add(generated_password)
        assert can_log_in(mysql, generated, generated_password)
        await kube_client.delete(DATABASE_USERS, generated, namespace)
        await wait_until_gone(kube_client, namespace, generated, limit=60)
        remaining = await kube_client.list(SECRETS, namespace)
        assert [item["metadata"]["name"] for item in remaining["items"]] == ["app-pw"]

        await kube_client.patch(
            SECRETS, "app-pw", {"stringData": {"password": second}}, PatchType.MERGE, namespace=namespace
        )
        await wait_for_login(mysql, user, second, message="the rotated password never worked")

        # The Lease in the release namespace is held by this instance, and renewed (every 2 s); an Event
        # was recorded.
        leases = client.CoordinationV1Api(kube_api)
        lease = await leases.read_namespaced_lease(release.name, release.namespace, _request_timeout=30)
        assert lease.spec.holder_identity == instance.settings.leader_election_identity
        acquired = lease.spec.renew_time

        async def renewed() -> Any:
            lease = await leases.read_namespaced_lease(release.name, release.namespace, _request_timeout=30)
            return lease if lease.spec.renew_time != acquired else None

        lease = await eventually(renewed, interval=0.2, message="the Lease was never renewed")
        assert lease.spec.holder_identity == instance.settings.leader_election_identity
        events = await client.CoreV1Api(kube_api).list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={user}", _request_timeout=30
        )
        assert events.items, "no Event recorded"

        # A failure seen twice is one Event with a count of 2 (the recorder patches it).
        broken = f"{user}-x"
        await kube_client.create(
            DATABASE_USERS, database_user(broken, "missing", target=release.target), namespace
        )
        await wait_for_ready(kube_client, namespace, broken, "False", "SecretNotFound")
        touch = {"metadata": {"annotations": {"example.com/touched": "yes"}}}
        await kube_client.patch(DATABASE_USERS, broken, touch, PatchType.MERGE, namespace=namespace)

        async def aggregated() -> bool:
            return await _event_count(kube_api, namespace, broken, "SecretNotFound") >= 2

        await eventually(aggregated, interval=0.1, message="the repeated Event was not aggregated")

        # Relabelled away, the broken one is let go of: read back, its finalizer patched off.
        away = {"metadata": {"labels": {"dbuser-operator.dev/target": "elsewhere"}}}
        await kube_client.patch(DATABASE_USERS, broken, away, PatchType.MERGE, namespace=namespace)
        await finalizers_become(kube_client, namespace, broken, [])

        for name in (user, broken):
            await kube_client.delete(DATABASE_USERS, name, namespace)
            await wait_until_gone(kube_client, namespace, name, limit=60)
        assert not account_exists(mysql, user)
        assert forbidden_responses() == forbidden_before, "the operator was refused something it needed"
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=30)
    # Stopping released the Lease (one more update), so that a standby would take over at once.
    lease = await leases.read_namespaced_lease(release.name, release.namespace, _request_timeout=30)
    assert not lease.spec.holder_identity

    # The same token may do nothing else.
    async with kube.api_client(kubeconfig=kubeconfig) as api:
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        coordination = client.CoordinationV1Api(api)
        namespace_, other, ns = namespace, release.other_namespace, release.namespace
        group, version, plural = DATABASE_USERS.group, DATABASE_USERS.version, DATABASE_USERS.plural
        intruder = database_user(intruder_name, "app-pw", target=release.target)
        refused: dict[str, Callable[[], Awaitable[Any]]] = {
            "delete all Secrets at once": lambda: core.delete_collection_namespaced_secret(
                namespace_, _request_timeout=30
            ),
            "replace a Secret (it patches)": lambda: core.replace_namespaced_secret(
                "app-pw",
                namespace_,
                client.V1Secret(metadata=client.V1ObjectMeta(name="app-pw"), string_data={"a": "b"}),
                _request_timeout=30,
            ),
            "replace a DatabaseUser (it patches)": lambda: custom.replace_namespaced_custom_object(
                group, version, namespace_, plural, intruder_name, intruder, _request_timeout=30
            ),
            "list ConfigMaps": lambda: core.list_namespaced_config_map(namespace_, _request_timeout=30),
            "delete Pods": lambda: core.delete_collection_namespaced_pod(ns, _request_timeout=30),
            "create a DatabaseUser": lambda: custom.create_namespaced_custom_object(
                group, version, namespace_, plural, intruder, _request_timeout=30
            ),
            "delete DatabaseUsers": lambda: custom.delete_collection_namespaced_custom_object(
                group, version, namespace_, plural, _request_timeout=30
            ),
            "delete the Lease": lambda: coordination.delete_namespaced_lease(
                release.name, ns, _request_timeout=30
            ),
            "read Leases elsewhere": lambda: coordination.list_namespaced_lease(
                namespace_, _request_timeout=30
            ),
            "label a Namespace": lambda: core.patch_namespace(
                other, {"metadata": {"labels": {"team": "intruder"}}}, _request_timeout=30
            ),
            "delete a Namespace": lambda: core.delete_namespace(other, _request_timeout=30),
        }
        if release.watched:  # namespaced: nothing outside the watched namespaces
            refused["list Secrets in another namespace"] = lambda: core.list_namespaced_secret(
                other, _request_timeout=30
            )
            refused["list Secrets everywhere"] = lambda: core.list_secret_for_all_namespaces(
                _request_timeout=30
            )
            refused["list DatabaseUsers in another namespace"] = lambda: custom.list_namespaced_custom_object(
                group, version, other, plural, _request_timeout=30
            )
        for what, call in refused.items():
            await assert_forbidden(call, what)
        # ... while what the operator needs is allowed (the token is valid).
        secrets = await core.list_namespaced_secret(namespace, _request_timeout=30)
        assert [s.metadata.name for s in secrets.items] == ["app-pw"]
        listed = await core.list_namespace(_request_timeout=30)  # their labels, for the servers' policies
        assert {namespace, other} <= {n.metadata.name for n in listed.items}


async def test_the_charts_permissions_cover_server_resources(
    release: Release,
    kube: KubeCluster,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    start_operator: StartOperator,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    tmp_path: Path,
) -> None:
    """A MySQLServer (its Secret in the watched namespace) and a ClusterMySQLServer (its Secret in the
    release namespace, which the namespaced release does not watch) on the test's server: their status,
    users on each Ready and logging in, the servers' finalizers on and off: with the chart's token, no
    403."""
    token = await service_account_token(kube_api, release.name, release.namespace)
    account = f"system:serviceaccount:{release.namespace}:{release.name}"
    kubeconfig = write_token_kubeconfig(
        tmp_path / "sa.kubeconfig", current_cluster(kube.kubeconfig), account, token
    )
    forbidden_before = forbidden_responses()
    instance = await start_operator(
        kubeconfig=kubeconfig,
        target=release.target,
        namespaces=release.watched,
        cluster_resource_namespace=release.namespace,
        server_check_period=1.0,
        resync_period=1.0,
    )
    operator = FleetOperator(instance, release.target, release.namespace)
    namespace, admin = release.app_namespace, create_admin(mysql, passwords, "rbac_adm")
    suffix = uuid.uuid4().hex[:6]
    servers: dict[str, ServerHandle] = {}
    try:
        servers["namespaced"] = await create_server(
            kube_client, operator, admin, f"rbac-{suffix}", namespace=namespace
        )
        servers["cluster"] = await create_server(kube_client, operator, admin, f"rbac-cluster-{suffix}")
        for server in servers.values():
            status = (await wait_for_server(kube_client, server))["status"]
            assert status["version"]
        users = {
            kind: await add_user(kube_client, operator, namespace, server, passwords, "rbac")
            for kind, server in servers.items()
        }
        await wait_for_users(kube_client, namespace, [name for name, _ in users.values()])
        for name, password in users.values():
            assert can_log_in(mysql, name, password)

        # A ClusterMySQLServer released while a user is on it: its Warning Event goes to the namespace
        # default (a cluster-scoped object's), which the namespaced release does not watch.
        released = await create_server(kube_client, operator, admin, f"rbac-released-{suffix}")
        left, _ = await add_user(kube_client, operator, namespace, released, passwords, "rbac-left")
        await wait_for_users(kube_client, namespace, [left])
        release_annotation = {"metadata": {"annotations": {"mysql.dbuser-operator.dev/release": "true"}}}
        await kube_client.patch(released.resource, released.name, release_annotation, PatchType.MERGE)
        await kube_client.delete(released.resource, released.name)
        await server_gone(kube_client, released)
        await eventually(
            lambda: _event_count(kube_api, "default", released.name, "Released"),
            interval=0.2,
            message="no Released Event in the namespace default",
        )
        await kube_client.patch(
            DATABASE_USERS, left, release_annotation, PatchType.MERGE, namespace=namespace
        )
        await kube_client.delete(DATABASE_USERS, left, namespace)
        await wait_until_gone(kube_client, namespace, left)
        assert account_exists(mysql, left)  # released: left in MySQL
        mysql_query(mysql, f"DROP USER '{left}'@'%'")
        forget_server(released)

        await remove_servers(kube_client, namespace, servers)  # users, then servers (finalizers off)
        for name, _ in users.values():
            assert not account_exists(mysql, name)
        assert forbidden_responses() == forbidden_before, "the operator was refused something it needed"
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=30)
        drop_admin(admin)
