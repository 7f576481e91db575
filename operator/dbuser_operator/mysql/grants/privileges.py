"""Privilege names: which exist, at which levels, on which server, and what ``ALL`` means there.

The static privileges and their levels are known here (the same on every version of a flavour this
operator supports); everything else a live server reports in ``SHOW PRIVILEGES`` — MySQL's dynamic
privileges (``BACKUP_ADMIN``, ``REPLICATION_SLAVE_ADMIN``…, kept in ``mysql.global_grants``), MariaDB's
administrative ones (``SLAVE MONITOR``, ``BINLOG MONITOR``…) — is a global privilege, granted on ``*.*``
only. :func:`refusals` checks wanted privileges against the server before any SQL: a name the server does
not list is *unknown*, a name outside its level's set is *misplaced*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from dbuser_operator.mysql.session.server import Flavour, ServerInfo

ALL: Final = "ALL"
"""Every privilege of the grant's level (``ALL PRIVILEGES``), as :func:`expand_all` lists it."""

# The static privileges of both flavours, in the order the API's schema spells them (its CEL lists).
_COMMON_DATABASE_NAMES: Final = (
    "ALTER",
    "ALTER ROUTINE",
    "CREATE",
    "CREATE ROUTINE",
    "CREATE TEMPORARY TABLES",
    "CREATE VIEW",
    "DELETE",
    "DROP",
    "EVENT",
    "EXECUTE",
    "INDEX",
    "INSERT",
    "LOCK TABLES",
    "REFERENCES",
    "SELECT",
    "SHOW VIEW",
    "TRIGGER",
    "UPDATE",
)
_COMMON_GLOBAL_ONLY_NAMES: Final = (
    "CREATE USER",
    "FILE",
    "PROCESS",
    "RELOAD",
    "REPLICATION CLIENT",
    "REPLICATION SLAVE",
    "SHOW DATABASES",
    "SHUTDOWN",
    "SUPER",
    "CREATE TABLESPACE",
)
_COMMON_DATABASE: Final = frozenset(_COMMON_DATABASE_NAMES)
_COMMON_GLOBAL_ONLY: Final = frozenset(_COMMON_GLOBAL_ONLY_NAMES)
_COMMON_TABLE: Final = frozenset(
    {
        "ALTER",
        "CREATE",
        "CREATE VIEW",
        "DELETE",
        "DROP",
        "INDEX",
        "INSERT",
        "REFERENCES",
        "SELECT",
        "SHOW VIEW",
        "TRIGGER",
        "UPDATE",
    }
)

FLAVOUR_ONLY_PRIVILEGES: Final[Mapping[str, Flavour]] = {
    "DELETE HISTORY": "mariadb",  # system-versioned tables (MariaDB 10.3.4+): database, table and global
    "BINLOG MONITOR": "mariadb",  # MariaDB 10.5.2+, global
    "SLAVE MONITOR": "mariadb",  # MariaDB 10.5.9+, global
    "CREATE ROLE": "mysql",  # MySQL 8.0+, global
    "DROP ROLE": "mysql",  # MySQL 8.0+, global
}
"""The privileges that exist on one flavour only: wanted on the other, :func:`apply` refuses them with an
:class:`~.errors.InvalidGrantError` that names them (the server would answer a syntax error)."""

_DATABASE_NAMES: Final = (*_COMMON_DATABASE_NAMES, "DELETE HISTORY")
_GLOBAL_ONLY_NAMES: Final = (
    *_COMMON_GLOBAL_ONLY_NAMES,
    "BINLOG MONITOR",
    "SLAVE MONITOR",
    "CREATE ROLE",
    "DROP ROLE",
)

DATABASE_PRIVILEGES: Final = frozenset(_DATABASE_NAMES)
"""The static privileges that may be granted on a database (and globally), on one flavour at least."""

GLOBAL_ONLY_PRIVILEGES: Final = frozenset(_GLOBAL_ONLY_NAMES)
"""The static privileges that exist only at the global level (``*.*``)."""

TABLE_PRIVILEGES: Final = _COMMON_TABLE | {"DELETE HISTORY"}
"""The privileges that may be granted on one table (routines, events, temporary tables and locks may not)."""

COLUMN_PRIVILEGE_NAMES: Final = ("SELECT", "INSERT", "UPDATE", "REFERENCES")
"""The privileges that may be granted on columns of a table (``GRANT SELECT (a, b) ON db.t``), in the
order the API spells them."""

COLUMN_PRIVILEGES: Final = frozenset(COLUMN_PRIVILEGE_NAMES)
"""The privileges that may be granted on columns of a table, as a set."""

ROUTINE_PRIVILEGE_NAMES: Final = ("EXECUTE", "ALTER ROUTINE")
"""The privileges that may be granted on one stored procedure or function (``ALL`` means both), in the
order the API spells them."""

ROUTINE_PRIVILEGES: Final = frozenset(ROUTINE_PRIVILEGE_NAMES)
"""The privileges that may be granted on one stored procedure or function, as a set."""

PRIVILEGE_NAMES: Final = (*_DATABASE_NAMES, *_GLOBAL_ONLY_NAMES)
"""Every privilege name a wanted :class:`Grant` may list besides :data:`ALL`, once each: those of a
database first, then the global-only ones. The API's schema lists them in this order; this is their only
list."""

PRIVILEGES: Final = frozenset(PRIVILEGE_NAMES)
"""Every privilege name a wanted :class:`Grant` may list, besides :data:`ALL`, as a set."""

# --- What ALL means, per server and level --------------------------------------------------------------
# MariaDB 10.6 - 10.11, found by experiment on 10.11 (GRANT ALL, then information_schema): the database
# level adds DELETE HISTORY (system-versioned tables) to the static list, the table level too; the global
# level has the MariaDB 10.5+ administrative privileges, and REPLICATION CLIENT is named BINLOG MONITOR.
_MARIADB_TABLE_ALL: Final = _COMMON_TABLE | {"DELETE HISTORY"}
_MARIADB_DATABASE_ALL: Final = _COMMON_DATABASE | {"DELETE HISTORY"}
_MARIADB_GLOBAL_ALL: Final = (
    _COMMON_DATABASE
    | (_COMMON_GLOBAL_ONLY - {"REPLICATION CLIENT"})
    | {
        "BINLOG ADMIN",
        "BINLOG MONITOR",
        "BINLOG REPLAY",
        "CONNECTION ADMIN",
        "DELETE HISTORY",
        "FEDERATED ADMIN",
        "READ_ONLY ADMIN",
        "REPLICATION MASTER ADMIN",
        "REPLICATION SLAVE ADMIN",
        "SET USER",
        "SLAVE MONITOR",
    }
)
# MariaDB 11.3 added SHOW CREATE ROUTINE (global and database levels): from its documentation, checked
# on 11.8.9.
_MARIADB_SHOW_CREATE_ROUTINE: Final = (11, 3, 0)
# MariaDB (10.5.2+) reads back the old name REPLICATION CLIENT as BINLOG MONITOR.
_MARIADB_ALIASES: Final[Mapping[str, str]] = {"REPLICATION CLIENT": "BINLOG MONITOR"}

# MySQL 8.0 - 9.7, from the reference manual, checked on 9.7.4: the database and table levels are the static
# lists; the global level is every static privilege. The dynamic privileges (BACKUP_ADMIN, ...), which
# MySQL's GRANT ALL ON *.* also gives, are left out: they differ by version and plugin.
_MYSQL_TABLE_ALL: Final = _COMMON_TABLE
_MYSQL_DATABASE_ALL: Final = _COMMON_DATABASE
_MYSQL_GLOBAL_ALL: Final = _COMMON_DATABASE | _COMMON_GLOBAL_ONLY | {"CREATE ROLE", "DROP ROLE"}

USAGE: Final = (
    "USAGE"  # "no privilege": information_schema's row for an account without any (or only GRANT OPTION)
)

Level = tuple[str, str]
"""``(database, table)``: ``("*", "*")`` global, ``(db, "*")`` a database, ``(db, table)`` a table."""

GLOBAL: Final[Level] = ("*", "*")


def expand_all(level: Level, server: ServerInfo) -> frozenset[str]:
    """What ``ALL`` means on ``level`` (``(database, table)``) on this server, named as its
    ``information_schema`` names the privileges.

    MariaDB: from experiment on 10.11 (valid for 10.6+; ``SHOW CREATE ROUTINE`` added for 11.3+ from the
    documentation, checked on 11.8.9). MySQL 8.0 - 9.7: the static privileges of the level, from the manual
    (checked on 9.7.4); at the global level the dynamic privileges are not included.
    """
    database, table = level
    global_level = database == "*"
    table_level = not global_level and table != "*"
    if server.flavour == "mariadb":
        if table_level:
            return _MARIADB_TABLE_ALL
        extra = {"SHOW CREATE ROUTINE"} if server.version >= _MARIADB_SHOW_CREATE_ROUTINE else set()
        return (_MARIADB_GLOBAL_ALL if global_level else _MARIADB_DATABASE_ALL) | extra
    if table_level:
        return _MYSQL_TABLE_ALL
    return _MYSQL_GLOBAL_ALL if global_level else _MYSQL_DATABASE_ALL


_NOT_LISTED: Final = frozenset({USAGE, "GRANT OPTION", "PROXY"})
"""Names the servers report that are no privilege to list: no privilege at all, the grant option (a flag
of each level), and PROXY (granted on an account, not on a level)."""

_FLAVOUR_NAMES: Final[Mapping[Flavour, str]] = {"mysql": "MySQL-only", "mariadb": "MariaDB-only"}


def is_listable(name: str) -> bool:
    """Whether ``name`` may be listed in a grant (not USAGE, GRANT OPTION or PROXY)."""
    return name not in _NOT_LISTED


def server_name(name: str, server: ServerInfo) -> str:
    """``name`` as this server reports it (MariaDB reads REPLICATION CLIENT back as BINLOG MONITOR)."""
    return _MARIADB_ALIASES.get(name, name) if server.flavour == "mariadb" else name


DATABASE_LEVEL: Final = "db"  # any database name, for expand_all
TABLE_LEVEL: Final = "t"


def database_privileges(server: ServerInfo) -> frozenset[str]:
    """The privileges this server grants on one database (the wildcard-free ``db.*``)."""
    return expand_all((DATABASE_LEVEL, "*"), server)


def table_privileges(server: ServerInfo) -> frozenset[str]:
    """The privileges this server grants on one table."""
    return expand_all((DATABASE_LEVEL, TABLE_LEVEL), server)


@dataclass(frozen=True)
class Refusal:
    """Why one wanted privilege cannot be granted where it is wanted on this server."""

    kind: Literal["unknown", "misplaced"]
    privilege: str
    message: str


def refusals(wanted: Iterable[tuple[Level, Iterable[str]]], server: ServerInfo) -> list[Refusal]:
    """What this server refuses among ``wanted`` (``((database, table), names)`` per level), one refusal
    per privilege and level, in a fixed order; empty when every name exists and is valid where it is wanted.

    *Unknown*: a privilege of the other flavour (:data:`FLAVOUR_ONLY_PRIVILEGES`), or one the server's
    ``SHOW PRIVILEGES`` does not list (when :func:`~.server.read_server` read them; otherwise the static
    privileges of this module are all the server is assumed to know). *Misplaced*: a global privilege —
    any the server lists beyond the static database-level ones — on a database or table, or a privilege
    a table cannot have. ``ALL`` is valid everywhere.
    """
    found: dict[tuple[Level, str], Refusal] = {}
    for (database, table), names in wanted:
        where = "*.*" if database == "*" else f"{database}.{table}"
        for name in sorted(set(names) - {ALL}):
            key = ((database, table), name)
            only_on = FLAVOUR_ONLY_PRIVILEGES.get(name)
            spelt = server_name(name, server)
            if only_on is not None and only_on != server.flavour:
                message = f"{name} is a {_FLAVOUR_NAMES[only_on]} privilege: {server} has no such privilege"
                found[key] = Refusal("unknown", name, message)
            elif (server.privileges and spelt not in server.privileges) or not is_listable(name):
                message = f"{name} is not a privilege of {server} (not in its SHOW PRIVILEGES)"
                found[key] = Refusal("unknown", name, message)
            elif not server.privileges and name not in PRIVILEGES:
                message = f"{name} is not a static privilege, and the privileges of {server} were not read"
                found[key] = Refusal("unknown", name, message)
            elif database != "*" and table == "*" and spelt not in database_privileges(server):
                message = f'{name} is a global privilege of {server}: only on *.* (database "*"), not {where}'
                found[key] = Refusal("misplaced", name, message)
            elif database != "*" and table != "*" and spelt not in table_privileges(server):
                message = f"{name} cannot be granted on a table of {server} ({where})"
                found[key] = Refusal("misplaced", name, message)
    return [found[key] for key in sorted(found)]
