"""The supervised runtime against the real API server: a part that fails is seen, named and handled.

Faults that the API server cannot be made to produce (a bug in the reflector, a leader task that raises, a
watch request answered 410 by something in front of the server) are injected by overriding one method;
everything else — lists, watches, probes over HTTP, the objects — is real.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller, Drain, Result
from dbuser_operator.runtime.errors import api_error
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey, Resource
from tests.integration.operator.support import wait
from tests.support.kube import RecordingHandler, eventually
from tests.support.logs import captured_logs

pytestmark = pytest.mark.integration

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")


async def get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as response:
        return response.status, await response.text()


async def wait_for_probe(port: int, path: str, status: int, timeout: float = 30) -> str:  # noqa: ASYNC109
    """Poll the real endpoint until it answers ``status``; return that answer's text."""

    async def answered() -> list[str]:  # a list: an empty text is an answer too
        answer, text = await get(port, path)
        assert answer == status, f"{path} answers {answer}: {text}"
        return [text]

    (text,) = await wait.eventually(
        answered, limit=timeout, interval=0.02, message=f"{path} answers {status}"
    )
    return text


@asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    stop = asyncio.Event()
    task = asyncio.create_task(manager.run(stop))
    try:
        await eventually(lambda: "probes" in manager.endpoints.ports or task.done(), timeout=10)
        yield task
    finally:
        stop.set()
        async with asyncio.timeout(30):
            await asyncio.gather(task, return_exceptions=True)


def new_manager(kube: KubeClient, **options: Any) -> Manager:
    return Manager(kube, probe_address="127.0.0.1:0", metrics_address="127.0.0.1:0", **options)


class FaultyInformer(Informer):
    """An informer whose reflector raises an unexpected exception on the next event, once armed."""

    armed = False

    def _apply(self, event: dict[str, Any], resource_version: str) -> str:
        if self.armed and event.get("type") != "BOOKMARK":
            self.armed = False
            raise RuntimeError("injected fault in the reflector")
        return super()._apply(event, resource_version)


async def test_an_informer_that_fails_is_logged_named_by_readyz_and_recovers_with_a_current_cache(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(kube_api)
    reconciled: list[str] = []

    async def reconcile(key: ObjectKey) -> Result:
        reconciled.append(key.name)
        return Result()

    informer = FaultyInformer(kube, CONFIG_MAPS, namespaces=[namespace])
    controller = Controller("supervised-informer", reconcile)
    controller.watch(informer)
    manager = new_manager(kube)
    manager.supervisor.initial_backoff = manager.supervisor.max_backoff = 2.0  # time to see it down
    manager.add_controller(controller)
    with captured_logs() as logs:
        async with running(manager) as task:
            probes = manager.endpoints.ports["probes"]
            await wait_for_probe(probes, "/readyz", 200)

            informer.armed = True
            loop = asyncio.get_running_loop()
            await kube.create(CONFIG_MAPS, {"metadata": {"name": "trigger"}}, namespace)
            created_at = loop.time()
            text = await wait_for_probe(probes, "/readyz", 503)
            unready_at = loop.time()
            assert "informer configmaps (RuntimeError" in text
            await kube.create(CONFIG_MAPS, {"metadata": {"name": "while-down"}}, namespace)
            assert (await get(probes, "/healthz"))[0] == 200  # one failure is not a crash loop

            await wait_for_probe(probes, "/readyz", 200)  # restarted, listed again: ready
            print(
                f"informer failure: /readyz false {unready_at - created_at:.2f} s after the fault, "
                f"true again {loop.time() - unready_at:.2f} s later (restart backoff 2 s, then a list)"
            )
            assert informer.get(ObjectKey(namespace, "trigger")) is not None
            assert informer.get(ObjectKey(namespace, "while-down")) is not None
            await eventually(lambda: {"trigger", "while-down"} <= set(reconciled))
            await kube.create(CONFIG_MAPS, {"metadata": {"name": "after"}}, namespace)
            await eventually(lambda: informer.get(ObjectKey(namespace, "after")) is not None)
            assert not task.done()
    failures = logs.entries("runnable failed")
    assert [entry["runnable"] for entry in failures] == ["informer configmaps"]
    raised = json.dumps(failures[0]["exception"])  # the traceback, through the informer's task group
    assert "ExceptionGroup" in raised
    assert "injected fault in the reflector" in raised
    assert logs.entries("restarting runnable")
    for failures_metric in ("dbuser_operator_runnable_failures_total", "runtime_runnable_failures_total"):
        assert (REGISTRY.get_sample_value(failures_metric, {"runnable": "informer configmaps"}) or 0) >= 1


async def test_a_leader_task_that_raises_is_restarted_and_the_manager_keeps_running(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(kube_api)
    runs = 0
    failing = asyncio.Event()

    async def sweep() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            await failing.wait()
            raise KeyError("unexpected")
        await asyncio.Event().wait()

    async def reconcile(key: ObjectKey) -> Result:
        return Result()

    controller = Controller("with-leader-task", reconcile)
    controller.watch(Informer(kube, CONFIG_MAPS, namespaces=[namespace]))
    manager = new_manager(kube)
    manager.supervisor.initial_backoff = manager.supervisor.max_backoff = 2.0
    manager.supervisor.stable_after = 1.0
    manager.add_controller(controller)
    manager.add_leader_task("flaky sweep", sweep)
    with captured_logs() as logs:
        async with running(manager) as task:
            probes = manager.endpoints.ports["probes"]
            await wait_for_probe(probes, "/readyz", 200)
            failing.set()
            text = await wait_for_probe(probes, "/readyz", 503)
            assert "flaky sweep (KeyError, restarting)" in text
            await eventually(lambda: runs == 2, timeout=10)
            await wait_for_probe(probes, "/readyz", 200)  # it has run for stable_after
            assert not task.done()
            assert controller.started
    assert task.exception() is None  # the manager stopped because it was told to, not by the failure
    assert [entry["runnable"] for entry in logs.entries("runnable failed")] == ["flaky sweep"]


async def test_a_probe_port_in_use_stops_the_manager_with_the_error(kube_api: client.ApiClient) -> None:
    kube = KubeClient(kube_api)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        manager = Manager(kube, probe_address=f"127.0.0.1:{port}", metrics_address="127.0.0.1:0")
        manager.add_informer(Informer(kube, CONFIG_MAPS, namespaces=["default"]))
        with captured_logs() as logs, pytest.raises(OSError, match="address already in use"):
            async with asyncio.timeout(10):
                await manager.run(asyncio.Event())
    assert any(entry["runnable"] == "http server" for entry in logs.entries("stopping the manager"))
    assert not manager.informers[0].has_synced  # nothing else was started


async def test_drain_waits_for_a_slow_reconcile_within_the_timeout(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(kube_api)
    finished: list[str] = []
    started = asyncio.Event()

    async def slow(key: ObjectKey) -> Result:
        started.set()
        await asyncio.sleep(1.0)
        finished.append(key.name)
        return Result()

    controller = Controller("drain-waits", slow)
    controller.watch(Informer(kube, CONFIG_MAPS, namespaces=[namespace]))
    manager = new_manager(kube, shutdown_timeout=20)
    manager.add_controller(controller)
    async with running(manager):
        await kube.create(CONFIG_MAPS, {"metadata": {"name": "slow"}}, namespace)
        await asyncio.wait_for(started.wait(), 20)
    assert finished == ["slow"]
    assert controller.last_drain == Drain(drained=True)


async def test_drain_with_a_too_short_timeout_reports_the_cancelled_reconcile(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(kube_api)
    started = asyncio.Event()
    cancelled: list[str] = []

    async def stuck(key: ObjectKey) -> Result:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(key.name)
            raise
        return Result()

    controller = Controller("drain-cancels", stuck)
    controller.watch(Informer(kube, CONFIG_MAPS, namespaces=[namespace]))
    manager = new_manager(kube, shutdown_timeout=0.3)
    manager.add_controller(controller)
    with captured_logs() as logs:
        async with running(manager):
            await kube.create(CONFIG_MAPS, {"metadata": {"name": "stuck"}}, namespace)
            await asyncio.wait_for(started.wait(), 20)
    assert cancelled == ["stuck"]
    assert controller.last_drain == Drain(drained=False, cancelled=(ObjectKey(namespace, "stuck"),))
    (warning,) = logs.entries("controller stopped; in-flight reconciles cancelled")
    assert warning["keys"] == [f"{namespace}/stuck"]
    assert warning["cancelled"] == 1


async def test_the_real_server_answers_a_watch_from_a_compacted_version_in_the_stream(
    kube: KubeCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    """What kube-apiserver does with a watch from a resourceVersion it no longer has (etcd compacted, the
    watch cache rebuilt): 200, then an ERROR event with code 410 — the path the informer has always
    handled. A 410 status of the watch request itself comes from other servers and proxies (next test)."""
    if kube.control_plane is None:
        pytest.skip("needs the local control plane (compacts etcd, restarts the API server)")
    admin = KubeClient(kube_api)
    old = (await admin.list(CONFIG_MAPS, namespace))["metadata"]["resourceVersion"]
    await admin.create(CONFIG_MAPS, {"metadata": {"name": "newer"}}, namespace)
    kube.control_plane.compact_etcd()
    kube.control_plane.stop_apiserver()
    kube.control_plane.start_apiserver()
    response = await admin.watch(CONFIG_MAPS, namespace, resource_version=old, timeout_seconds=5)
    async with response, asyncio.timeout(10):
        first = json.loads(await response.content.readline())
    assert response.status == 200
    assert first["type"] == "ERROR"
    assert first["object"]["code"] == 410


class GoneOnce(KubeClient):
    """A client whose next watch request is answered 410 Gone (as a proxy, an aggregated API or an older
    server answers it); lists and all other watches go to the real API server."""

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api)
        self.gone_next = False
        # ("list", version returned) / ("watch", version asked) / ("stream", "") / ("gone", version asked)
        self.calls: list[tuple[str, str]] = []

    async def list(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        page = await super().list(*args, **kwargs)
        self.calls.append(("list", page["metadata"]["resourceVersion"]))
        return page

    async def watch(self, *args: Any, resource_version: str | None, **kwargs: Any) -> aiohttp.ClientResponse:
        if self.gone_next:
            self.gone_next = False
            self.calls.append(("gone", str(resource_version)))
            status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
            raise api_error(410, "Gone", json.dumps(status).encode())
        self.calls.append(("stream", "") if resource_version is None else ("watch", resource_version))
        return await super().watch(*args, resource_version=resource_version, **kwargs)


@pytest.mark.parametrize("stream_lists", [True, False], ids=["streamed-list", "paged-list"])
async def test_a_410_from_the_watch_request_itself_relists(
    kube_api: client.ApiClient, namespace: str, stream_lists: bool
) -> None:
    admin = KubeClient(kube_api)
    kube = GoneOnce(kube_api)
    handler = RecordingHandler()
    # A short server-side timeout: the watch ends and is reopened (then answered 410) within seconds.
    informer = Informer(
        kube, CONFIG_MAPS, namespaces=[namespace], watch_timeout_range=(1, 1), stream_lists=stream_lists
    )
    informer.add_handler(handler)
    await admin.create(CONFIG_MAPS, {"metadata": {"name": "before"}}, namespace)
    task = asyncio.create_task(informer.run())
    try:
        async with asyncio.timeout(30):
            await informer.wait_for_sync()
        kube.gone_next = True
        await eventually(lambda: "gone" in [kind for kind, _ in kube.calls], timeout=20)
        await admin.create(CONFIG_MAPS, {"metadata": {"name": "after"}}, namespace)
        await eventually(lambda: handler.count("add", "after") == 1)
        gone = [kind for kind, _ in kube.calls].index("gone")
        next_calls = kube.calls[gone + 1 : gone + 3]
        # listed again at once, no retry; then watched from the new list's version
        if stream_lists:  # a watch with initial events, then a watch from its closing bookmark's version
            assert [kind for kind, _ in next_calls] == ["stream", "watch"]
            assert int(next_calls[1][1]) >= int(kube.calls[gone][1])
        else:
            assert [kind for kind, _ in next_calls] == ["list", "watch"]
            assert next_calls[1][1] == next_calls[0][1]
        assert handler.count("add", "before") == 1  # the re-list did not add it again
        assert handler.count("update", "before") == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
