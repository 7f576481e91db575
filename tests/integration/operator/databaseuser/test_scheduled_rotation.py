"""Rotation of generated passwords: the rotate annotation (once per new value) and the period; the Secret
changes only once MySQL accepts the new password, and under DualPassword the old one works until the
discard."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import datetime

import pytest

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, ROTATE_ANNOTATION
from dbuser_operator.controllers.databaseuser.steps.rollout import WORKLOADS
from dbuser_operator.controllers.databaseuser.steps.scheduled import PENDING_ANNOTATION, PENDING_KEY
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql.accounts import password_hashes
from dbuser_operator.mysql.accounts.password_hashes import native_hash
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, generated_user, unique
from tests.integration.operator.support.instances import own_target
from tests.integration.operator.support.kube import create_secret, events_of, wait_for_event, wait_for_ready
from tests.integration.operator.support.mysql import can_log_in, has_dual_passwords, is_mariadb, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.replicas import GeneralLog, LogEntry
from tests.integration.operator.support.rotation import (
    applied_version,
    delete_users,
    poll,
    rotation_status,
    secret_password,
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
    body = generated_user(name, rotation={"gracePeriod": "2s"})
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
    body = generated_user(name, rotation={"period": "4s", "gracePeriod": "1s"})
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
    body = generated_user(name, connectionSecret=connection, rotation={"gracePeriod": "1s"})
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
    body = generated_user(name, rotation={"gracePeriod": "1h"})
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
    # The Secret moves no generation: Ready=True is step 1's until the resumed pass writes its status, which
    # names the promoted Secret's version (after MySQL and the Secret: the pass is over).
    await applied_version(kube_client, namespace, name, secret)
    await wait_for_ready(kube_client, namespace, name)
    await asyncio.sleep(1)
    assert await logs_in(mysql, name, third)
    assert await logs_in(mysql, name, second), "a retried retain would have lost the previous password"
    assert not await logs_in(mysql, name, first)


def text(value: object) -> str | bytes:
    return value if isinstance(value, bytes) else str(value)


def passwords_of(mysql: MySQLServer, user: str, host: str) -> tuple[str, str | bytes, str | bytes | None]:
    """The account's plugin, authentication string and retained one (None: none): MySQL's retained
    password, or MariaDB's other entry of ``auth_or`` (``{}`` there stands for the top-level one)."""
    if is_mariadb(mysql):
        [(priv,)] = mysql_query(
            mysql, "SELECT Priv FROM mysql.global_priv WHERE User = %s AND Host = %s", user, host
        )
        entries = json.loads(text(priv))
        others = [entry for entry in entries.get("auth_or") or [] if entry]
        older = others[0]["authentication_string"] if others else None
        return str(entries["plugin"]), str(entries["authentication_string"]), older
    retained = "NULL"
    if has_dual_passwords(mysql):
        retained = "JSON_UNQUOTE(JSON_EXTRACT(User_attributes, '$.additional_password'))"
    [(plugin, auth, secondary)] = mysql_query(
        mysql,
        f"SELECT plugin, authentication_string, {retained} FROM mysql.user WHERE User = %s AND Host = %s",
        user,
        host,
    )
    return str(plugin), text(auth), None if secondary is None else text(secondary)


def holds(mysql: MySQLServer, user: str, host: str, password: str) -> bool:
    """Whether the account's primary password is ``password`` (checked on the server's own hash)."""
    plugin, auth, _ = passwords_of(mysql, user, host)
    return password_hashes.matches(plugin, auth, password) is True


def retains(mysql: MySQLServer, user: str, host: str, password: str) -> bool:
    """Whether the account keeps ``password`` as its retained (secondary) one."""
    plugin, _, secondary = passwords_of(mysql, user, host)
    return secondary is not None and password_hashes.matches(plugin, secondary, password) is True


def alter_user_count(mysql: MySQLServer) -> int:
    [(_, value)] = mysql_query(mysql, "SHOW GLOBAL STATUS LIKE 'Com_alter_user'")
    return int(value)


HOSTS = ("%", "127.0.0.1")  # '%' (spec.host) and spec.hosts; a client on 127.0.0.1 logs in as the second


async def test_a_generated_rotation_reaches_every_host_with_the_strategy_in_force(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("hosts")
    secret = f"{name}-password"
    connection = {"name": f"{name}-db"}
    body = generated_user(
        name, own_target(), hosts=["127.0.0.1"], connectionSecret=connection, rotation={"gracePeriod": "3s"}
    )
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    first = await secret_password(kube_client, namespace, secret)
    passwords.values.add(first)
    assert all(holds(mysql, name, host, first) for host in HOSTS)
    statements = alter_user_count(mysql)

    await annotate_rotate(kube_client, namespace, name, "r1")
    await wait_for_event(kube_client, namespace, name, "Rotated", limit=30)
    second = await secret_password(kube_client, namespace, secret)
    passwords.values.add(second)
    assert second != first
    for host in HOSTS:
        assert holds(mysql, name, host, second), f"'{name}'@'{host}' did not get the new password"
    assert await secret_password(kube_client, namespace, connection["name"]) == second
    assert await logs_in(mysql, name, second)
    obj = await wait_for_ready(kube_client, namespace, name)
    assert sorted(obj["status"]["hosts"]) == sorted(HOSTS)
    dual = has_dual_passwords(mysql)
    if dual:
        for host in HOSTS:
            assert retains(mysql, name, host, first), f"'{name}'@'{host}' lost the previous password"
        assert await logs_in(mysql, name, first), "the old password must keep working until the discard"
        await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
        for host in HOSTS:
            assert not retains(mysql, name, host, first), f"'{name}'@'{host}' kept the old password"
    assert not await logs_in(mysql, name, first)
    # One ALTER USER per host to rotate (and one per host to discard): no second statement re-marking it.
    assert alter_user_count(mysql) - statements == len(HOSTS) * (2 if dual else 1)


async def test_a_rotation_of_several_hosts_that_died_halfway_never_keeps_the_lost_password(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The state a pass leaves that dies after one account took the new password and before the Secret
    had it, made by hand: the '%' account has a password nobody knows (retaining the Secret's, under
    DualPassword). The next rotation sets the Secret's back as drift and rotates every host, never
    retaining the lost one."""
    name = unique("halfway")
    secret = f"{name}-password"
    body = generated_user(name, hosts=["127.0.0.1"], rotation={"gracePeriod": "1h"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    first = await secret_password(kube_client, namespace, secret)
    passwords.values.add(first)
    lost = passwords.new()
    dual = has_dual_passwords(mysql)
    if dual and is_mariadb(mysql):  # the lost password first, the Secret's kept as the second entry
        mysql_query(
            mysql,
            f"ALTER USER '{name}'@'%%' IDENTIFIED VIA mysql_native_password USING PASSWORD(%s)"
            " OR mysql_native_password USING PASSWORD(%s)",
            lost,
            first,
        )
    elif dual:
        mysql_query(
            mysql,
            f"ALTER USER '{name}'@'%%' IDENTIFIED BY %s RETAIN CURRENT PASSWORD ATTRIBUTE %s",
            lost,
            '{"dbuser-operator.dev/credential": "lost-nonce"}',
        )
    else:
        mysql_query(mysql, f"ALTER USER '{name}'@'%%' IDENTIFIED BY %s", lost)

    await annotate_rotate(kube_client, namespace, name, "after-crash")

    async def rotated() -> bool:
        handled = (await rotation_status(kube_client, namespace, name)).get("trigger") == "after-crash"
        return handled and await secret_password(kube_client, namespace, secret) != first

    await poll(rotated, "the rotation after the restore")  # one Event: PasswordRestored, then Rotated
    second = await secret_password(kube_client, namespace, secret)
    passwords.values.add(second)
    await wait_for_ready(kube_client, namespace, name)
    for host in HOSTS:
        assert holds(mysql, name, host, second), f"'{name}'@'{host}' did not get the new password"
        assert not retains(mysql, name, host, lost), f"'{name}'@'{host}' retained the lost password"
        if dual:
            assert retains(mysql, name, host, first), f"'{name}'@'{host}' lost the Secret's old password"


async def test_a_generated_rotation_never_touches_an_account_it_does_not_hold(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A tenant names, in spec.hosts, an account another resource owns and one nobody does: both are
    refused, and the rotate annotation changes no password at all (its own account's neither)."""
    user, first, second = unique("shared"), unique("first"), unique("second")
    owner_password = passwords.new()
    await create_secret(kube_client, namespace, first, {"password": owner_password})
    body = database_user(first, first, user=user, host="10.5.%")
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, first)
    handmade = passwords.new("handmade")
    mysql_query(mysql, f"CREATE USER '{user}'@'10.7.%%' IDENTIFIED BY %s", handmade)
    try:
        body = generated_user(second, user=user, host="10.6.%", hosts=["10.5.%", "10.7.%"])
        await kube_client.create(DATABASE_USERS, body, namespace)
        await wait_for_ready(kube_client, namespace, second, "False", "AccountClaimed")
        own = await secret_password(kube_client, namespace, f"{second}-password")
        passwords.values.add(own)
        statements = alter_user_count(mysql)
        await annotate_rotate(kube_client, namespace, second, "take-over")
        await asyncio.sleep(3)
        assert await secret_password(kube_client, namespace, f"{second}-password") == own
        assert holds(mysql, user, "10.5.%", owner_password)
        assert holds(mysql, user, "10.7.%", handmade)
        assert holds(mysql, user, "10.6.%", own)
        assert alter_user_count(mysql) == statements
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{user}'@'10.7.%'")


@pytest.mark.dual_passwords
async def test_a_hand_edit_of_the_generated_secret_after_a_rotation_retains_the_rotated_password(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """After a rotation the account's marker is the rotation's id: a password then written into the Secret
    by hand is a change like any other (retained), not taken for the rotation's own."""
    if not has_dual_passwords(mysql):
        pytest.skip("dual passwords: MySQL only")
    name = unique("handed")
    secret = f"{name}-password"
    body = generated_user(name, rotation={"gracePeriod": "1s"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    passwords.values.add(await secret_password(kube_client, namespace, secret))
    await annotate_rotate(kube_client, namespace, name, "r1")
    await wait_for_event(kube_client, namespace, name, "Rotated", limit=30)
    rotated = await secret_password(kube_client, namespace, secret)
    passwords.values.add(rotated)
    await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
    longer: dict[str, object] = {"spec": {"rotation": {"gracePeriod": "1h"}}}
    await kube_client.patch(DATABASE_USERS, name, longer, PatchType.MERGE, namespace=namespace)
    # The hour seen first (Ready for the new generation): else the edit below may be applied under the 1s
    # grace period, and its Retained be discarded before the rotated password is tried.
    await wait_for_ready(kube_client, namespace, name)

    edited = passwords.new()
    patch = {"stringData": {"password": edited}}
    await kube_client.patch(SECRETS, secret, patch, PatchType.MERGE, namespace=namespace)
    await wait_for_phase(kube_client, namespace, name, "Retained", limit=30)
    assert await logs_in(mysql, name, edited)
    assert await logs_in(mysql, name, rotated), "the rotated password was cut off at once"


async def test_the_old_password_works_until_the_grace_period_ends_to_the_fraction_of_a_second(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """status keeps retainedSince in whole seconds: the discard must not measure from the truncated value
    (it did: the old password went up to a second early). Three rotations; the promise is checked on the
    server's own clock, in its general log: each discard comes a whole grace period after the statement
    that retained the old password; and a login with the old password tried shortly before the grace
    period ends works if the server received it before the discard (whenever a busy machine sent it)."""
    if not has_dual_passwords(mysql):
        pytest.skip("no dual passwords: the old password stops at once")
    name = unique("grace")
    secret = f"{name}-password"
    grace = 5.0
    body = generated_user(
        name, own_target(), rotation={"gracePeriod": f"{grace:.0f}s", "waitForConsumers": False}
    )
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    old = await secret_password(kube_client, namespace, secret)
    passwords.values.add(old)
    logins: list[bool] = []
    with GeneralLog(mysql) as general_log:
        for attempt in range(3):
            await annotate_rotate(kube_client, namespace, name, f"g{attempt}")
            await asyncio.sleep(grace - 0.3)
            logins.append(await logs_in(mysql, name, old))
            # This rotation's discard: from the second rotation on, the first's Discarded is still there
            # until this one is recorded.
            await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30, trigger=f"g{attempt}")
            assert not await logs_in(mysql, name, old)
            old = await secret_password(kube_client, namespace, secret)
            passwords.values.add(old)
        rotations = retained_and_discarded(general_log.entries(), name)
    assert len(rotations) == 3, f"the general log shows {len(rotations)} rotations of {name}, not 3"
    for attempt, (rotation, worked) in enumerate(zip(rotations, logins, strict=True)):
        retained, discarded, logins_before = rotation
        kept = (discarded - retained).total_seconds()
        assert kept >= grace, f"rotation {attempt}: the old password was discarded after {kept:.3f} s"
        # The first login after the retention is the check's: before the discard, it must have worked.
        if logins_before:
            assert worked, (
                f"rotation {attempt}: the old password was refused before its discard, within the grace "
                f"period of {grace:.0f} s"
            )


def retained_and_discarded(entries: list[LogEntry], user: str) -> list[tuple[datetime, datetime, bool]]:
    """Per rotation of ``user``, from the general log: when the old password was retained, when it was
    discarded, and whether a login as ``user`` reached the server in between."""
    account = f"'{user}'@"
    rotations: list[tuple[datetime, datetime, bool]] = []
    retained: datetime | None = None
    login_between = False
    for entry in entries:
        if entry.command == "Connect" and user in entry.text:
            login_between = login_between or retained is not None
            continue
        if entry.command != "Query" or account not in entry.text or not entry.text.startswith("ALTER USER"):
            continue
        if retaining(entry.text):
            retained, login_between = entry.time, False
        elif retained is not None and discarding(entry.text):
            rotations.append((retained, entry.time, login_between))
            retained = None
    return rotations


def retaining(statement: str) -> bool:
    """MySQL's RETAIN CURRENT PASSWORD, or MariaDB's second authentication (``… OR …``)."""
    return "RETAIN CURRENT PASSWORD" in statement or ("IDENTIFIED VIA" in statement and " OR " in statement)


def discarding(statement: str) -> bool:
    """MySQL's DISCARD OLD PASSWORD, or MariaDB's first authentication written back alone."""
    return "DISCARD OLD PASSWORD" in statement or ("IDENTIFIED VIA" in statement and " OR " not in statement)
