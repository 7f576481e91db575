"""The ``DatabaseRole`` reconciler: the role exists, belongs to its resource, holds no role, and has the
spec's privileges.

The same rules as for accounts: a finalizer (this instance's), the guard's refusals, ownership in the
ledger (its table ``roles``; a role that exists but that the operator did not create is not taken over
without the adopt annotation) and deletion under the deletion policy and the release annotation, which are
the frame's (:class:`~dbuser_operator.controllers.kit.ownership.Owning`); exact privilege convergence
through :class:`~dbuser_operator.mysql.grants.AccountGrants` with the role as grantee. A DatabaseRole has no
sub-roles: a role granted to the role (by hand, or found at adoption) is revoked, with a Warning naming it.
Accounts holding the role that the operator does not manage are reported (condition ``UnmanagedHolders``
and a Warning), never changed, and named in a Warning when deletion drops the role from under them
(:mod:`.holders`). A Ready role is reconciled again every resync period, which repairs a role dropped or
changed by hand.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from dbuser_operator.api.v1alpha1.databaserole import (
    DatabaseRole,
    DatabaseRoleStatus,
)
from dbuser_operator.controllers.databaserole import holders
from dbuser_operator.controllers.databaserole.context import RoleContext
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.controllers.kit.ownership import Owning, not_ours
from dbuser_operator.controllers.kit.reconcile import FrameParts
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.accounts import holdings, roles
from dbuser_operator.mysql.bookkeeping import name_holders, ownership
from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.mysql.errors import AccountExistsError, MySQLError
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import Resource


class DatabaseRoleReconciler(Owning[RoleContext]):
    """Runs one ``DatabaseRole`` key in the frame every kind shares: ensure or delete the role."""

    resource: ClassVar[Resource] = DATABASE_ROLES
    manages: ClassVar[NameClass] = "role"

    model = DatabaseRole
    kept_hint = ": drop it by hand if it is not wanted"

    def __init__(
        self, parts: FrameParts, roles_informer: Informer, *, guard: Guard, policy: PolicyGate | None = None
    ) -> None:
        super().__init__(parts, roles_informer)
        self.guard = guard
        self.policy = policy

    def new_pass(self, obj: dict[str, Any], model: DatabaseRole, status: DatabaseRoleStatus) -> RoleContext:
        return RoleContext(obj=obj, role=model, status=status)

    def policies(self, ctx: RoleContext) -> tuple[str, str]:
        return "Manage", ctx.role.spec.deletion_policy

    async def converge(self, ctx: RoleContext) -> Result:
        ctx.server_resource, ctx.server = await self.bind(ctx)  # no finalizer on a resource refused here
        ctx.obj = await self.finalizer.add(ctx.obj)
        # the guard's refusals of grants, as for accounts (reserved names are the frame's)
        await self.guard.check(ctx.server, ctx.role.spec.privileges, f"role {ctx.name}")
        if self.policy is not None:  # before any SQL
            self.policy.check_role(ctx.server_resource, ctx.role)
        unmanaged = await self._converge(ctx)
        self.set_ready(ctx, "True", "RoleReady", f"role {ctx.name} matches the spec")
        self._report_holders(ctx, unmanaged)
        await self.write(ctx)
        return Result(requeue_after=self.resync_period)

    async def _converge(self, ctx: RoleContext) -> list[roles.Account]:
        """The role exists, is this resource's, holds no role, and has exactly the spec's privileges (the
        sessions of the DatabaseUsers holding it ended if it lost any); the accounts holding it that the
        operator does not manage."""
        name, handle, role = ctx.name, ctx.server, ctx.role
        db = handle.db
        try:
            server = await handle.server()
            taken = await self.claim(
                ctx,
                exists=lambda: roles.exists(db, name, server),
                adoption=lambda: self._may_adopt(ctx),
                unowned=lambda exists: self._refuse_an_account(handle, name) if exists else _nothing(),
            )
            created = False
            if not await roles.exists(db, name, server):
                try:
                    await roles.create(db, name, server)
                except AccountExistsError:
                    if taken.inserted:  # our claim of this pass, for a role somebody else made meanwhile
                        await self.forget(ctx)
                    raise not_ours(self.words(ctx), retry=True) from None
                created = True
                ctx.event("Normal", "RoleCreated", f"created role {name}")
            revoked = [] if created else await holders.revoke_held_roles(handle, name)
            account = grants.AccountGrants(db, name, roles.role_host(server), server)
            if created:
                account.assume(())  # a new role has no grants
            summary = await account.converge(desired_grants(role.spec.privileges))
            found = [] if created else await name_holders.role_holders(db, handle.schema, name, server)
            ended = await holders.end_managed_sessions(handle, found) if revoked or account.reduced else 0
        except MySQLError as error:
            raise mysql_condition(error, f"role {name}") from None
        if revoked:
            ctx.event(
                "Warning",
                "RolesRevoked",
                f"role {name}: revoked {', '.join(revoked)}, granted to it by hand or before adoption (a "
                "DatabaseRole holds no roles): the accounts holding it no longer get them",
            )
        if summary:
            ctx.event("Normal", "GrantsChanged", f"role {name}: {'; '.join(summary)}")
        if ended:
            ctx.event(
                "Normal",
                "SessionsEnded",
                f"role {name} lost privileges: ended {ended} open session(s) of the DatabaseUsers holding it",
            )
        ctx.status.role = name
        return holders.unmanaged(found)

    def _report_holders(self, ctx: RoleContext, accounts: list[roles.Account]) -> None:
        """Condition :data:`~.holders.HOLDERS`, and a Warning when the accounts it names change."""
        previous = next((c for c in ctx.status.conditions if c.type == holders.HOLDERS), None)
        status, reason, message = holders.condition(ctx.name, accounts)
        self.set_condition(ctx, holders.HOLDERS, status, reason, message)
        changed = previous is None or previous.status != status or previous.message != message
        if status == "True" and changed:
            ctx.event("Warning", holders.HOLDERS, message)

    async def _may_adopt(self, ctx: RoleContext) -> None:
        """Refuse (AdoptionNotAllowed) unless the server's policy lets the namespace take the role over as
        it is today: its privileges, the roles granted to it (recursively), and nobody outside the
        operator's bookkeeping holding it (they would get whatever the tenant grants the role)."""
        if self.policy is None:
            return
        handle, name = ctx.server, ctx.name
        server = await handle.server()

        async def held() -> holdings.Holdings:
            found = await holdings.read_holdings(handle.db, name, roles.role_host(server), server)
            outside = holders.unmanaged(
                await name_holders.role_holders(handle.db, handle.schema, name, server)
            )
            return dataclasses.replace(found, held_by=tuple(roles.describe(account) for account in outside))

        await self.policy.check_adoption(
            ctx.server_resource,
            namespace=ctx.role.metadata.namespace or "",
            what=f"role {name}",
            name=name,
            holdings=held,
            flavour=server.flavour,
        )

    async def _refuse_an_account(self, handle: ServerHandle, name: str) -> None:
        """Adoption takes over roles only: never an account a DatabaseUser owns, nor (MySQL) an account that
        logs in, which a role's grants and deletion would change for whoever uses it."""
        db, schema = handle.db, handle.schema
        account = await ownership.owner_of(db, schema, ownership.account(name, ownership.ROLE_HOST))
        if account is not None:
            holder = f"DatabaseUser {account.namespace}/{account.name}"
            message = f"'{name}'@'%' is the account of {holder}, not a role: it cannot be adopted as one"
            raise ConditionError("RoleClaimed", message, retry=False)
        if await roles.can_log_in(db, name, await handle.server()):
            message = f"'{name}'@'%' is an account that can log in, not a role: it cannot be adopted as one"
            raise ConditionError("RoleExists", message, retry=False)

    def left(self, ctx: RoleContext, released: bool, forgotten: bool | None) -> None:
        reason = "Released" if released else "Retained"
        ctx.event("Warning" if released else "Normal", reason, f"role {ctx.name} was left in MySQL")

    async def drop(self, ctx: RoleContext) -> None:
        name, handle = ctx.name, ctx.server
        server = await handle.server()
        found = await name_holders.role_holders(handle.db, handle.schema, name, server)
        if unmanaged := holders.unmanaged(found):
            ctx.event(
                "Warning",
                "DroppedFromUnmanagedAccounts",
                f"dropping role {name}: accounts the operator does not manage hold it and lose it: "
                f"{holders.named(unmanaged)}",
            )
        await roles.drop(handle.db, name, server)
        ended = await holders.end_managed_sessions(handle, found)
        also = f" and ended {ended} open session(s) of the DatabaseUsers holding it" if ended else ""
        ctx.event("Normal", "RoleDropped", f"dropped role {name}{also}")


async def _nothing() -> None:
    """No check."""
