"""managementPolicy Observe: read the live accounts into status and say how they differ from the spec.

Nothing is written to MySQL — no account statement, no bookkeeping row, not even the bookkeeping schema —
so an account the operator does not own (the import use case) can be looked at safely. The password is
not compared: the operator keeps no fingerprint of an account it does not own.

Observe reads no further than the namespace could manage, and refuses (Ready=False, nothing of the account
in status) a reserved account (``ReservedAccount``: the frame asks the registry of reserved names before
anything is read, :mod:`~dbuser_operator.controllers.kit.reserved`), an account or role a resource of
another namespace owns (``ObserveNotAllowed``), and, on a server with a policy, an existing account this
namespace does not own and could not adopt as it is today (``ObserveNotAllowed``: allowAdoption,
adoptableNames, what it holds).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec, ObservedAccount
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.account_metadata import unsupported_comment
from dbuser_operator.controllers.databaseuser.steps.limits import desired_limits
from dbuser_operator.controllers.databaseuser.steps.lock_policy import (
    lock_time_text,
    password_expire_text,
    unsupported,
    wanted_policy,
)
from dbuser_operator.controllers.databaseuser.steps.rotation import now
from dbuser_operator.controllers.databaseuser.workload import SigningCASource, Workload
from dbuser_operator.controllers.kit.errors import mysql_condition
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.controllers.kit.ownership import OBSERVE_NOT_ALLOWED
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.accounts import account_metadata, holdings
from dbuser_operator.mysql.accounts.limits import Limits
from dbuser_operator.mysql.accounts.lock_policy import DEFAULT_LIFETIME
from dbuser_operator.mysql.accounts.observe import LiveAccount, read_account
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo

SHOWN_DIFFERENCES: Final = 5  # differences named in Ready's message; status.observed has them all

_LIMITS: Final = (
    ("max_user_connections", "maxUserConnections"),
    ("max_queries_per_hour", "maxQueriesPerHour"),
    ("max_updates_per_hour", "maxUpdatesPerHour"),
    ("max_connections_per_hour", "maxConnectionsPerHour"),
)


def limit_differences(live: Limits, spec: DatabaseUserSpec, workload: Workload | None = None) -> list[str]:
    """How the live limits and TLS requirement differ from the spec's (and its workload's identity)."""
    wanted = desired_limits(spec, workload)
    found = [
        f"{name} is {getattr(live, field)} (spec {getattr(wanted, field)})"
        for field, name in _LIMITS
        if getattr(live, field) != getattr(wanted, field)
    ]
    if live.tls_identity != wanted.tls_identity:
        found.append(
            f"TLS identity is {live.tls_identity.describe()} (spec {wanted.tls_identity.describe()})"
        )
    elif live.require_tls != wanted.require_tls:
        found.append(f"requireTLS is {live.require_tls} (spec {wanted.require_tls})")
    return found


def policy_differences(live: LiveAccount, spec: DatabaseUserSpec, server: ServerInfo) -> list[str]:
    """How the live lock and password policy differs from what Manage would make of it."""
    problem = unsupported(spec, server)
    if problem is not None:
        return [problem]
    policy = live.policy
    desired = wanted_policy(spec, now()).for_account(policy, live.default_lifetime)
    found = []
    if policy.locked != desired.locked:
        found.append(f"locked is {str(policy.locked).lower()} (spec {str(desired.locked).lower()})")
    if policy.password_lifetime != desired.password_lifetime:
        default = f", the server's default_password_lifetime is {live.default_lifetime} days"
        shown = password_expire_text(policy.password_lifetime)
        found.append(
            f"passwordExpire is {shown}{default if policy.password_lifetime == DEFAULT_LIFETIME else ''}"
            f" (spec {password_expire_text(desired.password_lifetime)})"
        )
    if policy.failed_login_attempts != desired.failed_login_attempts:
        found.append(
            f"failedLoginAttempts is {policy.failed_login_attempts} (spec {desired.failed_login_attempts})"
        )
    elif policy.password_lock_time != desired.password_lock_time:
        found.append(
            f"passwordLockTime is {lock_time_text(policy.password_lock_time)}"
            f" (spec {lock_time_text(desired.password_lock_time)})"
        )
    return found


def grant_differences(live: Iterable[grants.Grant], spec: DatabaseUserSpec, server: ServerInfo) -> list[str]:
    """The grants Manage would give or take away."""
    wanted = desired_grants(spec.privileges)
    problems = grants.unavailable(wanted, server)
    if problems:
        return problems
    words = {"granted ": "would grant ", "revoked ": "would revoke "}
    found = []
    for change in grants.changes(live, wanted, server):
        text = str(change)
        for done, would in words.items():
            if text.startswith(done):
                text = would + text.removeprefix(done)
        found.append(text)
    return found


def metadata_shown(live: LiveAccount, namespace: str) -> tuple[str | None, str | None]:
    """The owner its attributes name (only within ``namespace``) and its comment, as status shows them."""
    entry, comment = live.metadata.owner, live.metadata.comment
    owner: str | None = None
    if isinstance(entry, dict) and isinstance(entry.get("namespace"), str):
        if entry["namespace"] == namespace:
            owner = f"{namespace}/{entry.get('name')}"
        else:
            owner = "a DatabaseUser of another namespace"
    elif entry is not None:
        owner = "not a DatabaseUser (changed by hand)"
    return owner, None if comment is None else str(comment)


def comment_differences(live: LiveAccount, spec: DatabaseUserSpec, server: ServerInfo) -> list[str]:
    """How the live comment differs from spec.comment (unset: not compared)."""
    if spec.comment is None:
        return []
    if not account_metadata.supports_attributes(server):
        return [unsupported_comment(server)]
    if live.metadata.comment != (spec.comment or None):  # "": no comment
        return [f"comment is {live.metadata.comment!r} (spec {spec.comment!r})"]
    return []


def observed(
    host: str,
    live: LiveAccount | None,
    spec: DatabaseUserSpec,
    server: ServerInfo,
    namespace: str = "",
    *,
    workload: Workload | None = None,
) -> ObservedAccount:
    """What status shows of one account."""
    if live is None:
        return ObservedAccount(host=host, exists=False, differences=["the account does not exist"])
    limits, policy = live.limits, live.policy
    owner, comment = metadata_shown(live, namespace)
    return ObservedAccount(
        host=host,
        exists=True,
        plugin=live.plugin,
        tls=live.tls,
        max_user_connections=limits.max_user_connections,
        max_queries_per_hour=limits.max_queries_per_hour,
        max_updates_per_hour=limits.max_updates_per_hour,
        max_connections_per_hour=limits.max_connections_per_hour,
        locked=policy.locked,
        password_expire=password_expire_text(policy.password_lifetime),
        failed_login_attempts=policy.failed_login_attempts if server.flavour == "mysql" else None,
        password_lock_time=lock_time_text(policy.password_lock_time)
        if policy.failed_login_attempts
        else None,
        privileges=sorted(str(grant) for grant in live.grants),
        roles=list(live.roles or ()),
        owner=owner,
        comment=comment,
        differences=limit_differences(limits, spec, workload)
        + policy_differences(live, spec, server)
        + grant_differences(live.grants, spec, server)
        + comment_differences(live, spec, server),
    )


def summary(ctx: Context, accounts: list[ObservedAccount]) -> str:
    """Ready's message: the first differences, each with its account."""
    user = ctx.user.mysql_name()
    found = [f"'{user}'@'{account.host}': {text}" for account in accounts for text in account.differences]
    shown = "; ".join(found[:SHOWN_DIFFERENCES])
    more = len(found) - SHOWN_DIFFERENCES
    return shown + (f"; and {more} more (status.observed)" if more > 0 else "")


class Observer:
    """Reads the spec's accounts into ``status.observed``; tells whether they match the spec."""

    def __init__(self, policy: PolicyGate | None = None, signing_ca: SigningCASource | None = None) -> None:
        self.policy = policy
        self.signing_ca = signing_ca or SigningCASource(None)  # a workload's issuer, to compare with

    async def observe(self, ctx: Context, owned: set[ownership.Entry]) -> bool:
        """Fill ``ctx.status.observed``; whether every account matches the spec (password aside).
        ``owned``: the ledger's entries of the user that this namespace owns, as the frame's bound found
        them (:meth:`~.Owning.within_observe_bounds`, which cleared ``status.observed`` first).

        Raises ConditionError, with ``status.observed`` left cleared, for an account beyond the namespace's
        bounds (module docstring)."""
        user = ctx.user.mysql_name()
        workload = self.signing_ca.workload_of(ctx.user)
        try:
            server = await ctx.server.server()
            accounts = []
            for host in ctx.user.spec.account_hosts():
                live = await read_account(ctx.server.db, user, host, server)
                owns = bool({ownership.account(user, host), ownership.role(user)} & owned)
                await self._within_bounds(ctx, user, host, server, exists=live is not None, owned=owns)
                namespace = ctx.user.metadata.namespace or ""
                accounts.append(observed(host, live, ctx.user.spec, server, namespace, workload=workload))
        except MySQLError as error:
            raise mysql_condition(error, ctx.account) from None
        ctx.status.observed = accounts
        ctx.status.user = user
        return not any(account.differences for account in accounts)

    async def _within_bounds(
        self, ctx: Context, user: str, host: str, server: ServerInfo, *, exists: bool, owned: bool
    ) -> None:
        """Under a policy, refuse an existing account nobody owns (``owned``: this namespace owns it; one
        owned in another namespace the frame refused before) that the namespace could not adopt."""
        namespace = ctx.user.metadata.namespace or ""
        account = f"'{user}'@'{host}'"
        if owned or not exists or self.policy is None:
            return  # this namespace's own, nothing to read, or no bound but the frame's
        await self.policy.check_adoption(
            ctx.server_resource,
            namespace=namespace,
            what=account,
            name=user,
            holdings=lambda: holdings.read_holdings(ctx.server.db, user, host, server),
            flavour=server.flavour,
            reason=OBSERVE_NOT_ALLOWED,
            action="observe",
        )
