"""A DualPassword rotation survives its operator: SIGKILLed between any two of its steps, or paused
(SIGSTOP) past its lease while a standby takes over. The phase resumes in the next process; afterwards the
password in MySQL, the Secret and status agree, and the old password no longer works. Real operator
processes (the replicas harness), real API server and MySQL 9.7, MariaDB 11.8 or 10.11."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.mysql.accounts.dual_password import CREDENTIAL_ATTRIBUTE
from dbuser_operator.mysql.accounts.password_hashes import native_hash
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user
from tests.integration.operator.support.instances import Instances
from tests.integration.operator.support.kube import create_secret, wait_for_event, wait_for_ready
from tests.integration.operator.support.mysql import can_log_in, has_dual_passwords, is_mariadb, mysql_query
from tests.integration.operator.support.operator import PasswordLedger
from tests.integration.operator.support.replicas import Failover, Replica
from tests.integration.operator.support.rotation import poll, rotation_status, wait_for_phase

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.dual_passwords]


@pytest.fixture
async def replicas(
    kube: KubeCluster,
    mysql: MySQLServer,
    crds: list[str],
    namespace: str,
    kube_api: client.ApiClient,
    envtest_workdir: Path,
    instances: Instances,
) -> AsyncIterator[Failover]:
    if not has_dual_passwords(mysql):
        pytest.skip("DualPassword rotation: MySQL 8.0.21+, MariaDB 10.11+")
    workdir = envtest_workdir / "operator" / namespace  # the replicas' logs are checked for leaks too
    workdir.mkdir(parents=True)
    setup = Failover(kube, mysql, namespace, workdir)
    await setup.prepare(kube_api, "a", "b")
    try:
        yield setup
    finally:
        await setup.tear_down(kube_api, instances)


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
    a.process.send_signal(signal.SIGKILL)  # between the retain and the discard
    a.process.wait(timeout=10)
    assert await asyncio.to_thread(can_log_in, mysql, name, old), "the kill must not lose the old password"

    b = replicas.start("b")
    await replicas.wait_for_holder(kube_client, b, limit=60)
    await assert_agreed(replicas, kube_client, mysql, name, old, new)


def kill(replica: Replica) -> None:
    assert replica.process is not None
    replica.process.send_signal(signal.SIGKILL)
    replica.process.wait(timeout=10)


def keep_both(mysql: MySQLServer, name: str, old: str, new: str, secret: dict[str, Any]) -> None:
    """What the rotation's ALTER USER leaves: both passwords, the new one marked as the Secret's version
    (MySQL: an account attribute; MariaDB: its hash as the last entry)."""
    if is_mariadb(mysql):
        mysql_query(
            mysql,
            f"ALTER USER '{name}'@'%%' IDENTIFIED VIA mysql_native_password USING %s"
            " OR mysql_native_password USING %s",
            native_hash(old),
            native_hash(new),
        )
        return
    version = f"{secret['metadata']['uid']}/{secret['metadata']['resourceVersion']}"
    mysql_query(
        mysql,
        f"ALTER USER '{name}'@'%%' IDENTIFIED BY %s RETAIN CURRENT PASSWORD ATTRIBUTE %s",
        new,
        json.dumps({CREDENTIAL_ATTRIBUTE: version}),
    )


def discard(mysql: MySQLServer, name: str, new: str) -> None:
    """What the discard's ALTER USER leaves: the new password alone."""
    if is_mariadb(mysql):
        mysql_query(
            mysql, f"ALTER USER '{name}'@'%%' IDENTIFIED VIA mysql_native_password USING %s", native_hash(new)
        )
    else:
        mysql_query(mysql, f"ALTER USER '{name}'@'%' DISCARD OLD PASSWORD")  # no parameters: a plain %


async def test_a_rotation_resumes_from_what_a_kill_between_any_two_steps_leaves(
    replicas: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    """The steps: the ALTER USER that keeps both passwords, status Retained, the discard's ALTER USER,
    status Discarded. A kill after an ALTER USER and before its status write leaves a state no timing makes
    reliably: made by hand here, while no replica runs; a kill after a status write is a real SIGKILL."""
    a = replicas.start("a")
    await replicas.wait_for_holder(kube_client, a)
    namespace, name = replicas.namespace, f"steps-{replicas.suffix}"
    old, new = passwords.new(), passwords.new()
    await create_secret(kube_client, namespace, name, {"password": old})
    rotation = {"gracePeriod": "8s", "maxWait": "5m"}
    body = database_user(name, name, target=replicas.target, rotation=rotation)
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name, limit=60)
    kill(a)

    # 1. Killed after the ALTER USER that keeps both, before status said Retained.
    patch = {"stringData": {"password": new}}
    secret = await kube_client.patch(SECRETS, name, patch, PatchType.MERGE, namespace=namespace)
    keep_both(mysql, name, old, new, secret)
    b = replicas.start("b")
    await replicas.wait_for_holder(kube_client, b, limit=60)
    await wait_for_phase(kube_client, namespace, name, "Retained", limit=30)
    assert await asyncio.to_thread(can_log_in, mysql, name, old), "a resumed retain lost the old password"
    assert await asyncio.to_thread(can_log_in, mysql, name, new)

    # 2. Killed while Retained, before the discard.
    kill(b)
    assert await asyncio.to_thread(can_log_in, mysql, name, old), "the kill must not lose the old password"

    # 3. Killed after the discard's ALTER USER, before status said Discarded.
    discard(mysql, name, new)
    a = replicas.start("a")
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
