"""The chart's finalizer policy (a MutatingAdmissionPolicy) in a real API server, with the operator running:
a new resource is held from its creation, the operator serves it without a finalizer patch of its own, and
deletion works as without the policy — for a resource refused before any SQL too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.reserved import RESERVED_ACCOUNT
from dbuser_operator.controllers.kit.resources import (
    DATABASE_ROLES,
    DATABASE_USERS,
    DATABASES,
    FIELD_MANAGER,
    MYSQL_SERVERS,
)
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.admission import install_finalizer_policy, remove_finalizer_policy
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from tests.integration.operator.servers.test_reserved_names import account_rows
from tests.integration.operator.support.builders import (
    database,
    database_role,
    database_user,
    server_object,
    server_spec,
    unique,
)
from tests.integration.operator.support.instances import Instances, own_target
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    finalizers_become,
    wait_for_condition,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query, privileges_of
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.support.fault_proxy import FaultProxy

pytestmark = pytest.mark.integration

TARGET_LABEL = "dbuser-operator.dev/target"


@pytest.fixture
async def policy(operator: RunningOperator, kube_api: client.ApiClient, namespace: str) -> AsyncIterator[str]:
    """The test operator's finalizer policy, for the test's namespace only, in force; its finalizer."""
    name = f"finalizer-{namespace}"
    await install_finalizer_policy(
        kube_api, name, TARGET_LABEL, own_target(), [namespace], probe_namespace=namespace
    )
    yield Scope(TARGET_LABEL, own_target()).finalizer
    await remove_finalizer_policy(kube_api, name)


def operator_wrote_metadata(obj: dict[str, Any]) -> bool:
    """Whether the object's managed fields show a write of the operator's outside ``/status``."""
    return any(
        entry.get("manager") == FIELD_MANAGER and entry.get("subresource") != "status"
        for entry in obj["metadata"].get("managedFields") or []
    )


def finalizers_added(kind: str = "DatabaseUser") -> float:
    """``dbuser_operator_finalizers_added_total`` of ``kind``: the finalizers the operator patched on."""
    return REGISTRY.get_sample_value("dbuser_operator_finalizers_added_total", {"kind": kind}) or 0.0


async def test_without_the_policy_the_operator_adds_the_finalizer_and_counts_it(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
) -> None:
    name, before = unique("unheld"), finalizers_added()
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    created = await kube_client.create(DATABASE_USERS, database_user(name, "pw"), namespace)
    assert not created["metadata"].get("finalizers")
    ready = await wait_for_ready(kube_client, namespace, name)
    assert ready["metadata"]["finalizers"] == [Scope(TARGET_LABEL, own_target()).finalizer]
    assert operator_wrote_metadata(ready)
    assert finalizers_added() == before + 1
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_a_new_user_is_held_from_its_creation_and_served_without_a_finalizer_patch(
    policy: str,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name, password, before = unique("held"), passwords.new(), finalizers_added()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    created = await kube_client.create(DATABASE_USERS, database_user(name, "pw"), namespace)
    assert created["metadata"]["finalizers"] == [policy]

    ready = await wait_for_ready(kube_client, namespace, name)
    assert can_log_in(mysql, name, password)
    assert ready["metadata"]["finalizers"] == [policy]
    assert not operator_wrote_metadata(ready), ready["metadata"]["managedFields"]
    assert finalizers_added() == before  # what the metric tells of a policy in force

    # Deletion: the operator's delete halves, then its finalizer off (a patch the policy does not undo).
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)


async def test_a_finalizer_of_someone_else_is_kept_beside_it(
    policy: str, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    name = unique("shared")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    body = database_user(name, "pw")
    body["metadata"]["finalizers"] = ["example.com/backup"]
    created = await kube_client.create(DATABASE_USERS, body, namespace)
    assert created["metadata"]["finalizers"] == ["example.com/backup", policy]
    await wait_for_ready(kube_client, namespace, name)

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await finalizers_become(kube_client, namespace, name, ["example.com/backup"])  # ours off, theirs kept
    release = {"metadata": {"finalizers": None}}
    await kube_client.patch(DATABASE_USERS, name, release, PatchType.MERGE, namespace=namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_a_user_refused_before_any_sql_is_let_go_at_deletion(
    policy: str, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    """Without the policy a resource whose server does not exist never gets the finalizer; with it, it is
    held from its creation, and its deletion lets go at once: there is no server to act on."""
    name = unique("nowhere")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    body = database_user(name, "pw", serverRef={"kind": "MySQLServer", "name": "absent"})
    created = await kube_client.create(DATABASE_USERS, body, namespace)
    assert created["metadata"]["finalizers"] == [policy]
    await wait_for_ready(kube_client, namespace, name, "False", "ServerNotFound")

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_a_database_and_a_role_are_held_from_their_creation_too(
    policy: str, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    resource = unique("db")
    schema = resource.replace("-", "_")
    created = await kube_client.create(DATABASES, database(resource, name=schema), namespace)
    assert created["metadata"]["finalizers"] == [policy]
    await kube_client.delete(DATABASES, resource, namespace)
    await wait_until_gone(kube_client, namespace, resource, resource=DATABASES)
    role = database_role(unique("role"))  # a dry run: the operator never sees it
    created = await kube_client.request(
        "POST", DATABASE_ROLES.path(namespace), query=[("dryRun", "All")], body=role
    )
    assert created["metadata"]["finalizers"] == [policy]


async def test_only_the_targets_resources_in_its_namespaces_are_held(
    policy: str, kube_client: KubeClient, namespace: str
) -> None:
    """Another target's resource, or one in a namespace the release does not watch, is created as it is:
    nothing would ever take a finalizer off it."""
    dry_run = [("dryRun", "All")]
    elsewhere = database_user(unique("elsewhere"), "pw")
    created = await kube_client.request("POST", DATABASE_USERS.path("default"), query=dry_run, body=elsewhere)
    assert not created["metadata"].get("finalizers")
    foreign = database_user(unique("foreign"), "pw", target="another-release")
    created = await kube_client.request("POST", DATABASE_USERS.path(namespace), query=dry_run, body=foreign)
    assert not created["metadata"].get("finalizers")


async def test_a_reserved_account_is_held_from_its_creation_and_never_dropped(
    policy: str, kube_client: KubeClient, namespace: str, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    """The registry of reserved names refuses before any SQL; with the policy such a resource carries the
    finalizer from its creation, and its deletion drops nothing (the frame's answer at deletion)."""
    name = unique("grab")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    before = account_rows(mysql, "root")
    assert before, "root exists before the attempt"
    created = await kube_client.create(DATABASE_USERS, database_user(name, "pw", user="root"), namespace)
    assert created["metadata"]["finalizers"] == [policy]
    await wait_for_ready(kube_client, namespace, name, "False", RESERVED_ACCOUNT)

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert account_rows(mysql, "root") == before


async def test_held_while_its_server_is_down_its_deletion_waits_and_drops_nothing_it_does_not_own(
    policy: str,
    instances: Instances,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A real outage from before the user's creation (the MySQLServer's port refuses connections): the user
    is held from its creation all the same, though the operator never reached the server for it. Deleted
    meanwhile, it waits (the operator cannot tell whether the account is its own); once the server answers,
    it goes, and the account of the same name somebody made by hand stays, grants and all."""
    name, schema = unique("byhand"), f"dbu_{unique('down').replace('-', '_')}"
    instances.temporary_schemas.add(schema)
    mysql_query(mysql, f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", passwords.new())
    mysql_query(mysql, f"GRANT SELECT ON mysql.db TO '{name}'@'%'")
    grants = privileges_of(mysql, name)
    try:
        async with FaultProxy(mysql.host, mysql.port, mysql=False) as proxy:
            server = unique("down")
            await admin_secrets(kube_client, namespace, mysql, f"{server}-admin")
            spec = {**server_spec(mysql, f"{server}-admin", schema), "host": "127.0.0.1", "port": proxy.port}
            await kube_client.create(MYSQL_SERVERS, server_object("MySQLServer", server, spec), namespace)
            await wait_for_condition(kube_client, MYSQL_SERVERS, namespace, server)
            await proxy.refuse()
            await wait_for_condition(kube_client, MYSQL_SERVERS, namespace, server, "False", "Unreachable")

            await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
            body = database_user(name, "pw", serverRef={"name": server})
            created = await kube_client.create(DATABASE_USERS, body, namespace)
            assert created["metadata"]["finalizers"] == [policy]
            await wait_for_ready(kube_client, namespace, name, "False", "ServerNotReady", containing=server)

            await kube_client.delete(DATABASE_USERS, name, namespace)
            # The deletion tried the server and says why it waits; the user is still held.
            waiting = await wait_for_ready(
                kube_client, namespace, name, "False", "DatabaseUnavailable", containing="unreachable"
            )
            assert waiting["metadata"]["deletionTimestamp"]
            assert waiting["metadata"]["finalizers"] == [policy]
            assert privileges_of(mysql, name) == grants

            await proxy.heal()
            await wait_until_gone(kube_client, namespace, name, limit=60)
            assert privileges_of(mysql, name) == grants  # not ours: not dropped, not revoked
            await instances.clean_up(kube_client)  # the MySQLServer, while its proxy still forwards
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{name}'@'%'")
