"""The access report of one server: every account and role, what it reaches, and who owns it.

Built by the leader from what the drift check read (the inventory's privilege rows of every account, and
:func:`~dbuser_operator.mysql.bookkeeping.access.read_accounts`): no query of its own. Pure: :func:`build`
turns those reads, the owners and the drift the check found into the bounded :class:`AccessSummary` a server
resource's status carries (:mod:`dbuser_operator.api.v1alpha1.access_report`). Nothing in it comes from an
authentication string: none was read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def _entry(
    account: ServerAccount, grants: frozenset[Grant], state: AccessState, owner: str | None, drift: list[str]
) -> tuple[AccessEntry, bool, bool]:
    """The entry, whether it holds global privileges, and whether any list was cut."""
    privileges, databases = _reach(grants)
    shown_privileges, cut_privileges = _bounded(privileges)
    shown_databases, cut_databases = _bounded(databases)
    shown_roles, cut_roles = _bounded(_role(*role) for role in account.roles)
    shown_drift, cut_drift = _bounded(drift)
    changed = account.password_changed
    entry = AccessEntry(
        user=_cut(account.user),
        host=_cut(account.host),
        role=account.role,
        state=state,
        owner=owner,
        plugin=_cut(account.plugin) or None,
        password_changed=changed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if changed else None,
        tls=account.tls or None,
        tls_subject=_cut(account.subject) or None,
        global_privileges=shown_privileges,
        databases=shown_databases,
        roles=shown_roles,
        drift=shown_drift,
    )
    return entry, bool(privileges), cut_privileges or cut_databases or cut_roles or cut_drift


def build(accounts: ServerAccounts, inventory: Inventory, found: DriftFound) -> AccessSummary:
    """The report of one server: every account and role in ``accounts``, their grants from
    ``inventory``, their owners from its bookkeeping rows (roles: ``accounts.role_owners``)."""
    owners = {(user, host.lower()): state.owner for (user, host), state in inventory.owned.items()}
    summary = AccessSummary()
    ranked: list[tuple[int, str, str, AccessEntry]] = []
    truncated = False
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
        entry, powerful, cut = _entry(account, held, state, who, drift)
        truncated |= cut
        summary.accounts += 1
        summary.roles += account.role
        summary.unmanaged += state == "Unmanaged"
        summary.managed += state in {"Managed", "Drifted"}
        summary.drifted += state == "Drifted"
        summary.orphaned += state == "Orphaned"
        rank = _RANK[state] + (state == "Unmanaged" and not powerful)
        ranked.append((rank, account.user, account.host, entry))
    ranked.sort(key=lambda item: item[:3])
    summary.entries = [entry for *_, entry in ranked[:MAX_ENTRIES]]
    summary.truncated = truncated or len(ranked) > MAX_ENTRIES
    return summary
