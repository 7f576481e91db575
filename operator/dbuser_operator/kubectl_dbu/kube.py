"""The API connection of the plugin: the user's kubeconfig (``--kubeconfig``, else ``KUBECONFIG``, else
``~/.kube/config``), its context (``--context``) and that context's namespace, as kubectl picks them.

Reads and writes go over plain HTTPS (:mod:`.plain`) when the kubeconfig gives a CA, a client certificate
or a token; a kubeconfig that needs an exec plugin, an auth provider, a proxy or basic auth goes through
kubernetes-asyncio (:mod:`.full`), imported only then."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dbuser_operator.kubectl_dbu import kubeconfig as kubeconfigs
from dbuser_operator.kubectl_dbu.errors import CommandError
from dbuser_operator.runtime.resources import Resource

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class Api(Protocol):
    """What a command may ask of the API (both clients have it)."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]: ...

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    async def list_all(
        self, resource: Resource, namespace: str | None = None
    ) -> tuple[list[dict[str, Any]], str]: ...

    async def patch(
        self, resource: Resource, name: str, patch: Any, content_type: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    def watch(
        self, resource: Resource, namespace: str | None, resource_version: str
    ) -> AsyncIterator[dict[str, Any]]: ...


@dataclass(frozen=True)
class KubeContext:
    """Where a command looks: the kubeconfig files and context chosen, and the namespace (None: all)."""

    kubeconfig: str
    context: str | None
    namespace: str | None
    all_namespaces: bool = False


def kubeconfig_path(flag: str | None) -> str:
    """``--kubeconfig``, else ``KUBECONFIG`` (a list of files, merged), else ``~/.kube/config``; refused
    when none of its files exists."""
    paths = flag or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    if not any(Path(path).expanduser().is_file() for path in paths.split(os.pathsep) if path):
        raise CommandError(f"no kubeconfig at {paths} (set --kubeconfig or KUBECONFIG)")
    return paths


@asynccontextmanager
async def connect(kube_context: KubeContext) -> AsyncIterator[tuple[Api, str | None]]:
    """A client as the kubeconfig's user, and the namespace to use: ``-n``, else the context's, else
    ``default``; None with ``-A``."""
    selected = kubeconfigs.select(kube_context.kubeconfig, kube_context.context)
    namespace = None
    if not kube_context.all_namespaces:
        namespace = kube_context.namespace or selected.namespace or kubeconfigs.DEFAULT_NAMESPACE
    if selected.endpoint is None or any(os.environ.get(name) for name in PROXY_VARIABLES):
        from dbuser_operator.kubectl_dbu import full  # noqa: PLC0415 - the heavy client, only when needed

        async with full.connect(kube_context.kubeconfig, kube_context.context) as api:
            yield api, namespace
        return
    from dbuser_operator.kubectl_dbu.plain import PlainClient  # noqa: PLC0415 - not for --help

    plain = PlainClient(selected.endpoint)
    try:
        yield plain, namespace
    finally:
        plain.close()
