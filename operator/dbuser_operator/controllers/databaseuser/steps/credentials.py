"""The credentials step: an existing account's password and plugin, set last — after its grants and
roles are in line with the spec — and then the sessions that kept what the account lost are ended.

Order matters when the operator takes over an account (adoption) or takes privileges away: whoever knows
the new password must never log in while the account still holds what it held before. So the revokes
come first, the password after them, and the sessions opened before (which keep the global privileges
and the roles they logged in with) are ended last
(:func:`~dbuser_operator.mysql.accounts.sessions.end_sessions`). A new account is created with its password
by the account step: it holds nothing yet.

A workload's account has no password: its empty one is set back, after its ``REQUIRE`` (the options step),
when it is not the one the operator recorded (changed by hand, or an adopted account's).
"""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import AppliedSecret
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps import rotation
from dbuser_operator.controllers.databaseuser.steps.ownership import record_own_fingerprint
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.mysql.accounts import accounts, password_match, sessions
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.errors import MySQLError


class CredentialsStep:
    """Sets the password when the Secret's password changed, somebody changed it by hand or the plugin is
    to change. A new Secret version with the same password is no rotation: nothing is set."""

    name = "credentials"
    after = ("password", "ownership", "authentication", "account", "grants", "roles")

    async def ensure(self, ctx: Context) -> None:
        try:
            set_now = not ctx.created and await self._set_password(ctx, ctx.password, ctx.secret)
            if set_now and not ctx.fingerprint_set:  # else in the ALTER USER itself (hashed_password)
                await record_own_fingerprint(ctx, ctx.password)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.status.applied_secret = ctx.secret
        # The plugin in force when the spec names one (set, or found in place by this pass's look). Without
        # spec.authentication status does not say: a new account's plugin would cost a statement more. A
        # workload's account says status.workload instead.
        method = None if ctx.workload is not None else ctx.authentication
        ctx.status.authentication_plugin = method.plugin if method is not None else None

    async def _set_password(self, ctx: Context, password: str | None, secret: AppliedSecret | None) -> bool:
        """Set the password if the Secret changed, somebody changed it by hand or the plugin is to change;
        whether it was set (its fingerprint is then to be recorded)."""
        method = ctx.authentication
        if method is not None and method.certificate_only:
            return await self._certificate_only(ctx, method)
        if method is not None and ctx.plugin != method.plugin:
            await accounts.set_password(ctx.server.db, ctx.user.mysql_name(), ctx.host, password, method)
            kept = ", same password" if method.takes_password else ""
            ctx.event(
                "Normal",
                "PluginChanged",
                f"{ctx.account} authenticates with {method.plugin} now (was {ctx.plugin}{kept})",
            )
        elif secret is not None and ctx.status.applied_secret != secret:
            if await self._unchanged(ctx, password):
                await rotation.resume(ctx.server, ctx)
                return False
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

    @staticmethod
    async def _certificate_only(ctx: Context, method: Method) -> bool:
        """A workload's account: its empty password set back unless the recorded one is in place; whether
        it was set."""
        if ctx.plugin == method.plugin and ctx.password_intact is True:
            return False
        await accounts.set_password(ctx.server.db, ctx.user.mysql_name(), ctx.host, None, method)
        ctx.event(
            "Warning" if ctx.password_intact is False else "Normal",
            "PasswordRemoved",
            f"{ctx.account} takes its workload's client certificate only: its password was removed",
        )
        return True

    @staticmethod
    async def _unchanged(ctx: Context, password: str | None) -> bool:
        """Whether a new Secret version keeps the password the account has (a label or another key
        changed), and only while the account's password is the one the operator set (its fingerprint
        matches). Judged without a statement where the pass's look tells (an unsalted hash's fingerprint,
        or the marker of a password this process set:
        :mod:`~dbuser_operator.mysql.accounts.known_passwords`), else on the account's own hash of it
        (:mod:`~dbuser_operator.mysql.accounts.password_match`: on MySQL, its salted hash checked on the
        client)."""
        if password is None or ctx.password_intact is not True:
            return False
        user = ctx.user.mysql_name()
        held = password_match.fingerprint_matches(ctx.plugin, ctx.auth_fingerprint, password)
        if held is None:
            marker = ctx.password_state.credential if ctx.password_state is not None else None
            held = ctx.server.known.holds(user, ctx.host, marker, password)
        if held is None:
            server = await ctx.server.server()
            held = await password_match.holds_password(ctx.server.db, user, ctx.host, server, password)
        ctx.password_held = held
        return held

    @staticmethod
    async def _apply(
        ctx: Context, password: str | None, secret: AppliedSecret | None, *, restore: bool
    ) -> None:
        """Set the password with the rotation strategy in force (a plugin without one: its plugin)."""
        if password is None or secret is None:
            await accounts.set_password(
                ctx.server.db, ctx.user.mysql_name(), ctx.host, None, ctx.authentication
            )
        else:
            await rotation.set_password(ctx.server, ctx, password, secret, restore=restore)

    async def delete(self, ctx: Context) -> None:
        """Dropping the account is the account step's."""


class SessionsStep:
    """Ends the account's open sessions when this pass took it over or took privileges or roles away."""

    name = "sessions"
    after = ("credentials",)

    async def ensure(self, ctx: Context) -> None:
        if not (ctx.adopted or ctx.reduced):
            return
        try:
            ended = await sessions.end_sessions(ctx.server.db, ctx.user.mysql_name(), ctx.host)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if ended:
            why = "it was taken over" if ctx.adopted else "it lost privileges or roles"
            ctx.event("Normal", "SessionsEnded", f"ended {ended} open session(s) of {ctx.account}: {why}")

    async def delete(self, ctx: Context) -> None:
        """Dropping an account leaves its sessions to the server (MySQL ends none; they hold nothing new)."""
