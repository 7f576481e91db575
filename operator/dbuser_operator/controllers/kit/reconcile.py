"""The one reconcile frame every kind uses (mariadb-operator's ``pkg/controller/sql`` template).

A kind subclasses :class:`Reconciler` and supplies its model (:meth:`Reconciler.parse`), which name it
manages in MySQL (``manages``, :meth:`Reconciler.mysql_name`), what a pass does (:meth:`Reconciler.ensure`)
and what deletion does (:meth:`Reconciler.finalize`); a kind that owns a name subclasses
:class:`~.ownership.Owning` instead, which supplies ``ensure`` and ``finalize`` from the ownership lifecycle
and the management and deletion policies. The frame does the rest, the same way for every kind:

- the object comes from the informer's cache (never a GET); one the cache dropped is let go of if it only
  left this instance's scope (its target label changed) and still carries the finalizer; a cached object
  older than the last pass's own writes is not acted on: the pass waits for the cache (:mod:`.freshness`);
- a spec the models reject is reported as ``Ready=False``, reason ``InvalidSpec``, and not retried; deleted,
  such a resource is let go of: this instance's finalizer comes off and nothing is undone, since what the
  spec named (server, account, deletion policy) is unknown — what it made stays, still recorded as its
  (see :meth:`Reconciler.invalid_deletion_message`);
- deletion runs only while this instance's finalizer holds the resource;
- a kind gets its server from the frame (:meth:`Reconciler.bind`), which asks the registry of reserved names
  (:mod:`.reserved`) first: a reserved name is refused before the kind's first statement (before its
  finalizer, claim or adoption); at deletion the answer is in ``Pass.reserved``, and the kind drops nothing;
- a :class:`~.errors.ConditionError` becomes ``Ready=False`` with its reason and message and a Warning
  Event, and is retried (rate-limited) unless it says it is permanent;
- conditions follow apimachinery (``lastTransitionTime`` moves only when the status does, with
  ``observedGeneration``), the status is written through ``/status`` only when it changed, with the
  resourceVersion it was computed from, and the pass's Events are emitted once it is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import pydantic
import structlog

from dbuser_operator.api.v1alpha1 import Condition
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.finalizer import Finalizer
from dbuser_operator.controllers.kit.freshness import STALE_RETRY, WrittenVersions
from dbuser_operator.controllers.kit.reserved import Refusal, ReservedNames, SystemNames
from dbuser_operator.controllers.kit.resources import FIELD_MANAGER
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.kit.steps import EventType
from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.runtime.cache import thaw
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import set_condition
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.objects import update_status
from dbuser_operator.runtime.resources import ObjectKey, Resource

log = structlog.get_logger(__name__)

READY = "Ready"
FORGET_TIMEOUT = 2.0  # seconds a Retain or release deletion waits for MySQL before letting go anyway


class Status(Protocol):
    """What the frame needs of a kind's status model."""

    conditions: list[Condition]
    observed_generation: int | None

    def to_api(self, current: dict[str, Any] | None) -> dict[str, Any]:
        """The status as the API takes it, given the one the object has."""


S = TypeVar("S", bound=Status)


@dataclass(kw_only=True)
class Pass(Generic[S]):
    """What one reconcile of any kind knows: the object, the status being built, the Events to emit."""

    obj: dict[str, Any]  # the live object as last returned by the API (replaced after writes)
    status: S  # the status being built (a copy: the cache is never modified)
    events: list[tuple[EventType, str, str]] = field(default_factory=list)
    requeue_after: float | None = None  # look again after this many seconds (the earliest asked for)
    replaced: list[str] = field(default_factory=list)  # the resourceVersions this pass's writes replaced
    reserved: Refusal | None = None  # at deletion: why the name is never dropped (the registry's), or None

    def __setattr__(self, name: str, value: Any) -> None:
        """Replacing ``obj`` (with what a write returned) records the resourceVersion it replaced."""
        if name == "obj" and "obj" in self.__dict__:
            before = (self.__dict__["obj"].get("metadata") or {}).get("resourceVersion")
            if before and before != (value.get("metadata") or {}).get("resourceVersion"):
                self.replaced.append(before)
        object.__setattr__(self, name, value)  # not super(): every field of every pass is set here

    def requeue(self, seconds: float) -> None:
        """Ask for another look after ``seconds`` (at least 0.1 s); the earliest request wins."""
        seconds = max(seconds, 0.1)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)

    def event(self, type_: EventType, reason: str, message: str) -> None:
        """Queue an Event, recorded once the status is written."""
        self.events.append((type_, reason, message))


P = TypeVar("P", bound=Pass[Any])


class ServerSource(Protocol):
    """Which server a resource names, and its handle (raises ConditionError naming the server)."""

    async def resolve(self, obj: dict[str, Any], *, deleting: bool = False) -> tuple[Any, Any]:
        """The server resource (None: the settings' server) and the server's handle."""


@dataclass(frozen=True)
class FrameParts:
    """What every kind's reconciler is built with, once for all of them (``Shared.frame``): the fenced
    client, the Event recorder, this instance's scope, the servers, the registry of reserved names (None:
    the servers' own only), and the seconds after which a Ready resource is looked at again."""

    kube: KubeClient
    recorder: EventRecorder
    scope: Scope
    servers: ServerSource | None = None
    reserved: ReservedNames | None = None
    resync_period: float = 0.0


class Reconciler(Generic[P]):
    """Runs one key of a kind: parse, ensure or finalize, then Ready, status and Events."""

    resource: ClassVar[Resource]
    manages: ClassVar[NameClass]  # what the kind's name in MySQL is: an account, a role, a database
    one_normal_event: ClassVar[bool] = False  # a pass's Normal Events as one (its first reason, all messages)

    def __init__(self, parts: FrameParts, informer: Informer) -> None:
        self.kube, self.recorder, self.informer = parts.kube, parts.recorder, informer
        self.scope, self.servers = parts.scope, parts.servers
        self.reserved: ReservedNames = parts.reserved or SystemNames()
        self.resync_period = parts.resync_period
        self.finalizer = Finalizer(parts.kube, parts.scope, self.resource)
        self.written = WrittenVersions()

    # --- what a kind supplies ---------------------------------------------------------------------------

    def parse(self, obj: dict[str, Any], *, read_only: bool = False) -> P:
        """The pass for ``obj``; raises ``pydantic.ValidationError`` for a spec the models reject.
        ``read_only``: a pass that only looks (its status is not a copy to change)."""
        raise NotImplementedError

    def unparsed(self, obj: dict[str, Any]) -> P:
        """A pass for an object the models reject: only its status is written."""
        raise NotImplementedError

    async def ensure(self, ctx: P) -> Result:
        """Bring the object's world in line with its spec; set Ready and write the status."""
        raise NotImplementedError

    async def finalize(self, ctx: P) -> None:
        """Deletion while the finalizer holds the resource: undo or let go, then remove the finalizer."""
        raise NotImplementedError

    def mysql_name(self, ctx: P) -> str:
        """The name the resource manages in MySQL (of the class ``manages`` says)."""
        raise NotImplementedError

    def shown(self, ctx: P) -> str:
        """The name as messages show it: ``'app'@'%'``, ``role r``, ``database d``."""
        return f"{self.manages} {self.mysql_name(ctx)}"

    def invalid_deletion_message(self, obj: dict[str, Any], problem: str) -> str:
        """The Warning of a resource deleted with a spec the models reject, let go of without undoing."""
        return (
            f"deleted with a spec that does not parse ({problem}): this instance let go without undoing "
            "anything; what the resource made is left as it is"
        )

    def left_target_message(self, obj: dict[str, Any]) -> str:
        """The Warning of a resource this instance let go of because it left the scope."""
        return f"no longer labelled {self.scope.selector}: this instance let go"

    # --- the frame ----------------------------------------------------------------------------------------

    async def bind(self, ctx: P, *, deleting: bool = False) -> tuple[Any, Any]:
        """The resource's server resource and server handle, once the registry has been asked about its name:
        a reserved name is refused (ConditionError, the registry's reason) before the kind gets the server;
        at deletion (``deleting``) the answer goes into ``ctx.reserved`` instead, for the kind to drop
        nothing."""
        if self.servers is None:
            raise ConditionError("ServerNotFound", "no servers are configured", retry=False)
        server_resource, server = await self.servers.resolve(ctx.obj, deleting=deleting)
        refusal = await self.reserved.reserved(server, self.manages, self.mysql_name(ctx))
        if deleting:
            ctx.reserved = refusal
        elif refusal is not None:
            raise ConditionError(refusal.reason, f"{self.shown(ctx)}: {refusal.message}", retry=refusal.retry)
        return server_resource, server

    async def __call__(self, key: ObjectKey) -> Result:
        cached = self.informer.get(key)
        if cached is None:
            self.written.forget(key)
            await self.let_go_if_departed(key)
            return Result()
        if self.written.stale(key, cached["metadata"].get("resourceVersion")):
            log.debug("the cache has not seen the last pass's writes yet; waiting for it")
            return Result(requeue_after=STALE_RETRY)
        obj = thaw(cached)
        try:
            ctx = self.parse(obj)
        except pydantic.ValidationError as error:
            # The CRD schema rejects what the models reject, so this is an old or foreign object.
            unparsed = self.unparsed(obj)
            try:
                if obj["metadata"].get("deletionTimestamp") and self.scope.holds(obj):
                    await self.let_go_unparsed(obj, first_error(error))
                else:
                    await self.report(
                        unparsed, ConditionError("InvalidSpec", first_error(error), retry=False)
                    )
            finally:
                self.written.record(key, unparsed.replaced)
            return Result()
        try:
            return await self._run(ctx)
        finally:
            self.written.record(key, ctx.replaced)

    async def _run(self, ctx: P) -> Result:
        """Ensure or finalize ``ctx``'s object; a ConditionError is reported (and raised if retried)."""
        obj = ctx.obj
        try:
            if obj["metadata"].get("deletionTimestamp"):
                if self.scope.holds(obj):
                    await self._finalize_or_let_go(ctx)
                    self.record_events(ctx)
            else:
                return await self.ensure(ctx)
        except ConditionError as error:
            await self.report(ctx, error)
            if error.retry:
                raise
            if error.requeue_after is not None:
                ctx.requeue(error.requeue_after)
        return Result(requeue_after=ctx.requeue_after or 0.0)

    async def _finalize_or_let_go(self, ctx: P) -> None:
        """Deletion: the kind's ``finalize``; when the resource's server resource is gone (deleted with the
        release annotation, say), there is nothing to act on: let go, drop nothing, and say so."""
        try:
            await self.finalize(ctx)
        except ConditionError as error:
            if error.reason != "ServerNotFound":
                raise
            await self.finalizer.remove(ctx.obj)
            meta = ctx.obj["metadata"]
            log.warning(
                "deleted while its server resource is gone; let go",
                kind=self.resource.kind,
                namespace=meta.get("namespace"),
                name=meta.get("name"),
            )
            message = f"{error.message}: let go without dropping anything; {self.shown(ctx)} is left as it is"
            self.recorder.emit(self.involved(ctx.obj), "Warning", "ServerGone", message)

    async def let_go_unparsed(self, obj: dict[str, Any], problem: str) -> None:
        """Deletion of a resource whose spec does not parse: the finalizer off, nothing undone, a Warning.

        Dropping anything would need the spec (which server, which account, whether ``deletionPolicy`` is
        Retain): guessing could drop what the user meant to keep, or what is not ours. The bookkeeping rows
        stay, so what the resource made remains recorded as owned by a resource that is gone (an orphan).
        """
        message = self.invalid_deletion_message(obj, problem)
        await self.finalizer.remove(obj)
        log.warning(
            "deleted with a spec that does not parse; let go",
            kind=self.resource.kind,
            namespace=obj["metadata"].get("namespace"),
            name=obj["metadata"].get("name"),
            problem=problem,
        )
        self.recorder.emit(self.involved(obj), "Warning", "InvalidSpec", message)

    async def let_go_if_departed(self, key: ObjectKey) -> None:
        """Release a resource the cache dropped because its target label changed, not because it is gone."""
        try:
            obj = await self.kube.get(self.resource, key.name, key.namespace)
        except NotFound:
            return  # deleted
        if self.scope.serves(obj) or not self.scope.holds(obj):
            return  # back in scope (the cache will catch up), or never ours
        message = self.left_target_message(obj)
        await self.finalizer.remove(obj)
        log.warning(
            "resource left the target; let go",
            kind=self.resource.kind,
            namespace=key.namespace,
            name=key.name,
        )
        self.recorder.emit(self.involved(obj), "Warning", "LeftTarget", message)

    def set_ready(self, ctx: P, status: str, reason: str, message: str) -> None:
        """Ready as given; becoming Ready is an Event unless the pass has one already."""
        was_ready = any(c.type == READY and c.status == "True" for c in ctx.status.conditions)
        self.set_condition(ctx, READY, status, reason, message)
        if status == "True" and not was_ready and not ctx.events:
            ctx.event("Normal", reason, message)

    @staticmethod
    def set_condition(ctx: Pass[Any], type_: str, status: str, reason: str, message: str) -> None:
        """One condition of the status being built, as ``meta.SetStatusCondition`` sets it."""
        generation = ctx.obj["metadata"].get("generation")
        conditions = [
            condition.model_dump(by_alias=True, exclude_none=True, mode="json")
            for condition in ctx.status.conditions
        ]
        set_condition(conditions, type_, status, reason, message, generation)
        ctx.status.conditions = [Condition.model_validate(condition) for condition in conditions]
        ctx.status.observed_generation = generation

    def in_progress(self, ctx: P, error: ConditionError) -> bool:
        """A kind's hook, before ``error`` is reported: record it as work in progress if it is, and say
        whether Ready stays as it is (the resource still serves). By default every error is Ready=False."""
        return False

    async def report(self, ctx: P, error: ConditionError) -> None:
        """Ready=False with the error's reason and message, a Warning Event, the status written (unless the
        kind says it is work in progress on a resource that serves meanwhile: then Ready stays)."""
        if not self.in_progress(ctx, error):
            self.set_ready(ctx, "False", error.reason, error.message)
            ctx.event("Warning", error.reason, error.message)
        await self.write(ctx)

    async def write(self, ctx: P) -> None:
        """The status, if it changed (with the resourceVersion it was computed from); then the Events."""
        updated = await update_status(
            self.kube,
            self.resource,
            ctx.obj,
            ctx.status.to_api(ctx.obj.get("status")),
            field_manager=FIELD_MANAGER,
        )
        if updated is not None:
            ctx.obj = updated
        self.record_events(ctx)

    def record_events(self, ctx: P) -> None:
        """Emit the pass's Events in the background (its Normal ones as one where the kind says so)."""
        involved = self.involved(ctx.obj)
        events = ctx.events
        if self.one_normal_event:
            normal = [(reason, message) for type_, reason, message in events if type_ == "Normal"]
            if normal:
                self.recorder.emit(
                    involved, "Normal", normal[0][0], "; ".join(message for _, message in normal)
                )
            events = [event for event in events if event[0] == "Warning"]
        for type_, reason, message in events:
            self.recorder.emit(involved, type_, reason, message)
        ctx.events.clear()

    def involved(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as an Event's involved object (list and watch items lack apiVersion and kind)."""
        return {**obj, "apiVersion": self.resource.api_version, "kind": self.resource.kind}


def status_of(model: type[S], obj: dict[str, Any]) -> S:
    """``obj``'s status as ``model``; empty if there is none, or if it is not one the model reads."""
    try:
        return model.model_validate(obj.get("status") or {})  # type: ignore[attr-defined,no-any-return]
    except pydantic.ValidationError:
        return model()


def first_error(error: pydantic.ValidationError) -> str:
    """The first problem of a spec the models reject: ``where: what``."""
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    return f"{location}: {first['msg']}"
