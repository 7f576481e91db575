"""The Events of one DatabaseUser, oldest first."""

from __future__ import annotations

from typing import Any

from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import EVENTS
from dbuser_operator.kubectl_dbu.table import parse_time


def last_seen(event: dict[str, Any]) -> str:
    """When the Event last happened: lastTimestamp, eventTime, or its creation."""
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def sort_key(event: dict[str, Any]) -> tuple[float, str]:
    moment = parse_time(last_seen(event))
    return (moment.timestamp() if moment else 0.0, (event.get("metadata") or {}).get("name") or "")


async def events_of(kube: Api, namespace: str, name: str, uid: str | None) -> list[dict[str, Any]]:
    """The Events about DatabaseUser ``name`` (of this ``uid``, when given: not a deleted namesake's)."""
    selector = f"involvedObject.kind=DatabaseUser,involvedObject.name={name}"
    listed = await kube.request("GET", EVENTS.path(namespace), query=[("fieldSelector", selector)])
    items = [
        event
        for event in listed.get("items") or []
        if uid is None or (event.get("involvedObject") or {}).get("uid") in {uid, None, ""}
    ]
    return sorted(items, key=sort_key)
