"""Test helpers around the real API server: clients through a proxy, waiting for a condition."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from kubernetes_asyncio import client, config

from dbuser_operator.envtest import KubeCluster
from dbuser_operator.runtime.client import api_client
from tests.integration.operator.support import wait


async def eventually(
    condition: Callable[[], bool],
    timeout: float = 10.0,  # noqa: ASYNC109 - a test helper's deadline, not an API timeout
    interval: float = 0.02,
    what: str = "condition",
) -> None:
    """Wait until ``condition()`` is true. Fails the test on timeout.

    The suite's one wait (:func:`tests.integration.operator.support.wait.eventually`) under the names the
    runtime tests use."""
    await wait.eventually(condition, limit=timeout, interval=interval, message=f"{what} not met")


async def admin_configuration(kube: KubeCluster) -> client.Configuration:
    """The admin's client configuration."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kube.kubeconfig), client_configuration=configuration)
    return configuration


def server_address(configuration: client.Configuration) -> tuple[str, int]:
    """Host and port of the API server."""
    parts = urlsplit(str(configuration.host))
    return parts.hostname or "127.0.0.1", parts.port or 443


@asynccontextmanager
async def admin_api_via(kube: KubeCluster, port: int) -> AsyncIterator[client.ApiClient]:
    """An admin client that connects through 127.0.0.1:``port`` (a proxy) instead of the server."""
    configuration = await admin_configuration(kube)
    configuration.host = f"https://127.0.0.1:{port}"
    async with api_client(configuration) as api:
        yield api


class RecordingHandler:
    """An informer event handler that records what it was told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))

    def count(self, kind: str, name: str) -> int:
        return self.events.count((kind, name))
