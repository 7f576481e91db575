"""The roles step of a ``DatabaseUser``: the account holds exactly the roles of ``spec.roles``, and
``spec.defaultRoles`` are active at login.

``spec.roles`` names DatabaseRoles of the user's own namespace, never plain MySQL role names: a role is
granted only when its DatabaseRole is served by this instance, Ready, and recorded in the bookkeeping
schema as the owner of the MySQL role. So a namespace can give its accounts only roles that it manages
itself, whose privileges passed the same guard as an account's; it cannot reach a DBA's role, another
namespace's, or one created by hand. Roles the account holds but the spec does not name are revoked (a role
granted by hand included); a named role that is unavailable (missing, being deleted, not Ready) is neither
granted nor revoked, and the condition names it: ``RoleNotReady`` when each such role is ours but only not
available yet (not Ready, or being deleted: it still exists and still owns its role, and its change clears
the condition by itself), ``RoleNotFound`` when one is missing, on another server or does not own its role
(that one needs the user's action, so it wins). DatabaseRole events re-queue the users naming them.
"""

from __future__ import annotations

from collections.abc import Sequence

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRole
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.resources import describe_server, server_key
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.accounts import roles
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.conditions import find_condition
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey


class RolesStep:
    """Grants the spec's roles, revokes any other, sets the default roles."""

    name = "roles"
    after = ("account",)

    def __init__(self, roles_informer: Informer) -> None:
        self.roles = roles_informer

    async def ensure(self, ctx: Context) -> None:
        spec = ctx.user.spec
        if ctx.created and not spec.roles:  # made by this pass: it holds no role, and none is wanted
            return
        user, host = ctx.user.mysql_name(), ctx.host
        namespace = ctx.user.metadata.namespace or ""
        try:
            server = await ctx.server.server()
            if server.flavour == "mariadb" and len(spec.default_roles) > 1:
                raise ConditionError(
                    "TooManyDefaultRoles",
                    f"{ctx.account}: {server} activates one default role per account, defaultRoles lists "
                    f"{len(spec.default_roles)} ({', '.join(spec.default_roles)})",
                    retry=False,
                )
            resolved: dict[str, roles.Role] = {}
            kept: set[roles.Role] = set()  # ours, but unavailable for now: neither granted nor revoked
            missing: list[str] = []  # missing, foreign or not owned: RoleNotFound
            waiting: list[str] = []  # ours, not Ready or being deleted: RoleNotReady
            for name in spec.roles:
                role_name, why = await self._resolve(ctx.server, namespace, name)
                if role_name is not None and not why:
                    resolved[name] = roles.role_of(role_name, server)
                    continue
                if role_name is not None:
                    kept.add(roles.role_of(role_name, server))
                    waiting.append(f"{name} ({why})")
                else:
                    missing.append(f"{name} ({why})")
            defaults = None  # left as they are while a default role is missing
            if all(name in resolved for name in spec.default_roles):
                defaults = {resolved[name] for name in spec.default_roles}
            summary = await roles.converge(
                ctx.server.db,
                user,
                host,
                server,
                wanted=resolved.values(),
                wanted_defaults=defaults,
                keep=kept,
            )
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.reduced |= any(line.startswith(roles.REVOKED) for line in summary)
        if summary:
            ctx.event("Normal", "RolesChanged", f"{ctx.account}: {'; '.join(summary)}")
        unavailable = unavailable_roles(ctx.account, missing, waiting)
        if unavailable is not None:
            raise unavailable

    async def _resolve(self, handle: ServerHandle, namespace: str, name: str) -> tuple[str | None, str]:
        """``(MySQL role, "")`` when DatabaseRole ``namespace/name`` may be granted; ``(MySQL role, why not)``
        when it owns its role but is not available now (being deleted, not Ready); ``(None, why not)``
        when it is missing or does not own its role."""
        obj = self.roles.get(ObjectKey(namespace, name))
        if obj is None:
            return None, f"no DatabaseRole {name} in namespace {namespace} served by this operator"
        if server_key(obj) != handle.key:
            where, here = describe_server(server_key(obj)), describe_server(handle.key)
            return None, (
                f"DatabaseRole {name} is on {where}, this user on {here}: a role and the users granted it "
                "must be on the same server"
            )
        role_name = DatabaseRole.model_validate(obj).mysql_name()
        owner = await ownership.owner_of(handle.db, handle.schema, ownership.role(role_name))
        if owner is None or owner.uid != obj["metadata"].get("uid"):
            return None, f"DatabaseRole {name} does not own a role {role_name}"
        if obj["metadata"].get("deletionTimestamp"):
            return role_name, f"DatabaseRole {name} is being deleted"
        ready = find_condition((obj.get("status") or {}).get("conditions"), "Ready")
        if ready is None or ready.get("status") != "True":
            return (
                role_name,
                f"DatabaseRole {name} is not Ready: {(ready or {}).get('reason') or 'not reconciled yet'}",
            )
        return role_name, ""

    async def delete(self, ctx: Context) -> None:
        """Dropping the account takes its roles with it."""


def unavailable_roles(account: str, missing: Sequence[str], waiting: Sequence[str]) -> ConditionError | None:
    """The condition of a pass that could not grant every named role, each entry ``name (why)``; None when
    it granted them all. ``RoleNotFound`` (Degraded for Argo CD) when one is missing, foreign or not owned:
    it needs the user's action, so it wins over the others, which the message names too. ``RoleNotReady``
    (Progressing) when each is a DatabaseRole of ours that is only not Ready, or being deleted: the role's
    own change re-queues the user. Neither is retried with backoff."""
    if missing:
        also = f"; waiting for role {'; '.join(waiting)}" if waiting else ""
        return ConditionError(
            "RoleNotFound", f"{account}: missing role {'; '.join(missing)}{also}", retry=False
        )
    if waiting:
        return ConditionError(
            "RoleNotReady", f"{account}: waiting for role {'; '.join(waiting)}", retry=False
        )
    return None


class RoleAccountGuardStep:
    """Before the ownership step: the adopt annotation never takes over a role a DatabaseRole owns (on MySQL
    the role ``'name'@'%'`` is an account too, that a password would turn into a login)."""

    name = "role-account-guard"

    async def ensure(self, ctx: Context) -> None:
        adopting = (ctx.user.metadata.annotations or {}).get(ADOPT_ANNOTATION) == "true"
        if not adopting or ctx.host != ownership.ROLE_HOST:
            return
        db, schema = ctx.server.db, ctx.server.schema
        try:
            await ctx.server.ensure_book(ownership.ROLES)
            owner = await ownership.owner_of(db, schema, ownership.role(ctx.user.mysql_name()))
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if owner is not None and (await ctx.server.server()).flavour == "mysql":
            raise ConditionError(
                "AccountClaimed",
                f"{ctx.account} is the role of DatabaseRole {owner.namespace}/{owner.name}: never adopted as "
                "an account",
                retry=False,
            )

    async def delete(self, ctx: Context) -> None:
        """Nothing was done."""
