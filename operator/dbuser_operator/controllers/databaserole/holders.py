"""What a managed role holds, and who holds it.

A DatabaseRole has no sub-roles: every role granted to its role (by hand, or found at adoption) is revoked.
The accounts holding the role are the holders: a DatabaseUser's account (in the bookkeeping) is expected,
any other is reported (condition :data:`HOLDERS`, a Warning), never changed. When the role loses privileges
(a revoked role, a revoked privilege, the role dropped), the sessions of the DatabaseUsers' accounts holding
it are ended, as a DatabaseUser's own reduction ends them: MariaDB keeps a session's global privileges from
a role until it reconnects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.accounts import roles, sessions
from dbuser_operator.mysql.bookkeeping import name_holders

HOLDERS: Final = "UnmanagedHolders"
"""The condition saying whether accounts the operator does not manage hold the role."""
SHOWN: Final = 10
"""Accounts named in one message; the rest are counted."""


async def revoke_held_roles(handle: ServerHandle, name: str) -> list[str]:
    """Revoke every role granted to the role ``name`` (its desired set is empty); the ones revoked, for
    people."""
    server = await handle.server()
    revoked = []
    for held in sorted(await roles.held_by_role(handle.db, name, server)):
        await roles.revoke_from_role(handle.db, held, name, server)
        revoked.append(roles.describe(held))
    return revoked


async def end_managed_sessions(handle: ServerHandle, holders: Iterable[name_holders.Holder]) -> int:
    """End the open sessions of the DatabaseUsers' accounts among ``holders``; how many."""
    ended = 0
    for holder in holders:
        if holder.account:
            ended += await sessions.end_sessions(handle.db, holder.user, holder.host)
    return ended


def unmanaged(holders: Iterable[name_holders.Holder]) -> list[roles.Account]:
    """The holders the operator does not manage, as accounts."""
    return [(holder.user, holder.host) for holder in holders if not holder.managed]


def named(accounts: list[roles.Account]) -> str:
    """The first :data:`SHOWN` accounts, and how many more."""
    shown = ", ".join(roles.describe(account) for account in accounts[:SHOWN])
    more = len(accounts) - SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def condition(name: str, accounts: list[roles.Account]) -> tuple[str, str, str]:
    """Status, reason and message of :data:`HOLDERS` for the role ``name`` held by ``accounts`` (those
    the operator does not manage)."""
    if not accounts:
        return (
            "False",
            "NoUnmanagedHolders",
            f"no account outside the operator's bookkeeping holds role {name}",
        )
    message = (
        f"role {name} is held by accounts the operator does not manage (left as they are; they get this "
        f"role's privileges, and lose the role if it is dropped): {named(accounts)}"
    )
    return "True", "HeldByUnmanagedAccounts", message
