"""Zero-downtime rotation under load (MySQL 9.7; MariaDB 10.11 with mysql_native_password, the home of this
folder in ``tests/support/passes.py``): 20 real clients reconnect every few milliseconds, each login with
the password the connection Secret holds on the API server at that moment (as a mounted file refreshed from
it would give), across several rotations of a generated password. Not one login may fail; after each
discard the old password no longer works. The same under SIGKILLed leaders:
``faults/test_rotation_faults.py``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from dbuser_operator.api.v1alpha1 import ROTATE_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.operator.support.builders import generated_user, unique
from tests.integration.operator.support.kube import wait_for_ready
from tests.integration.operator.support.mysql import can_log_in, has_dual_passwords
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.rotation import (
    Load,
    delete_users,
    logging_in,
    poll,
    rotation_status,
    secret_password,
)


@pytest.fixture(autouse=True)
async def _cleanup(kube_client: KubeClient, namespace: str) -> AsyncIterator[None]:
    yield
    await delete_users(kube_client, namespace)


pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLIENTS = 20
ROTATIONS = 3


@pytest.mark.dual_passwords
async def test_zero_failed_logins_across_rotations(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    if not has_dual_passwords(mysql):
        pytest.skip("zero-downtime rotation needs dual passwords: MySQL 8.0.21+, MariaDB 10.11+")
    name = unique("load")
    secret = f"{name}-connection"  # what the applications mount
    connection = {"name": secret}
    rotation = {"gracePeriod": "2s", "maxWait": "2m"}
    body = generated_user(name, rotation=rotation, connectionSecret=connection)
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    load = Load(mysql, name, await secret_password(kube_client, namespace, secret))
    passwords.values.add(load.password)
    seen = [load.password]
    async with logging_in(load, kube_client, namespace, secret, CLIENTS):
        await asyncio.sleep(2)
        for round_ in range(1, ROTATIONS + 1):
            trigger = f"load-{round_}"
            patch = {"metadata": {"annotations": {ROTATE_ANNOTATION: trigger}}}
            await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)

            async def discarded(trigger: str = trigger) -> bool:
                rotation = await rotation_status(kube_client, namespace, name)
                return rotation.get("trigger") == trigger and rotation.get("phase") == "Discarded"

            await poll(discarded, f"rotation {trigger} discarded", limit=90)
            current = await secret_password(kube_client, namespace, secret)
            passwords.values.add(current)
            assert current != seen[-1]
            old = seen[-1]
            seen.append(current)
            assert not await asyncio.to_thread(can_log_in, mysql, name, old), "the old password still works"
            await asyncio.sleep(1)
    print(f"{load.logins} logins across {ROTATIONS} rotations, {len(load.failures)} failed")
    assert load.failures == []
    assert load.logins > CLIENTS * ROTATIONS
    assert await asyncio.to_thread(can_log_in, mysql, name, seen[-1])
