"""Several hosts: the account steps run once per host of the user, each with a context of its own.

``spec.host`` and ``spec.hosts`` name accounts ``'user'@'host'`` of one user. :class:`HostsStep` wraps the
steps that act on one account (ownership, account, limits, grants) and runs them for each host with a
per-host :class:`~.steps.Context` (:func:`for_host`: ``ctx.host`` set, the per-account facts fresh; the
password, status and events shared). A refusal of one account (``AccountClaimed``, ``AccountExists``) does
not stop the others: Ready then names each refused account. Any other failure stops the pass.

The bookkeeping table, not status, says which accounts the resource owns (a claim happens before the
first status write): a host removed from the spec whose account the resource still owns is dropped
(deletionPolicy Delete) or released (Retain: ownership forgotten, the account left) on the next pass, and
deletion handles every owned host, a removed one whose drop failed earlier included. ``status.hosts``
shows them. While ``metadata.generation`` is 1 the spec never changed, so no host can have left it: the
owned hosts are the spec's that were not refused, and the table is not read. Once the account of a
removed host is gone or released, ``on_release`` is told, so that the resources refused for it
(``AccountClaimed``) are looked at again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.account_metadata import release as release_metadata
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.ownership import owner_of
from dbuser_operator.controllers.kit.steps import Step
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import MySQLError

PER_ACCOUNT_REFUSALS = frozenset({"AccountClaimed", "AccountExists"})
"""Reasons that concern one account only: the other hosts go on."""


_PER_ACCOUNT: Final[dict[str, object]] = {
    "account_exists": None,
    "password_intact": None,
    "auth_fingerprint": None,
    "password_state": None,
    "dual_auth": None,
    "options": None,
    "password_held": None,
    "fingerprint_in_row": True,
    "own_reuse_policy": True,
    "unsettled": False,
    "fingerprint_set": False,
    "claimed": False,
    "created": False,
    "adopted": False,
    "reduced": False,
    "account_metadata": None,
    "lock_policy": None,
    "default_lifetime": None,
}
"""What one account's steps learn, as a fresh per-host context starts it (the fields' defaults)."""


def for_host(ctx: Context, host: str) -> Context:
    """A context for the account on ``host``: what one account's steps learn starts afresh; the password,
    status and events are the resource's (shared with ``ctx``).

    A shallow copy with those fields reset, as ``dataclasses.replace`` would make it, without running the
    constructor's field-by-field assignments again (once per host of every pass)."""
    per_host = object.__new__(type(ctx))
    per_host.__dict__.update(ctx.__dict__, **_PER_ACCOUNT, host=host)
    return per_host


def merge_back(ctx: Context, per_host: Context) -> None:
    """What a host's steps learned of the resource goes back to its context: the password and its Secret
    (a rotation replaces them) and the earliest requeue asked for."""
    ctx.password, ctx.secret = per_host.password, per_host.secret
    ctx.password_secret = per_host.password_secret
    if per_host.requeue_after is not None:
        ctx.requeue(per_host.requeue_after)


def accounts_of(ctx: Context) -> str:
    """``'user'@'a'`` or ``'user'@'a', 'user'@'b'``: the spec's accounts, for messages."""
    user = ctx.user.mysql_name()
    return ", ".join(f"'{user}'@'{host}'" for host in ctx.user.spec.account_hosts())


def ready_message(ctx: Context) -> str:
    """Ready's message once every account is in line with the spec."""
    if len(ctx.user.spec.account_hosts()) > 1:
        return f"accounts {accounts_of(ctx)} match the spec"
    return f"account {accounts_of(ctx)} matches the spec"


def combined(errors: Sequence[ConditionError]) -> ConditionError:
    """One report for the failures of several accounts: the first one's reason, every message."""
    if len(errors) == 1:
        return errors[0]
    later = [error.requeue_after for error in errors if error.requeue_after is not None]
    return ConditionError(
        errors[0].reason,
        "; ".join(error.message for error in errors),
        retry=any(error.retry for error in errors),
        requeue_after=min(later) if later else None,
    )


class HostsStep:
    """Runs the account steps for each host; drops or releases the accounts of removed hosts."""

    name = "hosts"

    def __init__(
        self,
        steps: Sequence[Step],
        on_release: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self.steps = list(steps)
        self.on_release = on_release  # (server key, user, host) of an account it no longer holds

    async def ensure(self, ctx: Context) -> None:
        errors: list[ConditionError] = []
        # status.appliedSecret is the resource's, the password each account's: every host starts from the
        # version applied last pass if it was held then, else from none (new, refused before, adopted); the
        # new version is recorded only if no held host failed, so that a later pass reaches them all.
        before = after = ctx.status.applied_secret
        held = {host.lower() for host in (ctx.status.hosts if ctx.status.hosts is not None else [ctx.host])}
        failed_held = False
        refused: set[str] = set()
        for host in ctx.user.spec.account_hosts():
            per_host = for_host(ctx, host)
            ctx.status.applied_secret = before if host.lower() in held else None
            try:
                try:
                    for step in self.steps:
                        await step.ensure(per_host)
                finally:
                    merge_back(ctx, per_host)
            except ConditionError as error:
                errors.append(error)
                refused.add(host.lower())
                failed_held = failed_held or host.lower() in held
                if error.reason not in PER_ACCOUNT_REFUSALS:
                    ctx.status.applied_secret = before
                    raise combined(errors) from None
            else:
                after = ctx.status.applied_secret
        ctx.status.applied_secret = before if failed_held else after
        if ctx.user.metadata.generation == 1:  # the spec never changed: no host ever left it
            owned = (h for h in ctx.user.spec.account_hosts() if h.lower() not in refused)
            ctx.status.hosts = sorted(owned, key=str.lower)  # in the table's order
        else:
            ctx.status.hosts = await self._remove_left(ctx, errors)
        if errors:
            raise combined(errors)

    async def _remove_left(self, ctx: Context, errors: list[ConditionError]) -> list[str]:
        """Drop or release the owned accounts of hosts no longer in the spec; the hosts still owned."""
        wanted = {host.lower() for host in ctx.user.spec.account_hosts()}
        kept: list[str] = []
        for host in await self._owned(ctx):
            if host.lower() not in wanted:
                try:
                    await self._remove(for_host(ctx, host))
                except ConditionError as error:
                    errors.append(error)
                else:
                    if self.on_release is not None:
                        self.on_release(ctx.server.key, ctx.user.mysql_name(), host)
                    continue
            kept.append(host)
        return kept

    async def delete(self, ctx: Context) -> None:
        """Every account of the spec and every one the resource still owns, each with its own context."""
        hosts = ctx.user.spec.account_hosts()
        for host in hosts:
            await self._delete(for_host(ctx, host))
        known = {host.lower() for host in hosts}
        for host in await self._owned(ctx):
            if host.lower() not in known:
                await self._delete(for_host(ctx, host))

    async def _delete(self, ctx: Context) -> None:
        for step in reversed(self.steps):
            await step.delete(ctx)

    async def _owned(self, ctx: Context) -> list[str]:
        """The hosts of the user's accounts that this resource owns (the bookkeeping table's word)."""
        user = ctx.user.mysql_name()
        try:
            await ctx.server.ensure_schema()
            return await ownership.owned_hosts(ctx.server.db, ctx.server.schema, user, owner_of(ctx.obj).uid)
        except MySQLError as error:
            raise mysql_condition(error, f"cannot list the accounts of '{user}'") from None

    async def _remove(self, ctx: Context) -> None:
        """The account of a host no longer in the spec: dropped (Delete) or released (Retain)."""
        if ctx.user.spec.deletion_policy == "Delete":
            await self._delete(ctx)
            return
        try:
            await release_metadata(ctx, host=ctx.host)  # no owner entry on an account nobody manages
            await ownership.forget(
                ctx.server.db,
                ctx.server.schema,
                ownership.account(ctx.user.mysql_name(), ctx.host),
                owner_of(ctx.obj).uid,
            )
        except MySQLError as error:
            raise mysql_condition(error, f"cannot release {ctx.account}") from None
        ctx.event(
            "Normal",
            "AccountReleased",
            f"{ctx.host!r} left the spec's hosts; deletionPolicy Retain: {ctx.account} was left in MySQL, "
            "no longer managed",
        )
