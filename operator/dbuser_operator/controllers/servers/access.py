"""The access report of one server: every account and role, what it reaches, and who owns it.

Built by the leader from what the drift check read (the inventory's privilege rows of every account, and
:func:`~dbuser_operator.mysql.bookkeeping.access.read_accounts`): no query of its own. Pure: :func:`build`
turns those reads, the owners and the drift the check found into the bounded :class:`AccessSummary` a server
resource's status carries (:mod:`dbuser_operator.api.v1alpha1.access_report`). Nothing in it comes from an
authentication string: none was read.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Final

from dbuser_operator.api.v1alpha1.access_report import (
    MAX_ENTRIES,
    MAX_ITEMS,
    MAX_TEXT,
    AccessEntry,
    AccessState,
    AccessSummary,
)
from dbuser_operator.mysql.bookkeeping.access import ServerAccount, ServerAccounts
from dbuser_operator.mysql.bookkeeping.inventory import Inventory
from dbuser_operator.mysql.errors import InvalidGrantError
from dbuser_operator.mysql.grants import Change, Grant, describe

_RANK: Final[dict[AccessState, int]] = {"Drifted": 0, "Orphaned": 1, "Unmanaged": 2, "Managed": 4}
"""Order of attention (an unmanaged account with global privileges ranks 2, other unmanaged ones 3)."""
_UNREADABLE: Final = Grant.observed({"UNREADABLE"}, "*")
"""Stands for grants the server reported that no Grant can hold (shown as '?')."""


@dataclass(frozen=True)
class DriftFound:
    """What the drift check found on one server: per owned account (``(user, host)``, the host
    lower-cased) the grant changes that revoke something (privileges no resource asked for), and the
    orphaned accounts."""

    extra: Mapping[tuple[str, str], list[Change]]
    orphans: frozenset[tuple[str, str]] = frozenset()


def extra_grants(changes: Iterable[Change]) -> list[Change]:
    """The changes of a grant diff that revoke: what the account holds that its resource did not ask for."""
    return [change for change in changes if change.action != "grant"]


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _bounded(items: Iterable[str]) -> tuple[list[str] | None, bool]:
    """At most :data:`MAX_ITEMS` items (cut), then ``+N more``; None when empty; whether any was left out."""
    values = sorted({_cut(item) for item in items})
    if not values:
        return None, False
    if len(values) <= MAX_ITEMS:
        return values, False
    return [*values[:MAX_ITEMS], f"+{len(values) - MAX_ITEMS} more"], True


def _change(change: Change) -> str:
    where = describe(change.key)
    if change.action == "revoke grant option":
        return f"GRANT OPTION ON {where}"
    return f"{', '.join(change.privileges)} ON {where}"


def _reach(grants: Iterable[Grant]) -> tuple[set[str], set[str]]:
    """Global privileges (GRANT OPTION included), and the databases any other grant names."""
    privileges: set[str] = set()
    databases: set[str] = set()
    for grant in grants:
        if grant is _UNREADABLE:
            privileges.add("?")
        elif grant.database == "*":
            privileges |= grant.privileges
            if grant.grant_option:
                privileges.add("GRANT OPTION")
        else:
            databases.add(grant.database)
    return privileges, databases


def _role(name: str, host: str) -> str:
    return f"{name}@{host}" if host else name


def _cut_any(items: Iterable[str]) -> bool:
    """Whether :func:`_bounded` would leave any of ``items`` out."""
    return len({_cut(item) for item in items}) > MAX_ITEMS


def _entry(
    account: ServerAccount, grants: frozenset[Grant], state: AccessState, owner: str | None, drift: list[str]
) -> AccessEntry:
    """The entry of one account."""
    privileges, databases = _reach(grants)
    changed = account.password_changed
    return AccessEntry(
        user=_cut(account.user),
        host=_cut(account.host),
        role=account.role,
        state=state,
        owner=owner,
        plugin=_cut(account.plugin) or None,
        password_changed=changed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if changed else None,
        tls=account.tls or None,
        tls_subject=_cut(account.subject) or None,
        global_privileges=_bounded(privileges)[0],
        databases=_bounded(databases)[0],
        roles=_bounded(_role(*role) for role in account.roles)[0],
        drift=_bounded(drift)[0],
    )


_Ranked = tuple[int, str, str, ServerAccount, frozenset[Grant], AccessState, str | None, list[str]]
"""An account's place in the order of attention (rank, user, host), and what its entry is made from."""


def build(accounts: ServerAccounts, inventory: Inventory, found: DriftFound) -> AccessSummary:
    """The report of one server: every account and role in ``accounts``, their grants from
    ``inventory``, their owners from its bookkeeping rows (roles: ``accounts.role_owners``).

    Every account is counted, but only the first :data:`MAX_ENTRIES` in the order of attention are kept
    while the others are looked at (a heap): the entries are made for those alone, so what the build holds
    does not grow with the server's accounts."""
    owners = {(user, host.lower()): state.owner for (user, host), state in inventory.owned.items()}
    summary = AccessSummary()
    truncated = False

    def ranked() -> Iterator[_Ranked]:
        nonlocal truncated
        for key, account in accounts.accounts.items():
            owner = accounts.role_owners.get(account.user) if account.role else owners.get(key)
            drift = [_change(change) for change in found.extra.get(key, ())]
            state: AccessState
            if owner is None:
                state = "Unmanaged"
            elif key in found.orphans:
                state = "Orphaned"
            else:
                state = "Drifted" if drift else "Managed"
            who = f"{owner.namespace}/{owner.name}" if owner is not None else None
            try:
                held = inventory.grants_of(*key)
            except InvalidGrantError:  # a name no grant of ours can have: listed, its grants shown as '?'
                held, truncated = frozenset({_UNREADABLE}), True
            privileges, databases = _reach(held)
            roles = [_role(*role) for role in account.roles]
            truncated |= any(_cut_any(items) for items in (privileges, databases, roles, drift))
            summary.accounts += 1
            summary.roles += account.role
            summary.unmanaged += state == "Unmanaged"
            summary.managed += state in {"Managed", "Drifted"}
            summary.drifted += state == "Drifted"
            summary.orphaned += state == "Orphaned"
            rank = _RANK[state] + (state == "Unmanaged" and not privileges)
            yield rank, account.user, account.host, account, held, state, who, drift

    first = heapq.nsmallest(MAX_ENTRIES, ranked(), key=lambda item: item[:3])
    summary.entries = [
        _entry(account, held, state, who, drift) for *_, account, held, state, who, drift in first
    ]
    summary.truncated = truncated or summary.accounts > MAX_ENTRIES
    return summary
