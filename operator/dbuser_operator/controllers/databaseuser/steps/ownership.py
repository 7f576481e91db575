"""The ownership step: the operator manages only accounts it created, or was told to adopt.

Ownership is a row in the operator's bookkeeping table (user, host → owner uid, namespace, name). An
existing account without a row is not taken over unless the resource carries the adopt annotation; an
account owned by another DatabaseUser is reported as claimed and left alone. On a server with a policy,
adoption is the policy's to allow, judged on what the account holds today
(:meth:`~dbuser_operator.controllers.policy.gate.PolicyGate.check_adoption`); an adopted account's
password is set last and its sessions ended (:mod:`.credentials`). Whether an owner still exists is
asked of the API server, not of the cache: the cache holds only this instance's scope, and an owner under
another target label or in an unwatched namespace is alive all the same.

A resource's first pass (no status written yet) claims in one statement that writes the row only while
the account does not exist (:func:`~dbuser_operator.mysql.bookkeeping.ownership.claim_new`); a row of an
earlier pass or an existing account sends it down the usual way: look, then claim. Where the new account's
fingerprint is known beforehand (MariaDB's default hash), that statement records it too.

A claim is this pass's own only when this pass wrote the row (``ctx.claimed``); a row that already names
this resource (an earlier pass that crashed, another replica) says the account is ours, not that this pass
may assume anything about it: the account step looks at the live account instead.

The delete half works from the context's account (the spec's user; a host of the spec, or one the
bookkeeping table says the resource owns: :mod:`.hosts` runs the steps per host), never from status: a
resource deleted before its first status write has claimed, and maybe created, its account all the same.
"""

from __future__ import annotations

from dbuser_operator.controllers.databaseuser.context import Context, adopting, words
from dbuser_operator.controllers.kit.errors import ConditionError, mysql_condition
from dbuser_operator.controllers.kit.ownership import Owners, owner_of, take
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.mysql.accounts import account_lookup, authentication, holdings
from dbuser_operator.mysql.bookkeeping import name_holders, ownership
from dbuser_operator.mysql.errors import MySQLError

FOREIGN_RETRY = 1.0  # seconds until the pass that restores a password changed right after ours


async def record_own_fingerprint(ctx: Context, password: str | None) -> bool:
    """Record the fingerprint of the password this pass has just set: only the operator's own (see
    :func:`~dbuser_operator.mysql.bookkeeping.ownership.record_fingerprint`). A password somebody changed in
    between is not taken for ours: the account shows drift, and a pass soon sets the Secret's password
    back."""
    server = await ctx.server.server()
    method = authentication.effective(ctx.authentication, server)
    user, host = ctx.user.mysql_name(), ctx.host
    own = await ownership.record_fingerprint(
        ctx.server.db, ctx.server.schema, user, host, server, password=password, method=method
    )
    if not own:
        ctx.password_intact = False
        ctx.requeue(FOREIGN_RETRY)
    return own


class OwnershipStep:
    """Claims the account for this resource, or explains why it cannot."""

    name = "ownership"
    after = ("role-account-guard",)  # the adopt annotation never takes over a role

    def __init__(self, owners: Owners, policy: PolicyGate) -> None:
        self.owners = owners
        self.policy = policy

    @staticmethod
    async def _user_name_free(ctx: Context, user: str, host: str) -> None:
        """On a server with a policy, a user name belongs to one resource: refuse (UserNameTaken) to claim
        ``'user'@'host'`` while an account of that user on another host is somebody else's or nobody's —
        MySQL logs a client in as the most specific host that matches it, so the new account would capture
        the other account's logins. No policy: nothing to check (as before policies existed)."""
        if ctx.server_resource is None or ctx.server_resource.spec.policy is None:
            return
        namespace = ctx.user.metadata.namespace
        others = await name_holders.same_user_elsewhere(
            ctx.server.db, ctx.server.schema, user, host, owner_of(ctx.obj).uid
        )
        if not others:
            return

        def holder(found: ownership.Owner | None) -> str:
            if found is None:
                return "not managed by the operator"
            if found.namespace == namespace:
                return f"DatabaseUser {found.namespace}/{found.name}"
            return "a DatabaseUser of another namespace"

        taken = ", ".join(f"'{user}'@'{other}' ({holder(found)})" for other, found in others)
        raise ConditionError(
            "UserNameTaken",
            f"{ctx.account}: on a shared server a user name belongs to one resource, and {user} is taken: "
            f"{taken}",
        )

    async def _may_adopt(self, ctx: Context, user: str, host: str) -> None:
        """Refuse (AdoptionNotAllowed) unless the server's policy lets this namespace take the account
        over as it is today (:mod:`~dbuser_operator.controllers.policy.adoption`)."""
        server = await ctx.server.server()
        await self.policy.check_adoption(
            ctx.server_resource,
            namespace=ctx.user.metadata.namespace or "",
            what=ctx.account,
            name=user,
            holdings=lambda: holdings.read_holdings(ctx.server.db, user, host, server),
            flavour=server.flavour,
        )

    async def ensure(self, ctx: Context) -> None:
        user, host = ctx.user.mysql_name(), ctx.host
        first = ctx.status.observed_generation is None  # the resource's first pass: no status written yet
        db, schema = ctx.server.db, ctx.server.schema
        try:
            await ctx.server.ensure_schema()
            if first:
                await self._user_name_free(ctx, user, host)
            if first and await self._claim_new(ctx, user, host):
                ctx.status.user, ctx.status.host = user, ctx.user.spec.host
                return
            found = await account_lookup.lookup(db, schema, user, host, await ctx.server.server())
            ctx.saw(found)

            async def exists() -> bool:
                return found.exists

            async def unowned(_exists: bool) -> None:
                if not first:
                    await self._user_name_free(ctx, user, host)

            taken = await take(
                db,
                schema,
                ownership.account(user, host),
                owner_of(ctx.obj),
                words(ctx),
                found=found.owner,
                exists=exists,
                adopting=adopting(ctx),
                owners=self.owners,
                adoption=lambda: self._may_adopt(ctx, user, host),
                unowned=unowned,
            )
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.claimed = taken.inserted
        if taken.via == "departed":
            ctx.password_intact = None  # the fingerprint was the previous owner's
        if taken.inserted and taken.via is not None:
            ctx.adopted = True
            how = f"the existing account {ctx.account}"
            if taken.via == "departed":
                how = f"{ctx.account} from a deleted DatabaseUser"
            ctx.event("Warning", "AccountAdopted", f"took over {how}")
        ctx.status.user, ctx.status.host = user, ctx.user.spec.host

    @staticmethod
    async def _claim_new(ctx: Context, user: str, host: str) -> bool:
        """A resource's first pass: claim an account that nobody owns and that does not exist, in one
        statement (no look first). False when either is there: then the usual look and claim."""
        server = await ctx.server.server()
        # Known beforehand for an unsalted hash, and a workload's empty string (no password).
        expected = ownership.expected_fingerprint(server, ctx.password, ctx.authentication)
        if not await ownership.claim_new(
            ctx.server.db,
            ctx.server.schema,
            user,
            host,
            owner_of(ctx.obj),
            server=server,
            fingerprint=expected,
        ):
            return False
        ctx.account_exists, ctx.password_intact, ctx.plugin, ctx.claimed = False, None, None, True
        ctx.fingerprint_claimed = expected is not None
        return True

    async def delete(self, ctx: Context) -> None:
        user, host = ctx.user.mysql_name(), ctx.host
        try:
            await ownership.forget(
                ctx.server.db, ctx.server.schema, ownership.account(user, host), owner_of(ctx.obj).uid
            )
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
