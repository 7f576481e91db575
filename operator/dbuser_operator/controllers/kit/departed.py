"""At the start of leadership: find resources that left the scope while no instance of it was watching.

While the operator runs, its watch sees a resource leave (its target label changed or removed) and the
reconciler lets go of it. A resource relabelled while the operator was down is never in the cache, so
one list of everything outside the scope finds those still carrying this instance's finalizer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.runtime.backoff import Backoff
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import ApiError
from dbuser_operator.runtime.resources import ObjectKey, Resource
from dbuser_operator.runtime.workqueue import RateLimitingQueue

log = structlog.get_logger(__name__)


class DepartedSweep:
    """Queues the resources of one kind outside ``scope`` that still carry its finalizer; the reconciler
    lets go of them."""

    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        scope: Scope,
        namespaces: Sequence[str],
        queue: RateLimitingQueue[ObjectKey],
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.scope = scope
        self.namespaces = tuple(namespaces)
        self.queue = queue

    async def run(self) -> None:
        """Sweep once, retrying with backoff until the API server answers."""
        backoff = Backoff()
        while True:
            try:
                departed = await self.sweep()
            except ApiError as error:  # Unavailable included: timeouts and connection errors
                delay = backoff.next()
                log.warning("could not list departed resources; retrying", error=str(error), retry_in=delay)
                await asyncio.sleep(delay)
            else:
                if departed:
                    log.info(
                        "found resources that left the target while no leader watched", count=len(departed)
                    )
                return

    async def sweep(self) -> list[ObjectKey]:
        """Queue and return the keys of the departed resources."""
        departed: list[ObjectKey] = []
        for namespace in self.namespaces or (None,):
            items, _ = await self.kube.list_all(
                self.resource, namespace, label_selector=self.scope.outside_selector
            )
            departed += [ObjectKey.of(item) for item in items if self.scope.holds(item)]
        for key in departed:
            self.queue.add(key)
        return departed
