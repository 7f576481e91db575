"""The guard step: the :class:`~dbuser_operator.controllers.kit.guard.Guard`'s refusals, before any SQL."""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.guard import Guard


class GuardStep:
    """Refuses reserved accounts and escalating grants before anything touches MySQL."""

    name = "guard"

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    async def ensure(self, ctx: Context) -> None:
        # The USER column of `kubectl get` shows the name for refused resources too (status.host, which
        # says an account was managed, is written by the ownership step only).
        user, privileges = ctx.user.effective_user(), ctx.user.spec.privileges
        ctx.status.user = user
        if self.guard.is_reserved(user):
            raise ConditionError(
                "ReservedAccount", f"{ctx.account} is reserved: the operator never manages it", retry=False
            )
        refusal = self.guard.grant_refusal(privileges)
        if refusal is not None:
            raise ConditionError("PrivilegeNotAllowed", f"{ctx.account}: {refusal}", retry=False)
        server_refusal = await self.guard.server_refusal(ctx.server, user, privileges)
        if server_refusal is not None:
            reason, message, retry = server_refusal
            raise ConditionError(reason, f"{ctx.account}: {message}", retry=retry)

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo: a reserved account was never touched."""
