"""The grants step: the account's privileges converge exactly to the spec (grant missing, revoke extra)."""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.steps import Context
from dbuser_operator.controllers.target import Target, mysql_condition
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.errors import MySQLError


def desired_grants(spec: DatabaseUserSpec) -> set[grants.Grant]:
    """The grants the spec asks for, in the MySQL layer's terms."""
    return {
        grants.Grant(
            privileges=frozenset(item.privileges),
            database=item.database,
            table=item.table,
            grant_option=item.grant_option,
        )
        for item in spec.privileges
    }


class GrantsStep:
    """Reads the account's privileges from information_schema and applies only the difference."""

    name = "grants"

    def __init__(self, target: Target) -> None:
        self.target = target

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.host
        try:
            server = await self.target.server()
            known = frozenset[grants.Grant]() if ctx.created else None  # a new account has no grants
            summary = await grants.apply(
                self.target.db, user, host, desired_grants(ctx.user.spec), server, current=known
            )
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if summary:
            ctx.event("Normal", "GrantsChanged", f"{ctx.account}: {'; '.join(summary)}")

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its grants."""
