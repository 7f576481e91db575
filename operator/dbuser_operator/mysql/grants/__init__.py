"""Grants: what an account may do, read from the server, compared with what is wanted, and put right.

The package is split along its parts, and this module gathers their public names (``grants.apply``,
``grants.read_grants``, ``grants.Grant``… stay callable as they were):

- :mod:`.privileges`: privilege names and levels (static, flavour-only, what ``ALL`` means) and the check
  against the live server's ``SHOW PRIVILEGES`` (unknown / misplaced);
- :mod:`.model`: :class:`Grant`, privileges on one level (global, database, table), wanted or observed;
- :mod:`.read`: reading an account's grants from the grant tables (never ``SHOW GRANTS`` text);
- :mod:`.privilege_tables`: on MariaDB, one account's grants from the privilege tables, read by key;
- :mod:`.diff`: the fewest ``GRANT``/``REVOKE`` statements from what is held to what is wanted;
- :mod:`.converge`: :class:`AccountGrants`, one account's handle that observes first and then acts, and
  :func:`apply`.
"""

from __future__ import annotations

from collections.abc import Iterable

from dbuser_operator.mysql.errors import InvalidGrantError
from dbuser_operator.mysql.grants.converge import AccountGrants, apply, check
from dbuser_operator.mysql.grants.diff import (
    Change,
    changes,
    normalise,
    plan,
    server_privileges,
    summary,
)
from dbuser_operator.mysql.grants.model import Grant, Key, describe
from dbuser_operator.mysql.grants.privileges import (
    ALL,
    COLUMN_PRIVILEGE_NAMES,
    COLUMN_PRIVILEGES,
    DATABASE_PRIVILEGES,
    FLAVOUR_ONLY_PRIVILEGES,
    GLOBAL,
    GLOBAL_ONLY_PRIVILEGES,
    PRIVILEGE_NAMES,
    PRIVILEGES,
    ROUTINE_PRIVILEGE_NAMES,
    ROUTINE_PRIVILEGES,
    TABLE_PRIVILEGES,
    Level,
    expand_all,
    refusals,
)
from dbuser_operator.mysql.grants.read import (
    grantee,
    grants_from_rows,
    is_grantee,
    parse_schema,
    read_account,
    read_grants,
    split_grantee,
)
from dbuser_operator.mysql.session.server import ServerInfo

__all__ = [
    "ALL",
    "COLUMN_PRIVILEGES",
    "COLUMN_PRIVILEGE_NAMES",
    "DATABASE_PRIVILEGES",
    "FLAVOUR_ONLY_PRIVILEGES",
    "GLOBAL",
    "GLOBAL_ONLY_PRIVILEGES",
    "PRIVILEGES",
    "PRIVILEGE_NAMES",
    "ROUTINE_PRIVILEGES",
    "ROUTINE_PRIVILEGE_NAMES",
    "TABLE_PRIVILEGES",
    "AccountGrants",
    "Change",
    "Grant",
    "Key",
    "Level",
    "apply",
    "changes",
    "check",
    "describe",
    "expand_all",
    "grantee",
    "grants_from_rows",
    "is_grantee",
    "normalise",
    "parse_schema",
    "plan",
    "read_account",
    "read_grants",
    "refusals",
    "server_privileges",
    "split_grantee",
    "summary",
    "unavailable",
]


def unavailable(desired: Iterable[Grant], server: ServerInfo) -> list[str]:
    """Why the wanted grants cannot be given on this server, one sentence per refused privilege and
    level (:func:`~.privileges.refusals`); empty when all can."""
    try:
        check(desired, server)
    except InvalidGrantError as refused:
        return str(refused).split("; ")
    return []
