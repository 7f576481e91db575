"""``kubectl dbu rotate NAME``: ask the operator for a new generated password now (the rotate
annotation), and with ``--wait`` wait for the new credential version and Ready."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu import facts
from dbuser_operator.kubectl_dbu.errors import CommandError, Forbidden, NotFound
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import (
    CREDENTIAL_VERSION_ANNOTATION,
    DATABASE_USERS,
    MERGE_PATCH,
    ROTATE_ANNOTATION,
    SECRETS,
)

POLL = 0.5  # seconds between looks while waiting


def trigger_value() -> str:
    """A new annotation value: the time, to the microsecond (two rotations never share one)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


async def run(kube: Api, namespace: str, name: str, *, wait: bool, limit: float) -> str:
    """Annotate; with ``wait``, return once the rotation is done (or raise after ``limit`` seconds)."""
    obj = await kube.get(DATABASE_USERS, name, namespace)
    if "generatedPassword" not in (obj.get("spec") or {}):
        raise CommandError(
            f"databaseuser/{name} has no generated password (spec.generatedPassword): its password is "
            f"the one in Secret {(obj['spec'].get('password') or {}).get('name')}; change it there to rotate"
        )
    before = await _credential_version(kube, obj)
    value = trigger_value()
    patch = {"metadata": {"annotations": {ROTATE_ANNOTATION: value}}}
    await kube.patch(DATABASE_USERS, name, patch, MERGE_PATCH, namespace=namespace)
    if not wait:
        return f"databaseuser/{name} rotation requested ({ROTATE_ANNOTATION}={value})"
    done = await _wait(kube, namespace, name, value, before=before, limit=limit)
    version = await _credential_version(kube, done)
    suffix = f", credential version {version}" if version is not None else ""
    return f"databaseuser/{name} rotated ({facts.rotation(done).get('phase') or 'done'}{suffix})"


async def _wait(
    kube: Api, namespace: str, name: str, value: str, *, before: int | None, limit: float
) -> dict[str, Any]:
    """The object once status records ``value`` as handled, is Ready at its generation, and its connection
    Secret (if any) carries a credential version above ``before``."""
    deadline = time.monotonic() + limit
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        if _handled(obj, value) and _ready_now(obj):
            has_secret = bool((obj.get("spec") or {}).get("connectionSecret"))
            version = await _credential_version(kube, obj)
            if not has_secret or (version is not None and (before is None or version > before)):
                return obj
        await asyncio.sleep(POLL)
    status, reason = facts.ready(obj)
    raise CommandError(
        f"timed out after {limit:g}s waiting for databaseuser/{name} to rotate "
        f"(Ready={status} {reason}; see kubectl dbu why {name})"
    )


def _handled(obj: dict[str, Any], value: str) -> bool:
    return facts.rotation(obj).get("trigger") == value


def _ready_now(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    return facts.ready(obj)[0] == "True" and status.get("observedGeneration") == obj["metadata"].get(
        "generation"
    )


async def _credential_version(kube: Api, obj: dict[str, Any]) -> int | None:
    """The connection Secret's credential-version annotation (None: no Secret or no annotation yet); the
    copy in status.credentialVersion when the user may not read Secrets."""
    name = ((obj.get("spec") or {}).get("connectionSecret") or {}).get("name")
    if not name:
        return None
    try:
        secret = await kube.get(SECRETS, name, obj["metadata"]["namespace"])
    except NotFound:
        return None
    except Forbidden:
        mirrored = (obj.get("status") or {}).get("credentialVersion")
        return mirrored if isinstance(mirrored, int) else None
    value = ((secret.get("metadata") or {}).get("annotations") or {}).get(CREDENTIAL_VERSION_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdigit() else None
