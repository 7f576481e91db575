"""Secrets the operator creates for a DatabaseUser: owned by it, never someone else's.

A Secret the operator writes carries an ownerReference (``controller: true``) to its DatabaseUser and the
label ``app.kubernetes.io/managed-by: dbuser-operator``. A Secret of the wanted name that this DatabaseUser
does not own is never written: ``SecretNotOwned``. The one exception is adoption: with the adopt annotation,
a Secret the operator made and let go of (our label, no controller) is owned again (e.g. after a
``Retain`` deletion and a new DatabaseUser of the same name). Under ``Retain`` the ownerReference is
removed, so that the garbage collector keeps the Secret; under ``Delete`` the operator deletes it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final

from dbuser_operator.api.v1alpha1 import API_VERSION, KIND
from dbuser_operator.controllers.databaseuser.context import Context, adopting
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.freshness import WrittenVersions
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import Conflict, NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.objects import ConflictError, delete_exactly
from dbuser_operator.runtime.resources import SECRETS, ObjectKey

MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "dbuser-operator"


def encode(data: Mapping[str, str]) -> dict[str, str]:
    """A Secret's ``data``: each value's UTF-8 bytes in base64."""
    return {key: base64.b64encode(value.encode("utf-8")).decode("ascii") for key, value in data.items()}


def owner_reference(ctx: Context) -> dict[str, Any]:
    """The ownerReference that makes the DatabaseUser the Secret's controller."""
    metadata = ctx.user.metadata
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": metadata.name,
        "uid": metadata.uid,
        "controller": True,
    }


def owned_by(secret: Mapping[str, Any], uid: str | None) -> bool:
    """Whether ``secret``'s controller is the object with ``uid``."""
    references = secret.get("metadata", {}).get("ownerReferences") or []
    return bool(uid) and any(ref.get("uid") == uid and ref.get("controller") for ref in references)


def _controlled(secret: Mapping[str, Any]) -> bool:
    return any(ref.get("controller") for ref in secret.get("metadata", {}).get("ownerReferences") or [])


def not_owned(ctx: Context, name: str, what: str) -> ConditionError:
    """SecretNotOwned: the Secret exists and is not this DatabaseUser's to write."""
    namespace = ctx.user.metadata.namespace or ""
    return ConditionError(
        "SecretNotOwned",
        f"Secret {namespace}/{name} ({what}) exists and is not owned by this DatabaseUser: the operator "
        "never overwrites it; delete it or choose another name",
        retry=False,
    )


class OwnedSecrets:
    """Reads (from the watch cache), creates, adopts, releases and deletes a DatabaseUser's own Secrets."""

    def __init__(self, kube: KubeClient, secrets: Informer) -> None:
        self.kube = kube
        self.secrets = secrets
        self.written = WrittenVersions()  # the versions this operator's own patches replaced

    def cached(self, ctx: Context, name: str) -> dict[str, Any] | None:
        """The Secret as the watch cache has it."""
        return self.secrets.get(ObjectKey(ctx.user.metadata.namespace or "", name))

    async def current(self, ctx: Context, name: str) -> dict[str, Any] | None:
        """The Secret as the watch cache has it, or as the API server has it while the cache still holds a
        version one of our own patches replaced (its watch event is on its way): never older than what the
        operator wrote last, e.g. a generated password from before its rotation (see
        :mod:`~dbuser_operator.controllers.kit.freshness`)."""
        key = ObjectKey(ctx.user.metadata.namespace or "", name)
        cached = self.secrets.get(key)
        if cached is None or not self.written.stale(key, cached["metadata"].get("resourceVersion")):
            return cached
        try:
            return await self.kube.get(SECRETS, name, key.namespace)
        except NotFound:
            return None

    async def claim(self, ctx: Context, secret: dict[str, Any], what: str) -> dict[str, Any]:
        """``secret`` if this DatabaseUser owns it, or adopts it now; else SecretNotOwned."""
        if owned_by(secret, ctx.user.metadata.uid):
            return secret
        labels = secret["metadata"].get("labels") or {}
        if not (adopting(ctx) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY and not _controlled(secret)):
            raise not_owned(ctx, secret["metadata"]["name"], what)
        references = secret["metadata"].get("ownerReferences") or []
        patch = {
            "metadata": {
                "resourceVersion": secret["metadata"]["resourceVersion"],
                "ownerReferences": [*references, owner_reference(ctx)],
            }
        }
        adopted = await self._patch(secret, patch)
        ctx.event("Warning", "SecretAdopted", f"took over Secret {ObjectKey.of(secret)} ({what})")
        return adopted

    async def create(
        self,
        ctx: Context,
        name: str,
        data: Mapping[str, str],
        what: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Create the Secret with ``data`` (plain text); if one of that name exists (the cache had not seen
        it yet), return that one, claimed, instead. The Secret, and whether this call created it."""
        namespace = ctx.user.metadata.namespace or ""
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "labels": {**(labels or {}), MANAGED_BY_LABEL: MANAGED_BY},
                "annotations": dict(annotations or {}),
                "ownerReferences": [owner_reference(ctx)],
            },
            "data": encode(data),
        }
        try:
            return await self.kube.create(SECRETS, body, namespace), True
        except Conflict:  # AlreadyExists: made meanwhile, or by an earlier pass the cache has not seen
            existing = await self.kube.get(SECRETS, name, namespace)
            return await self.claim(ctx, existing, what), False

    async def patch(self, secret: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """A merge patch of an owned Secret, conditional on the resourceVersion it was computed from."""
        patch = {**patch, "metadata": {**patch.get("metadata", {}), **_precondition(secret)}}
        return await self._patch(secret, patch)

    async def _patch(self, secret: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        key = ObjectKey.of(secret)
        try:
            written = await self.kube.patch(
                SECRETS, key.name, patch, PatchType.MERGE, namespace=key.namespace
            )
        except Conflict as error:
            raise ConflictError(SECRETS, key, error) from error
        self.written.record(key, [secret["metadata"]["resourceVersion"]])
        return written

    async def release(self, ctx: Context, name: str) -> None:
        """Keep the Secret after the DatabaseUser is gone: remove its ownerReference (if it is ours)."""
        secret = await self._live(ctx, name)
        uid = ctx.user.metadata.uid
        if secret is None or not owned_by(secret, uid):
            return
        references = [ref for ref in secret["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
        await self.patch(secret, {"metadata": {"ownerReferences": references or None}})
        ctx.event("Normal", "SecretRetained", f"kept Secret {ObjectKey.of(secret)} (no longer owned)")

    async def delete(self, ctx: Context, name: str) -> None:
        """Delete the Secret if this DatabaseUser owns it (a precondition on its UID)."""
        secret = await self._live(ctx, name)
        if secret is None or not owned_by(secret, ctx.user.metadata.uid):
            return
        if await delete_exactly(self.kube, SECRETS, secret):
            ctx.event("Normal", "SecretDeleted", f"deleted Secret {ObjectKey.of(secret)}")

    async def _live(self, ctx: Context, name: str) -> dict[str, Any] | None:
        """The Secret from the API server (deletion must not miss one the cache has not seen yet)."""
        try:
            return await self.kube.get(SECRETS, name, ctx.user.metadata.namespace or "")
        except NotFound:
            return None


def _precondition(secret: Mapping[str, Any]) -> dict[str, Any]:
    return {"resourceVersion": secret["metadata"]["resourceVersion"]}


def decoded(secret: Mapping[str, Any], key: str) -> str | None:
    """The text of ``key`` in ``secret``'s data; None when absent or not UTF-8 base64."""
    value = (secret.get("data") or {}).get(key)
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return None
