"""The lock-policy step: spec.account (lock, password expiry, failed-login lock, expiry time), read
back from the server and set when it differs.

An account is locked when ``locked`` is true or ``expiresAt`` has passed (the operator's clock); a pass
before ``expiresAt`` asks to be looked at again at that moment. ``ACCOUNT LOCK`` refuses new logins only:
every pass that finds the account wanted locked ends its open sessions too (one processlist read when it
has none). The failed-login lock exists on MySQL 8.0.19+ only: elsewhere :class:`LockPolicyCheckStep`
refuses it by name (``AccountOptionUnsupported``) before anything is written, the account included.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.api.v1alpha1.account import NEVER as PASSWORD_NEVER
from dbuser_operator.api.v1alpha1.account import (
    lock_time_days,
    parse_expires_at,
    password_lifetime_days,
)
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.rotation import now
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.mysql.accounts import lock_policy, sessions
from dbuser_operator.mysql.accounts.lock_policy import (
    DEFAULT_LIFETIME,
    NEVER,
    UNBOUNDED,
    LockPolicy,
    WantedPolicy,
)
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.conditions import format_time

UNSUPPORTED: Final = "AccountOptionUnsupported"
LOCKED: Final = "AccountLocked"
EXPIRED: Final = "AccountExpired"
EXPIRY_MARGIN: Final = 0.05  # seconds after expiresAt that the pass which locks the account is asked for


def expired(spec: DatabaseUserSpec, moment: datetime) -> datetime | None:
    """``expiresAt`` if it has passed at ``moment``, else None."""
    account = spec.account
    if account is None or account.expires_at is None:
        return None
    expires_at = parse_expires_at(account.expires_at)
    return expires_at if expires_at <= moment else None


def wanted_policy(spec: DatabaseUserSpec, moment: datetime) -> WantedPolicy:
    """What the spec asks of the account at ``moment`` (the model checked the values)."""
    account = spec.account
    if account is None:
        return WantedPolicy()
    lifetime: int | None = None
    expire = account.password_expire
    if expire is not None:
        days = password_lifetime_days(expire)
        lifetime = days if days is not None else NEVER if expire == PASSWORD_NEVER else DEFAULT_LIFETIME
    lock_time = 0
    if account.password_lock_time is not None:
        lock_time = lock_time_days(account.password_lock_time) or UNBOUNDED
    return WantedPolicy(
        locked=account.locked or expired(spec, moment) is not None,
        password_lifetime=lifetime,
        failed_login_attempts=account.failed_login_attempts or 0,
        password_lock_time=lock_time,
    )


def unsupported(spec: DatabaseUserSpec, server: ServerInfo) -> str | None:
    """Why the server cannot do what spec.account asks, or None."""
    account = spec.account
    if account is None or account.failed_login_attempts is None:
        return None
    if lock_policy.failed_login_lock_supported(server):
        return None
    what = "spec.account.failedLoginAttempts and passwordLockTime"
    lock = "per-account failed-login lock (FAILED_LOGIN_ATTEMPTS, PASSWORD_LOCK_TIME)"
    if server.flavour == "mariadb":
        return f"{what}: {server} has no {lock}, only the server-wide max_password_errors"
    return f"{what}: {server} has no {lock}: it needs MySQL 8.0.19 or later"


def password_expire_text(lifetime: int) -> str:
    """A lifetime as spec.account.passwordExpire writes it: Never, Default, 90d."""
    return {NEVER: "Never", DEFAULT_LIFETIME: "Default"}.get(lifetime, f"{lifetime}d")


def lock_time_text(days: int) -> str:
    """A lock time as spec.account.passwordLockTime writes it: 2d, Unbounded."""
    return "Unbounded" if days == UNBOUNDED else f"{days}d"


def describe(policy: LockPolicy) -> str:
    """For Events and messages: ``locked, password expires Never, failed-login lock 3 then 2d``."""
    parts = [
        "locked" if policy.locked else "unlocked",
        f"password expires {password_expire_text(policy.password_lifetime)}",
    ]
    if policy.failed_login_attempts:
        parts.append(
            f"failed-login lock after {policy.failed_login_attempts}"
            f" for {lock_time_text(policy.password_lock_time)}"
        )
    return ", ".join(parts)


def ready_outcome(ctx: Context, message: str) -> tuple[str, str]:
    """Ready's reason and message once every account is in line: AccountLocked or AccountExpired when the
    spec locks it, else AccountReady."""
    spec = ctx.user.spec
    when = expired(spec, now())
    if spec.account is not None and spec.account.locked:
        return LOCKED, f"{message}; locked (spec.account.locked)"
    if when is not None:
        return EXPIRED, f"{message}; locked: expired at {format_time(when)} (spec.account.expiresAt)"
    return "AccountReady", message


def known_policy(ctx: Context, wanted: WantedPolicy, server: ServerInfo) -> tuple[LockPolicy, int] | None:
    """The account's policy and the server's default lifetime as this pass knows them without a statement:
    the ownership step's look, or a new account's defaults (it is what this pass just created) with the
    server's default lifetime — which matters only when the spec leaves passwordExpire unset — as this pass
    read it, or else as read once with the server (:class:`~dbuser_operator.mysql.session.server.ServerInfo`:
    a default changed since is seen by the next look and the drift check); None: to be read."""
    if ctx.created:
        if wanted.password_lifetime is not None:
            return LockPolicy(), 0
        default = ctx.default_lifetime if ctx.default_lifetime is not None else server.default_lifetime
        return (LockPolicy(), default) if default is not None else None
    if ctx.lock_policy is None or ctx.default_lifetime is None:
        return None
    return ctx.lock_policy, ctx.default_lifetime


class LockPolicyCheckStep:
    """Refuses what spec.account asks and the server cannot do, before anything is written (not even the
    account): Ready=False, reason AccountOptionUnsupported, naming the field and the server."""

    name = "lock-policy-check"

    async def ensure(self, ctx: Context) -> None:
        try:
            server = await ctx.server.server()
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        problem = unsupported(ctx.user.spec, server)
        if problem is not None:
            raise ConditionError(UNSUPPORTED, problem, retry=False)

    async def delete(self, ctx: Context) -> None:
        """Nothing was done."""


class LockPolicyStep:
    """ALTER USER … ACCOUNT LOCK|UNLOCK PASSWORD EXPIRE … only when the server's values differ from the
    spec; a locked account's sessions ended."""

    name = "lock-policy"
    after = ("lock-policy-check", "account")

    async def ensure(self, ctx: Context) -> None:
        user, host, spec = ctx.user.mysql_name(), ctx.host, ctx.user.spec
        moment = now()
        try:
            server = await ctx.server.server()
            wanted = wanted_policy(spec, moment)
            changed = await lock_policy.apply_policy(
                ctx.server.db, user, host, wanted, server, live=known_policy(ctx, wanted, server)
            )
            ended = await sessions.end_sessions(ctx.server.db, user, host) if wanted.locked else 0
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if spec.account is not None and spec.account.expires_at is not None and not wanted.locked:
            # At that moment, and a little after: a timer that fires early finds it unexpired, and asks again.
            ctx.requeue((parse_expires_at(spec.account.expires_at) - moment).total_seconds() + EXPIRY_MARGIN)
        if changed is not None:
            self._report(ctx, *changed)
        if ended:
            ctx.event(
                "Normal", "SessionsEnded", f"ended {ended} open session(s) of {ctx.account}: it is locked"
            )

    @staticmethod
    def _report(ctx: Context, before: LockPolicy, after: LockPolicy) -> None:
        spec = ctx.user.spec
        if after.locked and not before.locked:
            when = expired(spec, now())
            if when is not None and not (spec.account is not None and spec.account.locked):
                ctx.event(
                    "Normal",
                    EXPIRED,
                    f"locked {ctx.account}: it expired at {format_time(when)} (spec.account.expiresAt)",
                )
            else:
                ctx.event("Normal", LOCKED, f"locked {ctx.account} (spec.account.locked)")
        elif before.locked and not after.locked:
            ctx.event("Normal", "AccountUnlocked", f"unlocked {ctx.account}")
        if (before.password_lifetime, before.failed_login_attempts, before.password_lock_time) != (
            after.password_lifetime,
            after.failed_login_attempts,
            after.password_lock_time,
        ):
            ctx.event(
                "Normal", "AccountOptionsSet", f"set the password policy of {ctx.account}: {describe(after)}"
            )

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its policy."""
