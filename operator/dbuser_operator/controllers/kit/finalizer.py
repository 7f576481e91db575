"""The finalizer step: holds the resource until its delete halves have run."""

from __future__ import annotations

from typing import Any

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, FIELD_MANAGER
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.objects import add_finalizer, remove_finalizer


class FinalizerStep:
    """Adds this instance's finalizer first; removes it (and the legacy shared one) last."""

    name = "finalizer"

    def __init__(self, kube: KubeClient, scope: Scope) -> None:
        self.kube = kube
        self.scope = scope

    async def ensure(self, ctx: Context) -> None:
        ctx.obj = await add_finalizer(
            self.kube, DATABASE_USERS, ctx.obj, self.scope.finalizer, field_manager=FIELD_MANAGER
        )

    async def delete(self, ctx: Context) -> None:
        ctx.obj = await self.remove(ctx.obj)

    async def remove(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Take every finalizer of this instance off ``obj``, in one request; the object as returned."""
        return await remove_finalizer(
            self.kube, DATABASE_USERS, obj, *self.scope.finalizers, field_manager=FIELD_MANAGER
        )
