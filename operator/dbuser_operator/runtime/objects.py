"""Writes to an object that change only what the caller owns: finalizers, and status through ``/status``.

A JSON merge patch replaces whole lists, so a finalizer is added or removed with a JSON Patch guarded by a
``test`` of ``metadata.resourceVersion``: another controller's finalizer is never dropped, and a stale object
is refused (``ConflictError``) instead of overwriting newer state. A status merge patch carries the
``metadata.resourceVersion`` it was computed from, which the API server treats as a precondition: a
status computed from a stale object (a paused former leader's, say) is refused the same way. Nothing is
sent when nothing changes.
"""

from __future__ import annotations

import json
from typing import Any

from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.controller import ReconcileError
from dbuser_operator.runtime.errors import ApiError, Conflict, Invalid, NotFound
from dbuser_operator.runtime.resources import ObjectKey, Resource


class ConflictError(ReconcileError):
    """The object changed since it was read: read it again (a reconcile that raises it is retried)."""

    def __init__(self, resource: Resource, key: ObjectKey, cause: ApiError) -> None:
        super().__init__(f"{resource.kind} {key} changed since it was read (HTTP {cause.status})")
        self.resource = resource
        self.key = key
        self.cause = cause


async def delete_exactly(kube: KubeClient, resource: Resource, obj: dict[str, Any]) -> bool:
    """Delete ``obj`` and no other object of its name (a precondition on its UID); False if it is gone
    already, ``ConflictError`` if another object has taken its name."""
    key = ObjectKey.of(obj)
    body = {"preconditions": {"uid": obj["metadata"]["uid"]}}
    try:
        await kube.request("DELETE", resource.path(key.namespace, key.name), body=body)
    except NotFound:
        return False
    except Conflict as error:
        raise ConflictError(resource, key, error) from error
    return True


async def add_finalizer(
    kube: KubeClient,
    resource: Resource,
    obj: dict[str, Any],
    finalizer: str,
    *,
    field_manager: str | None = None,
) -> dict[str, Any]:
    """Add ``finalizer`` unless present; return the object as the API returned it (``obj`` if unchanged)."""
    finalizers: list[str] = obj["metadata"].get("finalizers") or []
    if finalizer in finalizers:
        return obj
    operation: dict[str, Any]
    if finalizers:
        operation = {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}
    else:
        operation = {"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}
    return await _guarded_patch(kube, resource, obj, [operation], field_manager)


async def remove_finalizer(
    kube: KubeClient,
    resource: Resource,
    obj: dict[str, Any],
    *finalizers: str,
    field_manager: str | None = None,
) -> dict[str, Any]:
    """Remove every occurrence of ``finalizers``; return the object as the API returned it (or ``obj``)."""
    present: list[str] = obj["metadata"].get("finalizers") or []
    positions = [index for index, name in enumerate(present) if name in finalizers]
    if not positions:
        return obj
    # From the end, so that earlier indices stay valid; each removal also tests the value it removes.
    operations: list[dict[str, Any]] = []
    for index in reversed(positions):
        path = f"/metadata/finalizers/{index}"
        operations += [{"op": "test", "path": path, "value": present[index]}, {"op": "remove", "path": path}]
    return await _guarded_patch(kube, resource, obj, operations, field_manager)


async def update_status(
    kube: KubeClient,
    resource: Resource,
    obj: dict[str, Any],
    status: dict[str, Any],
    *,
    field_manager: str | None = None,
) -> dict[str, Any] | None:
    """Write ``status`` through the ``/status`` subresource if it differs from ``obj``'s.

    Returns the object as the API returned it, or None when ``status`` equals the current one (then no
    request is made). The merge patch sets every field of ``status`` and removes the fields of the old
    status that ``status`` lacks. Do not mutate ``obj["status"]`` to build ``status``: copy it first.
    It is conditional on ``obj``'s ``metadata.resourceVersion``: if the object changed since, nothing is
    written and ``ConflictError`` is raised (look again).
    """
    current: dict[str, Any] = obj.get("status") or {}
    if status == current:
        return None
    key = ObjectKey.of(obj)
    resource_version = obj["metadata"].get("resourceVersion")
    if not resource_version:
        raise ValueError(f"{resource.kind} {key} has no metadata.resourceVersion to guard the status with")
    patch = {
        "metadata": {"resourceVersion": resource_version},
        "status": _replacing_merge_patch(current, status),
    }
    try:
        return await kube.patch(
            resource,
            key.name,
            patch,
            PatchType.MERGE,
            namespace=key.namespace or None,
            subresource="status",
            field_manager=field_manager,
        )
    except Conflict as error:
        raise ConflictError(resource, key, error) from error


async def _guarded_patch(
    kube: KubeClient,
    resource: Resource,
    obj: dict[str, Any],
    operations: list[dict[str, Any]],
    field_manager: str | None,
) -> dict[str, Any]:
    """Apply a JSON Patch that first tests ``metadata.resourceVersion``; a stale object is a ConflictError."""
    key = ObjectKey.of(obj)
    resource_version = obj["metadata"].get("resourceVersion")
    if not resource_version:
        raise ValueError(f"{resource.kind} {key} has no metadata.resourceVersion to guard the patch with")
    guard = {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}
    try:
        return await kube.patch(
            resource,
            key.name,
            [guard, *operations],
            PatchType.JSON,
            namespace=key.namespace or None,
            field_manager=field_manager,
        )
    except (Conflict, Invalid) as error:
        if _is_conflict(error):
            raise ConflictError(resource, key, error) from error
        raise


def _is_conflict(error: Conflict | Invalid) -> bool:
    """Whether the API refused the patch because the object changed.

    A JSON Patch that cannot be applied (a failed ``test``) answers 422 with a bare Status: reason Invalid,
    no causes; a validation failure of the patched object also answers 422, but lists its causes.
    """
    if isinstance(error, Conflict):
        return True
    if error.status != 422:
        return False
    try:
        status = json.loads(error.body or b"")
    except ValueError:
        return False
    if not isinstance(status, dict):
        return False
    details = status.get("details") or {}
    return status.get("reason") == "Invalid" and not details.get("causes")


def _replacing_merge_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A merge patch (RFC 7386) turning ``old`` into ``new``: ``new``'s fields, and null for removed keys."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        previous = old.get(key)
        if isinstance(value, dict) and isinstance(previous, dict):
            patch[key] = _replacing_merge_patch(previous, value)
        else:
            patch[key] = value
    return patch
