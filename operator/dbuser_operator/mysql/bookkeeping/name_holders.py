"""Who else has a name on a server: the accounts and roles holding a role, and the other accounts of a user
name, each with what the operator's bookkeeping (:mod:`.ownership`) says of it. Reads only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dbuser_operator.mysql.accounts import roles
from dbuser_operator.mysql.bookkeeping.books import ROLES_TABLE
from dbuser_operator.mysql.bookkeeping.ownership import Owner, table
from dbuser_operator.mysql.errors import checked_input
from dbuser_operator.mysql.identifiers import validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

_USER_HOSTS: Final = "SELECT Host FROM mysql.user WHERE User = %s"


async def same_user_elsewhere(
    db: Database, schema: str, user: str, host: str, owner_uid: str
) -> list[tuple[str, Owner | None]]:
    """The other accounts of the user name ``user`` (any host but ``host``) that ``owner_uid`` does not
    own: ``(host, owner)``, owner None for an account nobody recorded (a MariaDB role of that name has
    host ``''``). Two reads, no join: the tables' collations differ."""
    with checked_input():
        user, host = validate_user(user), validate_host(host)
    live = {str(row[0]).lower() for row in await db.fetch(Statement(_USER_HOSTS, user))}
    rows = await db.fetch(
        Statement(
            "SELECT host, owner_uid, namespace, name FROM {table} WHERE user = %s", user, table=table(schema)
        )
    )
    owners = {str(h).lower(): Owner(str(uid), str(ns), str(n)) for h, uid, ns, n in rows}
    others = (live | owners.keys()) - {host.lower()}
    return [
        (other, owners.get(other))
        for other in sorted(others)
        if other not in owners or owners[other].uid != owner_uid
    ]


@dataclass(frozen=True)
class Holder:
    """An account or role holding a role, and whether the bookkeeping records it."""

    user: str
    host: str
    """Lower-cased, as the servers store it; ``''`` for a MariaDB role."""
    account: bool
    """A row of :data:`TABLE` names it: a DatabaseUser's account."""
    role: bool
    """A row of :data:`ROLES_TABLE` names it: a DatabaseRole's role."""

    @property
    def managed(self) -> bool:
        """Whether the operator manages it (an account or a role of its bookkeeping)."""
        return self.account or self.role


def holders_query(schema: str, role: str, host: str, server: ServerInfo) -> Statement:
    """The query of :func:`role_holders` (the role ``role``@``host`` as the server names it)."""
    if server.flavour == "mariadb":
        # roles_mapping's User is utf8mb3_bin, the bookkeeping's user ascii_bin: compared as they are, the
        # server converts every bookkeeping row and scans them all for each holder (12 s for the 1001
        # holders of a role beside 10 000 accounts on MariaDB 11.8); compared in the bookkeeping's
        # collation, each holder is one primary-key lookup. No bookkeeping row has a name that is not
        # ASCII: the second condition keeps such a name's '?'s (what CONVERT makes of them) from matching.
        return Statement(
            "SELECT m.User, m.Host, a.user IS NOT NULL, r.user IS NOT NULL FROM mysql.roles_mapping m"
            " LEFT JOIN {accounts} a ON a.user = CONVERT(m.User USING ascii) COLLATE ascii_bin"
            " AND CONVERT(m.User USING ascii) = m.User AND LOWER(a.host) = m.Host"
            " LEFT JOIN {roles} r ON r.user = CONVERT(m.User USING ascii) COLLATE ascii_bin"
            " AND CONVERT(m.User USING ascii) = m.User AND m.Host = %s"
            " WHERE m.Role = %s AND CONCAT(m.User, '@', m.Host) <> CURRENT_USER()"
            " ORDER BY m.User, m.Host",
            host,
            role,
            accounts=table(schema),
            roles=table(schema, ROLES_TABLE),
        )
    return Statement(
        "SELECT e.TO_USER, e.TO_HOST, a.user IS NOT NULL, r.user IS NOT NULL FROM mysql.role_edges e"
        " LEFT JOIN {accounts} a ON a.user = e.TO_USER AND LOWER(a.host) = e.TO_HOST"
        " LEFT JOIN {roles} r ON r.user = e.TO_USER AND e.TO_HOST = %s"
        " WHERE e.FROM_USER = %s AND e.FROM_HOST = %s"
        " AND CONCAT(e.TO_USER, '@', e.TO_HOST) <> CURRENT_USER()"
        " ORDER BY e.TO_USER, e.TO_HOST",
        host,
        role,
        host,
        accounts=table(schema),
        roles=table(schema, ROLES_TABLE),
    )


async def role_holders(db: Database, schema: str, name: str, server: ServerInfo) -> list[Holder]:
    """The accounts and roles holding the role ``name``, ordered, each with what the bookkeeping says of
    it (a DatabaseUser's account: :data:`TABLE`, the host compared without regard to case; a DatabaseRole's
    role: :data:`ROLES_TABLE`); never the operator's own account (``CURRENT_USER()``, which on MariaDB
    holds every role it created). One query (both bookkeeping tables must exist)."""
    role, host = roles.role_of(name, server)
    query = holders_query(schema, role, host, server)
    return [
        Holder(str(user), str(holder_host).lower(), bool(account), bool(managed_role))
        for user, holder_host, account, managed_role in await db.fetch(query)
    ]
