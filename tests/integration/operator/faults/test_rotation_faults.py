"""A DualPassword rotation survives its operator: SIGKILLed between any two of its steps, or paused
(SIGSTOP) past its lease while a standby takes over. The phase resumes in the next process; afterwards the
password in MySQL, the Secret and status agree, and the old password no longer works; clients that log in
all along never fail, even when the leader is killed right after an ALTER USER reached the server. Real
operator processes (the replicas harness), real API server, MySQL 9.7 and MariaDB 11.8 (the rotation's SQL
differs by flavour, not by MariaDB version: ``tests/support/passes.py``)."""

from __future__ import annotations

import asyncio

import pytest

from dbuser_operator.api.v1alpha1 import ROTATE_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, generated_user
from tests.integration.operator.support.kube import create_secret, wait_for_event, wait_for_ready
from tests.integration.operator.support.mysql import can_log_in, has_dual_passwords, is_mariadb, mysql_query
from tests.integration.operator.support.operator import PasswordLedger
from tests.integration.operator.support.replicas import Failover, killed_when_answered
from tests.integration.operator.support.rotation import (
    Load,
    logging_in,
    poll,
    rotation_status,
    secret_password,
    wait_for_phase,
)
from tests.support.fault_proxy import FaultProxy

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.dual_passwords]

CLIENTS = 20  # clients logging in all along


@pytest.fixture
def replicas(replica_pair: Failover, mysql: MySQLServer) -> Failover:
    """The replica pair without the general log (the load tests log in thousands of times), on a server
    with dual passwords."""
    if not has_dual_passwords(mysql):
        pytest.skip("DualPassword rotation: MySQL 8.0.21+, MariaDB 10.11+")
    return replica_pair


async def start_rotation(
    replicas: Failover, kube: KubeClient, passwords: PasswordLedger
) -> tuple[str, str, str]:
    """A DatabaseUser on its first password, then its Secret changed: (name, old, new) once Retained."""
    name = f"rot-{replicas.suffix}"
    first, second = passwords.new(), passwords.new()
    await create_secret(kube, replicas.namespace, name, {"password": first})
    rotation = {"gracePeriod": "8s", "maxWait": "5m"}
    body = database_user(name, name, target=replicas.target, rotation=rotation)
    await kube.create(DATABASE_USERS, body, replicas.namespace)
    await wait_for_ready(kube, replicas.namespace, name, limit=60)
    patch = {"stringData": {"password": second}}
    await kube.patch(SECRETS, name, patch, PatchType.MERGE, namespace=replicas.namespace)
    await wait_for_phase(kube, replicas.namespace, name, "Retained", limit=30)
    return name, first, second


async def assert_agreed(
    replicas: Failover, kube: KubeClient, mysql: MySQLServer, name: str, old: str, new: str
) -> None:
    """Discarded; MySQL takes the Secret's password only; status names the Secret version applied."""
    await wait_for_phase(kube, replicas.namespace, name, "Discarded", limit=60)
    await wait_for_event(kube, replicas.namespace, name, "OldPasswordDiscarded")
    assert await asyncio.to_thread(can_log_in, mysql, name, new)
    assert not await asyncio.to_thread(can_log_in, mysql, name, old)
    secret = await kube.get(SECRETS, name, replicas.namespace)

    async def applied() -> bool:
        obj = await kube.get(DATABASE_USERS, name, replicas.namespace)
        recorded = (obj.get("status") or {}).get("appliedSecret") or {}
        return bool(recorded.get("resourceVersion") == secret["metadata"]["resourceVersion"])

    await poll(applied, "status.appliedSecret names the Secret's version")
    rotation = await rotation_status(kube, replicas.namespace, name)
    assert rotation["strategy"] == "DualPassword"


async def test_a_killed_operator_resumes_the_rotation(
    replicas: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    a = replicas.start("a")
    await replicas.wait_for_holder(kube_client, a)
    name, old, new = await start_rotation(replicas, kube_client, passwords)

    assert a.process is not None
    a.kill()  # between the retain and the discard
    assert await asyncio.to_thread(can_log_in, mysql, name, old), "the kill must not lose the old password"

    b = replicas.start("b")
    await replicas.wait_for_holder(kube_client, b, limit=60)
    await assert_agreed(replicas, kube_client, mysql, name, old, new)


async def nothing() -> None:
    """What makes the replica write is already under way."""


async def test_a_rotation_resumes_from_what_a_kill_between_any_two_steps_leaves(
    replicas: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    """The steps: the ALTER USER that keeps both passwords, status Retained, the discard's ALTER USER,
    status Discarded. Each kill is a real SIGKILL: after an ALTER USER, once the server ran it and before
    the operator read its answer (the fault proxy keeps the answer back), or after a status write."""
    namespace, name = replicas.namespace, f"steps-{replicas.suffix}"
    old, new = passwords.new(), passwords.new()
    async with FaultProxy(mysql.host, mysql.port) as to_mysql:
        a = replicas.start("a", mysql_port=to_mysql.port)
        await replicas.wait_for_holder(kube_client, a)
        await create_secret(kube_client, namespace, name, {"password": old})
        rotation = {"gracePeriod": "8s", "maxWait": "5m"}
        body = database_user(name, name, target=replicas.target, rotation=rotation)
        await kube_client.create(DATABASE_USERS, body, namespace)
        await wait_for_ready(kube_client, namespace, name, limit=60)

        # 1. Killed after the ALTER USER that keeps both, before status said Retained.
        patch = {"stringData": {"password": new}}

        async def rotate() -> None:
            await kube_client.patch(SECRETS, name, patch, PatchType.MERGE, namespace=namespace)

        print("killed after", await killed_when_answered(a, to_mysql, rotate, b"ALTER USER"))
        assert await asyncio.to_thread(can_log_in, mysql, name, old), "the kill lost the old password"
        assert await asyncio.to_thread(can_log_in, mysql, name, new), "the ALTER USER did not land"
        b = replicas.start("b", mysql_port=to_mysql.port)
        await replicas.wait_for_holder(kube_client, b, limit=60)
        await wait_for_phase(kube_client, namespace, name, "Retained", limit=30)
        assert await asyncio.to_thread(can_log_in, mysql, name, old), "a resumed retain lost the old password"
        assert await asyncio.to_thread(can_log_in, mysql, name, new)

        # 2. Killed after the status write (Retained), before the discard; then
        # 3. killed after the discard's ALTER USER, before status said Discarded.
        # (armed at once: the discard waits for the 8 s grace period)
        print("killed after", await killed_when_answered(b, to_mysql, nothing, b"ALTER USER"))
        assert not await asyncio.to_thread(can_log_in, mysql, name, old), "the discard did not land"
        a = replicas.start("a", mysql_port=to_mysql.port)
        await replicas.wait_for_holder(kube_client, a, limit=60)
        await assert_agreed(replicas, kube_client, mysql, name, old, new)
    if is_mariadb(mysql):  # one authentication left, not two nor three
        [(chain,)] = mysql_query(
            mysql, "SELECT JSON_LENGTH(Priv, '$.auth_or') FROM mysql.global_priv WHERE User = %s", name
        )
        assert chain in {None, 0, 1}


async def test_a_failover_mid_rotation_resumes_it(
    replicas: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    a = replicas.start("a")
    await replicas.wait_for_holder(kube_client, a)
    b = replicas.start("b")
    name, old, new = await start_rotation(replicas, kube_client, passwords)

    a.pause()
    await replicas.wait_for_holder(kube_client, b, limit=60)
    await assert_agreed(replicas, kube_client, mysql, name, old, new)
    a.resume()
    assert await a.exit_code() == 1
    await asyncio.sleep(1)  # anything the old leader still had would have landed by now
    assert await asyncio.to_thread(can_log_in, mysql, name, new)
    assert not await asyncio.to_thread(can_log_in, mysql, name, old)
    assert (await rotation_status(kube_client, replicas.namespace, name))["phase"] == "Discarded"


async def test_no_login_fails_when_a_generated_rotation_is_killed_after_each_of_its_alter_users(
    replicas: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    """20 clients log in all along with the password the connection Secret publishes, while the leader is
    SIGKILLed right after the rotation's ALTER USER reached the server (both passwords valid, the new one
    in no Secret yet), and its successor right after the discard's; a third finishes. Not one login
    fails; afterwards only the Secret's password logs in."""
    namespace, name = replicas.namespace, f"gen-{replicas.suffix}"
    secret = f"{name}-connection"
    async with FaultProxy(mysql.host, mysql.port) as to_mysql:
        a = replicas.start("a", mysql_port=to_mysql.port)
        await replicas.wait_for_holder(kube_client, a)
        rotation = {"gracePeriod": "8s", "maxWait": "2m"}
        body = generated_user(
            name, target=replicas.target, rotation=rotation, connectionSecret={"name": secret}
        )
        await kube_client.create(DATABASE_USERS, body, namespace)
        await wait_for_ready(kube_client, namespace, name, limit=60)
        first = await secret_password(kube_client, namespace, secret)
        passwords.values.add(first)
        load = Load(mysql, name, first)
        async with logging_in(load, kube_client, namespace, secret, CLIENTS):
            await asyncio.sleep(1)
            patch = {"metadata": {"annotations": {ROTATE_ANNOTATION: "fault-1"}}}

            async def rotate() -> None:
                await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)

            print("killed after", await killed_when_answered(a, to_mysql, rotate, b"ALTER USER"))
            b = replicas.start("b", mysql_port=to_mysql.port)
            await replicas.wait_for_holder(kube_client, b, limit=60)
            await wait_for_phase(kube_client, namespace, name, "Retained", limit=60, trigger="fault-1")
            # the discard's (armed at once: it waits for the 8 s grace period)
            print("killed after", await killed_when_answered(b, to_mysql, nothing, b"ALTER USER"))
            a = replicas.start("a", mysql_port=to_mysql.port)
            await replicas.wait_for_holder(kube_client, a, limit=60)
            await wait_for_phase(kube_client, namespace, name, "Discarded", limit=90, trigger="fault-1")
            await asyncio.sleep(1)
    current = await secret_password(kube_client, namespace, secret)
    passwords.values.add(current)
    print(f"{load.logins} logins, {len(load.failures)} failed")
    assert load.failures == []
    assert load.logins > CLIENTS
    assert current != first
    assert await asyncio.to_thread(can_log_in, mysql, name, current)
    assert not await asyncio.to_thread(can_log_in, mysql, name, first)
