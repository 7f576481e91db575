"""The ownership step: the operator manages only accounts it created, or was told to adopt.

Ownership is a row in the operator's bookkeeping table (user, host → owner uid, namespace, name). An
existing account without a row is not taken over unless the resource carries the adopt annotation; an
account owned by another DatabaseUser is reported as claimed and left alone.
"""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.controllers.steps import ConditionError, Context
from dbuser_operator.controllers.target import Target, mysql_condition
from dbuser_operator.mysql import ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey


def owner(ctx: Context) -> ownership.Owner:
    """This resource as an owner."""
    metadata = ctx.user.metadata
    return ownership.Owner(
        uid=metadata.uid or "", namespace=metadata.namespace or "", name=metadata.name or ""
    )


def adopting(ctx: Context) -> bool:
    """Whether the resource asks to take over an account it did not create."""
    return (ctx.user.metadata.annotations or {}).get(ADOPT_ANNOTATION) == "true"


def not_ours(ctx: Context, *, retry: bool = False) -> ConditionError:
    """AccountExists: the refusal to manage an account the operator did not create."""
    return ConditionError(
        "AccountExists",
        f"{ctx.account} already exists and the operator did not create it; to manage it "
        f"anyway, annotate this DatabaseUser with {ADOPT_ANNOTATION}=true",
        retry=retry,
    )


class OwnershipStep:
    """Claims the account for this resource, or explains why it cannot."""

    name = "ownership"

    def __init__(self, target: Target, users: Informer) -> None:
        self.target = target
        self.users = users

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.effective_user(), ctx.user.spec.host
        me = owner(ctx)
        db, schema = self.target.db, self.target.schema
        try:
            await self.target.ensure_schema()
            found = await ownership.lookup(db, schema, user, host, await self.target.server())
            ctx.account_exists, ctx.password_intact = found.exists, found.password_intact
            current = found.owner
            if current is None:
                if found.exists and not adopting(ctx):
                    raise not_ours(ctx)
                current = await ownership.claim(db, schema, user, host, me)
                ctx.claimed = current.uid == me.uid
                if found.exists and ctx.claimed:
                    ctx.event("Warning", "AccountAdopted", f"took over the existing account {ctx.account}")
            elif current.uid != me.uid and adopting(ctx) and not self._exists(current):
                await ownership.forget(db, schema, user, host, current.uid)
                current = await ownership.claim(db, schema, user, host, me)
                ctx.claimed = current.uid == me.uid
                ctx.password_intact = None  # the fingerprint was the previous owner's
                if ctx.claimed:
                    ctx.event(
                        "Warning", "AccountAdopted", f"took over {ctx.account} from a deleted DatabaseUser"
                    )
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        if current.uid != me.uid:
            holder = f"DatabaseUser {current.namespace}/{current.name}"
            hint = (
                ""
                if self._exists(current)
                else f" (deleted: annotate with {ADOPT_ANNOTATION}=true to take over)"
            )
            raise ConditionError("AccountClaimed", f"{ctx.account} is managed by {holder}{hint}", retry=False)
        ctx.status.update({"user": user, "host": host})

    async def delete(self, ctx: Context) -> None:
        user, host = ctx.status.get("user"), ctx.status.get("host")
        if not user or not host:
            return
        try:
            await ownership.forget(self.target.db, self.target.schema, user, host, owner(ctx).uid)
        except MySQLError as error:
            raise mysql_condition(error, f"'{user}'@'{host}'") from None

    def _exists(self, current: ownership.Owner) -> bool:
        cached = self.users.get(ObjectKey(current.namespace, current.name))
        return cached is not None and cached["metadata"].get("uid") == current.uid
