"""The workload step: a DatabaseUser bound to a ServiceAccount (``spec.authentication.workload``) gets its
certificate-only account — the issuer and subject it requires, and a method with no password — before any
SQL (:mod:`..workload`). Runs after the policy step: a namespace whose policy forbids workload identity is
refused for that first (PolicyViolation). Fills ``status.workload`` (cleared for any other account)."""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.workload import SigningCASource
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.mysql.accounts import authentication
from dbuser_operator.mysql.errors import MySQLError


class WorkloadStep:
    """Resolves the bound ServiceAccount into the account's identity and method."""

    name = "workload"
    after = ("policy",)

    def __init__(self, source: SigningCASource) -> None:
        self.source = source

    async def ensure(self, ctx: Context) -> None:
        ctx.workload = self.source.workload_of(ctx.user)
        if ctx.workload is None:
            ctx.status.workload = None
            return
        try:
            server = await ctx.server.server()
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.authentication = authentication.certificate_only(server.flavour)
        ctx.status.workload = ctx.workload.status()

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes what it required."""
