"""The finalizer: holds a resource until its delete halves have run."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter

from dbuser_operator.controllers.kit.resources import FIELD_MANAGER
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.objects import add_finalizer, remove_finalizer
from dbuser_operator.runtime.resources import Resource

FINALIZERS_ADDED = Counter(
    "dbuser_operator_finalizers_added_total",
    "Finalizers the operator put on resources itself, one API write each (none while the chart's finalizer "
    "policy is in force: the API server adds them at creation)",
    ["kind"],
    registry=REGISTRY,
)


class Finalizer:
    """This instance's finalizer on resources of one kind (and the legacy shared one, when removing)."""

    def __init__(self, kube: KubeClient, scope: Scope, resource: Resource) -> None:
        self.kube = kube
        self.scope = scope
        self.resource = resource
        self._added = FINALIZERS_ADDED.labels(resource.kind)

    async def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Put this instance's finalizer on ``obj`` unless it is there; the object as returned."""
        held = self.scope.finalizer in (obj["metadata"].get("finalizers") or ())
        obj = await add_finalizer(
            self.kube, self.resource, obj, self.scope.finalizer, field_manager=FIELD_MANAGER
        )
        if not held:
            self._added.inc()
        return obj

    async def remove(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Take every finalizer of this instance off ``obj``, in one request; the object as returned."""
        return await remove_finalizer(
            self.kube, self.resource, obj, *self.scope.finalizers, field_manager=FIELD_MANAGER
        )


class FinalizerStep:
    """The first step: adds the finalizer; its delete half, run last, removes it."""

    name = "finalizer"

    def __init__(self, finalizer: Finalizer) -> None:
        self.finalizer = finalizer

    async def ensure(self, ctx: Any) -> None:
        ctx.obj = await self.finalizer.add(ctx.obj)

    async def delete(self, ctx: Any) -> None:
        ctx.obj = await self.finalizer.remove(ctx.obj)
