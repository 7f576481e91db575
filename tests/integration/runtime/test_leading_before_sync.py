"""Leader election runs while the caches list: a leader task added ``before_sync`` starts once this replica
holds the Lease, before a cache has synced; the controllers start only once every cache has.

The cache that is still listing is a real informer whose list is held back until the early task lets it go
(so the order is the manager's, not a race of timings); the Lease, the lists and the probes are real.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller, Result
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig
from dbuser_operator.runtime.resources import ObjectKey
from tests.integration.runtime.test_supervision import CONFIG_MAPS, new_manager, running, wait_for_probe
from tests.support.kube import eventually

pytestmark = pytest.mark.integration


class HeldInformer(Informer):
    """An informer that starts listing only once released: a cache still listing for as long as the test
    wants."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = asyncio.Event()

    async def run(self) -> None:
        await self.release.wait()
        await super().run()


async def test_a_before_sync_leader_task_runs_while_a_cache_lists_and_the_controllers_after_it_synced(
    kube_api: client.ApiClient, namespace: str
) -> None:
    kube = KubeClient(kube_api)
    held = HeldInformer(kube, CONFIG_MAPS, namespaces=[namespace])
    seen: dict[str, bool] = {}

    async def reconcile(key: ObjectKey) -> Result:
        return Result()

    controller = Controller("after-sync", reconcile)
    controller.watch(held)
    election = LeaderElectionConfig(f"early-{uuid.uuid4().hex[:8]}", namespace, "replica-a")
    manager = new_manager(kube, leader_election=election)
    manager.add_controller(controller)

    async def early() -> None:
        seen.update(
            leading=manager.is_leader and manager.fence.is_open(),
            cache_synced=held.has_synced,
            controller_started=controller.started,
        )
        held.release.set()  # only now may the cache list: nothing else lets it sync

    manager.add_leader_task("early", early, before_sync=True)
    async with running(manager):
        await eventually(lambda: controller.started, timeout=60)
        await wait_for_probe(manager.endpoints.ports["probes"], "/readyz", 200)
    assert seen == {"leading": True, "cache_synced": False, "controller_started": False}
