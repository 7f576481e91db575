"""The referenced-objects informer against the real API server: only referenced Secrets are cached, a
reference made before or after its Secret exists, edits, deletes, eviction, and a re-list after 410."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.referenced import ReferencedInformer
from dbuser_operator.runtime.resources import SECRETS, ObjectKey, Resource
from tests.support.kube import (
    RecordingHandler,
    admin_api_via,
    admin_configuration,
    eventually,
    server_address,
)
from tests.support.tcp_proxy import StallingProxy

pytestmark = pytest.mark.integration

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
INDEX = "secret"


def referrer(name: str, *secrets: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"role": "referrer"}},
        "data": {"secrets": ",".join(secrets)},
    }


def referenced(obj: dict[str, Any]) -> list[str]:
    names = (obj.get("data") or {}).get("secrets") or ""
    return [f"{obj['metadata']['namespace']}/{name}" for name in names.split(",") if name]


def secret(name: str, value: str = "v1") -> dict[str, Any]:
    return {"metadata": {"name": name}, "stringData": {"value": value}}


@asynccontextmanager
async def caches(
    kube: KubeClient, namespace: str, **options: Any
) -> AsyncIterator[tuple[Informer, ReferencedInformer, RecordingHandler]]:
    """The referrers (ConfigMaps) and the Secrets they name, synced."""
    referrers = Informer(kube, CONFIG_MAPS, namespaces=[namespace], label_selector="role=referrer")
    referrers.add_index(INDEX, referenced)
    secrets = ReferencedInformer(kube, SECRETS, namespaces=[namespace], **options)
    secrets.keep_referenced(referrers, INDEX)
    handler = RecordingHandler()
    secrets.add_handler(handler)
    tasks = [asyncio.create_task(referrers.run()), asyncio.create_task(secrets.run())]
    try:
        async with asyncio.timeout(30):
            await secrets.wait_for_sync()
        yield referrers, secrets, handler
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def cached(secrets: ReferencedInformer) -> dict[str, str]:
    return {obj["metadata"]["name"]: obj["data"]["value"] for obj in secrets.store}


def value(text: str) -> str:
    import base64  # noqa: PLC0415

    return base64.b64encode(text.encode()).decode()


async def test_only_referenced_secrets_are_cached_whenever_they_come(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(kube_api)
    for name in ("early", *(f"unrelated-{n}" for n in range(30))):
        await kube.create(SECRETS, secret(name), namespace)
    await kube.create(CONFIG_MAPS, referrer("a", "early"), namespace)
    async with caches(kube, namespace, pending_limit=4) as (_, secrets, handler):
        assert cached(secrets) == {"early": value("v1")}  # by the list: the others were never kept

        # A reference to a Secret made long ago (no longer among the recently dropped): a targeted GET.
        await kube.create(CONFIG_MAPS, referrer("b", "unrelated-3"), namespace)
        await eventually(lambda: "unrelated-3" in cached(secrets))
        # A reference first, its Secret later: the watch brings it.
        await kube.create(CONFIG_MAPS, referrer("c", "later"), namespace)
        await eventually(lambda: handler.count("delete", "later") == 1)  # absent: told, nothing cached
        await kube.create(SECRETS, secret("later"), namespace)
        await eventually(lambda: "later" in cached(secrets))
        for n in range(30, 40):  # more unrelated ones, by the watch
            await kube.create(SECRETS, secret(f"unrelated-{n}"), namespace)
        await kube.patch(
            SECRETS, "early", {"stringData": {"value": "v2"}}, PatchType.MERGE, namespace=namespace
        )
        await eventually(lambda: cached(secrets).get("early") == value("v2"))
        assert set(cached(secrets)) == {"early", "unrelated-3", "later"}
        assert handler.count("update", "early") == 1

        await kube.delete(SECRETS, "later", namespace)
        await eventually(lambda: handler.count("delete", "later") == 2)
        assert "later" not in cached(secrets)

        # A reference dropped: evicted, quietly.
        await kube.patch(CONFIG_MAPS, "b", {"data": {"secrets": ""}}, PatchType.MERGE, namespace=namespace)
        await eventually(lambda: "unrelated-3" not in cached(secrets))
        assert handler.count("delete", "unrelated-3") == 0
        assert not [
            name for _, name in handler.events if name.startswith("unrelated-") and name != "unrelated-3"
        ]


async def test_a_relist_after_410_keeps_exactly_the_referenced_secrets(
    kube: KubeCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    """Stall the watch, change Secrets and references, compact etcd and restart the API server: the
    re-list (410) pages through every Secret and keeps only the referenced ones, current."""
    control_plane = kube.control_plane
    assert control_plane is not None, "needs the local control plane (restarts the API server)"
    admin = KubeClient(kube_api)
    for name in ("keep", "remove", "change", *(f"unrelated-{n}" for n in range(20))):
        await admin.create(SECRETS, secret(name), namespace)
    await admin.create(CONFIG_MAPS, referrer("r", "keep", "remove", "change", "new"), namespace)
    host, port = server_address(await admin_configuration(kube))
    async with StallingProxy(host, port) as proxy, admin_api_via(kube, proxy.port) as proxied_api:
        proxied = KubeClient(proxied_api)
        async with caches(proxied, namespace, inactivity_timeout=2) as (_, secrets, handler):
            assert set(cached(secrets)) == {"keep", "remove", "change"}
            await asyncio.sleep(0.2)  # the watches are open (a stalled watch request has no timeout)
            proxy.stall()
            await admin.delete(SECRETS, "remove", namespace)
            await admin.create(SECRETS, secret("new"), namespace)
            await admin.create(SECRETS, secret("unrelated-new"), namespace)
            await admin.patch(
                SECRETS, "change", {"stringData": {"value": "v2"}}, PatchType.MERGE, namespace=namespace
            )
            control_plane.compact_etcd()
            control_plane.stop_apiserver()
            control_plane.start_apiserver()

            expected = {"keep": value("v1"), "change": value("v2"), "new": value("v1")}
            await eventually(lambda: cached(secrets) == expected, timeout=40)
            await eventually(lambda: handler.count("delete", "remove") == 1, timeout=10)
            assert handler.count("add", "keep") == 1  # not re-added by the re-list
            assert secrets.get(ObjectKey(namespace, "unrelated-new")) is None
