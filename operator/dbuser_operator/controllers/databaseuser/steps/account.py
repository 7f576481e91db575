"""The account step: the account exists (created with the Secret's password); dropped on deletion if we
own it. The password of an account that exists already is set by :mod:`.credentials`, last.

``CREATE USER`` is sent only when this pass saw no account. A new MySQL account that an earlier pass created
but never settled (it stopped in between: the account is still expired, its fingerprint unrecorded) is
settled now, if it was created with the Secret version this pass applies; else the credentials step sets
the new password, which lifts the expiry too. If the account turns up meanwhile, a row this
pass wrote is withdrawn (somebody else made the account: not ours); a row that named this resource before
the pass (an earlier pass, another replica) is kept, and the live account is looked at again instead.
Deletion reads user and host from the context (:mod:`.hosts` runs it per host) and drops the account only
if the bookkeeping row names this resource's UID, and never a reserved one (an account that became a server
resource's admin after this resource made it: the frame's registry says so in ``ctx.reserved``): that one
is kept, its row forgotten, with a Warning.
"""

from __future__ import annotations

import json
from typing import Any

from dbuser_operator.controllers.databaseuser.context import Context, words
from dbuser_operator.controllers.databaseuser.steps.account_metadata import wanted_owner
from dbuser_operator.controllers.databaseuser.steps.limits import created_limits
from dbuser_operator.controllers.databaseuser.steps.ownership import FOREIGN_RETRY, record_own_fingerprint
from dbuser_operator.controllers.databaseuser.steps.rotation import credential_version
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.controllers.kit.ownership import decide_drop, kept_message, not_ours, owner_of
from dbuser_operator.controllers.kit.reserved import Refusal
from dbuser_operator.mysql.accounts import (
    account_lookup,
    account_metadata,
    accounts,
    authentication,
    dual_password,
    new_password,
    sessions,
)
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import AccountExistsError, MySQLError
from dbuser_operator.mysql.session.server import ServerInfo


class AccountStep:
    """Creates the account (with the Secret's password; a workload's certificate-only, its REQUIRE in the
    same statement) when it does not exist; drops it on deletion if we own it. An existing account's
    password is the credentials step's, after its grants and roles."""

    name = "account"
    after = ("password", "workload", "ownership", "authentication")

    async def ensure(self, ctx: Context) -> None:
        if ctx.account_exists:
            if ctx.unsettled and self._made_with_this_secret(ctx):
                await self._finish(ctx)
            return
        user, host = ctx.user.mysql_name(), ctx.host
        try:
            server = await ctx.server.server()
            method = authentication.effective(ctx.authentication, server)
            expired = not ctx.fingerprint_claimed and new_password.applies(server, method, ctx.password)
            attributes = self._attributes(ctx, server)
            if not await self._create(
                ctx, user, host, ctx.password, method, expired=expired, attributes=attributes
            ):
                return  # somebody made it meanwhile, under our row: the credentials step sets it
            if expired:
                own = await self._settle(ctx, user, host)
            else:
                own = ctx.fingerprint_claimed or await record_own_fingerprint(ctx, ctx.password)
            marker = (attributes or {}).get(dual_password.CREDENTIAL_ATTRIBUTE)
            if own and marker is not None and ctx.password is not None:
                ctx.server.known.remember(user, host, marker, ctx.password)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.created = True
        reason = "AccountRecreated" if ctx.status.applied_secret is not None else "AccountCreated"
        # A first creation under a row of an earlier pass: that pass never got to write status.
        earlier = "" if ctx.claimed or reason == "AccountRecreated" else ", claimed by an earlier pass"
        ctx.event("Normal", reason, f"created account {ctx.account}{earlier}")

    @staticmethod
    def _made_with_this_secret(ctx: Context) -> bool:
        """Whether the account's credential marker, written by its ``CREATE USER``, is the Secret version
        this pass applies (the account then holds this pass's password)."""
        marker = ctx.password_state.credential if ctx.password_state is not None else None
        return marker is not None and ctx.secret is not None and marker == credential_version(ctx.secret)

    async def _finish(self, ctx: Context) -> None:
        """Settle the account an earlier pass created and stopped short of settling."""
        try:
            if not await self._settle(ctx, ctx.user.mysql_name(), ctx.host):
                return  # changed by hand meanwhile: drift, set back soon
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.password_intact, ctx.unsettled = True, False
        ctx.event(
            "Normal", "AccountCreated", f"created account {ctx.account}, settled after an interrupted pass"
        )

    @staticmethod
    def _attributes(ctx: Context, server: ServerInfo) -> dict[str, Any] | None:
        """The owner entry and comment the new account is created with, where the server keeps attributes
        (:mod:`.account_metadata`, whose step then finds them in place), and the credential marker of its
        password (the Secret's version, as every later change of it carries: :mod:`.dual_password`); None
        elsewhere."""
        if not account_metadata.supports_attributes(server):
            return None
        changes = account_metadata.patch(
            account_metadata.AccountMetadata(), wanted_owner(ctx), ctx.user.spec.comment
        )
        if ctx.secret is not None and dual_password.supports_dual_passwords(server):
            changes[dual_password.CREDENTIAL_ATTRIBUTE] = credential_version(ctx.secret)
        return changes or None

    @staticmethod
    async def _settle(ctx: Context, user: str, host: str) -> bool:
        """A new MySQL account's expiry lifted and its fingerprint recorded, its string not hashed on the
        client (:mod:`~dbuser_operator.mysql.accounts.new_password`); one changed by hand since ``CREATE
        USER`` is not taken for ours: the account shows drift, and a pass soon sets the Secret's password
        back."""
        server = await ctx.server.server()
        db, schema, uid = ctx.server.db, ctx.server.schema, owner_of(ctx.obj).uid
        if not await new_password.settle(db, schema, user, host, server, owner_uid=uid):
            ctx.password_intact = False
            ctx.requeue(FOREIGN_RETRY)
            return False
        return True

    async def _create(
        self,
        ctx: Context,
        user: str,
        host: str,
        password: str | None,
        method: authentication.Method | None,
        *,
        expired: bool,
        attributes: dict[str, Any] | None,
    ) -> bool:
        """``CREATE USER`` (``expired``: with ``PASSWORD EXPIRE``, see :mod:`.new_password`); whether it
        created the account.

        If somebody made the account since the ownership step looked: a claim of this pass is withdrawn
        (not ours); under a row that was ours before this pass, the account is looked at again (False).
        """
        db, schema = ctx.server.db, ctx.server.schema
        require = created_limits(ctx).tls_identity  # a workload's, from the account's first moment
        try:  # MariaDB: the hash, not the password
            json_attributes = None if attributes is None else json.dumps(attributes)
            await accounts.create(
                db, user, host, password, method, expired=expired, attributes=json_attributes, require=require
            )
        except AccountExistsError:
            if ctx.claimed:  # claimed in this pass, for an account we did not create: not ours
                await ownership.forget(db, schema, ownership.account(user, host), owner_of(ctx.obj).uid)
                raise not_ours(words(ctx), retry=True) from None  # the next pass looks again
            found = await account_lookup.lookup(db, schema, user, host, await ctx.server.server())
            if found.owner is None or found.owner.uid != owner_of(ctx.obj).uid:
                raise not_ours(words(ctx), retry=True) from None  # our row went meanwhile: look again
            ctx.saw(found)
            return False
        ctx.account_exists = True
        if attributes is not None:
            ctx.account_metadata = account_metadata.AccountMetadata(
                attributes.get(account_metadata.OWNER_ATTRIBUTE),
                attributes.get(account_metadata.COMMENT_ATTRIBUTE),
            )
        return True

    async def delete(self, ctx: Context) -> None:
        user, host = ctx.user.mysql_name(), ctx.host
        db, schema = ctx.server.db, ctx.server.schema
        try:
            entry = ownership.account(user, host)
            decision = await decide_drop(db, schema, entry, owner_of(ctx.obj), ctx.reserved)
            if decision == "foreign":
                return  # not ours: never dropped
            if isinstance(decision, Refusal):  # reserved since it was made: forgotten, never dropped
                ctx.event("Warning", "AccountKept", kept_message(f"'{user}'@'{host}'", decision))
                return
            await accounts.drop(db, user, host)
            # DROP USER leaves the account's sessions open, with what they held: end them too.
            ended = await sessions.end_sessions(db, user, host)
        except MySQLError as error:
            raise mysql_condition(error, f"cannot drop '{user}'@'{host}'") from None
        also = f" and ended its {ended} open session(s)" if ended else ""
        ctx.event("Normal", "AccountDropped", f"dropped account '{user}'@'{host}'{also}")
