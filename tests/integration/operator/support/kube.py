"""The API server as the operator's tests use it: Secrets, a resource's Ready condition and finalizers,
deletion, Events, reading through a busy server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS, DATABASES
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import NotFound, Unavailable
from dbuser_operator.runtime.resources import SECRETS


async def read_settled(kube: KubeClient, path: str, limit: float = 30.0) -> dict[str, Any]:
    """GET ``path``, again while the API server answers 429/5xx (a resource's storage still initialising
    after its CRD was installed, in a short session): the check must read, not fail on a busy server."""
    deadline = asyncio.get_running_loop().time() + limit
    while True:
        try:
            return await kube.request("GET", path)
        except Unavailable:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


async def create_secret(kube: KubeClient, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return await kube.create(SECRETS, {"metadata": {"name": name}, "stringData": data}, namespace)


def ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return dict(condition)
    return None


async def wait_for_ready(
    kube: KubeClient,
    namespace: str,
    name: str,
    status: str = "True",
    reason: str | None = None,
    limit: float = 30,
) -> dict[str, Any]:
    """Poll until the Ready condition has ``status`` (and ``reason``); return the object."""
    deadline = time.monotonic() + limit
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        condition = ready(obj)
        if condition and condition["status"] == status and (reason is None or condition["reason"] == reason):
            return obj
        await asyncio.sleep(0.05)
    raise AssertionError(f"{namespace}/{name} never got Ready={status} {reason or ''}: {ready(obj)}")


async def finalizers_become(
    kube: KubeClient, namespace: str, name: str, expected: list[str], limit: float = 15
) -> None:
    """Poll until the resource's finalizers are exactly ``expected``."""
    deadline = time.monotonic() + limit
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        if (obj["metadata"].get("finalizers") or []) == expected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{namespace}/{name} finalizers never became {expected}: {obj.get('metadata')}")


async def wait_until_gone(kube: KubeClient, namespace: str, name: str, limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            await kube.get(DATABASE_USERS, name, namespace)
        except ApiException as error:
            if error.status == 404:
                return
            raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"{namespace}/{name} was not deleted")


async def events_of(kube: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await kube.request("GET", f"/api/v1/namespaces/{namespace}/events")
    return [event for event in listed["items"] if event["involvedObject"].get("name") == name]


async def wait_for_event(
    kube: KubeClient, namespace: str, name: str, reason: str, limit: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for event in await events_of(kube, namespace, name):
            if event["reason"] == reason:
                return event
        await asyncio.sleep(0.2)
    raise AssertionError(f"no Event {reason} for {namespace}/{name} within {limit} s")


async def wait_role_ready(
    kube: KubeClient, namespace: str, name: str, status: str = "True", reason: str | None = None
) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASE_ROLES, name, namespace)
        condition = ready(obj)
        if condition and condition["status"] == status and reason in {None, condition["reason"]}:
            return obj
        await asyncio.sleep(0.1)
    raise AssertionError(
        f"DatabaseRole {namespace}/{name} never got Ready={status} {reason or ''}: {ready(obj)}"
    )


async def wait_db(
    kube: KubeClient, namespace: str, name: str, status: str = "True", reason: str | None = None
) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASES, name, namespace)
        condition = ready(obj)
        if condition and condition["status"] == status and reason in {None, condition["reason"]}:
            return obj
        await asyncio.sleep(0.1)
    raise AssertionError(f"Database {namespace}/{name} never got Ready={status} {reason or ''}: {ready(obj)}")


async def database_gone(kube: KubeClient, namespace: str, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            await kube.get(DATABASES, name, namespace)
        except NotFound:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"Database {namespace}/{name} was never deleted")


async def admin_secrets(kube: KubeClient, namespace: str, mysql: MySQLServer, name: str) -> None:
    """The server's admin credentials (and its CA, when it has one) in Secret ``name``."""
    data = {"user": mysql.user, "password": mysql.password}
    if mysql.ca_file is not None:
        data["ca.crt"] = mysql.ca_file.read_text()
    await create_secret(kube, namespace, name, data)


async def secret_exists(kube: KubeClient, namespace: str, name: str) -> bool:
    try:
        await kube.get(SECRETS, name, namespace)
    except NotFound:
        return False
    return True


async def wait_for_secret(
    kube: KubeClient, namespace: str, name: str, check: Any = None, limit: float = 30
) -> dict[str, Any]:
    """Poll until the Secret exists (and ``check(secret)`` holds); return it."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            secret = await kube.get(SECRETS, name, namespace)
        except NotFound:
            secret = None
        if secret is not None and (check is None or check(secret)):
            return secret
        await asyncio.sleep(0.05)
    raise AssertionError(f"Secret {namespace}/{name} never became as expected")
