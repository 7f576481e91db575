"""``kubectl dbu status``: one table per namespace (or one for a server): ready, server, account, password
age, rotation phase, and the pods still on a retained old password."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.kubectl_dbu import facts
from dbuser_operator.kubectl_dbu.kube import PODS
from dbuser_operator.kubectl_dbu.table import human_duration, table
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import Forbidden, NotFound
from dbuser_operator.runtime.resources import SECRETS

HEADERS = ("NAME", "READY", "REASON", "SERVER", "ACCOUNT", "PASSWORD AGE", "ROTATION", "OLD-PASSWORD PODS")
UNKNOWN = "?"  # a value the user may not read (RBAC)
PARALLEL_GETS = 16  # Secrets read at once for the passwords' ages


def row(
    obj: dict[str, Any], secret: dict[str, Any] | None, pods: list[dict[str, Any]] | None, now: datetime
) -> list[str]:
    """One DatabaseUser's line; ``pods`` None when they could not be listed."""
    status, reason = facts.ready(obj)
    set_at = facts.password_set_at(obj, secret)
    holding = facts.old_password_pods(obj, pods or [])
    consumers = "-" if holding is None else (UNKNOWN if pods is None else str(len(holding)))
    return [
        obj["metadata"]["name"],
        status,
        reason,
        facts.server(obj),
        facts.account(obj),
        human_duration(now - set_at) if set_at is not None else "-",
        facts.rotation(obj).get("phase") or "-",
        consumers,
    ]


def render(groups: dict[str, list[list[str]]], title: str) -> str:
    """The tables, one per group, each under ``title: group``."""
    return "\n\n".join(f"{title}: {group}\n{table(HEADERS, rows)}" for group, rows in sorted(groups.items()))


async def _pods(kube: KubeClient, namespace: str | None) -> list[dict[str, Any]] | None:
    try:
        items, _ = await kube.list_all(PODS, namespace)
    except Forbidden:
        return None
    return items


async def _applied_secret(kube: KubeClient, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The applied Secret, only when status has no rotation time to give the password's age."""
    name = ((obj.get("status") or {}).get("appliedSecret") or {}).get("name")
    if not name or facts.rotation(obj).get("lastRotationTime"):
        return None
    try:
        return await kube.get(SECRETS, name, obj["metadata"]["namespace"])
    except (Forbidden, NotFound):
        return None


async def run(kube: KubeClient, namespace: str | None, server: str | None) -> str:
    """The tables of the DatabaseUsers in ``namespace`` (None: every one), of ``server`` only if given."""
    users, _ = await kube.list_all(DATABASE_USERS, namespace)
    if server is not None:
        users = [obj for obj in users if facts.server_name(obj) == server]
    if not users:
        where = (
            f"on server {server}" if server is not None else f"in namespace {namespace}" if namespace else ""
        )
        return f"No DatabaseUsers found {where}".rstrip() + "."
    retained = any(facts.retained_since(obj) is not None for obj in users)
    pods = await _pods(kube, namespace) if retained else []
    now = datetime.now(UTC)
    users.sort(key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
    gate = asyncio.Semaphore(PARALLEL_GETS)

    async def applied(obj: dict[str, Any]) -> dict[str, Any] | None:
        async with gate:
            return await _applied_secret(kube, obj)

    secrets = await asyncio.gather(*(applied(obj) for obj in users))
    rows = [row(obj, secret, pods, now) for obj, secret in zip(users, secrets, strict=True)]
    if server is not None:  # one table across namespaces: the name alone is ambiguous
        return _server_table(users, rows, server)
    groups: dict[str, list[list[str]]] = defaultdict(list)
    for obj, line in zip(users, rows, strict=True):
        groups[obj["metadata"]["namespace"]].append(line)
    return render(groups, "NAMESPACE")


def _server_table(users: list[dict[str, Any]], rows: list[list[str]], server: str) -> str:
    """One table of the (sorted) ``users`` of ``server``, with their namespaces."""
    lines = [[obj["metadata"]["namespace"], *line] for obj, line in zip(users, rows, strict=True)]
    return f"SERVER: {server}\n{table(('NAMESPACE', *HEADERS), lines)}"
