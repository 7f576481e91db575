"""The ownership lifecycle every kind shares: who owns a name, claim, adopt, the owner still alive, forget.

A kind's resource owns the name it manages in MySQL through a row of the ledger
(:mod:`dbuser_operator.mysql.bookkeeping.ownership`): the row is claimed before the name is created, so the
operator never leaves a name nobody owns. A name that exists without a row is not taken over unless the
resource carries the adopt annotation and the kind's adoption check (handed in: a server's policy, for
instance) allows it; a name whose recorded owner is gone (its UID no longer answers) is taken over the same
way. A name owned by another resource is refused (``<Noun>Claimed``), one that exists unowned without the
annotation too (``<Noun>Exists``). Whether an owner still exists is asked of the API server, not of the
cache: the cache holds only this instance's scope, and an owner under another target label or in an unwatched
namespace is alive all the same.

:class:`Owning` is the frame (:mod:`.reconcile`) with this lifecycle and the management and deletion
policies decided once for every kind that owns a name: managementPolicy Paused pauses (deletion included,
until the release annotation), Observe runs the kind's ``observe``, Manage its ``converge``; deletion under
Retain, Observe or the release annotation lets go (the resource's rows forgotten if MySQL answers within
:data:`~.reconcile.FORGET_TIMEOUT`), under Delete runs the kind's ``drop`` on a name this resource owns and
that is not reserved; then the finalizer comes off. A kind supplies its model, ``converge``, ``observe``,
``drop`` and its adoption check: nothing of ownership.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal, Protocol, TypeVar, cast, get_args

import structlog

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, RELEASE_ANNOTATION
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.reconcile import FORGET_TIMEOUT, READY, Pass, Reconciler, S, status_of
from dbuser_operator.controllers.kit.reserved import Refusal
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import Forbidden, NotFound
from dbuser_operator.runtime.resources import Resource

log = structlog.get_logger(__name__)

Check = Callable[[], Awaitable[None]]  # raises ConditionError to refuse
PAUSED = "Paused"
OBSERVE_NOT_ALLOWED: Final = "ObserveNotAllowed"
EXISTS: Final[dict[NameClass, str]] = {
    "account": "AccountExists",
    "role": "RoleExists",
    "database": "DatabaseExists",
}
CLAIMED: Final[dict[NameClass, str]] = {
    "account": "AccountClaimed",
    "role": "RoleClaimed",
    "database": "DatabaseClaimed",
}
KEPT: Final[dict[NameClass, str]] = {"role": "RoleKept", "database": "DatabaseKept"}  # accounts: steps


def kept_message(shown: str, reserved: Refusal) -> str:
    """The Warning of a name deletion kept because it is reserved (``<Noun>Kept``)."""
    return f"{shown} was not dropped, only forgotten: {reserved.message}"


def owner_of(obj: dict[str, Any]) -> ownership.Owner:
    """The resource ``obj`` as the owner of what it manages."""
    meta = obj["metadata"]
    return ownership.Owner(
        uid=meta.get("uid") or "", namespace=meta.get("namespace") or "", name=meta.get("name") or ""
    )


def annotated(obj: dict[str, Any], annotation: str) -> bool:
    """Whether ``obj`` carries ``annotation`` set to ``"true"`` (adopt, release)."""
    return bool((obj["metadata"].get("annotations") or {}).get(annotation) == "true")


class Owners(Protocol):
    """Whether the resource recorded as an owner still exists."""

    async def exists(self, owner: ownership.Owner) -> bool:
        """False only when it is certainly gone."""


class LiveOwners:
    """Asks the API server: only a 404, or an object of that name with another UID, means gone."""

    def __init__(self, kube: KubeClient, resource: Resource) -> None:
        self.kube = kube
        self.resource = resource

    async def exists(self, owner: ownership.Owner) -> bool:
        try:
            obj = await self.kube.get(self.resource, owner.name, owner.namespace)
        except NotFound:
            return False
        except Forbidden:  # a namespace this instance may not read: it cannot tell
            return True
        return bool(obj["metadata"].get("uid") == owner.uid)


@dataclass(frozen=True)
class Words:
    """How a kind's refusals name things: ``what`` it manages picks its reasons (:data:`EXISTS`,
    :data:`CLAIMED`), ``kind`` names the owner (``managed by Database ns/name``), ``shown`` the name
    (``database app``); ``hint`` adds to a refusal naming a deleted owner how to take over."""

    what: NameClass
    kind: str
    shown: str
    hint: bool = False


def not_ours(words: Words, *, retry: bool = False) -> ConditionError:
    """``<Noun>Exists``: the refusal to manage a name the operator did not create."""
    return ConditionError(
        EXISTS[words.what],
        f"{words.shown} already exists and the operator did not create it; to manage it anyway, annotate "
        f"this {words.kind} with {ADOPT_ANNOTATION}=true",
        retry=retry,
    )


@dataclass(frozen=True)
class Taken:
    """The outcome of :func:`take`: the owner now, whether this call wrote the row, and how it came to the
    claimant: ``existing`` (adopted a name nobody owned), ``departed`` (its owner is gone), None (new)."""

    owner: ownership.Owner
    inserted: bool
    via: Literal["existing", "departed"] | None = None


async def take(
    db: Database,
    schema: str,
    entry: ownership.Entry,
    me: ownership.Owner,
    words: Words,
    *,
    found: ownership.Owner | None,
    exists: Callable[[], Awaitable[bool]],
    adopting: bool,
    owners: Owners,
    adoption: Check,
    unowned: Callable[[bool], Awaitable[None]] | None = None,
) -> Taken:
    """Make ``entry`` ``me``'s, or refuse: ``found`` is its recorded owner, ``exists`` whether the name
    is there (asked only when nobody owns it). Nobody's: a name that exists is taken only when
    ``adopting``, after ``unowned`` (the kind's checks of a free name, told whether it exists) and
    ``adoption``; a departed owner's: only when ``adopting``, after ``adoption``. Raises
    ``<Noun>Claimed`` when another owns it."""
    if found is None:
        there = await exists()
        if there and not adopting:
            raise not_ours(words)
        if unowned is not None:
            await unowned(there)
        if there:
            await adoption()
        claim = await ownership.claim(db, schema, entry, me)
        taken = Taken(claim.owner, claim.inserted, "existing" if there else None)
    elif found.uid != me.uid and adopting and not await owners.exists(found):
        await adoption()
        await ownership.forget(db, schema, entry, found.uid)
        claim = await ownership.claim(db, schema, entry, me)
        taken = Taken(claim.owner, claim.inserted, "departed")
    else:
        taken = Taken(found, inserted=False)
    if taken.owner.uid != me.uid:
        current = taken.owner
        hint = ""
        if words.hint and not await owners.exists(current):
            hint = f" (deleted: annotate with {ADOPT_ANNOTATION}=true to take over)"
        message = f"{words.shown} is managed by {words.kind} {current.namespace}/{current.name}{hint}"
        raise ConditionError(CLAIMED[words.what], message, retry=False)
    return taken


async def decide_drop(
    db: Database, schema: str, entry: ownership.Entry, me: ownership.Owner, reserved: Refusal | None
) -> Literal["foreign", "drop"] | Refusal:
    """Deletion's decision over one name, for every kind and every host of an account: ``foreign`` when
    this resource does not own it (never dropped); the registry's refusal (``reserved``) when it does but
    the name is reserved since: its row is forgotten here, the name kept (never dropped); else ``drop``
    (the caller drops it, then forgets the row)."""
    current = await ownership.owner_of(db, schema, entry)
    if current is None or current.uid != me.uid:
        return "foreign"
    if reserved is not None:
        await ownership.forget(db, schema, entry, me.uid)
        return reserved
    return "drop"


@dataclass(kw_only=True)
class OwningPass(Pass[S]):
    """A pass of a kind that owns a name: the server resource and handle the frame bound it to."""

    name: str = ""  # the name it manages in MySQL: the model's mysql_name(), set when the frame parses it
    server_resource: Any = None  # the server resource (None: the settings' server)
    server: Any = field(default=None, repr=False)  # the server handle: db, schema, ensure_book()


P = TypeVar("P", bound=OwningPass[Any])


class Owning(Reconciler[P]):
    """The frame for a kind that owns a name in MySQL: the management and deletion policies, claim, adopt,
    let go and drop, once for every such kind."""

    paused: ClassVar[str] = "the operator changes nothing in MySQL"  # what managementPolicy Paused means
    model: ClassVar[type[Any]]  # the kind's model (``Database``): the frame's parse reads a resource as one
    kept_hint: ClassVar[str] = ""  # what the Warning of a deletion that let go of an unparsable spec adds

    @property
    def left_behind(self) -> str:
        """What deletion leaves in MySQL when it lets go: ``the database``."""
        return f"the {self.manages}"

    @property
    def owners(self) -> Owners:
        """Whether a recorded owner still exists (asked of the API server)."""
        return LiveOwners(self.kube, self.resource)

    # --- what a kind supplies -------------------------------------------------------------------------------

    def new_pass(self, obj: dict[str, Any], model: Any, status: Any) -> P:
        """The kind's pass of ``obj``, with ``obj`` read as its model and its status."""
        raise NotImplementedError

    @property
    def status_model(self) -> type[Any]:
        """The model's status (``DatabaseStatus``), as its ``status`` field declares it."""
        declared = self.model.model_fields["status"].annotation
        return cast("type[Any]", next(arg for arg in get_args(declared) if arg is not type(None)))

    def unparsed_model(self) -> Any:
        """A stand-in model for an object the models reject (only its status is written): an empty spec."""
        spec = cast("type[Any]", self.model.model_fields["spec"].annotation)
        return self.model.model_construct(spec=spec.model_construct())

    def policies(self, ctx: P) -> tuple[str, str]:
        """The resource's managementPolicy (Manage, Observe, Paused) and deletionPolicy (Retain, Delete)."""
        raise NotImplementedError

    async def converge(self, ctx: P) -> Result:
        """managementPolicy Manage: the name claimed (:meth:`claim`) and in line with the spec; Ready and
        the status written."""
        raise NotImplementedError

    async def observe(self, ctx: P) -> Result:
        """managementPolicy Observe: the name as it is into status; nothing written to MySQL."""
        raise NotImplementedError

    async def drop(self, ctx: P) -> None:
        """deletionPolicy Delete, on a name this resource owns and that is not reserved: drop it (its Event
        too); the frame forgets the row after."""
        raise NotImplementedError

    async def release(self, ctx: P) -> None:
        """Letting go, once the server answered: what the kind undoes in MySQL before its rows are
        forgotten (nothing by default)."""

    def not_owned(self, ctx: P) -> None:
        """deletionPolicy Delete on a name this resource does not own: an Event, if the kind says so."""

    def left(self, ctx: P, released: bool, forgotten: bool | None) -> None:
        """The Event of letting go (``forgotten``: whether the resource's rows were; None: MySQL did not
        answer)."""
        what = f"{self.shown(ctx)} was left in MySQL" + (
            "" if forgotten else " (this resource did not own it)"
        )
        if released:
            ctx.event("Warning", "Released", f"released by the {RELEASE_ANNOTATION} annotation: {what}")
        else:
            why = (
                "managementPolicy Observe" if self.policies(ctx)[0] == "Observe" else "deletionPolicy Retain"
            )
            ctx.event("Normal", "Retained", f"{why}: {what}")

    def mysql_name(self, ctx: P) -> str:
        return ctx.name

    def observed_entries(self, ctx: P) -> list[ownership.Entry]:
        """The ledger's rows of what managementPolicy Observe reads (the resource's own, by default)."""
        return [self.entry(ctx)]

    def parse(self, obj: dict[str, Any], *, read_only: bool = False) -> P:
        model = self.model.model_validate(obj)
        if model.status is None:
            status = self.status_model()
        else:  # a pass changes its status and compares it with the model's at the end
            status = model.status if read_only else model.status.model_copy(deep=True)
        ctx = self.new_pass(obj, model, status)
        ctx.name = model.mysql_name()
        return ctx

    def unparsed(self, obj: dict[str, Any]) -> P:
        return self.new_pass(obj, self.unparsed_model(), status_of(self.status_model, obj))

    def invalid_deletion_message(self, obj: dict[str, Any], problem: str) -> str:
        return (
            f"deleted with a spec that does not parse ({problem}): this instance let go without dropping "
            f"anything; {self.left_behind} stays in MySQL, still recorded as owned{self.kept_hint}"
        )

    def left_target_message(self, obj: dict[str, Any]) -> str:
        stays = f"{self.left_behind} stays in MySQL"
        return f"no longer labelled {self.scope.selector}: this instance let go; {stays}"

    # --- the lifecycle --------------------------------------------------------------------------------------

    def words(self, ctx: P) -> Words:
        """How refusals name the kind and its name."""
        return Words(self.manages, self.resource.kind, self.shown(ctx))

    def entry(self, ctx: P) -> ownership.Entry:
        """The resource's row in the ledger."""
        return ownership.entry_of(self.manages, self.mysql_name(ctx))

    async def ensure(self, ctx: P) -> Result:
        """managementPolicy Paused: pause; Observe: the kind's observe; Manage: its converge."""
        management = self.policies(ctx)[0]
        if management == "Paused":
            await self.pause(ctx, self.paused)
            return Result()
        if management == "Observe":
            return await self.observe(ctx)
        return await self.converge(ctx)

    async def within_observe_bounds(self, ctx: P) -> set[ownership.Entry]:
        """managementPolicy Observe reads only what its namespace may: a name that a resource of another
        namespace owns is refused (``ObserveNotAllowed``) before anything of it is read; ``ctx.server``
        bound, the kind's policy checked. Every kind's ``observe`` asks this first. The entries of
        :meth:`observed_entries` owned (in this namespace, then)."""
        handle, namespace = ctx.server, ctx.obj["metadata"].get("namespace") or ""
        try:
            owners = await ownership.recorded_owners(handle.db, handle.schema, self.observed_entries(ctx))
        except MySQLError as error:
            raise mysql_condition(error, self.shown(ctx)) from None
        if any(owner.namespace != namespace for owner in owners.values()):
            raise ConditionError(
                OBSERVE_NOT_ALLOWED,
                f"{self.shown(ctx)} is managed by a resource of another namespace: not observed",
                retry=False,
            )
        return set(owners)

    async def claim(
        self,
        ctx: P,
        *,
        exists: Callable[[], Awaitable[bool]],
        adoption: Check,
        unowned: Callable[[bool], Awaitable[None]] | None = None,
    ) -> Taken:
        """Make the name this resource's, or refuse (:func:`take`); ``ctx.server`` bound."""
        handle, entry = ctx.server, self.entry(ctx)
        await handle.ensure_book(entry.book)
        return await take(
            handle.db,
            handle.schema,
            entry,
            owner_of(ctx.obj),
            self.words(ctx),
            found=await ownership.owner_of(handle.db, handle.schema, entry),
            exists=exists,
            adopting=annotated(ctx.obj, ADOPT_ANNOTATION),
            owners=self.owners,
            adoption=adoption,
            unowned=unowned,
        )

    async def forget(self, ctx: P) -> bool:
        """Forget the resource's rows of its name (every host's, for an account); whether there were any."""
        handle, book, uid = ctx.server, self.entry(ctx).book, owner_of(ctx.obj).uid
        if self.manages != "account":  # an account's table comes with the schema, which Observe never makes
            await handle.ensure_book(book)
        return await ownership.forget_owner(handle.db, handle.schema, book, self.mysql_name(ctx), uid) > 0

    async def pause(self, ctx: P, what: str) -> None:
        """managementPolicy Paused: condition Paused, Ready's status kept with reason Paused."""
        message = f"managementPolicy Paused: {what}"
        current = next((c for c in ctx.status.conditions if c.type == READY), None)
        self.set_condition(ctx, PAUSED, "True", "ManagementPaused", message)
        self.set_ready(ctx, current.status if current else "Unknown", "Paused", message)
        await self.write(ctx)

    @staticmethod
    def unpause(ctx: P) -> None:
        """Out of Paused: its condition goes."""
        ctx.status.conditions = [c for c in ctx.status.conditions if c.type != PAUSED]

    async def finalize(self, ctx: P) -> None:
        """Deletion: Paused waits (unless released); Retain, Observe or the release annotation let go;
        Delete drops; then the finalizer comes off."""
        management, deletion = self.policies(ctx)
        released = annotated(ctx.obj, RELEASE_ANNOTATION)
        if management == "Paused" and not released:
            await self.pause(
                ctx,
                "deletion waits: set managementPolicy Manage to apply the deletionPolicy, or annotate "
                f"{RELEASE_ANNOTATION}=true to let go and leave {self.left_behind} in MySQL",
            )
            return
        if released or management == "Observe" or deletion == "Retain":
            await self.let_go(ctx, released)
        else:
            ctx.server_resource, ctx.server = await self.bind(ctx, deleting=True)
            await self.delete(ctx)
        ctx.obj = await self.finalizer.remove(ctx.obj)

    async def let_go(self, ctx: P, released: bool) -> None:
        """Leave the name in MySQL; forget the resource's rows if the server answers in time. The kind's
        ``release`` runs only on a name that is not reserved: a reserved one is not changed at all."""
        forgotten: bool | None = None  # None: MySQL did not answer
        try:  # letting go needs no server; ownership is forgotten where there is one
            ctx.server_resource, ctx.server = await self.bind(ctx, deleting=True)
            async with asyncio.timeout(FORGET_TIMEOUT):
                if ctx.reserved is None:
                    await self.release(ctx)
                forgotten = await self.forget(ctx)
        except (MySQLError, TimeoutError, ConditionError) as error:
            log.warning(f"could not forget the {self.manages}'s ownership", error=str(error))
        self.left(ctx, released, forgotten)

    async def delete(self, ctx: P) -> None:
        """deletionPolicy Delete: the kind's drop if this resource owns the name and it is not reserved; a
        reserved one it owns is only forgotten (``<Noun>Kept``)."""
        handle, entry, me = ctx.server, self.entry(ctx), owner_of(ctx.obj)
        try:
            await handle.ensure_book(entry.book)
            decision = await decide_drop(handle.db, handle.schema, entry, me, ctx.reserved)
            if decision == "foreign":
                self.not_owned(ctx)
            elif isinstance(decision, Refusal):
                ctx.event("Warning", KEPT[self.manages], kept_message(self.shown(ctx), decision))
            else:
                await self.drop(ctx)
                await ownership.forget(handle.db, handle.schema, entry, me.uid)
        except MySQLError as error:
            raise mysql_condition(error, f"cannot drop {self.shown(ctx)}") from None
