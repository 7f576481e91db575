"""A pass that reads the informer's cache before the watch delivered the last pass's writes.

For some milliseconds after every write (longer under load) the cache still holds the object as it was
before. A pass that starts then — its key queued again by the watch event of the finalizer the last pass
added, by a Secret event, by the drift check — read the status of before: no ``appliedSecret``, so it set
the password again and read its fingerprint back. A password changed by hand at that moment was
overwritten without a Warning (``test_the_drift_check_repairs_an_account_on_a_server_resource`` failed
once so, with no PasswordRestored Event), or, changed between that ``ALTER USER`` and the fingerprint read,
recorded as the operator's own: then the drift check never saw it. The caches here are filled by hand and
never updated by a watch (the informers are not run), so the stale view is certain, not a matter of luck.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes_asyncio import client

from dbuser_operator import app
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.kit.freshness import STALE_RETRY
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.objects import ConflictError
from dbuser_operator.runtime.resources import SECRETS, ObjectKey, Resource
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, ready
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, capture_logs, operator_settings

pytestmark = pytest.mark.integration

TARGET = "stale-cache"  # not the session operator's: this test drives a reconciler of its own


def store_of(manager: Manager, resource: Resource) -> Any:
    return next(informer for informer in manager.informers if informer.resource == resource).store


async def test_a_pass_on_a_cache_older_than_the_last_write_leaves_a_hand_set_password_to_the_drift_repair(
    kube: KubeCluster,
    kube_api: client.ApiClient,
    crds: list[str],
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    envtest_workdir: Path,
) -> None:
    """The user is made before its Secret (Ready=False, SecretNotFound, finalizer on: the cache holds that
    version), then its Secret: the next pass creates the account and writes Ready. The password is changed
    by hand; a pass on the cache of before does nothing (no password set, no error); once the cache has
    caught up, the next pass finds the hand change, sets the password back and says so (PasswordRestored)."""
    kube_client = KubeClient(kube_api)
    name, password = unique("stale"), passwords.new()
    key = ObjectKey(namespace, name)
    await kube_client.create(DATABASE_USERS, database_user(name, f"{name}-pw", target=TARGET), namespace)
    workdir = envtest_workdir / "operator"
    workdir.mkdir(exist_ok=True)
    handler = capture_logs(workdir / "stale-cache.log")  # read by the session's password-leak check
    settings = operator_settings(kube, mysql, workdir, target=TARGET, namespaces=[namespace])
    db = Database(app.connection_settings(settings))
    manager = app.build_manager(settings, KubeClient(kube_api), db)
    users, secrets = store_of(manager, DATABASE_USERS), store_of(manager, SECRETS)
    controller = next(c for c in manager.controllers if c.name == "databaseuser")
    reconcile = cast(DatabaseUserReconciler, controller.reconciler)

    async def cache_catches_up() -> dict[str, Any]:
        obj = await kube_client.get(DATABASE_USERS, name, namespace)
        users.put(obj)
        return obj

    try:
        await cache_catches_up()
        await reconcile(key)
        waiting = await cache_catches_up()  # finalizer on, Ready=False: what the next pass replaces
        assert (ready(waiting) or {}).get("reason") == "SecretNotFound"
        await create_secret(kube_client, namespace, f"{name}-pw", {"password": password})
        secrets.put(await kube_client.get(SECRETS, f"{name}-pw", namespace))
        await reconcile(key)
        assert (ready(await kube_client.get(DATABASE_USERS, name, namespace)) or {}).get("status") == "True"
        assert can_log_in(mysql, name, password)

        by_hand = passwords.new("by-hand")
        mysql_query(mysql, f"ALTER USER `{name}`@'%%' IDENTIFIED BY %s", by_hand)
        # The cache still holds the Ready=False version: that pass waits for the cache.
        assert users.get(key)["metadata"]["resourceVersion"] == waiting["metadata"]["resourceVersion"]
        try:
            result: Result | None = await reconcile(key)
        except ConflictError:  # how such a pass ended once it had set the password: its status was stale
            result = None
        assert can_log_in(mysql, name, by_hand), "a pass on a stale cache set the password again"
        assert result == Result(requeue_after=STALE_RETRY)

        await cache_catches_up()
        await reconcile(key)
        assert can_log_in(mysql, name, password)
        assert not can_log_in(mysql, name, by_hand)
        await reconcile.recorder.flush()
        events = (await kube_client.request("GET", f"/api/v1/namespaces/{namespace}/events"))["items"]
        assert [e["type"] for e in events if e["reason"] == "PasswordRestored"] == ["Warning"]
    finally:  # nothing left on the shared server: the account dropped by the resource's own deletion
        await kube_client.delete(DATABASE_USERS, name, namespace)
        if (await cache_catches_up())["metadata"].get("finalizers"):
            await reconcile(key)
        await reconcile.recorder.close()
        await db.close()
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert not account_exists(mysql, name)
