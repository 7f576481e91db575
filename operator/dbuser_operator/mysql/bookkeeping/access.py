"""Every account and role of a server, for the access report: one query, whatever their number.

:func:`read_accounts` reads each account's authentication facts (plugin, when its password last changed,
as seconds since the epoch whatever the session's time zone, the TLS it requires and the subject it names)
and whether it is a role, the role edges (who holds which role), and the roles the bookkeeping records as
owned (its roles table, which must exist), united in one ``UNION ALL``. It never selects an authentication
string or a password hash (on MySQL it only compares one with ``''``: a role is a locked account without
one). On MariaDB it reads ``mysql.global_priv`` (the ``mysql.user`` view costs the server ~0.3 ms a row).
The privileges come from the drift check's inventory (:meth:`.inventory.Inventory.grants_of`), which
already reads those of every account.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

from dbuser_operator.mysql.accounts.roles import Role
from dbuser_operator.mysql.bookkeeping.books import ROLES_TABLE
from dbuser_operator.mysql.bookkeeping.ownership import Owner, table
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

QUERIES: Final = 1
"""The number of queries :func:`read_accounts` sends, whatever the number of accounts."""

_TLS_TYPES: Final = {"0": "", "1": "ANY", "2": "X509", "3": "SPECIFIED"}
"""MariaDB's ``ssl_type`` in ``global_priv`` (a number) as MySQL's ``mysql.user.ssl_type``."""

# Rank 0: an account (user, host, plugin, password changed, ssl_type, subject, is a role); rank 1: a role
# edge (holder user, holder host, role, role host); rank 2: an owned role (name, namespace, resource name).
# The authentication string is only ever compared with ''.
_MYSQL: Final = (
    "SELECT 0, User, Host, plugin, UNIX_TIMESTAMP(password_last_changed), ssl_type,"
    " CONVERT(x509_subject USING utf8mb4),"
    " account_locked = 'Y' AND authentication_string = ''"
    " FROM mysql.user"
    " UNION ALL"
    " SELECT 1, TO_USER, TO_HOST, FROM_USER, NULL, FROM_HOST, NULL, NULL FROM mysql.role_edges"
    " UNION ALL"
    " SELECT 2, o.user, o.namespace, o.name, NULL, NULL, NULL, NULL FROM {roles} o"
)
_MARIADB: Final = (
    "SELECT 0, User, Host, JSON_VALUE(Priv, '$.plugin'),"
    " NULLIF(JSON_VALUE(Priv, '$.password_last_changed'), '0'),"
    " JSON_VALUE(Priv, '$.ssl_type'), JSON_VALUE(Priv, '$.x509_subject'),"
    " IFNULL(JSON_VALUE(Priv, '$.is_role'), '0') IN ('1', 'true')"  # 10.11 reads a JSON true as 1
    " FROM mysql.global_priv"
    " UNION ALL"
    " SELECT 1, User, Host, Role, NULL, '', NULL, NULL FROM mysql.roles_mapping"
    " UNION ALL"
    " SELECT 2, o.user, o.namespace, o.name, NULL, NULL, NULL, NULL FROM {roles} o"
)


@dataclass(frozen=True)
class ServerAccount:
    """An account or role as the server has it, without its authentication string.

    ``password_changed``: when its password last changed (None: never recorded, or a role). ``tls``: the
    TLS it requires (``''``, ``ANY``, ``X509``, ``SPECIFIED``) and ``subject`` the certificate subject it
    names (``''``: none). ``roles``: the roles granted to it."""

    user: str
    host: str
    plugin: str = ""
    password_changed: datetime | None = None
    tls: str = ""
    subject: str = ""
    role: bool = False
    roles: frozenset[Role] = frozenset()


def _time(value: object) -> datetime | None:
    """Seconds since the epoch (a number, or its text) as a UTC time; None for NULL or 0."""
    try:
        seconds = float(str(value))
    except ValueError:
        return None
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None


def _text(value: object) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class ServerAccounts:
    """What :func:`read_accounts` read."""

    accounts: dict[tuple[str, str], ServerAccount]
    """Every account and role, by ``(user, host)``, hosts lower-cased as the servers keep them."""
    role_owners: dict[str, Owner]
    """The roles the bookkeeping records as owned, by name (uid left empty: not read)."""


async def read_accounts(db: Database, server: ServerInfo, schema: str) -> ServerAccounts:
    """Every account and role, and the roles recorded as owned in ``schema``, in :data:`QUERIES` query."""
    mariadb = server.flavour == "mariadb"
    statement = Statement(_MARIADB if mariadb else _MYSQL, roles=table(schema, ROLES_TABLE))
    accounts: dict[tuple[str, str], ServerAccount] = {}
    edges: dict[tuple[str, str], set[Role]] = {}
    owners: dict[str, Owner] = {}
    for rank, user, host, plugin, changed, tls, subject, role in await db.fetch(statement):
        key = (_text(user), _text(host).lower())
        if int(str(rank)) == 2:
            owners[key[0]] = Owner("-", _text(host), _text(plugin))
            continue
        if int(str(rank)) == 1:
            edges.setdefault(key, set()).add((_text(plugin), _text(tls)))
            continue
        kind = _text(tls)
        accounts[key] = ServerAccount(
            user=key[0],
            host=key[1],
            plugin=_text(plugin),
            password_changed=_time(changed),
            tls=_TLS_TYPES.get(kind, kind) if mariadb else kind,
            subject=_text(subject),
            role=bool(int(str(role or 0))),
        )
    for key, held in edges.items():
        if key in accounts:
            accounts[key] = replace(accounts[key], roles=frozenset(held))
    return ServerAccounts(accounts, owners)
