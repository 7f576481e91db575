"""The limits step: connection limits and the TLS requirement (and identity), read back and set when they
differ. A workload's account requires its issuer and subject (and spec.tls.cipher, if any): made so by
``CREATE USER`` already, restored here when somebody changed them."""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.workload import Workload
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.mysql.accounts import limits
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.errors import MySQLError


def desired_identity(spec: DatabaseUserSpec, workload: Workload | None = None) -> TLSIdentity:
    """The TLS identity the spec asks for (none without spec.tls): a workload's issuer and subject, with
    spec.tls.cipher."""
    tls = spec.tls
    if workload is not None:
        return workload.identity(tls.cipher if tls is not None else None)
    if tls is None:
        return TLSIdentity()
    return TLSIdentity(
        x509=tls.x509, issuer=tls.issuer or "", subject=tls.subject or "", cipher=tls.cipher or ""
    )


def desired_limits(spec: DatabaseUserSpec, workload: Workload | None = None) -> limits.Limits:
    """The limits the spec asks for (``workload``: the one it binds): a TLS identity implies TLS."""
    identity = desired_identity(spec, workload)
    return limits.Limits(
        max_user_connections=spec.max_user_connections,
        max_queries_per_hour=spec.max_queries_per_hour,
        max_updates_per_hour=spec.max_updates_per_hour,
        max_connections_per_hour=spec.max_connections_per_hour,
        require_tls=spec.require_tls or bool(identity),
        tls_identity=identity,
    )


_DEFAULTS = limits.Limits()  # frozen: one for every account without a workload


def created_limits(ctx: Context) -> limits.Limits:
    """The limits ``CREATE USER`` gives the account: the defaults, and a workload's identity."""
    if ctx.workload is None:
        return _DEFAULTS
    return limits.Limits(require_tls=True, tls_identity=desired_identity(ctx.user.spec, ctx.workload))


class LimitsStep:
    """ALTER USER … REQUIRE … WITH MAX_… only when the server's values differ from the spec."""

    name = "limits"
    after = ("account",)

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.mysql_name(), ctx.host
        desired = desired_limits(ctx.user.spec, ctx.workload)
        if ctx.created and desired == created_limits(ctx):
            return  # a new account has the default limits, and a workload's its identity
        try:
            changed = await limits.apply_limits(ctx.server.db, user, host, desired, current=ctx.options)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if changed:
            tls = "required" if desired.require_tls else "not required"
            if desired.tls_identity:
                tls += f" with {desired.tls_identity.describe()}"
            ctx.event("Normal", "OptionsSet", f"set the connection limits of {ctx.account}; TLS {tls}")

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its limits."""
