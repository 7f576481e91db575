"""`dbuser_operator_resources_degraded` follows the resource: 1 while its Secret is missing (SecretNotFound,
Degraded), 0 once it is Ready — read from the running operator's registry, as a scrape would."""

from __future__ import annotations

import pytest

from dbuser_operator.controllers.kit.degraded import NAME
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.metrics import REGISTRY
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, wait_for_ready, wait_until_gone
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration


def degraded(namespace: str) -> float | None:
    return REGISTRY.get_sample_value(NAME, {"kind": "DatabaseUser", "namespace": namespace})


async def test_a_user_without_its_secret_counts_as_degraded_until_ready(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    name = unique("degraded")
    await kube_client.create(DATABASE_USERS, database_user(name, "later-pw"), namespace)
    await wait_for_ready(kube_client, namespace, name, "False", "SecretNotFound")
    await eventually(lambda: degraded(namespace) == 1.0, message=f"{NAME} never counted the user")

    await create_secret(kube_client, namespace, "later-pw", {"password": passwords.new()})
    await wait_for_ready(kube_client, namespace, name)
    await eventually(lambda: degraded(namespace) == 0.0, message=f"{NAME} still counts the Ready user")
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
