"""``kubectl dbu consumers NAME``: what still holds a retained old password: the pods that use the user's
Secrets and started before the rotation, and where the operator reports the sessions (they live in MySQL,
which the plugin does not log in to)."""

from __future__ import annotations

from datetime import UTC, datetime

from dbuser_operator.controllers.databaseuser.consumers import consumed_secrets
from dbuser_operator.kubectl_dbu import facts
from dbuser_operator.kubectl_dbu.events import events_of, last_seen
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS, PODS
from dbuser_operator.kubectl_dbu.table import age, printable, table

SESSION_EVENTS = ("OldPasswordDiscardedWhileInUse", "OldPasswordDiscarded", "PasswordRetained")


async def run(kube: Api, namespace: str, name: str) -> str:
    """The report: phase, the holding pods, then sessions."""
    obj = await kube.get(DATABASE_USERS, name, namespace)
    rotation = facts.rotation(obj)
    secrets = ", ".join(sorted(consumed_secrets(obj))) or "-"
    lines = [f"DatabaseUser {namespace}/{name}   account {facts.account(obj)}   Secrets: {secrets}"]
    since = facts.retained_since(obj)
    if since is None:
        phase = rotation.get("phase") or "no rotation yet"
        lines.append(f"No old password is retained (rotation phase: {phase}): nothing holds one.")
    else:
        now = datetime.now(UTC)
        lines.append(
            f"Old password retained since {rotation.get('retainedSince')} "
            f"({age(rotation.get('retainedSince'), now)} ago); it is discarded once the pods below "
            "restarted and no older session is open, or after maxWait."
        )
        items, _ = await kube.list_all(PODS, namespace)
        holding = set(facts.old_password_pods(obj, items) or [])
        rows = [
            [
                pod["metadata"]["name"],
                (pod.get("status") or {}).get("startTime") or "-",
                age((pod.get("status") or {}).get("startTime"), now),
            ]
            for pod in sorted(items, key=lambda p: p["metadata"]["name"])
            if pod["metadata"]["name"] in holding
        ]
        if rows:
            lines += [f"Pods on the old password ({len(rows)}):", table(("POD", "STARTED", "AGE"), rows)]
        else:
            lines.append("Pods on the old password: none")
    lines += _sessions(rotation, name)
    reported = [
        e
        for e in await events_of(kube, namespace, name, obj["metadata"].get("uid"))
        if e.get("reason") in SESSION_EVENTS
    ]
    if reported:
        lines.append("What the operator reported:")
        lines += [
            f"  {last_seen(e)}  {e.get('reason')}: {printable(str(e.get('message')))}" for e in reported[-5:]
        ]
    return "\n".join(lines)


def _sessions(rotation: dict[str, object], name: str) -> list[str]:
    """Where to see the account's sessions from before the rotation, without MySQL credentials."""
    watermark = rotation.get("sessionWatermark")
    lines = [
        "Sessions: they live in MySQL. The operator waits for the account's sessions opened before the "
        "rotation and, when it discards the old password after maxWait, names how many still held it in a "
        f"Warning Event OldPasswordDiscardedWhileInUse (kubectl dbu why {name})."
    ]
    if watermark is not None:
        lines.append(
            f"A DBA can list them: sessions of the account with a connection id up to {watermark} "
            "(information_schema.PROCESSLIST: ID <= that, USER = the account's user)."
        )
    return lines
