"""The ``DatabaseUser`` reconciler: runs the steps, reports the outcome as the Ready condition and Events.

Deletion runs the steps' delete halves in reverse, then the finalizer comes off. Under
``deletionPolicy: Retain``, or with the release annotation, MySQL is left alone (ownership is forgotten
if the server answers quickly) and the resource is released at once, even while MySQL is down. These
policies are the frame's (:class:`~dbuser_operator.controllers.kit.ownership.Owning`); this kind supplies the
steps (the ownership step claims each host's account), observe, and its Events of letting go.

``spec.managementPolicy`` Observe reads the accounts into status and writes nothing to MySQL (deletion
lets go, as under Retain), unless the server's policy refuses the resource (it would read a server, or
accounts, the namespace may not use: the violation is reported instead); Paused does nothing at all,
deletion included, until the policy changes or the release annotation lets go.

A resource that leaves the instance's scope (its target label changed or removed) while it carries the
instance's finalizer is let go of: the finalizer comes off, the account stays in MySQL and stays recorded
as owned, so the drift check reports it as an orphan, and restoring the label resumes managing it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from dbuser_operator import __version__
from dbuser_operator.api.v1alpha1 import (
    RELEASE_ANNOTATION,
    DatabaseUser,
    DatabaseUserSpec,
    DatabaseUserStatus,
    SecretKeySelector,
)
from dbuser_operator.controllers.databaseuser import database_refs, progress
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.observe import Observer, summary
from dbuser_operator.controllers.databaseuser.steps.account_metadata import release as release_metadata
from dbuser_operator.controllers.databaseuser.steps.hosts import accounts_of, ready_message
from dbuser_operator.controllers.databaseuser.steps.lock_policy import ready_outcome
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.ownership import PAUSED, Owning
from dbuser_operator.controllers.kit.reconcile import FrameParts, status_of
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.controllers.kit.steps import Releasing, Step, check_order
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey, Resource


class DatabaseUserReconciler(Owning[Context]):
    """Runs the steps for one ``DatabaseUser`` key, in the frame every kind shares."""

    resource: ClassVar[Resource] = DATABASE_USERS
    manages: ClassVar[NameClass] = "account"
    paused: ClassVar[str] = "the operator changes nothing in MySQL, drift included"
    left_behind = "the accounts"  # what deletion leaves in MySQL when it lets go
    one_normal_event: ClassVar[bool] = True  # "AccountCreated" already says the account is there

    model = DatabaseUser

    def __init__(
        self,
        parts: FrameParts,
        users: Informer,
        steps: list[Step],
        *,
        observer: Observer | None = None,
        observe_period: float = 0.0,
        policy: PolicyGate | None = None,
        databases: Informer | None = None,
    ) -> None:
        super().__init__(parts, users)
        self.users = users
        self.steps = check_order(steps)
        self.observer = observer or Observer()
        self.observe_period = observe_period  # seconds between two looks at an observed account (0: none)
        self.policy = policy  # checked before observing (the Manage path has it among the steps)
        self.databases = databases  # the Databases the grants' databaseRefs name (None: refs refused)
        # Whether a key's turn may be skipped: its first, and found converged (setup: start_check.py).
        self.converged: Callable[[ObjectKey], Awaitable[bool]] | None = None

    async def __call__(self, key: ObjectKey) -> Result:
        if self.converged is not None and await self.converged(key):
            return Result()  # looked at: converged (the first pass of a new leader)
        return await super().__call__(key)

    def new_pass(self, obj: dict[str, Any], model: DatabaseUser, status: DatabaseUserStatus) -> Context:
        return Context(obj=obj, user=model, status=status)

    def unparsed_model(self) -> DatabaseUser:
        """A stand-in for an object the models reject: only its status is written, no step runs."""
        selector = SecretKeySelector.model_construct(name="", key="")
        return DatabaseUser.model_construct(spec=DatabaseUserSpec.model_construct(password=selector))

    def shown(self, ctx: Context) -> str:
        return ctx.account

    def observed_entries(self, ctx: Context) -> list[ownership.Entry]:
        """Each host's account, and the user name as a role (on MySQL a role is an account too)."""
        user = ctx.user.mysql_name()
        return [
            *(ownership.account(user, host) for host in ctx.user.spec.account_hosts()),
            ownership.role(user),
        ]

    def policies(self, ctx: Context) -> tuple[str, str]:
        return ctx.user.spec.management_policy, ctx.user.spec.deletion_policy

    def invalid_deletion_message(self, obj: dict[str, Any], problem: str) -> str:
        account = _recorded_account(status_of(DatabaseUserStatus, obj)) or "no account"
        return (
            f"deleted with a spec that does not parse ({problem}): this instance let go without dropping "
            f"anything; {account} was left in MySQL, still recorded as owned (reported as an orphan by the "
            "drift check): drop it by hand if it is not wanted"
        )

    def left_target_message(self, obj: dict[str, Any]) -> str:
        account = _recorded_account(status_of(DatabaseUserStatus, obj)) or "no account"
        return (
            f"no longer labelled {self.scope.selector}: this instance let go; {account} was left in MySQL, "
            "still recorded as owned (reported as an orphan), until it is dropped or the label is restored"
        )

    async def observe(self, ctx: Context) -> Result:
        """The live accounts into status; Ready says Observed or Diverged."""
        ctx.server_resource, ctx.server = await self.bind(ctx)
        self.resolve_refs(ctx)
        _clear_policy_status(ctx)
        if self.policy is not None:
            self.policy.check_user(ctx.server_resource, ctx.user)
        ctx.status.observed = None  # nothing of an account stays in status once it is refused
        owned = await self.within_observe_bounds(ctx)
        progress.record(ctx)
        if await self.observer.observe(ctx, owned):
            message = f"{ready_message(ctx)} (observed: the operator changes nothing)"
            self.set_ready(ctx, "True", "Observed", message)
        else:
            self.set_ready(ctx, "False", "Diverged", summary(ctx, ctx.status.observed or []))
        await self.write(ctx)
        return Result(requeue_after=self.observe_period)

    async def converge(self, ctx: Context) -> Result:
        """The steps in order (the ownership step claims each account)."""
        ctx.status.user = ctx.user.mysql_name()  # the USER column, refused resources included
        ctx.server_resource, ctx.server = await self.bind(ctx)
        self.resolve_refs(ctx)
        _clear_policy_status(ctx)
        for step in self.steps:
            await step.ensure(ctx)
        progress.record(ctx)
        ctx.status.operator_version = __version__  # a new leader of this version may trust this pass
        self.set_ready(ctx, "True", *ready_outcome(ctx, ready_message(ctx)))
        await self.write(ctx)
        return Result(requeue_after=ctx.requeue_after or 0.0)

    def in_progress(self, ctx: Context, error: ConditionError) -> bool:
        return progress.record(ctx, error)  # Progressing; pending work keeps a serving account Ready

    def resolve_refs(self, ctx: Context) -> None:
        """The grants' databaseRefs resolved into their Databases' names, before any step reads them."""
        if self.databases is not None:
            ctx.user = database_refs.resolve(self.databases, ctx.user, ctx.obj)
        elif database_refs.has_refs(ctx.user):
            raise ConditionError(
                "DatabaseNotFound", "no Database informer: databaseRef unsupported", retry=False
            )

    async def delete(self, ctx: Context) -> None:
        """deletionPolicy Delete: the steps' delete halves in reverse (each host's account its own)."""
        for step in reversed(self.steps):
            await step.delete(ctx)

    async def release(self, ctx: Context) -> None:
        await release_metadata(ctx)  # a released account names no owner (Manage only)

    def left(self, ctx: Context, released: bool, forgotten: bool | None) -> None:
        """The accounts are the bookkeeping table's (every host this resource owns), not status's: status
        may never have been written."""
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

    async def let_go(self, ctx: Context, released: bool) -> None:
        await super().let_go(ctx, released)
        for step in self.steps:  # the Secrets it made stay with the account
            if isinstance(step, Releasing):
                await step.release(ctx)


def _clear_policy_status(ctx: Context) -> None:
    """Out of Paused (its condition goes) and, unless observing, out of Observe (status.observed goes)."""
    ctx.status.conditions = [c for c in ctx.status.conditions if c.type != PAUSED]
    if ctx.user.spec.management_policy != "Observe":
        ctx.status.observed = None


def _recorded_account(status: DatabaseUserStatus) -> str | None:
    """The account status says this resource manages, quoted as MySQL prints it; None before the first."""
    return f"'{status.user}'@'{status.host}'" if status.user and status.host else None
