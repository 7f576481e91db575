"""The policy step: a DatabaseUser its server's ``spec.policy`` does not admit is refused before any SQL
(see :mod:`dbuser_operator.controllers.policy.gate`)."""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.policy.gate import PolicyGate


class PolicyStep:
    """Refuses a DatabaseUser its server's policy does not admit, before anything touches MySQL."""

    name = "policy"

    def __init__(self, gate: PolicyGate) -> None:
        self.gate = gate

    async def ensure(self, ctx: Context) -> None:
        self.gate.check_user(ctx.server_resource, ctx.user)

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo: deleting a refused resource still drops the account it owns, if any."""
