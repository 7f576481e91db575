"""The kubeconfig as kubectl reads it, without the API client: the files of ``KUBECONFIG`` merged (the first
file to name a cluster, context or user wins; the first ``current-context`` wins), one context chosen, and
what the plain HTTPS path needs to reach its cluster as its user (:class:`Endpoint`). A kubeconfig that
needs more (an exec plugin, an auth provider, a proxy, basic auth) gives ``None``: the full client reads
it."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dbuser_operator.kubectl_dbu.errors import CommandError

DEFAULT_NAMESPACE = "default"
# What only the full client (kubernetes-asyncio) does: the plain path hands such a kubeconfig over to it.
FULL_CLIENT_USER_KEYS = ("exec", "auth-provider", "username", "password")
FULL_CLIENT_CLUSTER_KEYS = ("proxy-url", "tls-server-name")


@dataclass(frozen=True)
class Endpoint:
    """The cluster's URL and the user's credentials, as bytes or file paths (never printed)."""

    server: str
    ca: bytes | None = None  # PEM: certificate-authority(-data)
    insecure: bool = False
    cert: bytes | None = None  # PEM: client-certificate(-data)
    key: bytes | None = None  # PEM: client-key(-data)
    token: str | None = None

    def __repr__(self) -> str:
        return f"Endpoint(server={self.server!r})"


@dataclass(frozen=True)
class Selected:
    """The chosen context's namespace (None: the context names none), and its endpoint (None: needs the
    full client)."""

    namespace: str | None
    endpoint: Endpoint | None


def _merged(paths: str) -> tuple[str | None, dict[str, dict[str, tuple[dict[str, Any], Path]]]]:
    """The current context and, per section, each entry by name with the folder of the file naming it."""
    current: str | None = None
    sections: dict[str, dict[str, tuple[dict[str, Any], Path]]] = {
        "clusters": {},
        "contexts": {},
        "users": {},
    }
    for path in (Path(p).expanduser() for p in paths.split(os.pathsep) if p):
        if not path.is_file():
            continue
        try:
            config = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise CommandError(f"kubeconfig {path}: {error}") from error
        if not isinstance(config, dict):
            raise CommandError(f"kubeconfig {path}: not a mapping")
        current = current or config.get("current-context") or None
        for section, key in (("clusters", "cluster"), ("contexts", "context"), ("users", "user")):
            for entry in config.get(section) or []:
                name = str(entry.get("name") or "") if isinstance(entry, dict) else ""
                if name and name not in sections[section]:
                    sections[section][name] = (entry.get(key) or {}, path.parent)
    return current, sections


def select(paths: str, context: str | None) -> Selected:
    """The context ``context`` (else the current one) of the kubeconfig files ``paths``."""
    current, sections = _merged(paths)
    name = context or current
    if not name:
        raise CommandError("the kubeconfig has no current context (choose one with --context)")
    if name not in sections["contexts"]:
        raise CommandError(f'context "{name}" does not exist in the kubeconfig')
    chosen = sections["contexts"][name][0]
    cluster = sections["clusters"].get(str(chosen.get("cluster") or ""))
    if cluster is None:
        raise CommandError(f'cluster "{chosen.get("cluster")}" of context "{name}" does not exist')
    user = sections["users"].get(str(chosen.get("user") or ""), ({}, Path()))
    return Selected(chosen.get("namespace") or None, _endpoint(cluster, user))


def _endpoint(cluster: tuple[dict[str, Any], Path], user: tuple[dict[str, Any], Path]) -> Endpoint | None:
    (settings, cluster_dir), (credentials, user_dir) = cluster, user
    if any(credentials.get(key) for key in FULL_CLIENT_USER_KEYS) or any(
        settings.get(key) for key in FULL_CLIENT_CLUSTER_KEYS
    ):
        return None
    token = credentials.get("token")
    if not token and credentials.get("tokenFile"):
        token = _read(credentials["tokenFile"], user_dir).decode().strip()
    return Endpoint(
        server=str(settings.get("server") or ""),
        ca=_material(settings, "certificate-authority", cluster_dir),
        insecure=bool(settings.get("insecure-skip-tls-verify")),
        cert=_material(credentials, "client-certificate", user_dir),
        key=_material(credentials, "client-key", user_dir),
        token=token or None,
    )


def _material(entry: dict[str, Any], key: str, folder: Path) -> bytes | None:
    """``KEY-data`` (base64) or the file ``KEY`` names (relative to its kubeconfig's folder)."""
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    return _read(entry[key], folder) if entry.get(key) else None


def _read(name: str, folder: Path) -> bytes:
    path = Path(name).expanduser()
    try:
        return (path if path.is_absolute() else folder / path).read_bytes()
    except OSError as error:
        raise CommandError(f"kubeconfig: cannot read {path}: {error.strerror}") from error
