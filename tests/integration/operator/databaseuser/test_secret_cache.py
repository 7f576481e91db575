"""The operator caches only the Secrets its DatabaseUsers name, and still sees every change to them.

A Secret referenced by a user listed at start-up, made long before its user (fetched: the user never
reports it missing), made after its user, edited (the new password applies), deleted (the user reports
it), switched to (the old one let go), and released with its user; hundreds of unrelated Secrets are
never cached.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator import app
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import SECRETS, ObjectKey
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, delete_all_users, wait_for_ready
from tests.integration.operator.support.mysql import can_log_in
from tests.integration.operator.support.operator import PasswordLedger, capture_logs, operator_settings
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

TARGET = "secret-cache"  # not the session operator's: this test runs its own


@asynccontextmanager
async def own_operator(
    kube: KubeCluster, mysql: MySQLServer, api: client.ApiClient, namespace: str, workdir: Path
) -> AsyncIterator[Informer]:
    """The operator's manager for ``namespace`` and :data:`TARGET`, running; its Secret cache. Its log goes
    where the session's password-leak check reads the operators' logs."""
    log_dir = workdir / "operator"
    log_dir.mkdir(exist_ok=True)
    handler = capture_logs(log_dir / "secret-cache.log")
    settings = operator_settings(kube, mysql, log_dir, target=TARGET, namespaces=[namespace])
    db = Database(app.connection_settings(settings))
    manager = app.build_manager(settings, KubeClient(api), db)
    secrets = next(informer for informer in manager.informers if informer.resource == SECRETS)
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    try:
        await eventually(lambda: secrets.has_synced, timeout=30)
        yield secrets
        await delete_all_users(KubeClient(api), namespace)  # while it runs: their accounts go with them
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)
        await db.close()
        logging.getLogger().removeHandler(handler)
        handler.close()


def cached_names(secrets: Informer) -> set[str]:
    return {key.name for key in secrets.store.object_keys()}


async def warnings_about(kube: KubeClient, namespace: str, name: str) -> list[str]:
    events = await kube.request("GET", f"/api/v1/namespaces/{namespace}/events")
    return [
        event["reason"]
        for event in events.get("items") or []
        if event["involvedObject"].get("name") == name and event.get("type") == "Warning"
    ]


async def unrelated(kube: KubeClient, namespace: str, prefix: str, count: int) -> None:
    async def create(n: int) -> None:
        await create_secret(kube, namespace, f"{prefix}-{n}", {"value": "x" * 100})

    for start in range(0, count, 50):
        await asyncio.gather(*(create(n) for n in range(start, min(start + 50, count))))


def user(name: str, secret: str) -> dict[str, Any]:
    return database_user(name, secret, target=TARGET, rotation={"strategy": "Immediate"})


async def test_only_the_secrets_users_name_are_cached_and_every_change_to_them_applies(
    kube: KubeCluster,
    kube_api: client.ApiClient,
    crds: list[str],
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    envtest_workdir: Path,
) -> None:
    kube_client = KubeClient(kube_api)
    first, early, late = unique("first"), unique("early"), unique("late")
    await unrelated(kube_client, namespace, "before", 40)
    await create_secret(kube_client, namespace, "first-pw", {"password": passwords.new()})
    early_password = passwords.new()
    await create_secret(kube_client, namespace, "early-pw", {"password": early_password})
    await kube_client.create(DATABASE_USERS, user(first, "first-pw"), namespace)

    async with own_operator(kube, mysql, kube_api, namespace, envtest_workdir) as secrets:
        await wait_for_ready(kube_client, namespace, first)
        assert cached_names(secrets) == {"first-pw"}  # from the list: 41 others were never kept

        # Long after its Secret was made (and dropped): fetched before the user is reconciled.
        await unrelated(kube_client, namespace, "during", 300)  # more than the recently-dropped set holds
        await kube_client.create(DATABASE_USERS, user(early, "early-pw"), namespace)
        await wait_for_ready(kube_client, namespace, early)
        assert can_log_in(mysql, early, early_password)

        # A user first, its Secret later.
        await kube_client.create(DATABASE_USERS, user(late, "late-pw"), namespace)
        await wait_for_ready(kube_client, namespace, late, "False", "SecretNotFound")
        await create_secret(kube_client, namespace, "late-pw", {"password": passwords.new()})
        await wait_for_ready(kube_client, namespace, late)

        # An edit applies within moments.
        edited = passwords.new()
        await kube_client.patch(
            SECRETS, "late-pw", {"stringData": {"password": edited}}, PatchType.MERGE, namespace=namespace
        )
        changed = time.monotonic()
        edit = "the edited password applied"
        await eventually(lambda: can_log_in(mysql, late, edited), timeout=60, interval=0.01, what=edit)
        print(f"Secret edit -> new password logs in: {(time.monotonic() - changed) * 1000:.0f} ms")

        # The user whose Secret was fetched never reported it missing on the way to Ready; the late one did.
        assert "SecretNotFound" in await warnings_about(kube_client, namespace, late)
        assert "SecretNotFound" not in await warnings_about(kube_client, namespace, early)

        # A deleted Secret is reported.
        await kube_client.delete(SECRETS, "early-pw", namespace)
        await wait_for_ready(kube_client, namespace, early, "False", "SecretNotFound")
        assert cached_names(secrets) == {"first-pw", "late-pw"}

        # A user switched to another Secret (made long ago): that one is fetched, the old one let go.
        switched = passwords.new()
        await create_secret(kube_client, namespace, "switched-pw", {"password": switched})
        await unrelated(kube_client, namespace, "after", 300)
        patch = {"spec": {"password": {"name": "switched-pw", "key": "password"}}}
        await kube_client.patch(DATABASE_USERS, first, patch, PatchType.MERGE, namespace=namespace)
        switch = "the switched-to password applied"
        await eventually(lambda: can_log_in(mysql, first, switched), timeout=60, interval=0.01, what=switch)
        await eventually(lambda: cached_names(secrets) == {"switched-pw", "late-pw"})
        assert "SecretNotFound" not in await warnings_about(kube_client, namespace, first)

        # A user gone: its Secret is no longer kept.
        await kube_client.delete(DATABASE_USERS, late, namespace)
        await eventually(lambda: "late-pw" not in cached_names(secrets), timeout=30)
        assert secrets.get(ObjectKey(namespace, "during-7")) is None
