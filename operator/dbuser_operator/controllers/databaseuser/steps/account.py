"""The account step: the account exists with the Secret's password; dropped on deletion if we own it.

``CREATE USER`` is sent only when this pass saw no account. If the account turns up meanwhile, a row this
pass wrote is withdrawn (somebody else made the account: not ours); a row that named this resource before
the pass (an earlier pass, another replica) is kept, and the live account is looked at again instead.
Deletion reads user and host from the context (:mod:`.hosts` runs it per host) and drops the account only
if the bookkeeping row names this resource's UID.
"""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import AppliedSecret
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps import rotation
from dbuser_operator.controllers.databaseuser.steps.ownership import not_ours, owner
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.mysql import accounts, ownership
from dbuser_operator.mysql.errors import AccountExistsError, MySQLError


class AccountStep:
    """Creates the account, sets its password when the Secret changed or someone changed it by hand."""

    name = "account"
    after = ("password", "ownership", "authentication")

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.host
        try:
            set_now = await self._set_password(ctx, user, host, ctx.password, ctx.secret)
            if set_now and not (ctx.created and ctx.fingerprint_claimed):
                server = await ctx.server.server()
                await ownership.record_fingerprint(ctx.server.db, ctx.server.schema, user, host, server)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.status.applied_secret = ctx.secret
        # The plugin in force when the spec names one (set, or found in place by this pass's look). Without
        # spec.authentication status does not say: a new account's plugin would cost a statement more.
        ctx.status.authentication_plugin = (
            ctx.authentication.plugin if ctx.authentication is not None else None
        )

    async def _set_password(
        self, ctx: Context, user: str, host: str, password: str | None, secret: AppliedSecret | None
    ) -> bool:
        """Create the account, or set its password if the Secret changed, somebody changed it by hand or
        the plugin is to change; whether the password was set (its fingerprint is then to be recorded)."""
        method = ctx.authentication
        if not ctx.account_exists and await self._create(ctx, user, host, password):
            ctx.created = True
            reason = "AccountRecreated" if ctx.status.applied_secret is not None else "AccountCreated"
            # A first creation under a row of an earlier pass: that pass never got to write status.
            earlier = "" if ctx.claimed or reason == "AccountRecreated" else ", claimed by an earlier pass"
            ctx.event("Normal", reason, f"created account {ctx.account}{earlier}")
        elif method is not None and ctx.plugin != method.plugin:
            await accounts.set_password(ctx.server.db, user, host, password, method)
            kept = ", same password" if method.takes_password else ""
            ctx.event(
                "Normal",
                "PluginChanged",
                f"{ctx.account} authenticates with {method.plugin} now (was {ctx.plugin}{kept})",
            )
        elif secret is not None and ctx.status.applied_secret != secret:
            await self._apply(ctx, password, secret, restore=False)
            ctx.event(
                "Normal",
                "PasswordSet",
                f"set the password of {ctx.account} from Secret {secret.name} "
                f"(resourceVersion {secret.resource_version})",
            )
        elif ctx.password_intact is False:
            await self._apply(ctx, password, secret, restore=True)
            ctx.event(
                "Warning",
                "PasswordRestored",
                f"the password of {ctx.account} was changed outside the operator; "
                "set it back from the Secret",
            )
        else:
            return False
        return True

    async def _apply(
        self, ctx: Context, password: str | None, secret: AppliedSecret | None, *, restore: bool
    ) -> None:
        """Set the password with the rotation strategy in force (a plugin without one: its plugin)."""
        if password is None or secret is None:
            await accounts.set_password(
                ctx.server.db, ctx.user.effective_user(), ctx.host, None, ctx.authentication
            )
        else:
            await rotation.set_password(ctx.server, ctx, password, secret, restore=restore)

    async def _create(self, ctx: Context, user: str, host: str, password: str | None) -> bool:
        """``CREATE USER``; whether it created the account.

        If somebody made the account since the ownership step looked: a claim of this pass is withdrawn
        (not ours); under a row that was ours before this pass, the account is looked at again (False).
        """
        db, schema = ctx.server.db, ctx.server.schema
        try:
            await accounts.create(db, user, host, password, ctx.authentication)
        except AccountExistsError:
            if ctx.claimed:  # claimed in this pass, for an account we did not create: not ours
                await ownership.forget(db, schema, user, host, owner(ctx).uid)
                raise not_ours(ctx, retry=True) from None  # the next pass looks again
            found = await ownership.lookup(db, schema, user, host, await ctx.server.server())
            if found.owner is None or found.owner.uid != owner(ctx).uid:
                raise not_ours(ctx, retry=True) from None  # our row went meanwhile: look again
            ctx.account_exists, ctx.password_intact = found.exists, found.password_intact
            ctx.plugin = found.plugin
            return False
        ctx.account_exists = True
        return True

    async def delete(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.host
        db, schema = ctx.server.db, ctx.server.schema
        try:
            current = await ownership.owner_of(db, schema, user, host)
            if current is None or current.uid != owner(ctx).uid:
                return  # not ours: never dropped
            await accounts.drop(db, user, host)
        except MySQLError as error:
            raise mysql_condition(error, f"cannot drop '{user}'@'{host}'") from None
        ctx.event("Normal", "AccountDropped", f"dropped account '{user}'@'{host}'")
