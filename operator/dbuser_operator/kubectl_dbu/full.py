"""The plugin on kubernetes-asyncio, for a kubeconfig the plain path does not read (an exec plugin, an auth
provider, a proxy, basic auth): the runtime's ``KubeClient`` behind the plain client's methods, its errors
turned into the plugin's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from kubernetes_asyncio import client, config

from dbuser_operator.kubectl_dbu import errors
from dbuser_operator.runtime import errors as runtime_errors
from dbuser_operator.runtime.client import KubeClient, PatchType, api_client
from dbuser_operator.runtime.resources import Resource

T = TypeVar("T")
WATCH_SECONDS = 3600  # the server ends a watch after this; --watch then opens another


async def _typed(call: Awaitable[T]) -> T:
    """``call``'s result, its API error raised as the plugin's."""
    try:
        return await call
    except runtime_errors.NotFound as error:
        raise errors.NotFound(error.status, error.message or str(error)) from error
    except runtime_errors.Forbidden as error:
        raise errors.Forbidden(error.status, error.message or str(error)) from error
    except runtime_errors.Unavailable as error:
        raise errors.Unavailable(error.status, error.message or str(error)) from error
    except runtime_errors.ApiError as error:
        raise errors.ApiFailure(error.status, error.message or str(error)) from error


class FullClient:
    """The plain client's interface on a ``KubeClient``."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        return await _typed(
            self.kube.request(method, path, query=query, body=body, content_type=content_type)
        )

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return await _typed(self.kube.get(resource, name, namespace))

    async def list_all(
        self, resource: Resource, namespace: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        return await _typed(self.kube.list_all(resource, namespace))

    async def patch(
        self, resource: Resource, name: str, patch: Any, content_type: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        return await _typed(
            self.kube.patch(resource, name, patch, PatchType(content_type), namespace=namespace)
        )

    async def watch(
        self, resource: Resource, namespace: str | None, resource_version: str
    ) -> AsyncIterator[dict[str, Any]]:
        response = await _typed(
            self.kube.watch(
                resource, namespace, resource_version=resource_version, timeout_seconds=WATCH_SECONDS
            )
        )
        async with response:
            async for line in response.content:
                if line.strip():
                    yield json.loads(line)

    def close(self) -> None:
        """Nothing: the API client closes with :func:`connect`."""


@asynccontextmanager
async def connect(kubeconfig: str, context: str | None) -> AsyncIterator[FullClient]:
    """A client as the kubeconfig's user (its exec plugins and auth providers run as kubectl runs them)."""
    configuration = client.Configuration()
    try:
        await config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
        )
    except config.ConfigException as error:
        raise errors.CommandError(f"kubeconfig: {error}") from error
    async with api_client(configuration) as api:
        yield FullClient(KubeClient(api))
