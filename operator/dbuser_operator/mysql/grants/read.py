"""Reading an account's grants from the server: structured rows of the grant tables, never SHOW GRANTS text.

:func:`read_account` reads whether the account exists and its global, database and table grants from
``information_schema`` (``USER_PRIVILEGES`` — MySQL's dynamic privileges included —, ``SCHEMA_PRIVILEGES``,
``TABLE_PRIVILEGES``: the same shape on MySQL and MariaDB), or on MariaDB from the privilege tables by key
(:mod:`.privilege_tables`). Database-level names are read back from the server's escaped form
(``app\\_db`` is the database ``app_db``; a name with an unescaped wildcard is a *pattern* level).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from dbuser_operator.mysql.errors import checked_input
from dbuser_operator.mysql.grants import privilege_tables
from dbuser_operator.mysql.grants.model import COLUMN_RANK, ROUTINE_RANK, Grant
from dbuser_operator.mysql.grants.privileges import USAGE
from dbuser_operator.mysql.identifiers import validate_grantee_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

_GLOBAL_RANK, _DATABASE_RANK, _TABLE_RANK = 0, 1, 2


def grantee(user: str, host: str) -> str:
    """The account as information_schema's GRANTEE column spells it: ``'user'@'host'`` (host lower-cased,
    as the servers store it)."""
    return f"'{user}'@'{host.lower()}'"


def split_grantee(value: str) -> tuple[str, str] | None:
    """``("user", "host")`` from ``'user'@'host'``; None for anything else."""
    if len(value) < 5 or value[0] != "'" or value[-1] != "'" or "'@'" not in value:
        return None
    user, host = value[1:-1].split("'@'", 1)
    return user, host


def is_grantee(value: str, user: str, host: str) -> bool:
    """Whether a GRANTEE value names exactly this account. information_schema compares GRANTEE without
    regard to case (``utf8mb3_general_ci``), but user names are case-sensitive; host names are not."""
    parts = split_grantee(value)
    return parts is not None and parts[0] == user and parts[1].lower() == host.lower()


def parse_schema(raw: str) -> tuple[str, bool]:
    r"""``(database, pattern)`` from a database-level grant's stored name: ``app\_db`` is the database
    ``app_db``; a name with an unescaped ``_`` or ``%`` (or another backslash) is a wildcard pattern,
    returned as it is."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw) and raw[i + 1] in "_%":
            out.append(raw[i + 1])
            i += 2
            continue
        if char in "_%\\":
            return raw, True
        out.append(char)
        i += 1
    return "".join(out), False


def grants_from_rows(rows: Iterable[Sequence[object]]) -> frozenset[Grant]:
    """Grants from ``(rank, schema, table, privilege, is_grantable[, detail])`` rows of the privilege tables:
    one per level, ``USAGE`` dropped, the grant option per level.

    Ranks: 0 global, 1 database, 2 table, 3 column (``detail``: the column), 4 routine (``table``: its name,
    ``detail``: PROCEDURE or FUNCTION, ``privilege``: the comma-separated set of ``mysql.procs_priv``,
    ``Grant`` in it meaning the grant option).
    """
    levels: dict[tuple[int, str, str, str], tuple[set[str], bool]] = {}
    for row in rows:
        rank, schema, table, privilege, grantable = (
            int(str(row[0])),
            str(row[1]),
            str(row[2]),
            row[3],
            row[4],
        )
        detail = str(row[5]) if len(row) > _DETAIL and row[_DETAIL] is not None else ""
        names = {str(privilege)}
        if rank == ROUTINE_RANK:
            table = table.lower()
            names = {" ".join(name.upper().split()) for name in str(privilege or "").split(",") if name}
            grantable = "YES" if "GRANT" in names else grantable
            names.discard("GRANT")
        key = (rank, schema, table, detail)
        held, option = levels.setdefault(key, (set(), False))
        held.update(names - {USAGE})
        levels[key] = (held, option or grantable == "YES")
    grants = set()
    for (rank, schema, table, detail), (held, option) in levels.items():
        if not held and not option:
            continue  # USAGE alone: no privilege at all
        if rank == _GLOBAL_RANK:
            grants.add(Grant.observed(held, "*", "*", option))
        elif rank == _DATABASE_RANK:
            database, pattern = parse_schema(schema)
            grants.add(Grant.observed(held, database, "*", option, pattern=pattern))
        elif rank == COLUMN_RANK:
            grants.add(Grant.observed(held, schema, table, option, columns=(detail,)))
        elif rank == ROUTINE_RANK:
            grants.add(Grant.observed(held, schema, table, option, routine=detail))
        else:
            grants.add(Grant.observed(held, schema, table, option))
    return frozenset(grants)


_DETAIL: Final = 5
_ACCOUNT_RANK: Final = 9  # the row that says the account exists

# Routines' privileges are in mysql.procs_priv only (information_schema has no view of them); its strings
# are converted to utf8mb4, the union's character set, so that no collations are mixed. MariaDB's
# packages (routine types PACKAGE, PACKAGE BODY) are not managed.
_READ_GRANTS: Final = (
    "SELECT GRANTEE, 0, '*', '*', PRIVILEGE_TYPE, IS_GRANTABLE, NULL"
    " FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %s"
    " UNION ALL SELECT GRANTEE, 1, TABLE_SCHEMA, '*', PRIVILEGE_TYPE, IS_GRANTABLE, NULL"
    " FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s"
    " UNION ALL SELECT GRANTEE, 2, TABLE_SCHEMA, TABLE_NAME, PRIVILEGE_TYPE, IS_GRANTABLE, NULL"
    " FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = %s"
    " UNION ALL SELECT GRANTEE, 3, TABLE_SCHEMA, TABLE_NAME, PRIVILEGE_TYPE, IS_GRANTABLE, COLUMN_NAME"
    " FROM information_schema.COLUMN_PRIVILEGES WHERE GRANTEE = %s"
    " UNION ALL SELECT NULL, 4, CONVERT(Db USING utf8mb4), CONVERT(Routine_name USING utf8mb4),"
    " CONVERT(Proc_priv USING utf8mb4), 'NO', CONVERT(Routine_type USING utf8mb4)"
    " FROM mysql.procs_priv WHERE User = %s AND Host = %s AND Routine_type IN ('PROCEDURE', 'FUNCTION')"
    # The account's own row, which says it exists: NULL, not a string, so that no collations are mixed.
    " UNION ALL SELECT NULL, 9, '*', '*', 'USAGE', 'NO', NULL FROM mysql.user WHERE User = %s AND Host = %s"
)


async def read_account(
    db: Database, user: str, host: str, server: ServerInfo | None = None
) -> tuple[bool, set[Grant]]:
    """Whether the account exists, and its grants (one query; two when the privilege tables of ``server``
    are read first and the account turns out to hold global privileges)."""
    with checked_input():
        who = grantee(validate_user(user), validate_grantee_host(host))
    if server is not None and privilege_tables.supported(server):
        read = await privilege_tables.read_rows(db, user, host, server)
        if read is not None:
            return read[0], set(grants_from_rows(read[1]))
    statement = Statement(_READ_GRANTS, who, who, who, who, user, host.lower(), user, host.lower())
    rows = await db.fetch(statement)
    exists = any(row[1] == _ACCOUNT_RANK for row in rows)
    mine = (
        row[1:]
        for row in rows
        if row[1] != _ACCOUNT_RANK and (row[1] == ROUTINE_RANK or is_grantee(str(row[0]), user, host))
    )
    return exists, set(grants_from_rows(mine))


async def read_grants(db: Database, user: str, host: str, server: ServerInfo | None = None) -> set[Grant]:
    """The account's global, database, table, column and routine grants, one per level (none if no
    account). With
    ``server``, MariaDB's privilege tables are read by key where they can be (:mod:`.privilege_tables`)."""
    _, grants = await read_account(db, user, host, server)
    return grants
