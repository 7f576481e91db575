"""Helpers of the rotation tests: pods written the way a kubelet would, the rotation's status, the Secret,
and clients that log in all along with the password the Secret publishes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pymysql

from dbuser_operator.controllers.databaseuser.steps.rotation import PODS
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.conditions import format_time
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import client_tls
from tests.integration.operator.support.wait import eventually


async def create_pod(
    kube: KubeClient, namespace: str, name: str, secret: str, started: datetime, *, how: str = "env"
) -> None:
    """A pod that reads ``secret`` (``how``: env, envFrom, volume, projected), then its status as the
    kubelet would write it: Running since ``started`` (there is no kubelet in the test environment)."""
    container: dict[str, Any] = {"name": "app", "image": "app:1"}
    spec: dict[str, Any] = {"containers": [container]}
    if how == "env":
        container["env"] = [
            {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}}}
        ]
    elif how == "envFrom":
        container["envFrom"] = [{"secretRef": {"name": secret}}]
    elif how == "volume":
        spec["volumes"] = [{"name": "db", "secret": {"secretName": secret}}]
    else:
        spec["volumes"] = [{"name": "db", "projected": {"sources": [{"secret": {"name": secret}}]}}]
    await kube.create(PODS, {"metadata": {"name": name}, "spec": spec}, namespace)
    await set_pod_started(kube, namespace, name, started)


async def set_pod_started(kube: KubeClient, namespace: str, name: str, started: datetime) -> None:
    """Write the pod's status: Running, its container (re)started at ``started``."""
    status = {
        "phase": "Running",
        "startTime": format_time(started),
        "containerStatuses": [
            {
                "name": "app",
                "image": "app:1",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": format_time(started)}},
            }
        ],
    }
    await kube.patch(
        PODS, name, {"status": status}, PatchType.MERGE, namespace=namespace, subresource="status"
    )


async def restart_pod_after_rotation(kube: KubeClient, namespace: str, pod: str, user: str) -> None:
    """The pod (re)started after the DatabaseUser's rotation as the operator counts: status keeps whole
    seconds, so the rotation counts from the end of ``retainedSince``'s second, and a pod's start (whole
    seconds too) must be strictly later (a start within that second may have read the old password: the
    safe side). Started one second after that, or now if later."""
    retained = (await rotation_status(kube, namespace, user))["retainedSince"]
    after = datetime.fromisoformat(retained.replace("Z", "+00:00")) + timedelta(seconds=2)
    await set_pod_started(kube, namespace, pod, max(after, datetime.now(UTC)))


def an_hour_ago() -> datetime:
    return datetime.now(UTC) - timedelta(hours=1)


async def rotation_status(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get(DATABASE_USERS, name, namespace)
    return dict((obj.get("status") or {}).get("rotation") or {})


async def wait_for_phase(
    kube: KubeClient, namespace: str, name: str, phase: str, limit: float = 60, *, trigger: str | None = None
) -> dict[str, Any]:
    """Poll until status.rotation is in ``phase`` (of the rotation for ``trigger``, the rotate annotation's
    value, when given: the phase of the rotation before, Discarded say, is still there until the next one
    is recorded); return status.rotation."""

    async def check() -> dict[str, Any]:
        rotation = await rotation_status(kube, namespace, name)
        assert rotation.get("phase") == phase, f"rotation: {rotation}"
        assert trigger in {None, rotation.get("trigger")}, f"rotation: {rotation}"
        return rotation

    of = f" of the rotation for {trigger}" if trigger is not None else ""
    message = f"{namespace}/{name} never reached phase {phase}{of}"
    return await eventually(check, limit=limit, interval=0.1, message=message)


async def poll(condition: Callable[[], Awaitable[bool]], what: str, limit: float = 30) -> None:
    await eventually(condition, limit=limit, interval=0.05, message=f"{what} not met")


async def secret_password(kube: KubeClient, namespace: str, secret: str, key: str = "password") -> str:
    """The password in the Secret, as an application that reads it from the API server sees it."""
    obj = await kube.get(SECRETS, secret, namespace)
    return base64.b64decode(obj["data"][key]).decode()


async def delete_users(kube: KubeClient, namespace: str, limit: float = 60) -> None:
    """Delete every DatabaseUser of ``namespace`` and wait until they are gone: a rotation left waiting (a
    period, a discard) must not write while later tests measure that nothing is written."""
    listed = await kube.list(DATABASE_USERS, namespace)
    for item in listed["items"]:
        await kube.delete(DATABASE_USERS, item["metadata"]["name"], namespace)

    async def none_left() -> bool:
        return not (await kube.list(DATABASE_USERS, namespace))["items"]

    message = f"the DatabaseUsers of {namespace} were not deleted"
    await eventually(none_left, limit=limit, interval=0.1, message=message)


async def applied_version(kube: KubeClient, namespace: str, name: str, secret: str) -> None:
    """Wait until status.appliedSecret names the Secret's current resourceVersion (the pass handled it)."""
    current = (await kube.get(SECRETS, secret, namespace))["metadata"]["resourceVersion"]

    async def applied() -> bool:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        applied_secret = (obj.get("status") or {}).get("appliedSecret") or {}
        return bool(applied_secret.get("resourceVersion") == current)

    await poll(applied, f"status.appliedSecret at resourceVersion {current}")


@dataclass
class Load:
    """Clients that log in again and again with the password currently published."""

    mysql: MySQLServer
    user: str
    password: str
    logins: int = 0
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self) -> None:
        while not self.stop.is_set():
            password = self.password  # the file as the kubelet last refreshed it
            try:
                connection = pymysql.connect(
                    host=self.mysql.host,
                    port=self.mysql.port,
                    user=self.user,
                    password=password.encode(),
                    connect_timeout=10,
                    **client_tls(self.mysql, tls=False),
                )
                with connection.cursor() as cursor:
                    cursor.execute("SELECT 1")
                connection.close()
            except pymysql.err.MySQLError as error:
                with self.lock:
                    self.failures.append(f"{type(error).__name__} {error.args[0]}")
            else:
                with self.lock:
                    self.logins += 1
            time.sleep(0.003)


@contextlib.asynccontextmanager
async def logging_in(
    load: Load, kube: KubeClient, namespace: str, secret: str, clients: int
) -> AsyncIterator[Load]:
    """``clients`` threads of ``load`` logging in while the block runs, with the password ``secret`` holds
    on the API server (read every 50 ms, as a refreshed mounted file would give it)."""

    async def refresh() -> None:
        while not load.stop.is_set():
            load.password = await secret_password(kube, namespace, secret)
            await asyncio.sleep(0.05)

    refresher = asyncio.create_task(refresh())
    threads = [threading.Thread(target=load.client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    try:
        yield load
    finally:
        load.stop.set()
        await asyncio.gather(refresher, return_exceptions=True)
        for thread in threads:
            await asyncio.to_thread(thread.join, 30)
