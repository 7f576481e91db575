"""The options step: connection limits and the TLS requirement (and identity), read back and set when they
differ."""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.mysql.accounts import limits
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.errors import MySQLError


def desired_identity(spec: DatabaseUserSpec) -> TLSIdentity:
    """The TLS identity the spec asks for (none without spec.tls)."""
    tls = spec.tls
    if tls is None:
        return TLSIdentity()
    return TLSIdentity(
        x509=tls.x509, issuer=tls.issuer or "", subject=tls.subject or "", cipher=tls.cipher or ""
    )


def desired_options(spec: DatabaseUserSpec) -> limits.AccountOptions:
    """The account options the spec asks for: a TLS identity implies TLS."""
    identity = desired_identity(spec)
    return limits.AccountOptions(
        max_user_connections=spec.max_user_connections,
        max_queries_per_hour=spec.max_queries_per_hour,
        max_updates_per_hour=spec.max_updates_per_hour,
        max_connections_per_hour=spec.max_connections_per_hour,
        require_tls=spec.require_tls or bool(identity),
        tls_identity=identity,
    )


class OptionsStep:
    """ALTER USER … REQUIRE … WITH MAX_… only when the server's values differ from the spec."""

    name = "options"
    after = ("account",)

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.host
        desired = desired_options(ctx.user.spec)
        if ctx.created and desired == limits.AccountOptions():
            return  # a new account has the default options
        try:
            changed = await limits.apply_options(ctx.server.db, user, host, desired, current=ctx.options)
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if changed:
            tls = "required" if desired.require_tls else "not required"
            if desired.tls_identity:
                tls += f" with {desired.tls_identity.describe()}"
            ctx.event("Normal", "OptionsSet", f"set the connection limits of {ctx.account}; TLS {tls}")

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its options."""
