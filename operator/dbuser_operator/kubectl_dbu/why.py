"""``kubectl dbu why NAME``: Ready (and Progressing, while work is underway), the conditions, the last
Events, and the operator's view (account, hosts, workload identity, rotation, credential version, the
certificates issued) of one DatabaseUser, in one screen."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu import certificates, facts
from dbuser_operator.kubectl_dbu.errors import Forbidden
from dbuser_operator.kubectl_dbu.events import events_of, last_seen
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS
from dbuser_operator.kubectl_dbu.table import age, table

LAST_EVENTS = 10
ROTATION_FIELDS = ("phase", "strategy", "lastRotationTime", "retainedSince", "nextRotationTime", "trigger")


def render(
    obj: dict[str, Any], events: list[dict[str, Any]], now: datetime, issued: str | None = None
) -> str:
    """The screen for ``obj``, its Events (oldest first; the last ten are shown) and the text of the
    certificates ``issued`` for it (None: it has none to show)."""
    metadata, status = obj["metadata"], obj.get("status") or {}
    ready, reason = facts.ready(obj)
    underway = facts.progressing(obj)
    pending = f", Progressing=True ({underway})" if underway != "-" else ""
    lines = [
        f"DatabaseUser {metadata.get('namespace')}/{metadata['name']}: Ready={ready} ({reason}){pending}",
        f"Account:    {facts.account(obj)} on {facts.server(obj)}",
        f"Hosts:      {', '.join(status.get('hosts') or []) or '-'}",
        f"Workload:   {facts.workload(obj)}",
        f"Generation: {metadata.get('generation')} (observed {status.get('observedGeneration', '-')})",
    ]
    if metadata.get("deletionTimestamp"):
        lines.append(
            f"Deleting since {metadata['deletionTimestamp']}, finalizers: {metadata.get('finalizers')}"
        )
    conditions = status.get("conditions") or []
    lines.append("Conditions:")
    if conditions:
        rows = [
            [
                c.get("type", ""),
                c.get("status", ""),
                c.get("reason", ""),
                age(c.get("lastTransitionTime"), now),
                c.get("message", ""),
            ]
            for c in conditions
        ]
        lines.append(_indent(table(("TYPE", "STATUS", "REASON", "AGE", "MESSAGE"), rows)))
    else:
        lines.append(
            "  none yet (the operator has not reconciled it: is it running, and is its target label right?)"
        )
    rotation = facts.rotation(obj)
    shown = [f"{key}={rotation[key]}" for key in ROTATION_FIELDS if rotation.get(key) is not None]
    lines.append(f"Rotation:   {', '.join(shown) or '-'}")
    version = status.get("credentialVersion")
    secret = ((obj.get("spec") or {}).get("connectionSecret") or {}).get("name")
    connection = f"Secret {secret}, credential version {version or '-'}" if secret else "-"
    lines.append(f"Connection: {connection}")
    if issued is not None:  # one line (RBAC forbids reading them) beside its title, a block under it
        lines.append(f"Certificates: {issued}" if "\n" not in issued else f"Certificates:\n{_indent(issued)}")
    last = events[-LAST_EVENTS:]
    lines.append(f"Events (last {len(last)} of {len(events)}):" if events else "Events: none")
    if last:
        rows = [
            [
                age(last_seen(e), now),
                e.get("type", ""),
                e.get("reason", ""),
                str(e.get("count") or 1),
                e.get("message", ""),
            ]
            for e in last
        ]
        lines.append(_indent(table(("LAST SEEN", "TYPE", "REASON", "COUNT", "MESSAGE"), rows)))
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


async def run(kube: Api, namespace: str, name: str) -> str:
    obj = await kube.get(DATABASE_USERS, name, namespace)
    events = await events_of(kube, namespace, name, obj["metadata"].get("uid"))
    now = datetime.now(UTC)
    return render(obj, events, now, await _issued(kube, obj, now))


async def _issued(kube: Api, obj: dict[str, Any], now: datetime) -> str | None:
    """The certificates of a user bound to a ServiceAccount or with spec.tls.certificate (the newest ten
    requests); one line when RBAC forbids reading them."""
    if facts.service_account(obj) is None and certificates.certificate_name(obj) is None:
        return None
    try:
        found = await certificates.look(kube, obj, now)
    except Forbidden as error:
        return f"? (Forbidden: {error.message})"
    return certificates.text(found, obj, now, LAST_EVENTS)
