"""The ``Database`` reconciler: the database exists, belongs to its resource, and has the spec's character
set and collation.

The rules of accounts and roles: a finalizer (this instance's), reserved names refused, the server's policy
checked before any SQL, ownership in the bookkeeping table :data:`~dbuser_operator.mysql.databases.TABLE`
written *before* ``CREATE DATABASE`` (a crash in between leaves an owned row without a database, created on
the next pass; never a database nobody owns), a database that exists without our row taken over only with
the adopt annotation (and the policy's allowAdoption), and deletion under the deletion policy — Retain by
default: a drop loses data; Delete drops only a database this resource owns. managementPolicy Observe reads
the database into status and writes nothing; Paused does nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import structlog

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, RELEASE_ANNOTATION
from dbuser_operator.api.v1alpha1.database import API_VERSION, Database, DatabaseSpec, DatabaseStatus
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.reconcile import FORGET_TIMEOUT, READY, Pass, Reconciler, status_of
from dbuser_operator.controllers.kit.reserved import NameClass, ReservedNames
from dbuser_operator.controllers.kit.resources import DATABASES
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.servers.binding import ServerBinding
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql import databases, ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.holdings import Holdings
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import Forbidden, NotFound
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import Resource

log = structlog.get_logger(__name__)
PAUSED = "Paused"


@dataclass(kw_only=True)
class DatabaseContext(Pass[DatabaseStatus]):
    """What one Database reconcile knows."""

    database: Database
    binding: ServerBinding | None = None
    server: ServerHandle = field(default=cast("ServerHandle", None), repr=False)

    @property
    def name(self) -> str:
        """The database's name in MySQL."""
        return self.database.effective_name()


def owner_of(database: Database) -> ownership.Owner:
    """The resource as the owner of its database."""
    meta = database.metadata
    return ownership.Owner(uid=meta.uid or "", namespace=meta.namespace or "", name=meta.name or "")


class DatabaseReconciler(Reconciler[DatabaseContext]):
    """Runs one ``Database`` key in the frame every kind shares: ensure, observe or delete the database."""

    resource: ClassVar[Resource] = DATABASES
    api_version: ClassVar[str] = API_VERSION
    manages: ClassVar[NameClass] = "database"

    def __init__(
        self,
        kube: KubeClient,
        informer: Informer,
        recorder: EventRecorder,
        *,
        servers: ServerResolver,
        scope: Scope,
        resync_period: float,
        policy: PolicyGate | None = None,
        reserved: ReservedNames | None = None,
    ) -> None:
        super().__init__(kube, informer, recorder, scope, servers=servers, reserved=reserved)
        self.resync_period = resync_period
        self.policy = policy

    def parse(self, obj: dict[str, Any]) -> DatabaseContext:
        database = Database.model_validate(obj)
        status = database.status.model_copy(deep=True) if database.status else DatabaseStatus()
        return DatabaseContext(obj=obj, database=database, status=status)

    def unparsed(self, obj: dict[str, Any]) -> DatabaseContext:
        database = Database.model_construct(spec=DatabaseSpec.model_construct())
        return DatabaseContext(obj=obj, database=database, status=status_of(DatabaseStatus, obj))

    def mysql_name(self, ctx: DatabaseContext) -> str:
        return ctx.name

    def invalid_deletion_message(self, obj: dict[str, Any], problem: str) -> str:
        return (
            f"deleted with a spec that does not parse ({problem}): this instance let go without dropping "
            "anything; the database stays in MySQL, still recorded as owned"
        )

    def left_target_message(self, obj: dict[str, Any]) -> str:
        return f"no longer labelled {self.scope.selector}: this instance let go; the database stays in MySQL"

    async def ensure(self, ctx: DatabaseContext) -> Result:
        policy = ctx.database.spec.management_policy
        if policy == "Paused":
            await self._pause(ctx, "the operator changes nothing in MySQL")
            return Result()
        ctx.binding, ctx.server = await self.bind(ctx)  # no finalizer on a resource refused here
        ctx.obj = await self.finalizer.add(ctx.obj)
        ctx.status.conditions = [c for c in ctx.status.conditions if c.type != PAUSED]
        if self.policy is not None:  # before any SQL
            self.policy.check_database(ctx.binding, ctx.database)
        if policy == "Observe":
            await self._observe(ctx)
        else:
            await self._converge(ctx)
            self.set_ready(ctx, "True", "DatabaseReady", f"database {ctx.name} matches the spec")
        await self.write(ctx)
        return Result(requeue_after=self.resync_period)

    async def _observe(self, ctx: DatabaseContext) -> None:
        """managementPolicy Observe: the database as it is into status; nothing created, nothing claimed."""
        name, spec = ctx.name, ctx.database.spec
        try:
            found = await databases.read(ctx.server.db, name)
        except MySQLError as error:
            raise mysql_condition(error, f"database {name}") from None
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

    async def _converge(self, ctx: DatabaseContext) -> None:
        """The database is this resource's, exists, and has the spec's character set and collation."""
        name, handle, spec = ctx.name, ctx.server, ctx.database.spec
        db = handle.db
        try:
            await handle.ensure_databases_table()
            found = await databases.read(db, name)
            claimed = await self._claim(ctx, found is not None)
            if found is None:
                try:
                    await databases.create(db, name, spec.character_set, spec.collation)
                except databases.DatabaseExistsError:
                    if claimed:  # our claim of this pass, for a database somebody made meanwhile
                        await databases.forget(db, handle.schema, name, owner_of(ctx.database).uid)
                    raise _not_ours(name, retry=True) from None
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

    @staticmethod
    def _record(ctx: DatabaseContext, found: databases.Schema | None) -> None:
        ctx.status.name = ctx.name if found is not None else None
        ctx.status.character_set = found.character_set if found else None
        ctx.status.collation = found.collation if found else None

    async def _claim(self, ctx: DatabaseContext, exists: bool) -> bool:
        """Make sure the database is this resource's (recorded before it is created); whether this call
        recorded it."""
        name, handle, database = ctx.name, ctx.server, ctx.database
        db, schema, me = handle.db, handle.schema, owner_of(database)
        current = await databases.owner_of(db, schema, name)
        adopting = (database.metadata.annotations or {}).get(ADOPT_ANNOTATION) == "true"
        inserted = False
        if current is None:
            if exists:
                if not adopting:
                    raise _not_ours(name)
                await self._may_adopt(ctx)
            claim = await databases.claim(db, schema, name, me)
            current, inserted = claim.owner, claim.inserted
            if inserted and exists:
                ctx.event("Normal", "DatabaseAdopted", f"adopted database {name}, which existed already")
        elif current.uid != me.uid and adopting and not await self._owner_exists(current):
            await self._may_adopt(ctx)
            await databases.forget(db, schema, name, current.uid)
            claim = await databases.claim(db, schema, name, me)
            current, inserted = claim.owner, claim.inserted
            if inserted:
                ctx.event(
                    "Normal", "DatabaseAdopted", f"adopted database {name}: its former Database is gone"
                )
        if current.uid != me.uid:
            raise ConditionError(
                "DatabaseClaimed",
                f"database {name} is managed by Database {current.namespace}/{current.name}",
                retry=False,
            )
        return inserted

    async def _may_adopt(self, ctx: DatabaseContext) -> None:
        """Refuse (AdoptionNotAllowed) unless the server's policy lets the namespace take the name over."""
        if self.policy is None:
            return
        server = await ctx.server.server()

        async def nothing() -> Holdings:  # a database holds no privileges: only its name is judged
            return Holdings()

        await self.policy.check_adoption(
            ctx.binding,
            namespace=ctx.database.metadata.namespace or "",
            what=f"database {ctx.name}",
            name=ctx.name,
            holdings=nothing,
            flavour=server.flavour,
        )

    async def _owner_exists(self, owner: ownership.Owner) -> bool:
        try:
            obj = await self.kube.get(DATABASES, owner.name, owner.namespace)
        except NotFound:
            return False
        except Forbidden:
            return True
        return bool(obj["metadata"].get("uid") == owner.uid)

    async def _pause(self, ctx: DatabaseContext, what: str) -> None:
        """managementPolicy Paused: condition Paused, Ready's status kept with reason Paused."""
        message = f"managementPolicy Paused: {what}"
        current = next((c for c in ctx.status.conditions if c.type == READY), None)
        self.set_condition(ctx, PAUSED, "True", "ManagementPaused", message)
        self.set_ready(ctx, current.status if current else "Unknown", "Paused", message)
        await self.write(ctx)

    async def finalize(self, ctx: DatabaseContext) -> None:
        database = ctx.database
        spec = database.spec
        released = (database.metadata.annotations or {}).get(RELEASE_ANNOTATION) == "true"
        if spec.management_policy == "Paused" and not released:
            await self._pause(
                ctx,
                "deletion waits: set managementPolicy Manage to apply the deletionPolicy, or annotate "
                f"{RELEASE_ANNOTATION}=true to let go and leave the database in MySQL",
            )
            return
        if released or spec.management_policy == "Observe" or spec.deletion_policy == "Retain":
            await self._let_go(ctx, released)
        else:
            await self._drop(ctx)
        ctx.obj = await self.finalizer.remove(ctx.obj)

    async def _let_go(self, ctx: DatabaseContext, released: bool) -> None:
        """Leave the database; forget its row (if ours) when MySQL answers."""
        name = ctx.name
        forgotten = False
        try:
            _, handle = await self.bind(ctx, deleting=True)
            async with asyncio.timeout(FORGET_TIMEOUT):
                await handle.ensure_databases_table()
                forgotten = await databases.forget(handle.db, handle.schema, name, owner_of(ctx.database).uid)
        except (MySQLError, TimeoutError, ConditionError) as error:
            log.warning("could not forget the database's ownership", database=name, error=str(error))
        what = f"database {name} was left in MySQL" + ("" if forgotten else " (this resource did not own it)")
        if released:
            ctx.event("Warning", "Released", f"released by the {RELEASE_ANNOTATION} annotation: {what}")
        else:
            why = "managementPolicy Observe" if ctx.database.spec.management_policy == "Observe" else ""
            ctx.event("Normal", "Retained", f"{why or 'deletionPolicy Retain'}: {what}")

    async def _drop(self, ctx: DatabaseContext) -> None:
        """deletionPolicy Delete: drop the database if this resource owns it and it is not reserved, else
        leave it (a reserved one it owns is forgotten)."""
        name = ctx.name
        _, handle = await self.bind(ctx, deleting=True)
        try:
            await handle.ensure_databases_table()
            current = await databases.owner_of(handle.db, handle.schema, name)
            uid = owner_of(ctx.database).uid
            if current is not None and current.uid == uid and ctx.reserved is not None:
                await databases.forget(handle.db, handle.schema, name, uid)
                message = f"database {name} was not dropped, only forgotten: {ctx.reserved.message}"
                ctx.event("Warning", "DatabaseKept", message)
            elif current is not None and current.uid == uid:
                await databases.drop(handle.db, name)
                await databases.forget(handle.db, handle.schema, name, uid)
                ctx.event("Normal", "DatabaseDropped", f"dropped database {name}")
            else:
                message = f"database {name} was left in MySQL: this resource does not own it"
                ctx.event("Normal", "Retained", message)
        except MySQLError as error:
            raise mysql_condition(error, f"cannot drop database {name}") from None


def _not_ours(name: str, *, retry: bool = False) -> ConditionError:
    return ConditionError(
        "DatabaseExists",
        f"database {name} already exists and the operator did not create it; to manage it anyway, annotate "
        f"this Database with {ADOPT_ANNOTATION}=true",
        retry=retry,
    )
