"""The finalizer step: holds the resource until its delete halves have run."""

from __future__ import annotations

from dbuser_operator.controllers.resources import DATABASE_USERS, FIELD_MANAGER
from dbuser_operator.controllers.scope import LEGACY_FINALIZER
from dbuser_operator.controllers.steps import Context
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.objects import add_finalizer, remove_finalizer


class FinalizerStep:
    """Adds this instance's finalizer first; removes it (and the legacy shared one) last."""

    name = "finalizer"

    def __init__(self, kube: KubeClient, finalizer: str) -> None:
        self.kube = kube
        self.finalizer = finalizer

    async def ensure(self, ctx: Context) -> None:
        ctx.obj = await add_finalizer(
            self.kube, DATABASE_USERS, ctx.obj, self.finalizer, field_manager=FIELD_MANAGER
        )

    async def delete(self, ctx: Context) -> None:
        ctx.obj = await remove_finalizer(
            self.kube, DATABASE_USERS, ctx.obj, self.finalizer, LEGACY_FINALIZER, field_manager=FIELD_MANAGER
        )
