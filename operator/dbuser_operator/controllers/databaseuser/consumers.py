"""Which pods use a DatabaseUser's Secrets, and which of them started before a rotation.

A pod uses a Secret through an env ``secretKeyRef``, an ``envFrom`` ``secretRef`` (in any container, init
and ephemeral ones included), a ``secret`` volume, or a ``projected`` volume with a ``secret`` source. Such
a pod still holds the old password if it started before the rotation (``status.startTime``) and not every
container of it has started again since (``state.running.startedAt``); pods that ended (Succeeded,
Failed) hold nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any


def consumed_secrets(obj: dict[str, Any]) -> frozenset[str]:
    """The Secrets of a DatabaseUser that applications read the password from: the password Secret (the
    user's, or the generated one) and the connection Secret."""
    spec = obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name") or ""
    names = {
        (spec.get("password") or {}).get("name"),
        (spec.get("connectionSecret") or {}).get("name"),
    }
    if "generatedPassword" in spec:
        names.add((spec.get("generatedPassword") or {}).get("secretName") or f"{name}-password")
    return frozenset(n for n in names if isinstance(n, str) and n)


def uses_secret(pod: dict[str, Any], names: frozenset[str]) -> bool:
    """Whether the pod reads one of the Secrets ``names`` (env, envFrom, volume, projected volume)."""
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or []:
        if (volume.get("secret") or {}).get("secretName") in names:
            return True
        for source in (volume.get("projected") or {}).get("sources") or []:
            if (source.get("secret") or {}).get("name") in names:
                return True
    containers = [
        *(spec.get("containers") or []),
        *(spec.get("initContainers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]
    for container in containers:
        for env in container.get("env") or []:
            if ((env.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") in names:
                return True
        for source in container.get("envFrom") or []:
            if (source.get("secretRef") or {}).get("name") in names:
                return True
    return False


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def started_after(pod: dict[str, Any], since: datetime) -> bool:
    """Whether the pod, or else every one of its containers, started after ``since`` (strictly: times
    are whole seconds, and a start within the rotation's second may have read the old password)."""
    status = pod.get("status") or {}
    started = _time(status.get("startTime"))
    if started is not None and started > since:
        return True
    containers = status.get("containerStatuses") or []
    if not containers:
        return False
    for container in containers:
        running = _time(((container.get("state") or {}).get("running") or {}).get("startedAt"))
        if running is None or running <= since:
            return False
    return True


def holding_pods(pods: Iterable[dict[str, Any]], names: frozenset[str], since: datetime) -> list[str]:
    """The names of the running pods that use one of the Secrets and started before ``since``, sorted."""
    holding = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in {"Succeeded", "Failed"}:
            continue
        if uses_secret(pod, names) and not started_after(pod, since):
            holding.append(str(pod["metadata"]["name"]))
    return sorted(holding)
