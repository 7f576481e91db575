"""The ``Database`` reconciler: the database exists, belongs to its resource, and has the spec's character
set and collation (managementPolicy Observe: read into status, nothing written). The rest is the frame's
(:class:`~dbuser_operator.controllers.kit.ownership.Owning`): finalizer, reserved names, the ledger's row
written *before* ``CREATE DATABASE``, adoption (this kind's check: the policy's allowAdoption), Paused, and
deletion — Retain by default (a drop loses data); Delete drops only a database this resource owns.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dbuser_operator.api.v1alpha1.database import Database, DatabaseStatus
from dbuser_operator.controllers.database.context import DatabaseContext
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.ownership import Owning, not_ours
from dbuser_operator.controllers.kit.reconcile import FrameParts
from dbuser_operator.controllers.kit.resources import DATABASES
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.mysql import databases
from dbuser_operator.mysql.accounts.holdings import Holdings
from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import Resource


class DatabaseReconciler(Owning[DatabaseContext]):
    """Runs one ``Database`` key in the frame every kind shares: ensure, observe or delete the database."""

    resource: ClassVar[Resource] = DATABASES
    manages: ClassVar[NameClass] = "database"
    model = Database

    def __init__(self, parts: FrameParts, informer: Informer, *, policy: PolicyGate | None = None) -> None:
        super().__init__(parts, informer)
        self.policy = policy

    def new_pass(self, obj: dict[str, Any], model: Database, status: DatabaseStatus) -> DatabaseContext:
        return DatabaseContext(obj=obj, database=model, status=status)

    def policies(self, ctx: DatabaseContext) -> tuple[str, str]:
        return ctx.database.spec.management_policy, ctx.database.spec.deletion_policy

    async def _bound(self, ctx: DatabaseContext) -> None:
        """The server (no finalizer on a resource refused here), the finalizer, the policy before any SQL."""
        ctx.server_resource, ctx.server = await self.bind(ctx)
        ctx.obj = await self.finalizer.add(ctx.obj)
        self.unpause(ctx)
        if self.policy is not None:
            self.policy.check_database(ctx.server_resource, ctx.database)

    @staticmethod
    async def _read(ctx: DatabaseContext) -> databases.Schema | None:
        """The database as it is (None: there is none)."""
        try:
            return await databases.read(ctx.server.db, ctx.name)
        except MySQLError as error:
            raise mysql_condition(error, f"database {ctx.name}") from None

    async def observe(self, ctx: DatabaseContext) -> Result:
        """The database as it is into status; nothing created, nothing claimed; one another namespace's
        Database owns is not read (the frame's bound)."""
        await self._bound(ctx)
        ctx.status.name = None  # nothing of a database stays in status once it is refused
        await self.within_observe_bounds(ctx)
        found = await self._read(ctx)
        name, spec = ctx.name, ctx.database.spec
        self._record(ctx, found)
        if found is None:
            self.set_ready(ctx, "False", "DatabaseNotFound", f"database {name} does not exist (observed)")
        elif databases.differs(found, spec.character_set, spec.collation):
            message = (
                f"database {name} has character set {found.character_set}, collation {found.collation}: "
                "not the spec's (observed: the operator changes nothing)"
            )
            self.set_ready(ctx, "False", "Diverged", message)
        else:
            message = f"database {name} matches the spec (observed: the operator changes nothing)"
            self.set_ready(ctx, "True", "Observed", message)
        await self.write(ctx)
        return Result(requeue_after=self.resync_period)

    async def converge(self, ctx: DatabaseContext) -> Result:
        """The database is this resource's, exists, and has the spec's character set and collation."""
        await self._bound(ctx)
        found = await self._read(ctx)
        name, db, spec = ctx.name, ctx.server.db, ctx.database.spec

        async def exists() -> bool:
            return found is not None

        try:
            taken = await self.claim(ctx, exists=exists, adoption=lambda: self._may_adopt(ctx))
            if taken.inserted and taken.via is not None:
                how = (
                    ", which existed already" if taken.via == "existing" else ": its former Database is gone"
                )
                ctx.event("Normal", "DatabaseAdopted", f"adopted database {name}{how}")
            if found is None:
                try:
                    await databases.create(db, name, spec.character_set, spec.collation)
                except databases.DatabaseExistsError:
                    if taken.inserted:  # our claim of this pass, for a database somebody made meanwhile
                        await self.forget(ctx)
                    raise not_ours(self.words(ctx), retry=True) from None
                ctx.event("Normal", "DatabaseCreated", f"created database {name}")
            elif databases.differs(found, spec.character_set, spec.collation):
                await databases.alter(db, name, spec.character_set, spec.collation)
                ctx.event(
                    "Normal",
                    "CharacterSetChanged",
                    f"database {name}: character set {found.character_set}, collation {found.collation} "
                    "changed to the spec's (existing tables keep theirs)",
                )
            found = await databases.read(db, name)
        except databases.CharsetError as error:
            raise ConditionError(error.reason, f"database {name}: {error}", retry=False) from None
        except MySQLError as error:
            raise mysql_condition(error, f"database {name}") from None
        self._record(ctx, found)
        self.set_ready(ctx, "True", "DatabaseReady", f"database {name} matches the spec")
        await self.write(ctx)
        return Result(requeue_after=self.resync_period)

    @staticmethod
    def _record(ctx: DatabaseContext, found: databases.Schema | None) -> None:
        ctx.status.name = ctx.name if found is not None else None
        ctx.status.character_set = found.character_set if found else None
        ctx.status.collation = found.collation if found else None

    async def _may_adopt(self, ctx: DatabaseContext) -> None:
        """Refuse (AdoptionNotAllowed) unless the server's policy lets the namespace take the name over."""
        if self.policy is None:
            return
        server = await ctx.server.server()

        async def nothing() -> Holdings:  # a database holds no privileges: only its name is judged
            return Holdings()

        await self.policy.check_adoption(
            ctx.server_resource,
            namespace=ctx.database.metadata.namespace or "",
            what=f"database {ctx.name}",
            name=ctx.name,
            holdings=nothing,
            flavour=server.flavour,
        )

    async def drop(self, ctx: DatabaseContext) -> None:
        await databases.drop(ctx.server.db, ctx.name)
        ctx.event("Normal", "DatabaseDropped", f"dropped database {ctx.name}")

    def not_owned(self, ctx: DatabaseContext) -> None:
        ctx.event(
            "Normal", "Retained", f"database {ctx.name} was left in MySQL: this resource does not own it"
        )
