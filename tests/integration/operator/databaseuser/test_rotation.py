"""Password rotation end to end: DualPassword (retain, then discard when it is safe) on MySQL and MariaDB,
its refusal where the server cannot, Immediate on both. Real API server, real MySQL, real client logins;
pods are plain Pod objects whose status the test writes (there is no kubelet)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pymysql
import pytest

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, ROTATE_ANNOTATION
from dbuser_operator.controllers.databaseuser.steps.rollout import WORKLOADS
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import client_tls, loaded_plugin
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import (
    create_secret,
    events_of,
    ready,
    wait_for_event,
    wait_for_ready,
)
from tests.integration.operator.support.mysql import can_log_in, has_dual_passwords, is_mariadb, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.rotation import (
    an_hour_ago,
    applied_version,
    create_pod,
    delete_users,
    poll,
    restart_pod_after_rotation,
    rotation_status,
    wait_for_phase,
)


@pytest.fixture(autouse=True)
async def _cleanup(kube_client: KubeClient, namespace: str) -> AsyncIterator[None]:
    yield
    await delete_users(kube_client, namespace)


pytestmark = pytest.mark.integration
NO_DUAL = (
    "dual passwords: MySQL 8.0.21+, MariaDB 10.11+ (others: test_dual_password_is_refused_where_unsupported)"
)


async def rotate(kube: KubeClient, namespace: str, secret: str, password: str) -> None:
    patch = {"stringData": {"password": password}}
    await kube.patch(SECRETS, secret, patch, PatchType.MERGE, namespace=namespace)


async def logs_in(mysql: MySQLServer, user: str, password: str) -> bool:
    return await asyncio.to_thread(can_log_in, mysql, user, password)


async def immediate_status(kube: KubeClient, namespace: str, name: str) -> dict[str, object]:
    """status.rotation once it records an Immediate rotation (written right after the ALTER USER)."""

    async def recorded() -> bool:
        rotation = await rotation_status(kube, namespace, name)
        return rotation.get("strategy") == "Immediate" and "lastRotationTime" in rotation

    await poll(recorded, "status.rotation of an Immediate rotation")
    return await rotation_status(kube, namespace, name)


async def make_user(
    kube: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    name: str,
    authentication: dict[str, str] | None = None,
    password: str | None = None,
    **rotation: object,
) -> tuple[str, str]:
    """A DatabaseUser ``name`` with its own Secret (named like it), Ready; (its Secret, its password:
    ``password``, or a new one)."""
    first = password or passwords.new()
    await create_secret(kube, namespace, name, {"password": first})
    body = database_user(name, name, rotation=rotation)
    if authentication is not None:
        body["spec"]["authentication"] = authentication
    await kube.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube, namespace, name)
    return name, first


async def test_dual_password_keeps_the_old_one_until_the_grace_period_ends(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("dual")
    secret, first = await make_user(kube_client, namespace, passwords, name, gracePeriod="3s")
    second = passwords.new()
    await rotate(kube_client, namespace, secret, second)

    if not has_dual_passwords(mysql):  # an older MariaDB: unset strategy means Immediate
        await poll(lambda: logs_in(mysql, name, second), "the new password works")
        assert not await logs_in(mysql, name, first)
        rotation = await immediate_status(kube_client, namespace, name)
        assert "phase" not in rotation
        return

    retained = await wait_for_phase(kube_client, namespace, name, "Retained", limit=10)
    assert retained["strategy"] == "DualPassword"
    assert retained["retainedSince"] == retained["lastRotationTime"]
    assert await logs_in(mysql, name, second)
    assert await logs_in(mysql, name, first), "the old password must keep working while it is retained"

    await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
    assert not await logs_in(mysql, name, first)
    assert await logs_in(mysql, name, second)
    await wait_for_event(kube_client, namespace, name, "OldPasswordDiscarded")
    obj = await wait_for_ready(kube_client, namespace, name)
    assert ready(obj)["reason"] == "AccountReady"  # type: ignore[index]


@pytest.mark.dual_passwords
async def test_a_pod_that_never_restarts_holds_the_discard_until_max_wait(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    if not has_dual_passwords(mysql):
        pytest.skip(
            "dual passwords: MySQL 8.0.21+, MariaDB 10.11+ (others: test_dual_password_is_refused_...)"
        )
    name = unique("held")
    secret, first = await make_user(kube_client, namespace, passwords, name, gracePeriod="1s", maxWait="12s")
    await create_pod(kube_client, namespace, "stuck-app", secret, an_hour_ago(), how="volume")
    await create_pod(kube_client, namespace, "other-app", "unrelated-secret", an_hour_ago())
    second = passwords.new()
    await rotate(kube_client, namespace, secret, second)
    retained = await wait_for_phase(kube_client, namespace, name, "Retained", limit=10)

    await asyncio.sleep(6)  # well past the grace period, before the maximum wait
    assert (await rotation_status(kube_client, namespace, name))["phase"] == "Retained"
    assert await logs_in(mysql, name, first), "discarded while a pod that uses the Secret never restarted"

    await wait_for_phase(kube_client, namespace, name, "Discarded", limit=40)
    warning = await wait_for_event(kube_client, namespace, name, "OldPasswordDiscardedWhileInUse")
    assert warning["type"] == "Warning"
    assert "stuck-app" in warning["message"]
    assert "other-app" not in warning["message"]
    discarded_after = datetime.now(UTC) - datetime.fromisoformat(retained["retainedSince"])
    assert discarded_after >= timedelta(seconds=12)
    assert not await logs_in(mysql, name, first)
    assert await logs_in(mysql, name, second)


@pytest.mark.dual_passwords
@pytest.mark.parametrize("how", ["env", "envFrom", "projected"])
async def test_a_restarted_pod_releases_the_discard(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    how: str,
) -> None:
    if not has_dual_passwords(mysql):
        pytest.skip(
            "dual passwords: MySQL 8.0.21+, MariaDB 10.11+ (others: test_dual_password_is_refused_...)"
        )
    name = unique("restart")
    secret, first = await make_user(kube_client, namespace, passwords, name, gracePeriod="1s", maxWait="10m")
    await create_pod(kube_client, namespace, "app", secret, an_hour_ago(), how=how)
    await rotate(kube_client, namespace, secret, passwords.new())
    await wait_for_phase(kube_client, namespace, name, "Retained", limit=10)
    await asyncio.sleep(3)
    assert (await rotation_status(kube_client, namespace, name))["phase"] == "Retained"

    await restart_pod_after_rotation(kube_client, namespace, "app", name)

    await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
    assert not await logs_in(mysql, name, first)
    reasons = [event["reason"] for event in await events_of(kube_client, namespace, name)]
    assert "OldPasswordDiscardedWhileInUse" not in reasons


@pytest.mark.dual_passwords
async def test_an_old_session_holds_the_discard_until_it_closes(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    if not has_dual_passwords(mysql):
        pytest.skip(
            "dual passwords: MySQL 8.0.21+, MariaDB 10.11+ (others: test_dual_password_is_refused_...)"
        )
    name = unique("session")
    secret, first = await make_user(kube_client, namespace, passwords, name, gracePeriod="1s", maxWait="10m")
    session = pymysql.connect(
        host=mysql.host, port=mysql.port, user=name, password=first.encode(), **client_tls(mysql, tls=False)
    )
    try:
        await rotate(kube_client, namespace, secret, passwords.new())
        await wait_for_phase(kube_client, namespace, name, "Retained", limit=10)
        await asyncio.sleep(4)
        assert (await rotation_status(kube_client, namespace, name))["phase"] == "Retained"
    finally:
        session.close()
    await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
    assert not await logs_in(mysql, name, first)


@pytest.mark.dual_passwords
async def test_a_session_of_another_account_of_the_user_name_does_not_hold_the_discard(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """Another tenant's (or a DBA's) account of the same user name on another host, with a session open
    from before the rotation: the processlist shows the same user name, but the session's client host is
    one this account's host does not admit, so it is not this account's and holds nothing."""
    if not has_dual_passwords(mysql):
        pytest.skip(NO_DUAL)
    name = unique("samename")
    first = passwords.new()
    await create_secret(kube_client, namespace, name, {"password": first})
    body = database_user(name, name, host="10.9.9.9", rotation={"gracePeriod": "1s", "maxWait": "10m"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    theirs = passwords.new()
    mysql_query(mysql, f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", theirs)
    session = pymysql.connect(
        host=mysql.host, port=mysql.port, user=name, password=theirs.encode(), **client_tls(mysql, tls=False)
    )
    try:
        await rotate(kube_client, namespace, name, passwords.new())
        await wait_for_phase(kube_client, namespace, name, "Retained", limit=10)
        await wait_for_phase(kube_client, namespace, name, "Discarded", limit=20)
        reasons = [event["reason"] for event in await events_of(kube_client, namespace, name)]
        assert "OldPasswordDiscardedWhileInUse" not in reasons
        with session.cursor() as cursor:  # the other account's session was left alone
            cursor.execute("SELECT CURRENT_USER()")
            assert cursor.fetchone() == (f"{name}@%",)
    finally:
        session.close()
        mysql_query(mysql, f"DROP USER IF EXISTS '{name}'@'%%'")


async def test_dual_password_is_refused_where_unsupported(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("asked")
    first = passwords.new()
    await create_secret(kube_client, namespace, name, {"password": first})
    body = database_user(name, name, rotation={"strategy": "DualPassword"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    if has_dual_passwords(mysql):
        await wait_for_ready(kube_client, namespace, name)
        return
    obj = await wait_for_ready(kube_client, namespace, name, "False", "DualPasswordUnsupported")
    message = ready(obj)["message"]  # type: ignore[index]
    assert "MariaDB" in message
    assert "Immediate" in message
    assert not await logs_in(mysql, name, first)  # never silently created with another strategy

    # Immediate is accepted, and rotates at once.
    patch = {"spec": {"rotation": {"strategy": "Immediate"}}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    await wait_for_ready(kube_client, namespace, name)
    assert await logs_in(mysql, name, first)
    second = passwords.new()
    await rotate(kube_client, namespace, name, second)
    await poll(lambda: logs_in(mysql, name, second), "the new password works")
    assert not await logs_in(mysql, name, first)
    await immediate_status(kube_client, namespace, name)


async def test_ed25519_on_mariadb_rotates_immediately_and_refuses_dual_password(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A second ed25519 authentication takes a second plugin switch that common clients refuse: ed25519
    accounts keep Immediate by default, and DualPassword asked is refused with the reason."""
    if not is_mariadb(mysql):
        pytest.skip("ed25519: a MariaDB plugin")
    with loaded_plugin(mysql, "mariadb", "ed25519"):
        name = unique("ed")
        secret, first = await make_user(
            kube_client, namespace, passwords, name, authentication={"plugin": "ed25519"}
        )
        second = passwords.new()
        await rotate(kube_client, namespace, secret, second)
        await poll(lambda: logs_in(mysql, name, second), "the new password works")
        assert not await logs_in(mysql, name, first)
        assert "phase" not in await immediate_status(kube_client, namespace, name)

        patch = {"spec": {"rotation": {"strategy": "DualPassword"}}}
        await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
        obj = await wait_for_ready(kube_client, namespace, name, "False", "DualPasswordUnsupported")
        assert "ed25519" in ready(obj)["message"]  # type: ignore[index]
        await delete_users(kube_client, namespace)  # dropped before the plugin is unloaded


async def test_immediate_rotates_at_once(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("immediate")
    secret, first = await make_user(kube_client, namespace, passwords, name, strategy="Immediate")
    second = passwords.new()
    await rotate(kube_client, namespace, secret, second)
    await poll(lambda: logs_in(mysql, name, second), "the new password works")
    assert not await logs_in(mysql, name, first)
    rotation = await immediate_status(kube_client, namespace, name)
    assert "phase" not in rotation


async def test_the_rotate_annotation_on_a_users_own_secret_is_ignored_with_a_warning(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("own")
    _, first = await make_user(kube_client, namespace, passwords, name)
    patch = {"metadata": {"annotations": {ROTATE_ANNOTATION: "now"}}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    warning = await wait_for_event(kube_client, namespace, name, "RotateIgnored")
    assert "generated passwords only" in warning["message"]
    assert (await rotation_status(kube_client, namespace, name)).get("trigger") == "now"
    assert await logs_in(mysql, name, first)


async def test_a_secret_edit_that_keeps_the_password_is_no_rotation(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A label, an annotation or another key of the password's Secret changed: no ALTER USER, no new
    credential marker, no Event, no rollout, status.rotation as it was. The password changed: a rotation."""
    name = unique("same")
    first = passwords.new()
    await create_secret(kube_client, namespace, name, {"password": first})
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "a", "image": "a:1"}]},
    }
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template},
    }
    await kube_client.create(WORKLOADS["Deployment"], deployment, namespace)
    connection = {"name": f"{name}-db", "rollout": [{"kind": "Deployment", "name": "web"}]}
    body = database_user(name, name, rotation={"gracePeriod": "1s"}, connectionSecret=connection)
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)

    async def rolled_out() -> str | None:
        web = await kube_client.get(WORKLOADS["Deployment"], "web", namespace)
        value = (web["spec"]["template"]["metadata"].get("annotations") or {}).get(
            CREDENTIAL_VERSION_ANNOTATION
        )
        return None if value is None else str(value)

    async def reported() -> dict[str, int]:
        """How often each reason of a password change was reported (Events of a pass are one)."""
        counts = {reason: 0 for reason in PASSWORD_REASONS}
        for event in await events_of(kube_client, namespace, name):
            if event["reason"] in counts:
                counts[event["reason"]] += int(event.get("count") or 1)
        return counts

    async def same_password_edits(round_: int) -> None:
        before_status = await rotation_status(kube_client, namespace, name)
        before_events = await reported()
        before_rollout = await rolled_out()
        marker = credential_marker(mysql, name)
        statements = alter_user_count(mysql)
        edits = [
            {"metadata": {"labels": {"edited": str(round_)}}},
            {"metadata": {"annotations": {"note": f"edit {round_}"}}},
            {"stringData": {"other": f"value {round_}"}},
        ]
        for edit in edits:
            await kube_client.patch(SECRETS, name, edit, PatchType.MERGE, namespace=namespace)
            await applied_version(kube_client, namespace, name, name)
        await asyncio.sleep(1.5)  # past the grace period: a retained password would be discarded by now
        assert alter_user_count(mysql) == statements, "a Secret edit that kept the password sent ALTER USER"
        assert credential_marker(mysql, name) == marker
        assert await rotation_status(kube_client, namespace, name) == before_status
        assert await reported() == before_events, "a Secret edit that kept the password was reported"
        assert await rolled_out() == before_rollout, "a Secret edit that kept the password rolled pods"
        assert await logs_in(mysql, name, current)

    async def rolled_out_at_all() -> bool:
        return await rolled_out() is not None

    current = first
    await same_password_edits(1)
    assert await rolled_out() is None

    # The password changed: a rotation as before (retained under DualPassword, then discarded).
    current = passwords.new()
    await rotate(kube_client, namespace, name, current)
    await poll(lambda: logs_in(mysql, name, current), "the new password works")
    await poll(rolled_out_at_all, "the rollout after the rotation")
    if has_dual_passwords(mysql):
        await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
    else:
        await immediate_status(kube_client, namespace, name)
    assert not await logs_in(mysql, name, first)
    await wait_for_ready(kube_client, namespace, name)
    # The rotation's Events are one (PasswordRetained under DualPassword, else PasswordSet), the discard's
    # another: both in before the edits are counted.
    first_reason = "PasswordRetained" if has_dual_passwords(mysql) else "PasswordSet"
    await wait_for_event(kube_client, namespace, name, first_reason)
    if has_dual_passwords(mysql):
        await wait_for_event(kube_client, namespace, name, "OldPasswordDiscarded")

    # And again after a rotation: still nothing.
    await same_password_edits(2)


PASSWORD_REASONS = (
    "PasswordSet",
    "PasswordRetained",
    "PasswordRestored",
    "OldPasswordDiscarded",
    "RolloutStarted",
)


def alter_user_count(mysql: MySQLServer) -> int:
    [(_, value)] = mysql_query(mysql, "SHOW GLOBAL STATUS LIKE 'Com_alter_user'")
    return int(value)


def credential_marker(mysql: MySQLServer, user: str) -> object:
    """The account's credential marker: MySQL's account attributes; on MariaDB its authentications (the
    first entry's hash is the marker there)."""
    if is_mariadb(mysql):
        [(priv,)] = mysql_query(
            mysql,
            "SELECT JSON_EXTRACT(Priv, '$.authentication_string', '$.auth_or') FROM mysql.global_priv"
            " WHERE User = %s AND Host = '%%'",
            user,
        )
        return priv
    if not has_dual_passwords(mysql):
        return None
    [(marker,)] = mysql_query(
        mysql,
        "SELECT JSON_EXTRACT(User_attributes, '$.metadata') FROM mysql.user WHERE User = %s AND Host = '%%'",
        user,
    )
    return marker
