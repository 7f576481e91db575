"""Rotation of generated passwords: the rotate annotation (once per new value) and the period; the Secret
changes only once MySQL accepts the new password, and under DualPassword the old one works until the
discard."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, ROTATE_ANNOTATION
from dbuser_operator.controllers.databaseuser.steps.rollout import WORKLOADS
from dbuser_operator.controllers.databaseuser.steps.scheduled import PENDING_ANNOTATION, PENDING_KEY
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql.password_hashes import native_hash
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.conftest import TARGET, PasswordLedger, RunningOperator
from tests.integration.operator.helpers import can_log_in, mysql_query, unique, wait_for_ready
from tests.integration.operator.rotation_support import (
    delete_users,
    events_of,
    generated_user,
    has_dual_passwords,
    is_mariadb,
    poll,
    rotation_status,
    secret_password,
    wait_for_event,
    wait_for_phase,
)


@pytest.fixture(autouse=True)
async def _cleanup(kube_client: KubeClient, namespace: str) -> AsyncIterator[None]:
    yield
    await delete_users(kube_client, namespace)


pytestmark = pytest.mark.integration


async def logs_in(mysql: MySQLServer, user: str, password: str) -> bool:
    return await asyncio.to_thread(can_log_in, mysql, user, password)


async def annotate_rotate(kube: KubeClient, namespace: str, name: str, value: str) -> None:
    patch = {"metadata": {"annotations": {ROTATE_ANNOTATION: value}}}
    await kube.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)


async def test_the_rotate_annotation_rotates_once_per_value(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("gen")
    secret = f"{name}-password"
    body = generated_user(name, TARGET, rotation={"gracePeriod": "2s"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    first = await secret_password(kube_client, namespace, secret)
    passwords.values.add(first)
    assert await logs_in(mysql, name, first)

    await annotate_rotate(kube_client, namespace, name, "r1")
    event = await wait_for_event(kube_client, namespace, name, "Rotated", limit=30)
    assert "r1" in event["message"]
    second = await secret_password(kube_client, namespace, secret)
    passwords.values.add(second)
    assert second != first
    assert await logs_in(mysql, name, second)

    async def trigger_recorded() -> bool:
        return (await rotation_status(kube_client, namespace, name)).get("trigger") == "r1"

    await poll(trigger_recorded, "status.rotation.trigger r1")
    if has_dual_passwords(mysql):
        assert await logs_in(mysql, name, first), "the old password must keep working until the discard"
        await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
    assert not await logs_in(mysql, name, first)

    # The same value again: nothing happens.
    await annotate_rotate(kube_client, namespace, name, "r1")
    await asyncio.sleep(3)
    assert await secret_password(kube_client, namespace, secret) == second
    rotated = [e for e in await events_of(kube_client, namespace, name) if e["reason"] == "Rotated"]
    assert sum(int(e.get("count") or 1) for e in rotated) == 1

    # A new value: one more rotation.
    await annotate_rotate(kube_client, namespace, name, "r2")

    async def rotated_again() -> bool:
        return await secret_password(kube_client, namespace, secret) != second

    await poll(rotated_again, "a second rotation")
    third = await secret_password(kube_client, namespace, secret)
    passwords.values.add(third)
    assert await logs_in(mysql, name, third)
    secret_obj = await kube_client.get(SECRETS, secret, namespace)
    assert "dbuser-operator.pending" not in secret_obj["data"]
    await wait_for_ready(kube_client, namespace, name)


async def test_a_period_rotates_on_schedule(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("period")
    secret = f"{name}-password"
    body = generated_user(name, TARGET, rotation={"period": "4s", "gracePeriod": "1s"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    first = await secret_password(kube_client, namespace, secret)
    passwords.values.add(first)
    status = await rotation_status(kube_client, namespace, name)
    assert "nextRotationTime" in status

    async def rotated() -> bool:
        return await secret_password(kube_client, namespace, secret) != first

    await poll(rotated, "a rotation after the period", limit=30)
    second = await secret_password(kube_client, namespace, secret)
    passwords.values.add(second)
    await poll(lambda: logs_in(mysql, name, second), "the rotated password logs in")

    async def recorded() -> bool:
        return "lastRotationTime" in await rotation_status(kube_client, namespace, name)

    await poll(recorded, "status.rotation.lastRotationTime")
    status = await rotation_status(kube_client, namespace, name)
    assert status["lastRotationTime"] < status["nextRotationTime"]


async def test_a_rotation_rolls_the_named_workloads(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("rollout")
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
    }
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template},
    }
    await kube_client.create(WORKLOADS["Deployment"], deployment, namespace)
    connection = {
        "name": f"{name}-connection",
        "rollout": [{"kind": "Deployment", "name": "web"}, {"kind": "StatefulSet", "name": "missing"}],
    }
    body = generated_user(name, TARGET, connectionSecret=connection, rotation={"gracePeriod": "1s"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    passwords.values.add(await secret_password(kube_client, namespace, f"{name}-password"))

    await annotate_rotate(kube_client, namespace, name, "roll-1")

    async def annotated() -> bool:
        web = await kube_client.get(WORKLOADS["Deployment"], "web", namespace)
        annotations = web["spec"]["template"]["metadata"].get("annotations") or {}
        return CREDENTIAL_VERSION_ANNOTATION in annotations

    await poll(annotated, "the Deployment's pod template annotated")
    passwords.values.add(await secret_password(kube_client, namespace, f"{name}-password"))
    missing = await wait_for_event(kube_client, namespace, name, "RolloutTargetNotFound")
    assert "StatefulSet" in missing["message"]


@pytest.mark.dual_passwords
async def test_a_rotation_interrupted_at_any_step_resumes_without_retaining_twice(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The states a crash leaves, made by hand: the pending password written but not applied; then applied
    to MySQL (marked; on MariaDB, the second entry) but not promoted. Each resumes into one promoted
    password, the previous one retained (never the new one twice)."""
    if not has_dual_passwords(mysql):
        pytest.skip("the marker and RETAIN: MySQL 8.0.21+, MariaDB 10.11+ (others rotate Immediately)")
    name = unique("resume")
    secret = f"{name}-password"
    body = generated_user(name, TARGET, rotation={"gracePeriod": "1h"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    first = await secret_password(kube_client, namespace, secret)
    passwords.values.add(first)

    async def crash_after(pending: str, nonce: str) -> None:
        marks = {"metadata": {"annotations": {PENDING_ANNOTATION: nonce}}}
        data = {"stringData": {PENDING_KEY: pending}}
        await kube_client.patch(SECRETS, secret, {**marks, **data}, PatchType.MERGE, namespace=namespace)

    async def promoted(password: str) -> bool:
        obj = await kube_client.get(SECRETS, secret, namespace)
        return (
            await secret_password(kube_client, namespace, secret) == password
            and PENDING_KEY not in obj["data"]
        )

    # 1. Crash after the pending password was written: resumed, applied (retained), promoted.
    second = passwords.new()
    await crash_after(second, "nonce-2")
    await poll(lambda: promoted(second), "the pending password promoted")
    assert await logs_in(mysql, name, second)
    assert await logs_in(mysql, name, first), "the previous password must be retained"

    # 2. Crash after MySQL took it (marked) but before the promotion: the resumed pass must not retain again.
    third = passwords.new()
    if is_mariadb(mysql):  # the previous password kept as the first entry, the new one (its hash) last
        mysql_query(
            mysql,
            f"ALTER USER '{name}'@'%%' IDENTIFIED VIA mysql_native_password USING %s"
            " OR mysql_native_password USING %s",
            native_hash(second),
            native_hash(third),
        )
    else:
        mysql_query(
            mysql,
            f"ALTER USER '{name}'@'%%' IDENTIFIED BY %s RETAIN CURRENT PASSWORD ATTRIBUTE %s",
            third,
            '{"dbuser-operator.dev/credential": "nonce-3"}',
        )
    await crash_after(third, "nonce-3")
    await poll(lambda: promoted(third), "the applied password promoted")
    await wait_for_ready(kube_client, namespace, name)
    await asyncio.sleep(1)
    assert await logs_in(mysql, name, third)
    assert await logs_in(mysql, name, second), "a retried retain would have lost the previous password"
    assert not await logs_in(mysql, name, first)


async def test_a_generated_rotation_of_several_hosts_is_refused_and_changes_nothing(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("gen")
    secret = f"{name}-password"
    body = generated_user(name, TARGET, hosts=["localhost"])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    first = await secret_password(kube_client, namespace, secret)
    passwords.values.add(first)

    await annotate_rotate(kube_client, namespace, name, "r1")
    obj = await wait_for_ready(kube_client, namespace, name, "False", "RotationUnsupported")
    message = next(c["message"] for c in obj["status"]["conditions"] if c["type"] == "Ready")
    assert "spec.hosts" in message
    secret_obj = await kube_client.get(SECRETS, secret, namespace)
    assert PENDING_KEY not in secret_obj["data"]
    assert PENDING_ANNOTATION not in (secret_obj["metadata"].get("annotations") or {})
    assert await secret_password(kube_client, namespace, secret) == first
    assert await logs_in(mysql, name, first)  # the '%' account keeps its password

    # Without the extra host, the same annotation rotates.
    patch: dict[str, Any] = {"spec": {"hosts": []}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    await wait_for_event(kube_client, namespace, name, "Rotated", limit=30)
    second = await secret_password(kube_client, namespace, secret)
    passwords.values.add(second)
    assert second != first
    assert await logs_in(mysql, name, second)


async def test_the_old_password_works_until_the_grace_period_ends_to_the_fraction_of_a_second(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """status keeps retainedSince in whole seconds: the discard must not measure from the truncated value
    (it did: the old password went up to a second early). Three rotations, each checked 0.3 s before the
    grace period ends, counted from the moment the annotation was applied (before the rotation itself)."""
    if not has_dual_passwords(mysql):
        pytest.skip("no dual passwords: the old password stops at once")
    name = unique("grace")
    secret = f"{name}-password"
    grace = 5.0
    body = generated_user(name, TARGET, rotation={"gracePeriod": f"{grace:.0f}s", "waitForConsumers": False})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    old = await secret_password(kube_client, namespace, secret)
    passwords.values.add(old)
    loop = asyncio.get_running_loop()
    for attempt in range(3):
        await annotate_rotate(kube_client, namespace, name, f"g{attempt}")
        applied = loop.time()  # the annotation is in by now; the rotation follows it
        await asyncio.sleep(grace - 0.3)
        assert loop.time() - applied < grace - 0.2, "the check came too late to mean anything"
        assert await logs_in(mysql, name, old), (
            f"rotation {attempt}: the old password was refused {loop.time() - applied:.2f} s after the "
            f"rotate annotation, within the grace period of {grace:.0f} s"
        )
        await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
        assert not await logs_in(mysql, name, old)
        old = await secret_password(kube_client, namespace, secret)
        passwords.values.add(old)
