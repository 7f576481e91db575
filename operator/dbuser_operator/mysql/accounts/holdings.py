"""What an account or a role holds today, everything it can use: its own grants, the roles granted to it
(and to those, recursively, with their grants), the accounts it may proxy as, and its authentication
plugin. Read before the operator takes over an account or role it did not create, to judge it against a
policy (:mod:`dbuser_operator.controllers.policy.adoption`). Sends only reads.

A role whose name the operator cannot read grants for (a name made by hand that no statement of ours can
quote as ours) is kept in :attr:`Holdings.unreadable`: whoever judges the holdings treats it as beyond.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from dbuser_operator.mysql.accounts.roles import Role, held_by
from dbuser_operator.mysql.errors import InvalidAccountError, checked_input
from dbuser_operator.mysql.grants import Grant, read_grants
from dbuser_operator.mysql.identifiers import validate_grantee_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

MAX_ROLES: Final = 64
"""At most this many roles are followed; beyond, the rest counts as unreadable."""

_PROXIES: Final = "SELECT Proxied_user, Proxied_host FROM mysql.proxies_priv WHERE User = %s AND Host = %s"
_PLUGIN: Final = "SELECT plugin FROM mysql.user WHERE User = %s AND Host = %s"


def role_name(role: Role) -> str:
    """``'name'@'host'``, or ``name`` for a MariaDB role (no host), for messages."""
    name, host = role
    return f"'{name}'@'{host}'" if host else name


@dataclass(frozen=True)
class Holdings:
    """Everything an account or role can use today."""

    grants: frozenset[Grant] = frozenset()
    roles: Mapping[Role, frozenset[Grant]] = field(default_factory=dict)
    """Every role it holds, directly or through other roles, with that role's own grants."""
    unreadable: tuple[str, ...] = ()
    """Roles it holds whose grants could not be read."""
    proxies: tuple[str, ...] = ()
    """``'user'@'host'`` of the accounts it may proxy as."""
    plugin: str = ""
    """Its authentication plugin ('' for a MariaDB role)."""
    held_by: tuple[str, ...] = ()
    """For a role: the accounts outside the operator's bookkeeping that hold it (filled by the caller)."""


async def read_holdings(db: Database, user: str, host: str, server: ServerInfo) -> Holdings:
    """What ``'user'@'host'`` holds (host ``''``: a MariaDB role)."""
    with checked_input():
        user, host = validate_user(user), validate_grantee_host(host).lower()
    own = frozenset(await read_grants(db, user, host, server))
    roles: dict[Role, frozenset[Grant]] = {}
    unreadable: list[str] = []
    pending = list(await held_by(db, user, host, server))
    while pending:
        role = pending.pop()
        if role in roles or role_name(role) in unreadable:
            continue
        if len(roles) >= MAX_ROLES:
            unreadable.append(role_name(role))
            continue
        try:
            roles[role] = frozenset(await read_grants(db, role[0], role[1], server))
            pending += await held_by(db, role[0], role[1].lower(), server)
        except InvalidAccountError:  # a name no statement of ours takes: judged as beyond
            unreadable.append(role_name(role))
    proxies = tuple(
        f"'{proxied}'@'{proxied_host}'"
        for proxied, proxied_host in await db.fetch(Statement(_PROXIES, user, host))
    )
    plugin_rows = await db.fetch(Statement(_PLUGIN, user, host))
    plugin = str(plugin_rows[0][0] or "") if plugin_rows else ""
    return Holdings(own, roles, tuple(unreadable), proxies, plugin)
