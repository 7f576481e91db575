"""One account's grants from MariaDB's privilege tables, read by key instead of through information_schema.

To answer for one account, ``information_schema.USER_PRIVILEGES`` and ``SCHEMA_PRIVILEGES`` walk every
account of the server (MariaDB 10.11, server CPU per query: 1.2 ms with 1000 accounts, 4.6 ms with 4000),
so a pass over every resource costs the square of their number. ``mysql.global_priv``, ``mysql.db`` and
``mysql.tables_priv`` are indexed by user (and ``mysql.columns_priv``, ``mysql.procs_priv``).
:func:`read_rows` reads the five in one query and returns the
rows information_schema would have given — or None when it cannot: the account holds global privileges
(their names are only in a bitmask there), or the server is a version whose privilege columns are not
listed here. The caller then reads information_schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from dbuser_operator.mysql.identifiers import SQL
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

Row = tuple[int, str, str, str, str, str | None]
"""rank, schema, table, privilege, is_grantable (as information_schema), and the column (rank 3) or the
routine type (rank 4: its privilege is procs_priv's set, as :func:`~.read.grants_from_rows` reads)."""

# mysql.db's privilege columns, and information_schema's names for them (MariaDB 10.6+, checked on 10.11).
_DATABASE_COLUMNS: Final = (
    ("Select_priv", "SELECT"),
    ("Insert_priv", "INSERT"),
    ("Update_priv", "UPDATE"),
    ("Delete_priv", "DELETE"),
    ("Create_priv", "CREATE"),
    ("Drop_priv", "DROP"),
    ("References_priv", "REFERENCES"),
    ("Index_priv", "INDEX"),
    ("Alter_priv", "ALTER"),
    ("Create_tmp_table_priv", "CREATE TEMPORARY TABLES"),
    ("Lock_tables_priv", "LOCK TABLES"),
    ("Create_view_priv", "CREATE VIEW"),
    ("Show_view_priv", "SHOW VIEW"),
    ("Create_routine_priv", "CREATE ROUTINE"),
    ("Alter_routine_priv", "ALTER ROUTINE"),
    ("Execute_priv", "EXECUTE"),
    ("Event_priv", "EVENT"),
    ("Trigger_priv", "TRIGGER"),
    ("Delete_history_priv", "DELETE HISTORY"),
)
_SHOW_CREATE_ROUTINE: Final = (11, 3, 0)  # adds Show_create_routine_priv (from the documentation)
_KNOWN_VERSIONS: Final = ((10, 6, 0), (12, 0, 0))  # from, up to (not included)

# mysql.tables_priv.Table_priv is a SET of these names; information_schema's differ only here.
_TABLE_NAMES: Final = {"DELETE VERSIONING ROWS": "DELETE HISTORY"}

_GLOBAL, _DATABASE, _TABLE, _COLUMN, _ROUTINE = 0, 1, 2, 3, 4
_USAGE, _GRANT = "USAGE", "GRANT"


def supported(server: ServerInfo) -> bool:
    """Whether :func:`read_rows` knows this server's privilege tables."""
    low, high = _KNOWN_VERSIONS
    return server.flavour == "mariadb" and low <= server.version < high


def _database_columns(server: ServerInfo) -> Sequence[tuple[str, str]]:
    if server.version >= _SHOW_CREATE_ROUTINE:
        return (*_DATABASE_COLUMNS, ("Show_create_routine_priv", "SHOW CREATE ROUTINE"))
    return _DATABASE_COLUMNS


def _statement(user: str, host: str, server: ServerInfo) -> Statement:
    held = ", ".join(f"IF({column} = 'Y', '{name}', NULL)" for column, name in _database_columns(server))
    return Statement(
        "SELECT 0, '*', '*', CAST(JSON_VALUE(Priv, '$.access') AS CHAR CHARACTER SET utf8mb4), 'N', NULL"
        " FROM mysql.global_priv WHERE User = %s AND Host = %s"
        " UNION ALL SELECT 1, Db, '*', CONCAT_WS(',', {held}), Grant_priv, NULL"
        " FROM mysql.db WHERE User = %s AND Host = %s"
        " UNION ALL SELECT 2, Db, Table_name, CONVERT(Table_priv USING utf8mb4), 'N', NULL"
        " FROM mysql.tables_priv WHERE User = %s AND Host = %s"
        " UNION ALL SELECT 3, Db, Table_name, CONVERT(Column_priv USING utf8mb4), 'N', Column_name"
        " FROM mysql.columns_priv WHERE User = %s AND Host = %s"
        " UNION ALL SELECT 4, Db, Routine_name, CONVERT(Proc_priv USING utf8mb4), 'N',"
        " CONVERT(Routine_type USING utf8mb4)"
        " FROM mysql.procs_priv WHERE User = %s AND Host = %s AND Routine_type IN ('PROCEDURE', 'FUNCTION')",
        *(user, host.lower()) * 5,
        held=SQL(held),
    )


async def read_rows(db: Database, user: str, host: str, server: ServerInfo) -> tuple[bool, list[Row]] | None:
    """Whether the account exists, and its database and table grants as information_schema rows (one
    query); None if information_schema must be read instead. ``user`` and ``host`` are validated."""
    rows = await db.fetch(_statement(user, host, server))
    exists, found = False, list[Row]()
    for rank, schema, table, privileges, grant_option, detail in rows:
        if rank == _ROUTINE:
            found.append((_ROUTINE, str(schema), str(table), str(privileges or ""), "NO", str(detail)))
            continue
        names = [name for name in str(privileges or "").split(",") if name]
        if rank == _GLOBAL:
            exists = True
            if int(names[0]) if names else 0:
                return None  # global privileges: only information_schema names them
            continue
        grantable = "YES" if grant_option == "Y" else "NO"
        if rank in (_TABLE, _COLUMN):
            names = [_TABLE_NAMES.get(name.upper(), name.upper()) for name in names]
            grantable = "YES" if _GRANT in names else "NO"
            names = [name for name in names if name != _GRANT]
        column = None if detail is None else str(detail)
        found.extend(
            (int(rank), str(schema), str(table), name, grantable, column) for name in names or [_USAGE]
        )
    return exists, found
