"""The connection-Secret step: a Secret with everything an application needs to connect, kept in sync.

It runs after the account has its password, so a Secret never offers a password that does not work yet. Keys:
host, port, sslMode (of the endpoint selected: ``credentials/endpoints.py``), username, password (the one just
applied; a workload's account has none, but sslCert and sslKey: where its pods mount their certificate),
database, DATABASE_URL, JDBC_URL, the other endpoints' keys with their prefixes, then the user's templates
rendered in the sandbox, shared fairly between namespaces (``credentials/render_pool.py``): a render that must
wait for its turn ends the pass with ``TemplatesPending`` (nothing written, later steps wait too;
``Progressing=True``, and an account that serves stays Ready: ``progress.py``) and the resource comes back
once it is done; a resource without templates never waits on the renderer. With ``spec.tls.certificate``,
tls.crt, tls.key and ca.crt of the certificate cert-manager issued come last (``client_certificate.py``: a
template cannot stand in for them). The Secret's annotation ``mysql.dbuser-operator.dev/credential-version``
counts the passwords it has held: it goes up by one whenever the password written changes (mirrored in
``status.credentialVersion``), so a rollout can key on it. The Secret is written only when something differs,
conditionally on the resourceVersion it was computed from; labels and annotations removed from the spec are
removed from it (``secret_metadata.py``). Its name is kept in ``status.connectionSecret``: once the spec
renames or removes it, the Secret of that name is deleted if this DatabaseUser owns it. Under ``Delete`` it
goes with the resource; under ``Retain`` it stays, no longer owned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

from dbuser_operator.api.v1alpha1 import (
    CREDENTIAL_VERSION_ANNOTATION,
    MANAGED_METADATA_ANNOTATION,
    AppliedSecret,
    ConnectionSecret,
    DatabaseUser,
)
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.endpoints import DefaultServerEndpoints
from dbuser_operator.controllers.databaseuser.owned_secrets import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    OwnedSecrets,
    decoded,
    encode,
    owned_by,
)
from dbuser_operator.controllers.databaseuser.secret_metadata import metadata_patch, record
from dbuser_operator.controllers.kit.errors import ConditionError, WorkPending
from dbuser_operator.credentials.endpoints import (
    CREDENTIAL_BUNDLE,
    SSL_MODE_KEY,
    EndpointNotFound,
    connection_values,
    select,
)
from dbuser_operator.credentials.render_pool import Pending, RenderPool
from dbuser_operator.credentials.templates import TemplateError
from dbuser_operator.runtime.resources import ObjectKey

WHAT: Final = "connection Secret"


def connection_database(user: DatabaseUser, spec: ConnectionSecret) -> str | None:
    """spec.connectionSecret.database, else the one database the grants name (none if several)."""
    if spec.database:
        return spec.database
    databases = {grant.database for grant in user.spec.privileges if grant.database != "*"}
    return databases.pop() if len(databases) == 1 else None


def credential_version(secret: dict[str, Any] | None) -> int:
    """The credential-version annotation of ``secret``; 0 when absent or not a positive number."""
    value = ((secret or {}).get("metadata", {}).get("annotations") or {}).get(CREDENTIAL_VERSION_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdigit() else 0


class ConnectionSecretStep:
    """Writes the connection Secret when it is missing or differs from what it should hold."""

    name = "connection-secret"
    # A Secret never offers a password that does not work yet, nor a certificate not issued yet.
    after = ("password", "hosts", "client-certificate")

    def __init__(
        self,
        secrets: OwnedSecrets,
        renderer: RenderPool,
        endpoints: DefaultServerEndpoints,
        requeue: Callable[[ObjectKey], None] = lambda key: None,
    ) -> None:
        self.secrets = secrets
        self.renderer = renderer
        self.endpoints = endpoints
        self.requeue = requeue  # puts a resource back in the work queue (its queued render is done)

    def _values(self, ctx: Context, spec: ConnectionSecret, password: str | None) -> dict[str, str]:
        """The keys for the endpoints ``spec`` selects among its server's; EndpointNotFound otherwise. A
        workload's account offers the path of its pods' certificate instead of a password."""
        named, fallback, server = self.endpoints.of(ctx)
        try:
            chosen, more = select(named, fallback, spec.endpoint, spec.endpoints or ())
        except EndpointNotFound as error:
            message = f"{WHAT} {spec.name}: {server} has {error}"
            raise ConditionError("EndpointNotFound", message, retry=False) from None
        user, database = ctx.user.mysql_name(), connection_database(ctx.user, spec)
        certificate = CREDENTIAL_BUNDLE if ctx.workload is not None else None
        return connection_values(user, password, chosen, database, more, certificate=certificate)

    async def ensure(self, ctx: Context) -> None:
        spec = ctx.user.spec.connection_secret
        if spec is None:
            ctx.status.connection_secret_version = None
            await self._delete_left_over(ctx, None)
            return
        if ctx.password is None and ctx.workload is None:  # a plugin that takes none: nothing to connect with
            raise ConditionError(
                "ConnectionSecretInvalid",
                f"{WHAT} {spec.name}: the account takes no password, so there is none to offer",
                retry=False,
            )
        values = self._values(ctx, spec, ctx.password)
        secret = self.secrets.cached(ctx, spec.name)
        rendered = await self._render(ctx, spec, values, secret)
        data = values | rendered | (ctx.client_certificate or {})  # templates cannot stand in for it
        if secret is not None:
            secret = await self.secrets.claim(ctx, secret, WHAT)
        version, labels, annotations = self._metadata(ctx, spec, secret, data)
        if secret is None:
            secret, created = await self.secrets.create(
                ctx, spec.name, data, WHAT, labels=labels, annotations=annotations
            )
            if created:
                ctx.event(
                    "Normal", "ConnectionSecretCreated", f"created Secret {spec.name} (version {version})"
                )
                ctx.status.credential_version = version
                _record(ctx, spec, secret)
                await self._delete_left_over(ctx, spec.name)
                return
            version, labels, annotations = self._metadata(ctx, spec, secret, data)
        patch = _patch(secret, encode(data), labels, annotations)
        if patch:
            secret = await self.secrets.patch(secret, patch)
            ctx.event("Normal", "ConnectionSecretUpdated", f"updated Secret {spec.name} (version {version})")
        ctx.status.credential_version = version
        _record(ctx, spec, secret)
        await self._delete_left_over(ctx, spec.name)

    def why_write(self, ctx: Context) -> str | None:
        """Why this step would write now (the Secret, or status), judged from the caches alone; None when
        it would write nothing: a new leader's first pass (:mod:`..converged`), after the password step.
        Templates render only in the sandbox's workers, never here: their keys are taken as the Secret holds
        them only while it is at the version status records (``connectionSecretVersion``)."""
        spec, written = ctx.user.spec.connection_secret, ctx.status.connection_secret
        if spec is None:
            return None if written is None else "connection Secret removed"
        if written != spec.name:
            return "connection Secret renamed"
        if ctx.password is None or ctx.workload is not None or ctx.client_certificate is not None:
            return "connection Secret without a password Secret"
        return self._why_write_content(ctx, spec)

    def _why_write_content(self, ctx: Context, spec: ConnectionSecret) -> str | None:
        """Why the cached Secret's data, labels, annotations or credential version would be written."""
        secret = self.secrets.cached(ctx, spec.name)
        if secret is None or not owned_by(secret, ctx.user.metadata.uid):
            return "connection Secret missing or not owned"
        try:
            data = self._values(ctx, spec, ctx.password)
            held = _vouched_outputs(ctx, spec, secret, data)
            if held is None:
                return "connection Secret templates not vouched for"
            data |= held
            version, labels, annotations = self._metadata(ctx, spec, secret, data)
            differs = bool(_patch(secret, encode(data), labels, annotations))
        except ConditionError as error:
            return f"connection Secret refused: {error.reason}"
        if differs:
            return "connection Secret differs"
        return None if version == ctx.status.credential_version else "credential version differs"

    def _metadata(
        self, ctx: Context, spec: ConnectionSecret, secret: dict[str, Any] | None, data: dict[str, str]
    ) -> tuple[int, dict[str, str], dict[str, str]]:
        """The credential version ``secret`` should carry with ``data``, and its labels and annotations."""
        version = self._version(ctx, secret, data.get("password"))
        labels = {**(spec.labels or {}), MANAGED_BY_LABEL: MANAGED_BY}
        annotations = {**(spec.annotations or {}), CREDENTIAL_VERSION_ANNOTATION: str(version)}
        if (keys := record(spec.labels or {}, spec.annotations or {})) is not None:
            annotations[MANAGED_METADATA_ANNOTATION] = keys
        return version, labels, annotations

    async def _delete_left_over(self, ctx: Context, name: str | None) -> None:
        """Delete the connection Secret last written under another name (or none wanted now), if this
        DatabaseUser owns it and it is not now its password's Secret; then record ``name`` as written."""
        written = ctx.status.connection_secret
        if written is not None and written not in (name, ctx.user.password_secret_name()):
            await self.secrets.delete(ctx, written)
        ctx.status.connection_secret = name

    async def _render(
        self, ctx: Context, spec: ConnectionSecret, values: dict[str, str], secret: dict[str, Any] | None
    ) -> dict[str, str]:
        """The spec's templates rendered (or as the Secret holds them, when the same inputs rendered that)."""
        name, templates = spec.name, spec.templates or {}
        if not templates:
            return {}  # never waits on the renderer
        key = ObjectKey.of(ctx.obj)
        held = {k: v for k in templates if secret is not None and (v := decoded(secret, k)) is not None}
        try:
            # Templates see the standard values, database and sslMode too (empty when there is none).
            return await self.renderer.render(
                key.namespace,
                key,
                templates,
                {"database": "", SSL_MODE_KEY: "", **values},
                current=held,
                notify=lambda: self.requeue(key),
            )
        except Pending:
            raise WorkPending(
                "TemplatesPending",
                f"{WHAT} {name}: its templates are queued to render (renders are shared fairly between "
                "namespaces); it is reconciled again once they are",
                still_serves=_held_password_works(ctx, secret, values.get("password")),
            ) from None
        except TemplateError as error:
            raise ConditionError("TemplateInvalid", f"{WHAT} {name}: {error}", retry=False) from None

    @staticmethod
    def _version(ctx: Context, secret: dict[str, Any] | None, password: str | None) -> int:
        """The credential version the Secret should carry: the last one, plus one if the password changes
        (a workload's Secret has none: it stays at 1)."""
        last = max(credential_version(secret), ctx.status.credential_version or 0)
        unchanged = secret is not None and decoded(secret, "password") == password
        return max(last, 1) if unchanged else last + 1

    async def delete(self, ctx: Context) -> None:
        for name in _names(ctx):
            await self.secrets.delete(ctx, name)

    async def release(self, ctx: Context) -> None:
        for name in _names(ctx):
            await self.secrets.release(ctx, name)


def _record(ctx: Context, spec: ConnectionSecret, secret: dict[str, Any]) -> None:
    """Record the version of the Secret this pass wrote or found in line, if it has templates (what a new
    leader's first pass takes their keys from without rendering them)."""
    meta = secret["metadata"]
    recorded = AppliedSecret(name=spec.name, uid=meta["uid"], resource_version=meta["resourceVersion"])
    ctx.status.connection_secret_version = recorded if spec.templates else None


def _vouched_outputs(
    ctx: Context, spec: ConnectionSecret, secret: dict[str, Any], values: dict[str, str]
) -> dict[str, str] | None:
    """The template keys as ``secret`` holds them, when they need no render: the Secret is still at the
    version status records (what the last pass wrote or found in line) and no template key hides one of
    ``values`` (the templates' inputs, compared by the caller); {} without templates, None otherwise."""
    templates = spec.templates or {}
    if not templates:
        return {}
    recorded, meta = ctx.status.connection_secret_version, secret["metadata"]
    if recorded is None or set(templates) & set(values):
        return None
    if (recorded.name, recorded.uid, recorded.resource_version) != (
        spec.name,
        meta.get("uid"),
        meta.get("resourceVersion"),
    ):
        return None
    held = {key: decoded(secret, key) for key in templates}
    return None if None in held.values() else cast("dict[str, str]", held)


def _held_password_works(ctx: Context, secret: dict[str, Any] | None, password: str | None) -> bool:
    """Whether the password the connection Secret holds logs in now: the account's, or the previous one
    while a DualPassword rotation retains it (the Secret last written, at the version status records). A
    workload's Secret holds none: it serves once written."""
    if secret is None:
        return False
    if decoded(secret, "password") == password:
        return True
    rotation = ctx.status.rotation
    retained = rotation is not None and rotation.phase == "Retained"
    return retained and credential_version(secret) == (ctx.status.credential_version or 0)


def _names(ctx: Context) -> list[str]:
    """The connection Secret the spec names and the one last written, if another."""
    spec = ctx.user.spec.connection_secret
    names = [spec.name if spec is not None else None, ctx.status.connection_secret]
    return [name for name in dict.fromkeys(names) if name is not None]


def _patch(
    secret: dict[str, Any], data: dict[str, str], labels: dict[str, str], annotations: dict[str, str]
) -> dict[str, Any]:
    """A merge patch bringing ``secret`` to ``data`` (keys not in it removed), setting ``labels`` and
    ``annotations`` and removing those the spec set before and no longer does (others' are left alone);
    empty when nothing differs."""
    patch: dict[str, Any] = {}
    current = secret.get("data") or {}
    if current != data:
        patch["data"] = {**{key: None for key in current if key not in data}, **data}
    metadata = secret["metadata"]
    if changes := metadata_patch(metadata, labels, annotations):
        patch["metadata"] = changes
    if secret.get("type") not in (None, "Opaque"):
        raise ConditionError(
            "SecretNotOwned", f"Secret {metadata['name']} is not of type Opaque", retry=False
        )
    return patch
