"""The informer's streamed list (WatchList) against real API servers: one watch instead of pages, each
object filtered as it arrives, and the LIST it falls back to where the server does not stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import Binaries, KubeCluster
from dbuser_operator.envtest.kube import LocalControlPlane
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey, Resource
from tests.support.kube import RecordingHandler, eventually

pytestmark = pytest.mark.integration

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
Calls = list[tuple[str, str]]  # (a class with a method named list cannot say list[...] in its body)
Names = list[str]


class Recording(KubeClient):
    """A client that records its list and watch requests: ("list", …), ("stream", …), ("watch", version)."""

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api)
        self.calls: Calls = []

    async def list(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        page = await super().list(*args, **kwargs)
        self.calls.append(("list", page["metadata"]["resourceVersion"]))
        return page

    async def watch(self, *args: Any, resource_version: str | None, **kwargs: Any) -> aiohttp.ClientResponse:
        kind = "stream" if kwargs.get("initial_events") else "watch"
        self.calls.append((kind, str(resource_version)))
        return await super().watch(*args, resource_version=resource_version, **kwargs)

    def kinds(self) -> Names:
        return [kind for kind, _ in self.calls]


class Odd(Informer):
    """Keeps the config maps whose name ends in an odd digit; records what it dropped."""

    dropped: list[str]

    def _keep(self, obj: dict[str, Any]) -> bool:
        return int(obj["metadata"]["name"][-1]) % 2 == 1

    def _dropped(self, obj: dict[str, Any]) -> None:
        self.dropped = [*getattr(self, "dropped", []), obj["metadata"]["name"]]


@asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.create_task(informer.run())
    try:
        async with asyncio.timeout(60):
            await informer.wait_for_sync()
        yield informer
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def config_map(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"value": name}}


@asynccontextmanager
async def synced(
    kube: KubeClient, namespace: str, count: int, kind: type[Informer] = Informer
) -> AsyncIterator[tuple[Informer, RecordingHandler]]:
    """``count`` config maps ``cm-0`` … in ``namespace``, then an informer of ``kind`` through ``kube``
    running and synced over them, with a recording handler."""
    for n in range(count):
        await kube.create(CONFIG_MAPS, config_map(f"cm-{n}"), namespace)
    handler = RecordingHandler()
    informer = kind(kube, CONFIG_MAPS, namespaces=[namespace])
    informer.add_handler(handler)
    async with running(informer):
        yield informer, handler


async def test_a_streamed_list_sends_no_list_request_and_filters_each_object(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = Recording(kube_api)
    async with synced(kube, namespace, 6, Odd) as (informer, handler):
        assert isinstance(informer, Odd)
        assert sorted(key.name for key in informer.store.object_keys()) == ["cm-1", "cm-3", "cm-5"]
        assert sorted(informer.dropped) == ["cm-0", "cm-2", "cm-4"]
        assert [handler.count("add", f"cm-{n}") for n in range(6)] == [0, 1, 0, 1, 0, 1]
        await kube.create(CONFIG_MAPS, config_map("cm-7"), namespace)
        await eventually(lambda: handler.count("add", "cm-7") == 1)
        assert informer.stream_lists
        # one watch with initial events, then watches from its closing bookmark's version: no LIST
        assert kube.kinds()[0] == "stream"
        assert "list" not in kube.kinds()
        cached = informer.get(ObjectKey(namespace, "cm-5"))
        assert cached is not None
        assert kube.calls[1][0] == "watch"
        assert int(kube.calls[1][1]) >= int(cached["metadata"]["resourceVersion"])


class LegacyWatch(Recording):
    """Answers a streamed list with a plain watch from version "0" and no bookmarks, which the server ends
    after a second: every object as an ADDED event and no bookmark ending them (a server or proxy that
    ignores ``sendInitialEvents``), as a stream cut short by its timeout would look."""

    async def watch(self, *args: Any, resource_version: str | None, **kwargs: Any) -> aiohttp.ClientResponse:
        if not kwargs.get("initial_events"):
            return await super().watch(*args, resource_version=resource_version, **kwargs)
        self.calls.append(("stream", "legacy"))
        resource, namespace = args
        response = await self._send(
            "GET",
            resource.path(namespace),
            query=[("watch", "true"), ("resourceVersion", "0"), ("timeoutSeconds", "1")],
            headers={"Accept": "application/json"},
            data=None,
            bounds=aiohttp.ClientTimeout(total=None, connect=10),
        )
        assert response.status == 200
        return response


async def test_a_stream_that_ends_before_its_initial_events_do_is_listed_by_pages(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = LegacyWatch(kube_api)
    async with synced(kube, namespace, 3) as (informer, handler):
        assert sorted(key.name for key in informer.store.object_keys()) == ["cm-0", "cm-1", "cm-2"]
        assert kube.kinds()[:3] == ["stream", "list", "watch"]
        assert [handler.count("add", f"cm-{n}") for n in range(3)] == [1, 1, 1]  # not twice
        assert informer.stream_lists  # the server did not refuse: the next re-list streams again
        await kube.create(CONFIG_MAPS, config_map("cm-3"), namespace)
        await eventually(lambda: handler.count("add", "cm-3") == 1)


@pytest.fixture
def plane_without_watch_list(binaries: Binaries, tmp_path: Path) -> Any:
    """An API server of its own with the WatchList feature off (as before Kubernetes 1.27 it refuses a
    watch with ``sendInitialEvents``)."""
    plane = LocalControlPlane(
        binaries, tmp_path / "no-watch-list", audit=False, feature_gates=["WatchList=false"]
    )
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


async def test_a_server_that_refuses_streamed_lists_is_listed_by_pages(
    plane_without_watch_list: LocalControlPlane,
) -> None:
    cluster = KubeCluster(kubeconfig=plane_without_watch_list.admin_kubeconfig)
    async with cluster.api_client() as api:
        kube = Recording(api)
        async with synced(kube, "default", 3) as (informer, handler):
            assert {"cm-0", "cm-1", "cm-2"} <= {key.name for key in informer.store.object_keys()}
            assert not informer.stream_lists  # refused once: lists by pages from now on
            assert kube.kinds()[:3] == ["stream", "list", "watch"]
            await kube.create(CONFIG_MAPS, config_map("cm-3"), "default")
            await eventually(lambda: handler.count("add", "cm-3") == 1)
            assert kube.kinds().count("stream") == 1
