"""The authentication step: the plugin the spec asks for, checked against the server before it is used.

Runs after the ownership step (which read the account's live plugin) and before the account step (which
creates the account, or sets its password, with the plugin). A plugin the server does not have active is
refused with ``Ready=False``, reason ``PluginUnavailable``, naming it and the server's active plugins; it is
retried with backoff, since loading the plugin (``INSTALL SONAME``, a server option) needs no change of the
resource. The server's plugins are read only when the account is to be created or its plugin changed.
"""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.mysql.accounts import authentication
from dbuser_operator.mysql.errors import MySQLError


def wanted_plugin(ctx: Context) -> str | None:
    """The plugin the spec names (None: whatever the server gives or the account has)."""
    spec = ctx.user.spec.authentication
    return spec.plugin if spec is not None else None


class AuthenticationStep:
    """Sets ``ctx.authentication`` to the spec's plugin, once the server is known to have it active."""

    name = "authentication"
    after = ("ownership",)  # which read the account's live plugin

    async def ensure(self, ctx: Context) -> None:
        plugin = wanted_plugin(ctx)
        if plugin is None:
            return
        try:
            server = await ctx.server.server()
            if not ctx.account_exists or ctx.plugin != plugin:
                active = await authentication.active_plugins(ctx.server.db)
                refusal = authentication.unavailable(plugin, server, active)
                if refusal is not None:
                    raise ConditionError("PluginUnavailable", f"{ctx.account}: {refusal}")
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.authentication = authentication.Method(plugin, server.flavour)

    async def delete(self, ctx: Context) -> None:
        """Dropping the account removes its plugin."""
