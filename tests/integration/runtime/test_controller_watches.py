"""A controller's watches against the real API server: primary with a predicate, mapped secondaries
(through an index, as "Secret → the users that reference it"), and owned objects."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller, Result
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.predicates import label_equals
from dbuser_operator.runtime.resources import SECRETS, ObjectKey, Resource
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")


async def test_primary_mapped_and_owned_watches(kube_api: client.ApiClient, namespace: str) -> None:
    kube = KubeClient(kube_api)
    reconciled: Counter[ObjectKey] = Counter()

    async def reconcile(key: ObjectKey) -> Result:
        reconciled[key] += 1
        return Result()

    config_maps = Informer(kube, CONFIG_MAPS, namespaces=[namespace])
    config_maps.add_index("by-secret", lambda obj: [(obj.get("data") or {}).get("secret", "")])
    secrets = Informer(kube, SECRETS, namespaces=[namespace])

    def users_of_secret(secret: dict[str, Any]) -> list[ObjectKey]:
        referencing = config_maps.store.by_index("by-secret", secret["metadata"]["name"])
        return [
            ObjectKey.of(obj)
            for obj in referencing
            if obj["metadata"].get("labels", {}).get("role") == "primary"
        ]

    controller = Controller("watches", reconcile)
    controller.watch(config_maps, label_equals("role", "primary"))
    controller.watch_mapped(secrets, users_of_secret)
    controller.watch_owned(config_maps, "v1", "ConfigMap")

    tasks = [asyncio.create_task(i.run()) for i in (config_maps, secrets)] + [
        asyncio.create_task(controller.run())
    ]
    try:
        primary = await kube.create(
            CONFIG_MAPS,
            {"metadata": {"name": "primary", "labels": {"role": "primary"}}, "data": {"secret": "pw"}},
            namespace,
        )
        key = ObjectKey(namespace, "primary")
        await eventually(lambda: reconciled[key] == 1)

        await kube.create(CONFIG_MAPS, {"metadata": {"name": "unrelated"}}, namespace)
        await kube.create(SECRETS, {"metadata": {"name": "pw"}, "stringData": {"password": "x"}}, namespace)
        await eventually(lambda: reconciled[key] == 2)  # the Secret it references changed

        owner = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "primary",
            "uid": primary["metadata"]["uid"],
            "controller": True,
        }
        await kube.create(CONFIG_MAPS, {"metadata": {"name": "owned", "ownerReferences": [owner]}}, namespace)
        await eventually(lambda: reconciled[key] == 3)  # an object it owns changed

        await kube.create(
            SECRETS, {"metadata": {"name": "other"}, "stringData": {"password": "y"}}, namespace
        )
        await asyncio.sleep(0.5)
        assert reconciled[key] == 3  # a Secret nobody references enqueues nothing
        assert set(reconciled) == {key}  # neither "unrelated" nor "owned" is a primary
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
