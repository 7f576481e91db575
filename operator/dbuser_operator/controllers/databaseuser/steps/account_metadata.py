"""Owner metadata on the account: the server itself says whose an account is (:mod:`~dbuser_operator.mysql.
account_metadata`).

On MySQL 8.0.21+ every owned account's attributes carry the owner entry (``managedBy``, namespace, name,
uid) and, when the spec has one, ``spec.comment``; they are written when the account is created or
adopted, and converged when they differ (a take-over, an edited comment, a hand edit found by the drift
check). The state is the one the ownership step read (one query with the ownership row): a pass that finds
them in line sends nothing. A released account loses its owner entry (:func:`release`, and
:mod:`.hosts` for a host that left the spec). Observe and Paused never write them.

Servers without account attributes (MariaDB, MySQL before 8.0.21) cannot store a comment: a spec with one
is refused before anything is written (``CommentNotSupported``); the owner is in the bookkeeping table
there (docs/ownership.md).

The owner entry is information for people: nothing in the operator reads it to decide who owns an account.
"""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.ownership import owner_of
from dbuser_operator.mysql.accounts import account_metadata
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo

COMMENT_NOT_SUPPORTED = "CommentNotSupported"


def unsupported_comment(server: ServerInfo) -> str:
    """Why ``server`` cannot store spec.comment, for messages."""
    name = "MariaDB" if server.flavour == "mariadb" else "MySQL " + ".".join(map(str, server.version))
    return (
        f"{name} has no account comments (MySQL 8.0.21 or later has them): remove spec.comment; the "
        "owner of the account is in the operator's bookkeeping table (docs/ownership.md)"
    )


def wanted_owner(ctx: Context) -> dict[str, str]:
    """The owner entry of this resource."""
    me = owner_of(ctx.obj)
    return account_metadata.owner_entry(me.namespace, me.name, me.uid)


def metadata_differs(
    current: account_metadata.AccountMetadata, recorded: ownership.Owner, spec: DatabaseUserSpec
) -> bool:
    """Whether an account's owner entry or comment differs from what the step would write for its
    recorded owner (the bookkeeping row) and spec: for the drift check."""
    wanted = account_metadata.owner_entry(recorded.namespace, recorded.name, recorded.uid)
    return bool(account_metadata.patch(current, wanted, spec.comment))


class CommentCheckStep:
    """Refuses spec.comment on a server that cannot store it, before anything is written (not even the
    account): Ready=False, reason CommentNotSupported, not retried until the spec changes."""

    name = "comment-check"

    async def ensure(self, ctx: Context) -> None:
        if ctx.user.spec.comment is None:
            return
        try:
            server = await ctx.server.server()
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if not account_metadata.supports_attributes(server):
            raise ConditionError(COMMENT_NOT_SUPPORTED, unsupported_comment(server), retry=False)

    async def delete(self, ctx: Context) -> None:
        """Nothing was done."""


class AccountMetadataStep:
    """Brings the account's owner entry and comment in line, with one ``ALTER USER … ATTRIBUTE`` when
    they differ."""

    name = "account-metadata"
    after = ("comment-check", "ownership", "account")

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.mysql_name(), ctx.host
        try:
            server = await ctx.server.server()
            if not account_metadata.supports_attributes(server):
                return
            current: account_metadata.AccountMetadata | None = ctx.account_metadata
            if ctx.created:  # with the attributes CREATE USER gave it (:mod:`.account`), or none
                current = current or account_metadata.AccountMetadata()
            elif current is None:
                current = await account_metadata.read(ctx.server.db, user, host, server)
            if current is None:
                return  # gone since the account step: the next pass makes it again
            changes = account_metadata.patch(current, wanted_owner(ctx), ctx.user.spec.comment)
            await account_metadata.apply(ctx.server.db, user, host, changes)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if changes and not ctx.created:
            what = " and ".join(
                name
                for key, name in (
                    (account_metadata.OWNER_ATTRIBUTE, "owner"),
                    (account_metadata.COMMENT_ATTRIBUTE, "comment"),
                )
                if key in changes
            )
            ctx.event("Normal", "AccountMetadataSet", f"{ctx.account}: set its {what} attributes")

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its attributes; a released one loses its owner entry
        (:func:`release`)."""


async def release(ctx: Context, *, host: str | None = None) -> int:
    """Remove the owner entry from the accounts this resource owns (only the one on ``host``, if given),
    before ownership is forgotten: deletionPolicy Retain, the release annotation, a host that left the
    spec; how many it changed. Only under managementPolicy Manage: Observe and Paused write nothing to
    the accounts."""
    if ctx.user.spec.management_policy != "Manage":
        return 0
    server = ctx.server
    return await account_metadata.release(
        server.db,
        ownership.table(server.schema),
        ctx.user.mysql_name(),
        owner_of(ctx.obj).uid,
        await server.server(),
        host=host,
    )
