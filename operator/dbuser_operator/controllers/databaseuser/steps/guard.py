"""The guard step: the :class:`~dbuser_operator.controllers.policy.guard.Guard`'s refusals of grants, before
any SQL (a reserved account name was refused by the frame before the steps ran)."""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.policy.guard import Guard


class GuardStep:
    """Refuses escalating grants before anything touches MySQL."""

    name = "guard"

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    async def ensure(self, ctx: Context) -> None:
        # The USER column of `kubectl get` shows the name for refused resources too (status.host, which
        # says an account was managed, is written by the ownership step only).
        user, privileges = ctx.user.mysql_name(), ctx.user.spec.privileges
        ctx.status.user = user
        await self.guard.check(ctx.server, privileges, ctx.account)

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo: refused grants were never given."""
