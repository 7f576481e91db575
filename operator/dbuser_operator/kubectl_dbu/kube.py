"""The API connection of the plugin: the user's kubeconfig (``--kubeconfig``, else ``KUBECONFIG``, else
``~/.kube/config``), its context (``--context``) and that context's namespace, as kubectl picks them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes_asyncio import client, config

from dbuser_operator.kubectl_dbu.errors import CommandError
from dbuser_operator.runtime.client import KubeClient, api_client
from dbuser_operator.runtime.resources import Resource

DEFAULT_NAMESPACE = "default"
PODS = Resource("", "v1", "pods", "Pod")  # as the rotation step names them, without importing the step


@dataclass(frozen=True)
class Target:
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
async def connect(target: Target) -> AsyncIterator[tuple[KubeClient, str | None]]:
    """A client as the kubeconfig's user, and the namespace to use: ``-n``, else the context's, else
    ``default``; None with ``-A``."""
    configuration = client.Configuration()
    loader = await config.load_kube_config(
        config_file=target.kubeconfig,
        context=target.context,
        client_configuration=configuration,
        persist_config=False,
    )
    namespace: str | None = None
    if not target.all_namespaces:
        context = (loader.current_context or {}).get("context") or {}
        namespace = target.namespace or context.get("namespace") or DEFAULT_NAMESPACE
    async with api_client(configuration) as api:
        yield KubeClient(api), namespace
