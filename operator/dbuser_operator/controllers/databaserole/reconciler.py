"""The ``DatabaseRole`` reconciler: the role exists, belongs to its resource, and has the spec's privileges.

The same rules as for accounts: a finalizer (this instance's), the guard's refusals, ownership in the
bookkeeping schema (table :data:`~dbuser_operator.mysql.ownership.ROLES_TABLE`; a role that exists but that
the operator did not create is not taken over without the adopt annotation), exact privilege convergence
through :func:`~dbuser_operator.mysql.grants.apply` with the role as grantee, and deletion under the
deletion policy and the release annotation. A Ready role is reconciled again every resync period, which
repairs a role dropped or changed by hand.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pydantic
import structlog

from dbuser_operator.api.databaserole import (
    API_VERSION,
    KIND,
    DatabaseRole,
    DatabaseRoleSpec,
    DatabaseRoleStatus,
)
from dbuser_operator.api.v1alpha1 import (
    ADOPT_ANNOTATION,
    RELEASE_ANNOTATION,
    Condition,
    DatabaseUserSpec,
    SecretKeySelector,
)
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.controllers.kit.guard import GuardStep, is_reserved
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, FIELD_MANAGER
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.servers.binding import ServerBinding
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql import grants, ownership, roles
from dbuser_operator.mysql.errors import AccountExistsError, MySQLError
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import is_true, set_condition
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import Forbidden, NotFound
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.objects import add_finalizer, remove_finalizer, update_status
from dbuser_operator.runtime.resources import ObjectKey

log = structlog.get_logger(__name__)

READY = "Ready"
FORGET_TIMEOUT = 2.0  # seconds a Retain or release deletion waits for MySQL before letting go anyway

Events = list[tuple[str, str, str]]


def as_grants_spec(spec: DatabaseRoleSpec) -> DatabaseUserSpec:
    """The role's privileges in the shape the guard and the grants helpers read (they read only
    ``privileges``): one set of rules for accounts and roles."""
    unused = SecretKeySelector.model_construct(name="", key="")
    return DatabaseUserSpec.model_construct(password=unused, privileges=spec.privileges)


def owner_of(role: DatabaseRole) -> ownership.Owner:
    """The resource as the owner of its role."""
    meta = role.metadata
    return ownership.Owner(uid=meta.uid or "", namespace=meta.namespace or "", name=meta.name or "")


class DatabaseRoleReconciler:
    """Runs one ``DatabaseRole`` key: ensure or delete, then status and Events."""

    def __init__(
        self,
        kube: KubeClient,
        roles_informer: Informer,
        recorder: EventRecorder,
        *,
        servers: ServerResolver,
        scope: Scope,
        guard: GuardStep,
        resync_period: float,
        policy: PolicyGate | None = None,
    ) -> None:
        self.kube = kube
        self.roles = roles_informer
        self.recorder = recorder
        self.servers = servers
        self.scope = scope
        self.guard = guard
        self.resync_period = resync_period
        self.policy = policy

    async def __call__(self, key: ObjectKey) -> Result:
        cached = self.roles.get(key)
        if cached is None:
            await self._let_go_if_departed(key)
            return Result()
        obj = copy.deepcopy(cached)
        events: Events = []
        try:
            role = DatabaseRole.model_validate(obj)
        except pydantic.ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            status = _status_of(obj)
            await self._report(obj, status, ConditionError("InvalidSpec", f"{where}: {first['msg']}"), events)
            return Result()
        status = role.status.model_copy(deep=True) if role.status else DatabaseRoleStatus()
        try:
            if obj["metadata"].get("deletionTimestamp"):
                await self._finalize(obj, role, events)
                self._emit(obj, events)
                return Result()
            obj = await add_finalizer(
                self.kube, DATABASE_ROLES, obj, self.scope.finalizer, field_manager=FIELD_MANAGER
            )
            binding, target = await self.servers.resolve(obj)
            await self._ensure(target, role, status, events, binding)
        except ConditionError as error:
            await self._report(obj, status, error, events)
            if error.retry:
                raise
            return Result()
        name = role.effective_role()
        self._set_ready(obj, status, "True", "RoleReady", f"role {name} matches the spec", events)
        await self._write(obj, status, events)
        return Result(requeue_after=self.resync_period)

    async def _ensure(
        self,
        target: ServerHandle,
        role: DatabaseRole,
        status: DatabaseRoleStatus,
        events: Events,
        binding: ServerBinding | None = None,
    ) -> None:
        name = role.effective_role()
        if is_reserved(name, self.guard.reserved):
            raise ConditionError("ReservedAccount", f"role {name} is reserved: never managed", retry=False)
        refusal = self.guard.grant_refusal(as_grants_spec(role.spec))
        if refusal is not None:
            raise ConditionError("PrivilegeNotAllowed", f"role {name}: {refusal}", retry=False)
        server_refusal = self.guard.server_refusal(target, name, as_grants_spec(role.spec))
        if server_refusal is not None:
            raise ConditionError(server_refusal[0], f"role {name}: {server_refusal[1]}", retry=False)
        if self.policy is not None:  # before any SQL
            self.policy.check_role(binding, role)
        db = target.db
        try:
            await self._ensure_table(target)
            server = await target.server()
            claimed = await self._claim(target, role, name)
            created = False
            if not await roles.exists(db, name, server):
                try:
                    await roles.create(db, name, server)
                except AccountExistsError:
                    if claimed:  # our claim of this pass, for a role somebody else made meanwhile
                        await self._forget(target, role, name)
                    raise _not_ours(name, retry=True) from None
                created = True
                events.append(("Normal", "RoleCreated", f"created role {name}"))
            host = roles.role_host(server)
            known = frozenset[grants.Grant]() if created else None
            wanted = desired_grants(role.spec.privileges)
            summary = await grants.apply(db, name, host, wanted, server, current=known)
        except MySQLError as error:
            raise mysql_condition(error, f"role {name}") from None
        if summary:
            events.append(("Normal", "GrantsChanged", f"role {name}: {'; '.join(summary)}"))
        status.role = name

    async def _claim(self, target: ServerHandle, role: DatabaseRole, name: str) -> bool:
        """Make sure the role is this resource's; whether this call recorded it."""
        db, schema, me = target.db, target.schema, owner_of(role)
        table = ownership.ROLES_TABLE
        current = await ownership.owner_of(db, schema, name, ownership.ROLE_HOST, table_name=table)
        adopting = (role.metadata.annotations or {}).get(ADOPT_ANNOTATION) == "true"
        inserted = False
        if current is None:
            if await roles.exists(db, name, await target.server()):
                if not adopting:
                    raise _not_ours(name)
                await self._refuse_an_account(target, name)
            claim = await ownership.claim(db, schema, name, ownership.ROLE_HOST, me, table_name=table)
            current, inserted = claim.owner, claim.inserted
        elif current.uid != me.uid and adopting and not await self._owner_exists(current):
            await ownership.forget(db, schema, name, ownership.ROLE_HOST, current.uid, table_name=table)
            claim = await ownership.claim(db, schema, name, ownership.ROLE_HOST, me, table_name=table)
            current, inserted = claim.owner, claim.inserted
        if current.uid != me.uid:
            raise ConditionError(
                "RoleClaimed",
                f"role {name} is managed by DatabaseRole {current.namespace}/{current.name}",
                retry=False,
            )
        return inserted

    async def _refuse_an_account(self, target: ServerHandle, name: str) -> None:
        """Adoption takes over roles only: never an account a DatabaseUser owns, nor (MySQL) an account that
        logs in, which a role's grants and deletion would change for whoever uses it."""
        db, schema = target.db, target.schema
        account = await ownership.owner_of(db, schema, name, ownership.ROLE_HOST)
        if account is not None:
            holder = f"DatabaseUser {account.namespace}/{account.name}"
            message = f"'{name}'@'%' is the account of {holder}, not a role: it cannot be adopted as one"
            raise ConditionError("RoleClaimed", message, retry=False)
        if await roles.can_log_in(db, name, await target.server()):
            message = f"'{name}'@'%' is an account that can log in, not a role: it cannot be adopted as one"
            raise ConditionError("RoleExists", message, retry=False)

    async def _owner_exists(self, owner: ownership.Owner) -> bool:
        try:
            obj = await self.kube.get(DATABASE_ROLES, owner.name, owner.namespace)
        except NotFound:
            return False
        except Forbidden:
            return True
        return bool(obj["metadata"].get("uid") == owner.uid)

    async def _forget(self, target: ServerHandle, role: DatabaseRole, name: str) -> bool:
        return await ownership.forget(
            target.db,
            target.schema,
            name,
            ownership.ROLE_HOST,
            owner_of(role).uid,
            table_name=ownership.ROLES_TABLE,
        )

    async def _ensure_table(self, target: ServerHandle) -> None:
        await target.ensure_roles_table()

    async def _finalize(self, obj: dict[str, Any], role: DatabaseRole, events: Events) -> None:
        if not self.scope.holds(obj):
            return
        name = role.effective_role()
        released = (role.metadata.annotations or {}).get(RELEASE_ANNOTATION) == "true"
        if released or role.spec.deletion_policy == "Retain":
            try:
                _, target = await self.servers.resolve(obj, deleting=True)
                async with asyncio.timeout(FORGET_TIMEOUT):
                    await self._ensure_table(target)
                    await self._forget(target, role, name)
            except (MySQLError, TimeoutError, ConditionError) as error:
                log.warning("could not forget the role's ownership", role=name, error=str(error))
            reason = "Released" if released else "Retained"
            events.append(("Warning" if released else "Normal", reason, f"role {name} was left in MySQL"))
        else:
            _, target = await self.servers.resolve(obj, deleting=True)
            try:
                await self._ensure_table(target)
                current = await ownership.owner_of(
                    target.db, target.schema, name, ownership.ROLE_HOST, table_name=ownership.ROLES_TABLE
                )
                if current is not None and current.uid == owner_of(role).uid:
                    await roles.drop(target.db, name, await target.server())
                    await self._forget(target, role, name)
                    events.append(("Normal", "RoleDropped", f"dropped role {name}"))
            except MySQLError as error:
                raise mysql_condition(error, f"cannot drop role {name}") from None
        await remove_finalizer(
            self.kube, DATABASE_ROLES, obj, *self.scope.finalizers, field_manager=FIELD_MANAGER
        )

    async def _let_go_if_departed(self, key: ObjectKey) -> None:
        """Take this instance's finalizer off a role that left its scope (the role stays in MySQL)."""
        try:
            obj = await self.kube.get(DATABASE_ROLES, key.name, key.namespace)
        except NotFound:
            return
        if self.scope.serves(obj) or not self.scope.holds(obj):
            return
        await remove_finalizer(
            self.kube, DATABASE_ROLES, obj, *self.scope.finalizers, field_manager=FIELD_MANAGER
        )
        message = f"no longer labelled {self.scope.selector}: this instance let go; the role stays in MySQL"
        self.recorder.emit(_involved(obj), "Warning", "LeftTarget", message)

    def _set_ready(  # noqa: PLR0917 - one condition, and where to put it
        self,
        obj: dict[str, Any],
        status: DatabaseRoleStatus,
        value: str,
        reason: str,
        message: str,
        events: Events,
    ) -> None:
        generation = obj["metadata"].get("generation")
        conditions = [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in status.conditions]
        was_ready = is_true(conditions, READY)
        set_condition(conditions, READY, value, reason, message, generation)
        status.conditions = [Condition.model_validate(condition) for condition in conditions]
        status.observed_generation = generation
        if value == "True" and not was_ready and not events:
            events.append(("Normal", "RoleReady", message))

    async def _report(
        self, obj: dict[str, Any], status: DatabaseRoleStatus, error: ConditionError, events: Events
    ) -> None:
        self._set_ready(obj, status, "False", error.reason, error.message, events)
        events.append(("Warning", error.reason, error.message))
        await self._write(obj, status, events)

    async def _write(self, obj: dict[str, Any], status: DatabaseRoleStatus, events: Events) -> None:
        await update_status(
            self.kube, DATABASE_ROLES, obj, status.to_api(obj.get("status")), field_manager=FIELD_MANAGER
        )
        self._emit(obj, events)

    def _emit(self, obj: dict[str, Any], events: Events) -> None:
        for type_, reason, message in events:
            self.recorder.emit(_involved(obj), "Warning" if type_ == "Warning" else "Normal", reason, message)
        events.clear()


def _not_ours(name: str, *, retry: bool = False) -> ConditionError:
    return ConditionError(
        "RoleExists",
        f"role {name} already exists and the operator did not create it; to manage it anyway, annotate "
        f"this DatabaseRole with {ADOPT_ANNOTATION}=true",
        retry=retry,
    )


def _status_of(obj: dict[str, Any]) -> DatabaseRoleStatus:
    try:
        return DatabaseRoleStatus.model_validate(obj.get("status") or {})
    except pydantic.ValidationError:
        return DatabaseRoleStatus()


def _involved(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "apiVersion": API_VERSION, "kind": KIND}
