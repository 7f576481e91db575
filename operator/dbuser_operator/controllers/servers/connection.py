"""A server resource's admin connection: its spec and Secrets turned into :class:`ConnectionSettings`.

The Secrets are read through a :data:`SecretReader` (the cache, else the API). TLS material (a CA, a client
certificate and key) exists only as files for the MySQL layer: it is written to a private directory (0700,
files 0600), read into the TLS context when the :class:`Database` is built, and removed right after.
Nothing here logs or reports a Secret's content; a fingerprint (a hash) tells whether it changed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import shutil
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from dbuser_operator.api.v1alpha1 import SecretKeySelector
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.mysql.session.tls import SSLMode

SecretReader = Callable[[str, str], Awaitable[dict[str, Any] | None]]
"""``(namespace, name)`` → the Secret object, or None when it does not exist."""

DatabaseFactory = Callable[[ConnectionSettings, str], Database]
"""``(connection settings, bookkeeping schema)`` → the server's Database (fenced as the operator runs)."""


class ServerConfigError(Exception):
    """The server resource cannot be turned into a connection: a reason and a message (no secret)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class ServerDefaults:
    """What a server resource leaves unset: the operator's settings."""

    pool_size: int
    schema: str
    connect_timeout: float
    read_timeout: float
    cluster_namespace: str  # where a ClusterMySQLServer's Secrets live


def secret_namespace(resource: ServerResource, defaults: ServerDefaults) -> str:
    """The namespace of the server's Secrets: its own, or the operator's for a ClusterMySQLServer."""
    return resource.namespace or defaults.cluster_namespace


def referenced_secrets(cluster_namespace: str) -> Callable[[dict[str, Any]], list[str]]:
    """Index function over server resources: ``namespace/name`` of every Secret a server's connection is
    built from (a ClusterMySQLServer's are in ``cluster_namespace``)."""

    def index(obj: dict[str, Any]) -> list[str]:
        spec = obj.get("spec") or {}
        namespace = obj["metadata"].get("namespace") or cluster_namespace
        credentials, tls = spec.get("credentials") or {}, spec.get("tls") or {}
        names = [
            (credentials.get("user") or {}).get("name"),
            (credentials.get("password") or {}).get("name"),
            (tls.get("ca") or {}).get("name"),
            tls.get("clientCertificateSecret"),
        ]
        return [f"{namespace}/{name}" for name in dict.fromkeys(names) if isinstance(name, str) and name]

    return index


@dataclass
class _Material:
    """The Secrets' values one connection needs (held only while the connection is built)."""

    user: str
    password: str
    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None

    def fingerprint(self, resource: ServerResource, defaults: ServerDefaults) -> str:
        digest = hashlib.sha256()
        spec = resource.spec.model_dump(mode="json", exclude={"policy"})
        digest.update(json.dumps([spec, defaults.pool_size, defaults.schema], sort_keys=True).encode())
        for part in (self.user.encode(), self.password.encode(), self.ca, self.cert, self.key):
            digest.update(b"\0" if part is None else hashlib.sha256(part).digest())
        return digest.hexdigest()


async def _value(read: SecretReader, namespace: str, selector: SecretKeySelector, what: str) -> bytes:
    return await _key(read, namespace, selector.name, selector.key, what)


async def _key(read: SecretReader, namespace: str, name: str, key: str, what: str) -> bytes:
    secret = await read(namespace, name)
    if secret is None:
        raise ServerConfigError("SecretNotFound", f"the {what} Secret {namespace}/{name} does not exist")
    encoded = (secret.get("data") or {}).get(key)
    if not isinstance(encoded, str):
        raise ServerConfigError("SecretNotFound", f"the {what} Secret {namespace}/{name} has no key {key!r}")
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise ServerConfigError(
            "SecretNotFound", f"the {what} Secret {namespace}/{name} key {key!r} is not base64"
        ) from None


def _text(value: bytes, what: str) -> str:
    try:
        return value.decode().rstrip("\r\n")
    except UnicodeDecodeError:
        raise ServerConfigError("InvalidCredentials", f"the {what} is not UTF-8 text") from None


async def read_material(resource: ServerResource, defaults: ServerDefaults, read: SecretReader) -> _Material:
    """The credentials and TLS material of the server's Secrets. Raises :class:`ServerConfigError`."""
    spec, namespace = resource.spec, secret_namespace(resource, defaults)
    user = _text(await _value(read, namespace, spec.credentials.user, "admin user"), "admin user")
    password = _text(await _value(read, namespace, spec.credentials.password, "admin password"), "password")
    material = _Material(user, password)
    if spec.tls is not None and spec.tls.ca is not None:
        material.ca = await _value(read, namespace, spec.tls.ca, "TLS CA")
    if spec.tls is not None and spec.tls.client_certificate_secret:
        name = spec.tls.client_certificate_secret
        material.cert = await _key(read, namespace, name, "tls.crt", "client certificate")
        material.key = await _key(read, namespace, name, "tls.key", "client certificate")
    return material


def _write_private(path: Path, data: bytes) -> Path:
    """``data`` in a new file readable by the owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    return path


def open_database(
    resource: ServerResource,
    defaults: ServerDefaults,
    material: _Material,
    make: DatabaseFactory,
) -> Database:
    """The server's Database; TLS files exist only while its TLS context is built, in a private folder made
    for it (none when there are no files: a folder made for the process would outlive a killed one).

    Raises :class:`ServerConfigError` (InvalidSpec, TLSError).
    """
    spec = resource.spec
    tls = spec.tls
    material_files = {"ca.pem": material.ca, "tls.crt": material.cert, "tls.key": material.key}
    present = {name: data for name, data in material_files.items() if data is not None}
    workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-tls-")) if present else None  # 0700
    try:
        files = {name: _write_private(workdir / name, data) for name, data in present.items() if workdir}
        try:
            settings = ConnectionSettings(
                host=spec.host,
                port=spec.port,
                user=material.user,
                password=pydantic.SecretStr(material.password),
                connect_timeout=defaults.connect_timeout,
                read_timeout=defaults.read_timeout,
                name=str(resource),
                ssl_mode=SSLMode(tls.mode) if tls is not None else SSLMode.PREFERRED,
                ca_file=files.get("ca.pem"),
                cert_file=files.get("tls.crt"),
                key_file=files.get("tls.key"),
                server_name=tls.server_name if tls is not None else None,
                pool_size=spec.pool_size or defaults.pool_size,
            )
        except pydantic.ValidationError as error:
            problems = "; ".join(str(e["msg"]) for e in error.errors(include_input=False))
            raise ServerConfigError("InvalidSpec", f"{resource}: {problems}") from None
        try:
            return make(settings, spec.bookkeeping_schema or defaults.schema)
        except (ssl.SSLError, ValueError, OSError) as error:
            raise ServerConfigError(
                "TLSError", f"{resource}: TLS material rejected: {type(error).__name__}"
            ) from None
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
