"""The grants step: the account's privileges converge exactly to the spec (grant missing, revoke extra), at
every level: global, database, table, column and routine."""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.errors import MySQLError, PrivilegeUnknownError


class PrivilegeCheckStep:
    """Refuses privileges the server does not have, or not at the level wanted, before anything is
    written (not even the account): Ready=False, reason PrivilegeUnknown or PrivilegeMisplaced, naming
    them. The server's privilege names are read once (``SHOW PRIVILEGES``, with its version), and again
    (at most once a minute) when a wanted one seems unknown: a plugin or an upgrade may have added it."""

    name = "privilege-check"

    async def ensure(self, ctx: Context) -> None:
        wanted = desired_grants(ctx.user.spec.privileges)
        try:
            try:
                grants.check(wanted, await ctx.server.server())
            except PrivilegeUnknownError:  # the server may have gained it since it was read: ask again
                grants.check(wanted, await ctx.server.server_reread())
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None

    async def delete(self, ctx: Context) -> None:
        """Nothing was done."""


class GrantsStep:
    """Reads the account's privileges from the grant tables and applies only the difference; records what
    the account was brought in line with in ``status.privileges``."""

    name = "grants"
    after = ("account",)

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.mysql_name(), ctx.host
        try:
            wanted = desired_grants(ctx.user.spec.privileges)
            server = await ctx.server.server()
            account = grants.AccountGrants(ctx.server.db, user, host, server)
            if ctx.created:
                account.assume(())  # a new account has no grants
            summary = await account.converge(wanted)
            ctx.reduced |= account.reduced
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.status.privileges = grants.summary(wanted) or None
        if summary:
            ctx.event("Normal", "GrantsChanged", f"{ctx.account}: {'; '.join(summary)}")

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its grants."""
