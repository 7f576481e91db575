"""``kubectl dbu status``: one table per namespace (or one for a server): ready, work underway
(Progressing), server, account, password age, rotation phase, and the pods still on a retained old
password; ``-o wide`` adds the hosts, the ServiceAccount a workload identity binds, the credential
version and the age."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu import facts
from dbuser_operator.kubectl_dbu.errors import Forbidden, NotFound
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS, PODS, SECRETS
from dbuser_operator.kubectl_dbu.table import age, human_duration, table

COLUMNS = (
    ("NAME", "name"),
    ("READY", "ready"),
    ("REASON", "reason"),
    ("PROGRESSING", "progressing"),
    ("SERVER", "server"),
    ("ACCOUNT", "account"),
    ("PASSWORD AGE", "passwordAge"),
    ("ROTATION", "rotation"),
    ("OLD-PASSWORD PODS", "oldPasswordPods"),
)
WIDE_COLUMNS = (
    ("HOSTS", "hosts"),
    ("SERVICE ACCOUNT", "serviceAccount"),
    ("CREDENTIAL VERSION", "credentialVersion"),
    ("AGE", "age"),
)
HEADERS = tuple(header for header, _ in COLUMNS)
UNKNOWN = "?"  # a value the user may not read (RBAC)
PARALLEL_GETS = 16  # Secrets read at once for the passwords' ages


def record(
    obj: dict[str, Any], secret: dict[str, Any] | None, pods: list[dict[str, Any]] | None, now: datetime
) -> dict[str, str]:
    """What the status shows of one DatabaseUser (``-o json|yaml`` prints it as is); ``pods`` None when
    they could not be listed."""
    metadata, status = obj["metadata"], obj.get("status") or {}
    ready, reason = facts.ready(obj)
    set_at = facts.password_set_at(obj, secret)
    holding = facts.old_password_pods(obj, pods or [])
    consumers = "-" if holding is None else (UNKNOWN if pods is None else str(len(holding)))
    return {
        "namespace": str(metadata.get("namespace") or ""),
        "name": metadata["name"],
        "ready": ready,
        "reason": reason,
        "progressing": facts.progressing(obj),
        "server": facts.server(obj),
        "account": facts.account(obj),
        "passwordAge": human_duration(now - set_at) if set_at is not None else "-",
        "passwordSetAt": set_at.isoformat().replace("+00:00", "Z") if set_at is not None else "-",
        "rotation": facts.rotation(obj).get("phase") or "-",
        "oldPasswordPods": consumers,
        "hosts": ",".join(status.get("hosts") or []) or "-",
        "serviceAccount": facts.service_account(obj) or "-",
        "credentialVersion": str(status.get("credentialVersion") or "-"),
        "age": age(metadata.get("creationTimestamp"), now),
    }


def row(
    obj: dict[str, Any], secret: dict[str, Any] | None, pods: list[dict[str, Any]] | None, now: datetime
) -> list[str]:
    """One DatabaseUser's line of the table."""
    return cells(record(obj, secret, pods, now), wide=False)


def cells(line: dict[str, str], *, wide: bool) -> list[str]:
    """The table's cells of a record (``wide``: the extra columns too)."""
    return [line[key] for _, key in ((*COLUMNS, *WIDE_COLUMNS) if wide else COLUMNS)]


def headers(*, wide: bool) -> tuple[str, ...]:
    """The table's headers."""
    return tuple(header for header, _ in (*COLUMNS, *(WIDE_COLUMNS if wide else ())))


def render(groups: dict[str, list[list[str]]], title: str, columns: tuple[str, ...] = HEADERS) -> str:
    """The tables, one per group, each under ``title: group``."""
    return "\n\n".join(f"{title}: {group}\n{table(columns, rows)}" for group, rows in sorted(groups.items()))


async def _pods(kube: Api, namespace: str | None) -> list[dict[str, Any]] | None:
    try:
        items, _ = await kube.list_all(PODS, namespace)
    except Forbidden:
        return None
    return items


async def _applied_secret(kube: Api, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The applied Secret, only when status has no rotation time to give the password's age."""
    name = ((obj.get("status") or {}).get("appliedSecret") or {}).get("name")
    if not name or facts.rotation(obj).get("lastRotationTime"):
        return None
    try:
        return await kube.get(SECRETS, name, obj["metadata"]["namespace"])
    except (Forbidden, NotFound):
        return None


async def records(kube: Api, namespace: str | None, server: str | None) -> tuple[list[dict[str, str]], str]:
    """The records of the DatabaseUsers in ``namespace`` (None: every one), of ``server`` only if given,
    sorted by namespace and name; and the list's resourceVersion (where a watch starts)."""
    users, version = await kube.list_all(DATABASE_USERS, namespace)
    return await records_of(kube, namespace, server, users), version


async def records_of(
    kube: Api, namespace: str | None, server: str | None, users: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """The records of ``users`` (of ``server`` only if given), with the Secrets and pods they need."""
    if server is not None:
        users = [obj for obj in users if facts.server_name(obj) == server]
    retained = any(facts.retained_since(obj) is not None for obj in users)
    pods = await _pods(kube, namespace) if retained else []
    now = datetime.now(UTC)
    users.sort(key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
    gate = asyncio.Semaphore(PARALLEL_GETS)

    async def applied(obj: dict[str, Any]) -> dict[str, Any] | None:
        async with gate:
            return await _applied_secret(kube, obj)

    secrets = await asyncio.gather(*(applied(obj) for obj in users))
    return [record(obj, secret, pods, now) for obj, secret in zip(users, secrets, strict=True)]


def text(lines: list[dict[str, str]], namespace: str | None, server: str | None, *, wide: bool) -> str:
    """The tables: one per namespace, or one for ``server`` with a NAMESPACE column."""
    if not lines:
        where = (
            f"on server {server}" if server is not None else f"in namespace {namespace}" if namespace else ""
        )
        return f"No DatabaseUsers found {where}".rstrip() + "."
    if server is not None:  # one table across namespaces: the name alone is ambiguous
        rows = [[line["namespace"], *cells(line, wide=wide)] for line in lines]
        return f"SERVER: {server}\n{table(('NAMESPACE', *headers(wide=wide)), rows)}"
    groups: dict[str, list[list[str]]] = defaultdict(list)
    for line in lines:
        groups[line["namespace"]].append(cells(line, wide=wide))
    return render(groups, "NAMESPACE", headers(wide=wide))
