"""The cert-manager objects of a DatabaseUser: its Certificate (created, owned and kept in line by the
operator) and the Secret cert-manager writes for it (read, and deleted with the Certificate).

The Certificate is named after the DatabaseUser and carries an ownerReference to it (``controller: true``),
the managed-by label and the operator's target label (the watch selects by it): the garbage collector
deletes it with the DatabaseUser, and the operator's delete half does so first (a cluster without a garbage
collector, the test environment, relies on it). cert-manager's Secret has no ownerReference to the
DatabaseUser; it is deleted only if cert-manager's annotation names this Certificate and status recorded it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from dbuser_operator.certificates.certificate import CERTIFICATE_NAME_ANNOTATION, Request
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.owned_secrets import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    owned_by,
    owner_reference,
)
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import Conflict, Forbidden, Invalid, NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.objects import ConflictError, delete_exactly
from dbuser_operator.runtime.resources import SECRETS, ObjectKey, Resource

CERTIFICATES: Final = Resource("cert-manager.io", "v1", "certificates", "Certificate")
CERTIFICATE_REQUESTS: Final = Resource("cert-manager.io", "v1", "certificaterequests", "CertificateRequest")


def certificate_informer(kube: KubeClient, namespaces: Sequence[str], scope: Scope) -> Informer:
    """The Certificates this operator instance made (its target label), in the namespaces it watches."""
    return Informer(kube, CERTIFICATES, namespaces=namespaces, label_selector=scope.selector)


class CertManagerObjects:
    """Reads (the watch cache first), creates, updates and deletes a DatabaseUser's cert-manager objects."""

    def __init__(self, kube: KubeClient, certificates: Informer, secrets: Informer, scope: Scope) -> None:
        self.kube = kube
        self.certificates = certificates
        self.secrets = secrets
        self.scope = scope

    def labels(self) -> dict[str, str]:
        """The labels of a Certificate the operator makes."""
        return {MANAGED_BY_LABEL: MANAGED_BY, self.scope.label: self.scope.target}

    def secret(self, ctx: Context, name: str) -> dict[str, Any] | None:
        """cert-manager's Secret as the watch cache has it (the DatabaseUser names it: it is kept)."""
        return self.secrets.get(ObjectKey(_namespace(ctx), name))

    async def ensure(self, ctx: Context, request: Request) -> dict[str, Any]:
        """The Certificate, created or brought in line with ``request``; CertificateNotOwned if one of that
        name is not this DatabaseUser's, CertificateInvalid if the API server (cert-manager's webhook)
        refuses it."""
        namespace = _namespace(ctx)
        current = self.certificates.get(ObjectKey(namespace, request.name))
        if current is None:
            body = request.body(self.labels(), owner_reference(ctx))
            try:
                created = await self.kube.create(CERTIFICATES, body, namespace)
            except Conflict:  # made meanwhile, or by an earlier pass the cache has not seen yet
                current = await self.kube.get(CERTIFICATES, request.name, namespace)
            except Invalid as error:
                raise _invalid(request.name, error) from None
            else:
                ctx.event("Normal", "CertificateCreated", f"created Certificate {request.name}")
                return created
        if not owned_by(current, ctx.user.metadata.uid):
            raise ConditionError(
                "CertificateNotOwned",
                f"Certificate {namespace}/{request.name} exists and is not owned by this DatabaseUser: the "
                "operator never changes it; delete it, or rename the DatabaseUser",
                retry=False,
            )
        patch = request.patch(current, self.labels())
        if not patch:
            return current
        guarded = {**patch, "metadata": {**patch.get("metadata", {}), **_precondition(current)}}
        try:
            updated = await self.kube.patch(
                CERTIFICATES, request.name, guarded, PatchType.MERGE, namespace=namespace
            )
        except Conflict as error:
            raise ConflictError(CERTIFICATES, ObjectKey.of(current), error) from error
        except Invalid as error:
            raise _invalid(request.name, error) from None
        ctx.event("Normal", "CertificateUpdated", f"updated Certificate {request.name}")
        return updated

    async def requests(self, ctx: Context) -> list[dict[str, Any]]:
        """The CertificateRequests of the namespace (listed while a certificate is pending, for
        cert-manager's reason: they carry no label to select them by); none if they cannot be listed."""
        try:
            items, _ = await self.kube.list_all(CERTIFICATE_REQUESTS, _namespace(ctx), page_size=100)
        except (NotFound, Forbidden):
            return []
        return list(items)

    async def delete(self, ctx: Context, name: str, secret_names: list[str]) -> None:
        """Delete the Certificate ``name`` if this DatabaseUser owns it, and those of ``secret_names`` that
        cert-manager wrote for it."""
        namespace = _namespace(ctx)
        certificate = await self._live(CERTIFICATES, name, namespace)
        if certificate is not None and owned_by(certificate, ctx.user.metadata.uid):
            if await delete_exactly(self.kube, CERTIFICATES, certificate):
                ctx.event("Normal", "CertificateDeleted", f"deleted Certificate {name}")
        elif certificate is not None:
            return  # someone else's Certificate: its Secret is not ours either
        for secret_name in dict.fromkeys(secret_names):
            await self.delete_secret(ctx, name, secret_name)

    async def delete_secret(self, ctx: Context, certificate: str, name: str) -> None:
        """Delete the Secret ``name`` if cert-manager wrote it for the Certificate ``certificate``."""
        namespace = _namespace(ctx)
        secret = await self._live(SECRETS, name, namespace)
        if (
            secret is not None
            and written_for(secret, certificate)
            and await delete_exactly(self.kube, SECRETS, secret)
        ):
            ctx.event("Normal", "SecretDeleted", f"deleted Secret {namespace}/{name} (cert-manager's)")

    async def release(self, ctx: Context, name: str) -> None:
        """Keep the Certificate (and cert-manager renewing it) after the DatabaseUser is gone: remove its
        ownerReference, if it is ours."""
        certificate = await self._live(CERTIFICATES, name, _namespace(ctx))
        uid = ctx.user.metadata.uid
        if certificate is None or not owned_by(certificate, uid):
            return
        references = certificate["metadata"].get("ownerReferences") or []
        kept = [reference for reference in references if reference.get("uid") != uid]
        patch = {"metadata": {"ownerReferences": kept or None, **_precondition(certificate)}}
        await self.kube.patch(CERTIFICATES, name, patch, PatchType.MERGE, namespace=_namespace(ctx))
        ctx.event("Normal", "CertificateRetained", f"kept Certificate {name} (no longer owned)")

    async def _live(self, resource: Resource, name: str, namespace: str) -> dict[str, Any] | None:
        """The object from the API server (deletion must not miss one the cache has not seen); None when it
        is gone, or when its kind is not served (cert-manager's CRDs removed)."""
        try:
            return await self.kube.get(resource, name, namespace)
        except NotFound:
            return None


def written_for(secret: Mapping[str, Any], certificate: str) -> bool:
    """Whether cert-manager's annotation on ``secret`` names the Certificate ``certificate``."""
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    return annotations.get(CERTIFICATE_NAME_ANNOTATION) == certificate


def _namespace(ctx: Context) -> str:
    return ctx.user.metadata.namespace or ""


def _precondition(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"resourceVersion": obj["metadata"]["resourceVersion"]}


def _invalid(name: str, error: Invalid) -> ConditionError:
    return ConditionError(
        "CertificateInvalid", f"Certificate {name} was refused: {error.message or error}", retry=False
    )
