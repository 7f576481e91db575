"""The API server as the operator's tests use it: Secrets, a resource's Ready condition and finalizers,
deletion, Events, reading through a busy server, a user whose RBAC is one namespaced Role."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS, DATABASES
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import NotFound, Unavailable
from dbuser_operator.runtime.resources import SECRETS, Resource
from tests.integration.operator.support.wait import eventually

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")


async def namespaced_user(
    kube: KubeCluster,
    kube_client: KubeClient,
    namespace: str,
    user: str,
    rules: list[dict[str, Any]],
    path: Path,
) -> Path:
    """A kubeconfig at ``path`` for ``user``, who may do in ``namespace`` what ``rules`` (a Role named
    after the user) allow, and nothing else."""
    await kube_client.create(ROLES, {"metadata": {"name": user}, "rules": rules}, namespace)
    binding = {
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    await kube_client.create(ROLE_BINDINGS, binding, namespace)
    return await kube.mint_kubeconfig(user, [], path)


async def read_settled(kube: KubeClient, path: str, limit: float = 30.0) -> dict[str, Any]:
    """GET ``path``, again while the API server answers 429/5xx (a resource's storage still initialising
    after its CRD was installed, in a short session): the check must read, not fail on a busy server."""

    async def read() -> dict[str, Any]:
        try:
            answer: dict[str, Any] = await kube.request("GET", path)
        except Unavailable as error:
            raise AssertionError(f"{path}: {error}") from error
        return answer

    return await eventually(read, limit=limit, interval=0.5, message=f"GET {path}")


async def create_secret(kube: KubeClient, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    return await kube.create(SECRETS, {"metadata": {"name": name}, "stringData": data}, namespace)


def is_current(obj: dict[str, Any], condition: dict[str, Any]) -> bool:
    """Whether ``condition`` was written for the object's current generation (or says for none)."""
    observed = condition.get("observedGeneration")
    return observed is None or observed >= obj["metadata"].get("generation", 0)


def ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return dict(condition)
    return None


async def wait_for_condition(
    kube: KubeClient,
    resource: Resource,
    namespace: str | None,
    name: str,
    status: str = "True",
    reason: str | None = None,
    *,
    containing: str | None = None,
    limit: float = 60,
    interval: float = 0.1,
) -> dict[str, Any]:
    """Poll until the object's Ready condition has ``status`` (and ``reason``, and a message ``containing``
    that text) for the object's current generation; return the object.

    A condition written for an earlier generation does not count: right after a spec change the old
    Ready=True is still there, and a test that took it for the new spec's would race the operator. Nor does
    the generation tell everything: a change elsewhere (a Secret, the server's policy, MySQL) leaves the old
    condition current, so a test that asserts what that change brings waits for what only the new condition
    says (``containing``), not for a status and reason the old one may have as well."""

    async def check() -> dict[str, Any]:
        obj = await kube.get(resource, name, namespace)
        condition = ready(obj)
        assert condition is not None, "no Ready condition"
        assert condition["status"] == status, f"Ready: {condition}"
        assert reason in {None, condition["reason"]}, f"Ready: {condition}"
        assert containing is None or containing in (condition.get("message") or ""), f"Ready: {condition}"
        assert is_current(obj, condition), f"Ready for an earlier generation: {condition}"
        return obj

    where = f"{namespace}/{name}" if namespace else name
    saying = f" saying {containing!r}" if containing is not None else ""
    message = f"{resource.kind} {where} never got Ready={status} {reason or ''}{saying}"
    return await eventually(check, limit=limit, interval=interval, message=message)


async def wait_for_ready(
    kube: KubeClient,
    namespace: str,
    name: str,
    status: str = "True",
    reason: str | None = None,
    limit: float = 30,
    *,
    containing: str | None = None,
) -> dict[str, Any]:
    """Poll until the DatabaseUser's Ready condition has ``status`` (and ``reason``, and a message
    ``containing`` that text); return the object."""
    return await wait_for_condition(
        kube,
        DATABASE_USERS,
        namespace,
        name,
        status,
        reason,
        containing=containing,
        limit=limit,
        interval=0.05,
    )


async def finalizers_become(
    kube: KubeClient, namespace: str, name: str, expected: list[str], limit: float = 15
) -> None:
    """Poll until the resource's finalizers are exactly ``expected``."""

    async def check() -> bool:
        metadata = (await kube.get(DATABASE_USERS, name, namespace))["metadata"]
        assert (metadata.get("finalizers") or []) == expected, metadata
        return True

    message = f"{namespace}/{name} finalizers never became {expected}"
    await eventually(check, limit=limit, interval=0.05, message=message)


async def deleted(kube: KubeClient, resource: Resource, namespace: str | None, name: str) -> bool:
    """Whether the object is gone (a check for :func:`eventually`)."""
    try:
        await kube.get(resource, name, namespace)
    except NotFound:
        return True
    return False


async def wait_until_gone(
    kube: KubeClient,
    namespace: str | None,
    name: str,
    limit: float = 30,
    *,
    resource: Resource = DATABASE_USERS,
) -> None:
    """Poll until the object (a DatabaseUser unless ``resource`` says otherwise) no longer exists."""
    where = f"{namespace}/{name}" if namespace else name
    await eventually(
        lambda: deleted(kube, resource, namespace, name),
        limit=limit,
        interval=0.05,
        message=f"{resource.kind} {where} was not deleted",
    )


async def events_of(kube: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await kube.request("GET", f"/api/v1/namespaces/{namespace}/events")
    return [event for event in listed["items"] if event["involvedObject"].get("name") == name]


async def wait_for_event(
    kube: KubeClient, namespace: str, name: str, reason: str, limit: float = 60
) -> dict[str, Any]:
    async def check() -> dict[str, Any]:
        events = await events_of(kube, namespace, name)
        found = [event for event in events if event["reason"] == reason]
        assert found, f"Events: {sorted({event['reason'] for event in events})}"
        return found[0]

    message = f"no Event {reason} for {namespace}/{name}"
    return await eventually(check, limit=limit, interval=0.2, message=message)


async def wait_role_ready(
    kube: KubeClient,
    namespace: str,
    name: str,
    status: str = "True",
    reason: str | None = None,
    *,
    containing: str | None = None,
) -> dict[str, Any]:
    return await wait_for_condition(
        kube, DATABASE_ROLES, namespace, name, status, reason, containing=containing
    )


async def wait_db(
    kube: KubeClient,
    namespace: str,
    name: str,
    status: str = "True",
    reason: str | None = None,
    *,
    containing: str | None = None,
) -> dict[str, Any]:
    return await wait_for_condition(kube, DATABASES, namespace, name, status, reason, containing=containing)


async def database_gone(kube: KubeClient, namespace: str, name: str) -> None:
    await eventually(
        lambda: deleted(kube, DATABASES, namespace, name),
        limit=60,
        interval=0.1,
        message=f"Database {namespace}/{name} was never deleted",
    )


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

    async def exists_as_expected() -> dict[str, Any]:
        try:
            secret = await kube.get(SECRETS, name, namespace)
        except NotFound:
            raise AssertionError("no such Secret") from None
        assert check is None or check(secret), "not as expected yet"
        return secret

    message = f"Secret {namespace}/{name} never became as expected"
    return await eventually(exists_as_expected, limit=limit, interval=0.05, message=message)


def printed_table(output: str) -> list[dict[str, str]]:
    """The rows of ``kubectl get`` as dicts by column name (cells cut at the header's column starts; a name
    may be two words, ``SERVER KIND``: kubectl puts three spaces between columns)."""
    header, *rows = output.splitlines()
    columns = list(re.finditer(r"\S+(?: \S+)*", header))
    names, starts = [column.group() for column in columns], [column.start() for column in columns]
    ends: list[int | None] = [*starts[1:], None]
    return [
        {name: row[start:end].strip() for name, start, end in zip(names, starts, ends, strict=True)}
        for row in rows
    ]


async def delete_all_users(kube: KubeClient, namespace: str, limit: float = 120) -> None:
    """Delete every DatabaseUser of ``namespace`` and wait until the operator has let them all go (their
    accounts dropped)."""
    for item in (await kube.list(DATABASE_USERS, namespace))["items"]:
        await kube.delete(DATABASE_USERS, item["metadata"]["name"], namespace)

    async def none_left() -> bool:
        left = [item["metadata"]["name"] for item in (await kube.list(DATABASE_USERS, namespace))["items"]]
        assert not left, f"left: {left}"
        return True

    await eventually(none_left, limit=limit, interval=0.2, message=f"the DatabaseUsers of {namespace} gone")
