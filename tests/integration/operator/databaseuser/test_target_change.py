"""A resource whose target label changes: the instance it leaves lets go, and deletion never gets stuck."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.meta import LEGACY_FINALIZER, MAX_TARGET_LENGTH
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.conftest import Runner
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import own_schema, own_target
from tests.integration.operator.support.kube import (
    create_secret,
    finalizers_become,
    wait_for_event,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.rotation import applied_version
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

TARGET_LABEL = "dbuser-operator.dev/target"


def ours() -> str:
    """The finalizer of the test's own operator."""
    return Scope(TARGET_LABEL, own_target()).finalizer


async def set_target(kube: KubeClient, namespace: str, name: str, target: str | None) -> None:
    patch = {"metadata": {"labels": {TARGET_LABEL: target}}}
    await kube.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)


def event_messages(kubectl: Runner, namespace: str, reason: str) -> list[str]:
    events = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return [event["message"] for event in events if event["reason"] == reason]


def forget_account(mysql: MySQLServer, user: str) -> None:
    mysql_query(mysql, f"DROP USER IF EXISTS '{user}'@'%'")
    mysql_query(mysql, f"DELETE FROM `{own_schema()}`.accounts WHERE user = %s", user)


async def delete_and_find_the_account_left(
    kube: KubeClient, mysql: MySQLServer, namespace: str, name: str
) -> None:
    """Deleting a resource that was let go of is not held up, and drops nothing; then clean up."""
    await kube.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube, namespace, name, limit=10)
    assert account_exists(mysql, name)
    forget_account(mysql, name)


async def test_removing_the_target_label_lets_go_and_restoring_it_resumes(
    operator: RunningOperator,
    kube_client: KubeClient,
    kubectl: Runner,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    wanderer = unique("wanderer")
    password = passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    await kube_client.create(DATABASE_USERS, database_user(wanderer, "pw"), namespace)
    await wait_for_ready(kube_client, namespace, wanderer)

    await set_target(kube_client, namespace, wanderer, None)
    await finalizers_become(kube_client, namespace, wanderer, [])
    assert can_log_in(mysql, wanderer, password)  # left as it was
    owned = mysql_query(mysql, f"SELECT user FROM `{own_schema()}`.accounts WHERE user = %s", wanderer)
    assert owned == [(wanderer,)]  # still recorded: reported as an orphan, resumed if the label returns
    await eventually(
        lambda: bool(event_messages(kubectl, namespace, "LeftTarget")), timeout=10, what="LeftTarget"
    )
    (message,) = event_messages(kubectl, namespace, "LeftTarget")
    assert f"no longer labelled {TARGET_LABEL}={own_target()}" in message
    assert f"'{wanderer}'@'%' was left in MySQL" in message
    await eventually(
        lambda: (REGISTRY.get_sample_value("dbuser_operator_orphaned_accounts") or 0) >= 1,
        timeout=10,
        what="the orphan reported",
    )

    # Its password changes while nobody manages it; the relabel moves no generation, so Ready=True from
    # before stays current: only the new password applied (status.appliedSecret at the Secret's new
    # version, and MySQL taking it) shows that a pass ran after the label came back.
    newer = passwords.new()
    await kube_client.patch(
        SECRETS, "pw", {"stringData": {"password": newer}}, PatchType.MERGE, namespace=namespace
    )
    assert can_log_in(mysql, wanderer, password)  # not taken up while let go

    # Back in scope: the same instance takes it up again, as its owner.
    await set_target(kube_client, namespace, wanderer, own_target())
    await finalizers_become(kube_client, namespace, wanderer, [ours()])
    await applied_version(kube_client, namespace, wanderer, "pw")
    await wait_for_ready(kube_client, namespace, wanderer)
    assert can_log_in(mysql, wanderer, newer)

    # Out of scope once more, then deleted: nothing holds the deletion, and the account is not dropped.
    await set_target(kube_client, namespace, wanderer, None)
    await finalizers_become(kube_client, namespace, wanderer, [])
    await delete_and_find_the_account_left(kube_client, mysql, namespace, wanderer)


async def test_a_resource_relabelled_while_no_instance_watched_is_let_go_at_start(
    start_operator: StartOperator,
    kube_client: KubeClient,
    kubectl: Runner,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    asleep = unique("asleep")
    first = await start_operator(target="sweep")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(asleep, "pw", target="sweep"), namespace)
    await wait_for_ready(kube_client, namespace, asleep)
    first.stop.set()
    await first.task

    await set_target(kube_client, namespace, asleep, "nobody")
    await asyncio.sleep(0.5)
    finalizers = (await kube_client.get(DATABASE_USERS, asleep, namespace))["metadata"]["finalizers"]
    assert finalizers == [Scope(TARGET_LABEL, "sweep").finalizer]  # no instance of "sweep" runs

    await start_operator(target="sweep")
    await finalizers_become(kube_client, namespace, asleep, [])
    await eventually(
        lambda: bool(event_messages(kubectl, namespace, "LeftTarget")), timeout=10, what="LeftTarget"
    )
    await delete_and_find_the_account_left(kube_client, mysql, namespace, asleep)


async def test_a_resource_moved_to_another_target_is_handed_over(
    operator: RunningOperator,
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    # The other instance shares the MySQL server here, so it needs its own ownership schema and the adopt
    # annotation; on a platform, the other target is another server and the account is simply created there.
    name = unique("mover")
    await start_operator(target="moved-to", ownership_schema="dbuser_operator_moved")
    theirs = Scope(TARGET_LABEL, "moved-to").finalizer
    password = passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    body = database_user(name, "pw")
    body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)

    await set_target(kube_client, namespace, name, "moved-to")
    await finalizers_become(kube_client, namespace, name, [theirs])  # ours off, theirs on
    # The relabel moves no generation: Ready=True is still the first instance's until the new one's pass.
    # That pass claims the account in its own schema (MySQL first), writes status, then says AccountAdopted.
    adopted = await wait_for_event(kube_client, namespace, name, "AccountAdopted")
    assert f"took over the existing account '{name}'@'%'" in adopted["message"]
    moved = mysql_query(mysql, "SELECT user FROM dbuser_operator_moved.accounts WHERE user = %s", name)
    assert moved == [(name,)]
    obj = await wait_for_ready(kube_client, namespace, name)
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    assert can_log_in(mysql, name, password)

    # The new instance's finalizer holds the deletion until it has dropped the account.
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)
    forget_account(mysql, name)  # the first instance's ownership row
    mysql_query(mysql, "DROP DATABASE dbuser_operator_moved")


async def test_the_legacy_shared_finalizer_comes_off_at_deletion(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    old_timer = unique("old-timer")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    old = database_user(old_timer, "pw")
    old["metadata"]["finalizers"] = [LEGACY_FINALIZER]  # as versions before per-target finalizers left it
    await kube_client.create(DATABASE_USERS, old, namespace)
    await wait_for_ready(kube_client, namespace, old_timer)
    await finalizers_become(kube_client, namespace, old_timer, [LEGACY_FINALIZER, ours()])

    await kube_client.delete(DATABASE_USERS, old_timer, namespace)
    await wait_until_gone(kube_client, namespace, old_timer)
    assert not account_exists(mysql, old_timer)


@pytest.mark.parametrize(("length", "accepted"), [(MAX_TARGET_LENGTH, True), (MAX_TARGET_LENGTH + 1, False)])
async def test_the_api_server_accepts_the_longest_targets_finalizer(
    kube_client: KubeClient, namespace: str, length: int, accepted: bool
) -> None:
    name = f"long-{length}"
    obj: dict[str, Any] = database_user(name, "pw", target="unserved")
    obj["metadata"]["finalizers"] = [Scope(TARGET_LABEL, "t" * length).finalizer]
    if accepted:
        await kube_client.create(DATABASE_USERS, obj, namespace)
        patch = [{"op": "remove", "path": "/metadata/finalizers"}]
        await kube_client.patch(DATABASE_USERS, name, patch, PatchType.JSON, namespace=namespace)
    else:
        with pytest.raises(ApiException) as refused:
            await kube_client.create(DATABASE_USERS, obj, namespace)
        assert refused.value.status == 422
