"""The ``DatabaseUser`` reconciler: runs the steps, reports the outcome as the Ready condition and Events.

Deletion runs the steps' delete halves in reverse, then the finalizer comes off. Under
``deletionPolicy: Retain``, or with the release annotation, MySQL is left alone (ownership is forgotten
if the server answers quickly) and the resource is released at once, even while MySQL is down.

``spec.managementPolicy`` Observe reads the accounts into status and writes nothing to MySQL (deletion
lets go, as under Retain), unless the server's policy refuses the resource (it would read a server, or
accounts, the namespace may not use: the violation is reported instead); Paused does nothing at all,
deletion included, until the policy changes or the release annotation lets go.

A resource that leaves the instance's scope (its target label changed or removed) while it carries the
instance's finalizer is let go of: the finalizer comes off, the account stays in MySQL and stays recorded
as owned, so the drift check reports it as an orphan, and restoring the label resumes managing it.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pydantic
import structlog

from dbuser_operator.api.v1alpha1 import (
    API_VERSION,
    RELEASE_ANNOTATION,
    Condition,
    DatabaseUser,
    DatabaseUserSpec,
    DatabaseUserStatus,
    SecretKeySelector,
)
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.observe import Observer, summary
from dbuser_operator.controllers.databaseuser.steps.hosts import accounts_of, ready_message
from dbuser_operator.controllers.databaseuser.steps.ownership import owner
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.finalizer import FinalizerStep
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, FIELD_MANAGER
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.kit.steps import Releasing, Step
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql import ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import set_condition
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.objects import update_status
from dbuser_operator.runtime.resources import ObjectKey

log = structlog.get_logger(__name__)

FORGET_TIMEOUT = 2.0  # seconds a Retain or release deletion waits for MySQL before letting go anyway

READY = "Ready"
PAUSED = "Paused"


class DatabaseUserReconciler:
    """Runs the steps for one ``DatabaseUser`` key and reports the outcome as status and Events."""

    def __init__(
        self,
        kube: KubeClient,
        users: Informer,
        steps: list[Step],
        recorder: EventRecorder,
        *,
        servers: ServerResolver,
        scope: Scope,
        observer: Observer | None = None,
        observe_period: float = 0.0,
        policy: PolicyGate | None = None,
    ) -> None:
        self.kube = kube
        self.users = users
        self.steps = steps
        self.recorder = recorder
        self.servers = servers
        self.scope = scope
        self.finalizer = FinalizerStep(kube, scope)
        self.observer = observer or Observer(())
        self.observe_period = observe_period  # seconds between two looks at an observed account (0: none)
        self.policy = policy  # checked before observing (the Manage path has it among the steps)

    async def __call__(self, key: ObjectKey) -> Result:
        cached = self.users.get(key)
        if cached is None:
            await self._let_go_if_departed(key)
            return Result()
        obj = copy.deepcopy(cached)
        try:
            user = DatabaseUser.model_validate(obj)
        except pydantic.ValidationError as error:
            # The CRD schema rejects what the models reject, so this is an old or foreign object.
            ctx = Context(obj=obj, user=_unparsed(), status=_status_of(obj))
            await self._report(ctx, ConditionError("InvalidSpec", _first_error(error), retry=False))
            return Result()
        status = user.status.model_copy(deep=True) if user.status else DatabaseUserStatus()
        ctx = Context(obj=obj, user=user, status=status)
        try:
            policy = user.spec.management_policy
            if obj["metadata"].get("deletionTimestamp"):
                await self._finalize(ctx)
            elif policy == "Paused":
                await self._pause(ctx, "the operator changes nothing in MySQL, drift included")
            elif policy == "Observe":
                ctx.binding, ctx.server = await self.servers.resolve(obj)
                await self._observe(ctx)
                return Result(requeue_after=self.observe_period)
            else:
                ctx.binding, ctx.server = await self.servers.resolve(obj)
                _clear_policy_status(ctx)
                for step in self.steps:
                    await step.ensure(ctx)
                self._set_ready(ctx, "True", "AccountReady", ready_message(ctx))
                await self._write(ctx)
        except ConditionError as error:
            await self._report(ctx, error)
            if error.retry:
                raise
        return Result(requeue_after=ctx.requeue_after or 0.0)

    async def _let_go_if_departed(self, key: ObjectKey) -> None:
        """Release a resource the cache dropped because its target label changed, not because it is gone."""
        try:
            obj = await self.kube.get(DATABASE_USERS, key.name, key.namespace)
        except NotFound:
            return  # deleted
        if self.scope.serves(obj) or not self.scope.holds(obj):
            return  # back in scope (the cache will catch up), or never ours
        account = _recorded_account(_status_of(obj)) or "no account"
        message = (
            f"no longer labelled {self.scope.selector}: this instance let go; {account} was left in MySQL, "
            "still recorded as owned (reported as an orphan), until it is dropped or the label is restored"
        )
        await self.finalizer.remove(obj)
        log.warning(
            "resource left the target; let go", namespace=key.namespace, name=key.name, account=account
        )
        self.recorder.emit(_involved(obj), "Warning", "LeftTarget", message)

    async def _finalize(self, ctx: Context) -> None:
        if not self.scope.holds(ctx.obj):
            return
        released = (ctx.user.metadata.annotations or {}).get(RELEASE_ANNOTATION) == "true"
        policy = ctx.user.spec.management_policy
        if policy == "Paused" and not released:
            await self._pause(
                ctx,
                "deletion waits: set managementPolicy Manage to apply the deletionPolicy, or annotate "
                f"{RELEASE_ANNOTATION}=true to let go and leave the accounts in MySQL",
            )
        elif released or policy == "Observe" or ctx.user.spec.deletion_policy == "Retain":
            try:  # letting go needs no server; ownership is forgotten where there is one
                ctx.binding, ctx.server = await self.servers.resolve(ctx.obj, deleting=True)
                bound = True
            except ConditionError:
                bound = False
            await self._let_go(ctx, released, bound=bound)
        else:
            ctx.binding, ctx.server = await self.servers.resolve(ctx.obj, deleting=True)
            for step in reversed(self.steps):
                await step.delete(ctx)
        self._record_events(ctx)

    async def _let_go(self, ctx: Context, released: bool, *, bound: bool = True) -> None:
        """Remove the finalizer without touching the accounts; forget ownership if MySQL answers.

        The accounts are the bookkeeping table's (every host this resource owns), not status's: status may
        never have been written.
        """
        user = ctx.user.effective_user()
        forgotten: bool | None = None  # None: MySQL did not answer
        try:
            if bound:  # else the server is gone or unusable: as if MySQL did not answer
                async with asyncio.timeout(FORGET_TIMEOUT):
                    target = ctx.server
                    forgotten = (
                        await ownership.forget_owner(target.db, target.schema, user, owner(ctx).uid) > 0
                    )
        except (MySQLError, TimeoutError) as error:
            log.warning(
                "could not forget ownership; it stays recorded", account=ctx.account, error=str(error)
            )
        if forgotten or (forgotten is None and _recorded_account(ctx.status) is not None):
            account = accounts_of(ctx)
        elif forgotten is None:  # MySQL did not say, and status may never have been written
            account = f"{accounts_of(ctx)} (if this resource owned it)"
        else:
            account = "no account"
        if released:
            ctx.event(
                "Warning",
                "Released",
                f"released by the {RELEASE_ANNOTATION} annotation: {account} was left in MySQL as it is",
            )
        else:
            why = "managementPolicy Observe" if ctx.user.spec.management_policy == "Observe" else ""
            why = why or "deletionPolicy Retain"
            ctx.event("Normal", "Retained", f"{why}: {account} was left in MySQL")
        for step in self.steps:  # the Secrets it made stay with the account
            if isinstance(step, Releasing):
                await step.release(ctx)
        await self.finalizer.delete(ctx)

    async def _pause(self, ctx: Context, what: str) -> None:
        """managementPolicy Paused: condition Paused, Ready's status kept with reason Paused; no step runs."""
        message = f"managementPolicy Paused: {what}"
        current = next((c for c in ctx.status.conditions if c.type == READY), None)
        self._set_condition(ctx, PAUSED, "True", "ManagementPaused", message)
        self._set_ready(ctx, current.status if current else "Unknown", "Paused", message)
        await self._write(ctx)

    async def _observe(self, ctx: Context) -> None:
        """managementPolicy Observe: the live accounts into status; Ready says Observed or Diverged."""
        _clear_policy_status(ctx)
        if self.policy is not None:
            self.policy.check_user(ctx)
        if await self.observer.observe(ctx):
            message = f"{ready_message(ctx)} (observed: the operator changes nothing)"
            self._set_ready(ctx, "True", "Observed", message)
        else:
            self._set_ready(ctx, "False", "Diverged", summary(ctx, ctx.status.observed or []))
        await self._write(ctx)

    def _set_ready(self, ctx: Context, status: str, reason: str, message: str) -> None:
        was_ready = any(c.type == READY and c.status == "True" for c in ctx.status.conditions)
        self._set_condition(ctx, READY, status, reason, message)
        became_ready = status == "True" and not was_ready
        # One Event per pass is enough: "AccountCreated" already says the account is there.
        if became_ready and not ctx.events:
            ctx.event("Normal", reason, message)

    @staticmethod
    def _set_condition(ctx: Context, type_: str, status: str, reason: str, message: str) -> None:
        generation = ctx.obj["metadata"].get("generation")
        conditions = [
            condition.model_dump(by_alias=True, exclude_none=True, mode="json")
            for condition in ctx.status.conditions
        ]
        set_condition(conditions, type_, status, reason, message, generation)
        ctx.status.conditions = [Condition.model_validate(condition) for condition in conditions]
        ctx.status.observed_generation = generation

    async def _report(self, ctx: Context, error: ConditionError) -> None:
        self._set_ready(ctx, "False", error.reason, error.message)
        ctx.event("Warning", error.reason, error.message)
        await self._write(ctx)

    async def _write(self, ctx: Context) -> None:
        updated = await update_status(
            self.kube,
            DATABASE_USERS,
            ctx.obj,
            ctx.status.to_api(ctx.obj.get("status")),
            field_manager=FIELD_MANAGER,
        )
        if updated is not None:
            ctx.obj = updated
        self._record_events(ctx)

    def _record_events(self, ctx: Context) -> None:
        """Emit the pass's Events in the background: its Normal ones as one, each Warning on its own."""
        involved = _involved(ctx.obj)
        normal = [(reason, message) for type_, reason, message in ctx.events if type_ == "Normal"]
        if normal:
            self.recorder.emit(involved, "Normal", normal[0][0], "; ".join(message for _, message in normal))
        for type_, reason, message in ctx.events:
            if type_ == "Warning":
                self.recorder.emit(involved, type_, reason, message)
        ctx.events.clear()


def _clear_policy_status(ctx: Context) -> None:
    """Out of Paused (its condition goes) and, unless observing, out of Observe (status.observed goes)."""
    ctx.status.conditions = [c for c in ctx.status.conditions if c.type != PAUSED]
    if ctx.user.spec.management_policy != "Observe":
        ctx.status.observed = None


def _recorded_account(status: DatabaseUserStatus) -> str | None:
    """The account status says this resource manages, quoted as MySQL prints it; None before the first."""
    return f"'{status.user}'@'{status.host}'" if status.user and status.host else None


def _status_of(obj: dict[str, Any]) -> DatabaseUserStatus:
    """``obj``'s status as the model; empty if there is none, or if it is not one the model reads."""
    try:
        return DatabaseUserStatus.model_validate(obj.get("status") or {})
    except pydantic.ValidationError:
        return DatabaseUserStatus()


def _involved(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as an Event's involved object (list and watch items lack apiVersion and kind)."""
    return {**obj, "apiVersion": API_VERSION, "kind": "DatabaseUser"}


def _unparsed() -> DatabaseUser:
    """A stand-in for an object the models reject: only its status is written, no step runs."""
    selector = SecretKeySelector.model_construct(name="", key="")
    return DatabaseUser.model_construct(spec=DatabaseUserSpec.model_construct(password=selector))


def _first_error(error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    return f"{location}: {first['msg']}"
