"""Informers against the real API server: events, scoping, indexes, 410, stalls and restarts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster
from dbuser_operator.runtime import informer as informer_module
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey, Resource
from tests.support.kube import (
    RecordingHandler,
    admin_api_via,
    admin_configuration,
    eventually,
    server_address,
)
from tests.support.slowness import LoopLag
from tests.support.tcp_proxy import StallingProxy

pytestmark = pytest.mark.integration

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")


def config_map(name: str, labels: dict[str, str] | None = None, data: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"value": data}}


@pytest.fixture(params=[True, False], ids=["streamed-list", "paged-list"])
def list_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both ways an informer lists: streamed (a watch with initial events), and by pages."""
    monkeypatch.setattr(informer_module, "STREAM_LISTS", request.param)
    return bool(request.param)


@asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.create_task(informer.run())
    try:
        async with asyncio.timeout(30):
            await informer.wait_for_sync()
        yield informer
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_sees_creates_updates_and_deletes(
    kube_api: client.ApiClient, namespace: str, list_mode: bool
) -> None:
    kube = KubeClient(kube_api)
    await kube.create(CONFIG_MAPS, config_map("before"), namespace)
    handler = RecordingHandler()
    informer = Informer(kube, CONFIG_MAPS, namespaces=[namespace])
    informer.add_handler(handler)
    async with running(informer):
        assert handler.count("add", "before") == 1
        assert informer.get(ObjectKey(namespace, "before")) is not None

        await kube.create(CONFIG_MAPS, config_map("cm"), namespace)
        await eventually(lambda: handler.count("add", "cm") == 1)
        await kube.patch(CONFIG_MAPS, "cm", {"data": {"value": "2"}}, _merge(), namespace=namespace)
        await eventually(lambda: handler.count("update", "cm") == 1)
        cached = informer.get(ObjectKey(namespace, "cm"))
        assert cached is not None
        assert cached["data"] == {"value": "2"}
        assert "managedFields" not in cached["metadata"]  # stripped to save memory
        assert cached["kind"] == "ConfigMap"

        await kube.delete(CONFIG_MAPS, "cm", namespace)
        await eventually(lambda: handler.count("delete", "cm") == 1)
        assert informer.get(ObjectKey(namespace, "cm")) is None


async def test_namespaces_label_selector_and_indexes(kube_api: client.ApiClient, list_mode: bool) -> None:
    kube = KubeClient(kube_api)
    core = client.CoreV1Api(kube_api)
    watched, other = f"w-{time.time_ns() % 10**9}", f"o-{time.time_ns() % 10**9}"
    for name in (watched, other):
        await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    informer = Informer(kube, CONFIG_MAPS, namespaces=[watched], label_selector="app=mine")
    informer.add_index("by-team", lambda obj: [obj["metadata"]["labels"].get("team", "")])
    async with running(informer):
        await kube.create(CONFIG_MAPS, config_map("a", {"app": "mine", "team": "red"}), watched)
        await kube.create(CONFIG_MAPS, config_map("b", {"app": "mine", "team": "blue"}), watched)
        await kube.create(CONFIG_MAPS, config_map("c", {"app": "other", "team": "red"}), watched)
        await kube.create(CONFIG_MAPS, config_map("d", {"app": "mine", "team": "red"}), other)
        await eventually(lambda: len(informer.store) == 2)
        await asyncio.sleep(0.3)  # give the unwanted objects time to (wrongly) arrive
        assert sorted(key.name for key in informer.store.object_keys()) == ["a", "b"]
        assert [obj["metadata"]["name"] for obj in informer.store.by_index("by-team", "red")] == ["a"]

        # An object that loses the label leaves the selection: a delete for this informer.
        await kube.patch(
            CONFIG_MAPS, "a", {"metadata": {"labels": {"app": "gone"}}}, _merge(), namespace=watched
        )
        await eventually(lambda: informer.get(ObjectKey(watched, "a")) is None)
        assert informer.store.by_index("by-team", "red") == []


async def test_a_stalled_watch_is_detected_and_reopened(
    kube: KubeCluster, kube_api: client.ApiClient, namespace: str, list_mode: bool
) -> None:
    inactivity_timeout = 2.0
    host, port = server_address(await admin_configuration(kube))
    async with StallingProxy(host, port) as proxy, admin_api_via(kube, proxy.port) as proxied_api:
        handler = RecordingHandler()
        informer = Informer(
            KubeClient(proxied_api),
            CONFIG_MAPS,
            namespaces=[namespace],
            inactivity_timeout=inactivity_timeout,
        )
        informer.add_handler(handler)
        async with running(informer):
            await asyncio.sleep(0.2)  # the watch is open
            watches_before = _watch_requests()
            async with LoopLag() as lag:  # the informer runs on this loop: late by as much as it is
                proxy.stall()  # half-open: nothing flows, nothing closes
                stalled_at = time.monotonic()
                await KubeClient(kube_api).create(CONFIG_MAPS, config_map("during-stall"), namespace)
                await eventually(lambda: handler.count("add", "during-stall") == 1, timeout=120)
                detected_after = time.monotonic() - stalled_at
            print(f"stall detected and change delivered after {detected_after:.2f} s ({lag})")
            # By the inactivity timeout, then a list and a watch (5 s on an idle machine), not by the
            # watch's own end (minutes); a busy machine's lateness is the lag measured meanwhile.
            assert detected_after < inactivity_timeout + 5 + lag.total, lag
            assert _watch_requests() > watches_before  # delivered by a new watch: the old one was given up


def _local(kube: KubeCluster) -> Any:
    if kube.control_plane is None:
        pytest.skip("needs the local control plane (restarts the API server)")
    return kube.control_plane


async def test_recovers_from_410_gone_without_missing_or_duplicating_state(
    kube: KubeCluster, kube_api: client.ApiClient, namespace: str, list_mode: bool
) -> None:
    """Stall the watch, change objects, compact etcd and restart the API server: the informer's
    resourceVersion is then too old, the server answers 410, and a re-list must converge."""
    control_plane = _local(kube)
    admin = KubeClient(kube_api)
    for name in ("keep", "remove", "change"):
        await admin.create(CONFIG_MAPS, config_map(name), namespace)
    host, port = server_address(await admin_configuration(kube))
    async with StallingProxy(host, port) as proxy, admin_api_via(kube, proxy.port) as proxied_api:
        handler = RecordingHandler()
        informer = Informer(
            KubeClient(proxied_api), CONFIG_MAPS, namespaces=[namespace], inactivity_timeout=2
        )
        informer.add_handler(handler)
        async with running(informer):
            await asyncio.sleep(0.2)
            proxy.stall()
            await admin.delete(CONFIG_MAPS, "remove", namespace)
            await admin.create(CONFIG_MAPS, config_map("new"), namespace)
            await admin.patch(CONFIG_MAPS, "change", {"data": {"value": "2"}}, _merge(), namespace=namespace)
            control_plane.compact_etcd()
            control_plane.stop_apiserver()
            control_plane.start_apiserver()

            await eventually(lambda: handler.count("add", "new") == 1, timeout=30)
            await eventually(lambda: handler.count("delete", "remove") == 1, timeout=10)
            listed = await admin.list(CONFIG_MAPS, namespace)
            expected = {item["metadata"]["name"]: item["data"] for item in listed["items"]}

            def cached_data() -> dict[str, Any]:
                return {obj["metadata"]["name"]: obj["data"] for obj in informer.store}

            await eventually(lambda: cached_data() == expected)
            assert expected == {"keep": {"value": "1"}, "change": {"value": "2"}, "new": {"value": "1"}}
            assert handler.count("add", "keep") == 1  # not re-added by the re-list
            assert handler.count("update", "keep") == 0
            assert handler.count("update", "change") == 1


async def test_survives_an_api_server_restart(
    kube: KubeCluster, kube_api: client.ApiClient, namespace: str, list_mode: bool
) -> None:
    control_plane = _local(kube)
    handler = RecordingHandler()
    async with kube.api_client() as own_api:
        informer = Informer(KubeClient(own_api), CONFIG_MAPS, namespaces=[namespace], inactivity_timeout=5)
        informer.add_handler(handler)
        async with running(informer):
            control_plane.stop_apiserver()
            await asyncio.sleep(1.5)  # the informer sees errors and backs off meanwhile
            control_plane.start_apiserver()
            await KubeClient(kube_api).create(CONFIG_MAPS, config_map("after-restart"), namespace)
            created = time.monotonic()
            await eventually(lambda: handler.count("add", "after-restart") == 1, timeout=40)
            print(f"change after restart delivered in {time.monotonic() - created:.2f} s")


def _watch_requests() -> float:
    return REGISTRY.get_sample_value("rest_client_requests_total", {"method": "WATCH", "code": "200"}) or 0.0


def _merge() -> Any:
    from dbuser_operator.runtime.client import PatchType  # noqa: PLC0415

    return PatchType.MERGE


async def test_lists_page_by_page_asking_for_the_next_page_while_filtering_one(
    kube_api: client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kube = KubeClient(kube_api)
    for n in range(7):
        await kube.create(CONFIG_MAPS, config_map(f"cm-{n}"), namespace)
    monkeypatch.setattr(informer_module, "LIST_PAGE_SIZE", 3)
    asked: list[str | None] = []
    filtered: list[str] = []

    class Recording(Informer):
        async def _page(self, namespace: str | None, continue_token: str | None) -> dict[str, Any]:
            asked.append(continue_token)
            return await super()._page(namespace, continue_token)

        def _keep(self, obj: dict[str, Any]) -> bool:
            filtered.append(f"{obj['metadata']['name']} after {len(asked)} pages asked")
            return True

    informer = Recording(kube, CONFIG_MAPS, namespaces=[namespace], stream_lists=False)
    async with running(informer):
        assert sorted(key.name for key in informer.store.object_keys()) == [f"cm-{n}" for n in range(7)]
    assert len(asked) == 3  # 3 + 3 + 1
    assert asked[0] is None
    assert all(asked[1:])
    # the second page was asked for before the first page's objects were filtered, the third before the
    # second's: at most one page ahead
    assert filtered[:3] == [f"cm-{n} after 2 pages asked" for n in range(3)]
    assert filtered[3:6] == [f"cm-{n} after 3 pages asked" for n in range(3, 6)]
    assert filtered[6] == "cm-6 after 3 pages asked"
