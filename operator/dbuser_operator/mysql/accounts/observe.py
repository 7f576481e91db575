"""An account as the server has it, read without writing anything: for observing accounts the operator
does not manage (importing them) and reporting how they differ from what is wanted.

Reads only: ``mysql.user`` (a table on MySQL, a view on MariaDB, with the same columns), the lock and
password policy as :func:`.lock_policy.read_policy` reads it, the grants as
:func:`.grants.read_grants` reads them, and the roles granted to the account (``mysql.role_edges`` on
MySQL, ``mysql.roles_mapping`` on MariaDB) when the admin account may read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from dbuser_operator.mysql.accounts import account_metadata
from dbuser_operator.mysql.accounts.account_metadata import AccountMetadata
from dbuser_operator.mysql.accounts.limits import LIMIT_COLUMNS, Limits, column_list
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy, read_policy
from dbuser_operator.mysql.errors import AccessDeniedError, AdminPrivilegeMissingError, checked_input
from dbuser_operator.mysql.grants import Grant, read_grants
from dbuser_operator.mysql.identifiers import validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

_TLS_NAMES: Final = {"": "NONE", "ANY": "SSL", "X509": "X509", "SPECIFIED": "SPECIFIED"}

_ACCOUNT_COLUMNS: Final = ("plugin", *LIMIT_COLUMNS)
_ACCOUNT: Final = (
    "SELECT "  # noqa: S608 - constant column names
    + column_list(_ACCOUNT_COLUMNS)
    + ", {metadata} FROM mysql.user WHERE User = %s AND Host = %s"
)
_MYSQL_ROLES: Final = (
    "SELECT FROM_USER, FROM_HOST FROM mysql.role_edges WHERE TO_USER = %s AND TO_HOST = %s"
    " ORDER BY FROM_USER, FROM_HOST"
)
_MARIADB_ROLES: Final = "SELECT Role, '' FROM mysql.roles_mapping WHERE User = %s AND Host = %s ORDER BY Role"


@dataclass(frozen=True)
class LiveAccount:
    """An existing account: its plugin, TLS requirement as MySQL names it (``NONE``, ``SSL``, ``X509``,
    ``SPECIFIED``), limits and TLS as :class:`~.limits.Limits`, grants, roles (``None`` when
    they could not be read), the owner entry and comment of its attributes (all None on a server without
    attributes), its lock and password policy and the server's default password lifetime."""

    plugin: str
    tls: str
    limits: Limits
    grants: frozenset[Grant]
    roles: tuple[str, ...] | None
    metadata: AccountMetadata = field(default_factory=AccountMetadata)
    policy: LockPolicy = field(default_factory=LockPolicy)
    default_lifetime: int = 0


async def read_account(db: Database, user: str, host: str, server: ServerInfo) -> LiveAccount | None:
    """The account ``'user'@'host'`` as the server has it; None when it does not exist. Sends only reads."""
    with checked_input():
        user, host = validate_user(user), validate_host(host)
    metadata = account_metadata.columns(server, "user")  # mysql.user, by its table name
    rows = await db.fetch(Statement(_ACCOUNT, user, host.lower(), metadata=metadata))
    if not rows:
        return None
    owner_entry, comment = rows[0][len(_ACCOUNT_COLUMNS) :]
    row = dict(zip(_ACCOUNT_COLUMNS, rows[0][: len(_ACCOUNT_COLUMNS)], strict=True))
    tls = "" if row["ssl_type"] is None else str(row["ssl_type"])
    policy = await read_policy(db, user, host, server)
    return LiveAccount(
        plugin=str(row["plugin"] or ""),
        tls=_TLS_NAMES.get(tls, tls),
        limits=Limits.from_row(row),
        grants=frozenset(await read_grants(db, user, host, server)),
        roles=await _read_roles(db, user, host, server),
        metadata=AccountMetadata.from_columns(owner_entry, comment),
        policy=policy[0] if policy is not None else LockPolicy(),
        default_lifetime=policy[1] if policy is not None else 0,
    )


async def _read_roles(db: Database, user: str, host: str, server: ServerInfo) -> tuple[str, ...] | None:
    """The roles granted to the account, ``'role'@'host'`` on MySQL and ``role`` on MariaDB (whose roles
    have no host); None when the admin account may not read the role tables."""
    query = _MARIADB_ROLES if server.flavour == "mariadb" else _MYSQL_ROLES
    try:
        rows = await db.fetch(Statement(query, user, host.lower()))
    except (AccessDeniedError, AdminPrivilegeMissingError):
        return None
    return tuple(
        f"'{role}'@'{role_host}'" if server.flavour == "mysql" else str(role) for role, role_host in rows
    )
