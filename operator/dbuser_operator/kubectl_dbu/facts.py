"""What the plugin reads off a DatabaseUser and its pods, as text for people (no API calls here)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from dbuser_operator.controllers.databaseuser.consumers import consumed_secrets, holding_pods
from dbuser_operator.kubectl_dbu.names import MYSQL_SERVER_KIND
from dbuser_operator.kubectl_dbu.table import parse_time

DEFAULT_SERVER = "(default)"
"""How a DatabaseUser without spec.serverRef shows its server: the one the operator's settings name."""


def ready(obj: dict[str, Any]) -> tuple[str, str]:
    """The Ready condition's status and reason (``Unknown``, ``-`` before the operator wrote one)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status") or "Unknown"), str(condition.get("reason") or "-")
    return "Unknown", "-"


def progressing(obj: dict[str, Any]) -> str:
    """The reason of a ``Progressing=True`` condition (work the operator has underway: a render queued, a
    rotation retained); ``-`` when nothing is pending, or before the operator wrote one."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("status") == "True":
            return str(condition.get("reason") or "True")
    return "-"


def server(obj: dict[str, Any]) -> str:
    """The server of the account: ``MySQLServer/NAME``, ``ClusterMySQLServer/NAME`` or ``(default)``."""
    ref = (obj.get("spec") or {}).get("serverRef") or {}
    if not ref.get("name"):
        return DEFAULT_SERVER
    return f"{ref.get('kind') or MYSQL_SERVER_KIND}/{ref['name']}"


def server_name(obj: dict[str, Any]) -> str:
    """The name ``--server`` matches: the server resource's name, or ``(default)``."""
    return str(((obj.get("spec") or {}).get("serverRef") or {}).get("name") or DEFAULT_SERVER)


def account(obj: dict[str, Any]) -> str:
    """``user@host`` as status records it (else as the spec names it)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    user = status.get("user") or spec.get("user") or obj["metadata"]["name"]
    host = status.get("host") or spec.get("host") or "%"
    return f"{user}@{host}"


def service_account(obj: dict[str, Any]) -> str | None:
    """The ServiceAccount a workload identity binds (spec.authentication.workload), None for others."""
    workload = ((obj.get("spec") or {}).get("authentication") or {}).get("workload") or {}
    name = workload.get("serviceAccountName")
    return str(name) if name else None


def workload(obj: dict[str, Any]) -> str:
    """The bound ServiceAccount and what its account requires, for people ("-" for other accounts)."""
    name = service_account(obj)
    if name is None:
        return "-"
    status = (obj.get("status") or {}).get("workload") or {}
    if not status:
        return f"ServiceAccount {name} (not in force yet)"
    subject, issuer = status.get("subject"), status.get("issuer")
    return f"ServiceAccount {name}, certificate subject {subject}, issuer {issuer}"


def rotation(obj: dict[str, Any]) -> dict[str, Any]:
    """status.rotation (empty when there is none)."""
    return dict((obj.get("status") or {}).get("rotation") or {})


def password_set_at(obj: dict[str, Any], secret: dict[str, Any] | None) -> datetime | None:
    """When the account's password was last set: status.rotation.lastRotationTime, else the time the
    applied Secret was last written (its newest managedFields entry, else its creation)."""
    last = parse_time(rotation(obj).get("lastRotationTime"))
    if last is not None or secret is None:
        return last
    metadata = secret.get("metadata") or {}
    times = [parse_time(entry.get("time")) for entry in metadata.get("managedFields") or []]
    written = [moment for moment in times if moment is not None]
    return max(written) if written else parse_time(metadata.get("creationTimestamp"))


def retained_since(obj: dict[str, Any]) -> datetime | None:
    """When the old password was retained, if it still is (phase Retained). status keeps whole seconds,
    truncated: the moment was up to a second later, as the operator counts it."""
    current = rotation(obj)
    since = parse_time(current.get("retainedSince"))
    if current.get("phase") != "Retained" or since is None:
        return None
    return since if since.microsecond else since + timedelta(seconds=1)


def old_password_pods(obj: dict[str, Any], pods: list[dict[str, Any]]) -> list[str] | None:
    """The pods of the namespace that use the user's Secrets and started before the old password was
    retained (sorted); None when no old password is retained."""
    since = retained_since(obj)
    if since is None:
        return None
    namespace = obj["metadata"].get("namespace")
    mine = [pod for pod in pods if pod["metadata"].get("namespace") == namespace]
    return holding_pods(mine, consumed_secrets(obj), since)
