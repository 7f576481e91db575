"""The grants step: the account's privileges converge exactly to the spec (grant missing, revoke extra), at
every level: global, database, table, column and routine."""

from __future__ import annotations

import functools

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.api.v1alpha1 import Grant as GrantSpec
from dbuser_operator.controllers.steps import Context
from dbuser_operator.controllers.target import mysql_condition
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.errors import MySQLError, PrivilegeUnknownError


def desired_grant(item: GrantSpec) -> grants.Grant:
    """One entry of ``spec.privileges`` in the MySQL layer's terms (a routine's name is its ``table``)."""
    if item.routine is not None:
        return _grant(
            frozenset(item.privileges),
            item.database,
            item.routine.name,
            item.grant_option,
            frozenset(),
            item.routine.type,
        )
    return _grant(
        frozenset(item.privileges),
        item.database,
        item.table,
        item.grant_option,
        frozenset(item.columns or ()),
        "",
    )


@functools.lru_cache(maxsize=1024)  # a pass asks twice (check, then converge); specs often share grants
def _grant(  # noqa: PLR0917 - the fields of one Grant
    privileges: frozenset[str],
    database: str,
    table: str,
    grant_option: bool,
    columns: frozenset[str],
    routine: str,
) -> grants.Grant:
    """The grant of these fields, checked once (a Grant is immutable: one object serves every pass)."""
    return grants.Grant(
        privileges=privileges,
        database=database,
        table=table,
        grant_option=grant_option,
        columns=columns,
        routine=routine,
    )


def desired_grants(spec: DatabaseUserSpec) -> set[grants.Grant]:
    """The grants the spec asks for, in the MySQL layer's terms."""
    return {desired_grant(item) for item in spec.privileges}


class PrivilegeCheckStep:
    """Refuses privileges the server does not have, or not at the level wanted, before anything is
    written (not even the account): Ready=False, reason PrivilegeUnknown or PrivilegeMisplaced, naming
    them. The server's privilege names are read once (``SHOW PRIVILEGES``, with its version), and again
    (at most once a minute) when a wanted one seems unknown: a plugin or an upgrade may have added it."""

    name = "privilege-check"

    async def ensure(self, ctx: Context) -> None:
        wanted = desired_grants(ctx.user.spec)
        try:
            try:
                grants.check(wanted, await ctx.target.server())
            except PrivilegeUnknownError:  # the server may have gained it since it was read: ask again
                grants.check(wanted, await ctx.target.server_reread())
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None

    async def delete(self, ctx: Context) -> None:
        """Nothing was done."""


class GrantsStep:
    """Reads the account's privileges from the grant tables and applies only the difference; records what
    the account was brought in line with in ``status.privileges``."""

    name = "grants"

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.host
        try:
            wanted = desired_grants(ctx.user.spec)
            server = await ctx.target.server()
            account = grants.AccountGrants(ctx.target.db, user, host, server)
            if ctx.created:
                account.assume(())  # a new account has no grants
            summary = await account.converge(wanted)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.status.privileges = grants.summary(wanted) or None
        if summary:
            ctx.event("Normal", "GrantsChanged", f"{ctx.account}: {'; '.join(summary)}")

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its grants."""
