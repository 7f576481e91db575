"""A grant: privileges on one level of the server, wanted (validated) or observed (as the server has it).

A level is global (``*.*``), one database (``db.*``) or one table (``db.table``). Database names are the
databases themselves: ``_`` and ``%`` are literal characters (sent escaped, see
:func:`~.identifiers.grant_level`); a grant made by hand with unescaped wildcards is observed as a *pattern*
level, which no wanted grant can equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from dbuser_operator.mysql.errors import (
    InvalidGrantError,
    PrivilegeMisplacedError,
    PrivilegeUnknownError,
    checked_input,
)
from dbuser_operator.mysql.grants.privileges import (
    ALL,
    COLUMN_PRIVILEGES,
    GLOBAL_ONLY_PRIVILEGES,
    ROUTINE_PRIVILEGES,
    TABLE_PRIVILEGES,
    USAGE,
    Level,
    is_listable,
)
from dbuser_operator.mysql.identifiers import (
    ROUTINE_TYPES,
    InvalidIdentifierError,
    validate_column,
    validate_database,
    validate_privilege_name,
    validate_routine,
    validate_table,
)


def _normalise_name(name: object) -> str:
    """``" create  temporary tables "`` as ``CREATE TEMPORARY TABLES``; ``ALL PRIVILEGES`` as ``ALL``."""
    if not isinstance(name, str):
        raise InvalidGrantError(f"a privilege must be a string, not {type(name).__name__}")
    words = name.upper().split()
    normal = " ".join(words)
    return ALL if normal == "ALL PRIVILEGES" else normal


def _where(database: str, table: str, routine: str = "") -> str:
    where = "*.*" if database == "*" else f"{database}.{table}"
    return f"{routine} {where}" if routine else where


@dataclass(frozen=True)
class Grant:
    """Privileges on one level, and whether they may be passed on (``WITH GRANT OPTION``, per level).

    The constructor checks what a wanted grant may be, raising :class:`~.errors.InvalidGrantError`:
    privilege names of the right shape (:func:`~.identifiers.validate_privilege_name`; whether the server
    has them is :func:`~.privileges.refusals`' question) or :data:`ALL` alone (upper-cased, spaces
    collapsed, ``ALL PRIVILEGES`` read as ``ALL``), valid database and table names (:mod:`.identifiers`),
    static global-only privileges only on ``*.*``, only :data:`TABLE_PRIVILEGES` on a table, no table
    without a database. Grants read from the server are made by :meth:`observed`, which accepts whatever
    the server reports.

    ``columns``: the privileges are on these columns of ``table`` only (:data:`COLUMN_PRIVILEGES`, no
    grant option). ``routine``: ``PROCEDURE`` or ``FUNCTION``, whose name is ``table``
    (:data:`ROUTINE_PRIVILEGES`, or ``ALL``). Column and routine names are case-insensitive on the servers:
    they are kept in lower case.

    ``pattern`` marks a database-level grant whose database is a wildcard pattern (made by hand), kept as
    the server spells it; wanted grants never have it.
    """

    privileges: frozenset[str]
    database: str
    table: str = "*"
    grant_option: bool = False
    pattern: bool = False
    columns: frozenset[str] = frozenset()
    routine: str = ""

    def __post_init__(self) -> None:
        privileges: object = self.privileges
        if isinstance(privileges, str) or not isinstance(privileges, Iterable):
            raise InvalidGrantError("privileges must be a set of privilege names, not a single string")
        names = frozenset(_normalise_name(name) for name in privileges)
        object.__setattr__(self, "privileges", names)
        columns: object = self.columns
        if isinstance(columns, str) or not isinstance(columns, Iterable):
            raise InvalidGrantError("columns must be a set of column names, not a single string")
        with checked_input():
            validate_database(self.database)
            if self.routine:
                validate_routine(self.table)
            else:
                validate_table(self.table)
            object.__setattr__(self, "columns", frozenset(validate_column(c).lower() for c in columns))
        if self.routine:
            object.__setattr__(self, "table", self.table.lower())
        where = _where(self.database, self.table, self.routine)
        if type(self.grant_option) is not bool or type(self.pattern) is not bool:
            raise InvalidGrantError(f"grant on {where}: grant_option and pattern must be booleans")
        if self.pattern:
            raise InvalidGrantError(f"grant on {where}: database wildcard patterns cannot be granted")
        if self.database == "*" and self.table != "*":
            raise InvalidGrantError(f'grant on {where}: a table grant needs a database, not "*"')
        if not names:
            raise InvalidGrantError(f"grant on {where}: no privileges")
        self._check_level(where)
        for name in sorted(names):
            self._check_privilege(name, where)
        if ALL in names and len(names) > 1:
            raise InvalidGrantError(
                f"grant on {where}: ALL stands for every privilege of its level: list it alone"
            )

    def _check_level(self, where: str) -> None:
        if self.routine and self.routine not in ROUTINE_TYPES:
            raise InvalidGrantError(f"grant on {where}: a routine is a PROCEDURE or a FUNCTION")
        if self.routine and (self.database == "*" or self.columns):
            raise InvalidGrantError(f"grant on {where}: a routine grant names a database and no columns")
        if self.columns and (self.table == "*" or self.grant_option):
            raise InvalidGrantError(
                f"grant on {where}: a column grant names a table, and has no grant option"
            )

    def _check_privilege(self, name: str, where: str) -> None:
        if not is_listable(name):
            raise InvalidGrantError(
                f"grant on {where}: {name} is not a privilege to list"
                + (" (use grant_option)" if name == "GRANT OPTION" else "")
            )
        if name != ALL:
            try:
                validate_privilege_name(name)
            except InvalidIdentifierError as exc:
                raise PrivilegeUnknownError(f"grant on {where}: {exc}") from None
        allowed = _allowed(self)
        if name in GLOBAL_ONLY_PRIVILEGES and self.database != "*":
            raise PrivilegeMisplacedError(
                f'grant on {where}: {name} can only be granted on *.* (database "*")'
            )
        if allowed is not None and name not in allowed:
            raise PrivilegeMisplacedError(
                f"grant on {where}: {name} cannot be granted on {_LEVEL_NAMES[self.kind]} (allowed: "
                + ", ".join(sorted(allowed))
                + ")"
            )

    @property
    def kind(self) -> Kind:
        """``global``, ``database``, ``table``, ``column`` or ``routine``."""
        if self.routine:
            return "routine"
        if self.columns:
            return "column"
        return "global" if self.database == "*" else "database" if self.table == "*" else "table"

    @classmethod
    def observed(
        cls,
        privileges: Iterable[str],
        database: str,
        table: str = "*",
        grant_option: bool = False,
        *,
        pattern: bool = False,
        columns: Iterable[str] = (),
        routine: str = "",
    ) -> Grant:
        """A grant as the server reports it: any privilege name the server has, any object name.

        Names are checked only for what quoting needs (privilege names of upper-case words; object names
        non-empty, without NUL). ``privileges`` may be empty when only the grant option is held.
        """
        names = frozenset(privileges)
        try:
            for name in names:
                validate_privilege_name(name)
        except InvalidIdentifierError as exc:
            raise InvalidGrantError(f"the server reported an unexpected privilege name: {exc}") from None
        column_names = frozenset(str(column).lower() for column in columns)
        for name in (database, table, *column_names):
            if not isinstance(name, str) or not name or "\0" in name:
                raise InvalidGrantError(f"the server reported an unexpected object name {name!a}")
        if (database == "*" or pattern) and table != "*":
            raise InvalidGrantError(f"the server reported an unexpected grant level {database!a}.{table!a}")
        if routine not in ("", *ROUTINE_TYPES) or ((column_names or routine) and (pattern or table == "*")):
            raise InvalidGrantError(f"the server reported an unexpected grant level {database!a}.{table!a}")
        grant = object.__new__(cls)
        for field, value in (
            ("privileges", names),
            ("database", database),
            ("table", table.lower() if routine else table),
            ("grant_option", bool(grant_option)),
            ("pattern", pattern),
            ("columns", column_names),
            ("routine", routine),
        ):
            object.__setattr__(grant, field, value)
        return grant

    @property
    def level(self) -> Level:
        """``(database, table)`` (for a routine: its name as ``table``)."""
        return (self.database, self.table)

    def __str__(self) -> str:
        option = " WITH GRANT OPTION" if self.grant_option else ""
        privileges = ", ".join(sorted(self.privileges)) or USAGE
        key = Key.of(self)
        if self.columns:
            privileges += " (" + ", ".join(sorted(self.columns)) + ")"
            key = Key(2, self.database, self.table, False)  # the columns' table
        return f"{privileges} ON {describe(key)}{option}"


Kind = Literal["global", "database", "table", "column", "routine"]
_LEVEL_NAMES: Final[dict[Kind, str]] = {
    "global": "*.*",
    "database": "a database",
    "table": "a table",
    "column": "columns",
    "routine": "a routine",
}


def _allowed(grant: Grant) -> frozenset[str] | None:
    """The privileges the grant's level allows besides ALL, when it is narrower than a database."""
    kind = grant.kind
    if kind == "table":
        return TABLE_PRIVILEGES | {ALL}
    if kind == "column":
        return COLUMN_PRIVILEGES
    if kind == "routine":
        return ROUTINE_PRIVILEGES | {ALL}
    return None


@dataclass(frozen=True, order=True)
class Key:
    """A level as the planner orders them: global, databases, tables, columns, routines, each by name.

    Grants on several columns are one level per column: ``column`` names it. A routine's name is ``table``
    and its type ``routine``.
    """

    rank: int  # 0 global, 1 database, 2 table, 3 column, 4 routine
    database: str
    table: str
    pattern: bool
    column: str = ""
    routine: str = ""

    @classmethod
    def of(cls, grant: Grant, column: str = "") -> Key:
        """The level of ``grant`` (of one of its columns, for a column grant)."""
        if grant.routine:
            return cls(ROUTINE_RANK, grant.database, grant.table, False, routine=grant.routine)
        if grant.columns:
            return cls(COLUMN_RANK, grant.database, grant.table, False, column=column)
        rank = 0 if grant.database == "*" else 1 if grant.table == "*" else 2
        return cls(rank, grant.database, grant.table, grant.pattern)

    @property
    def level(self) -> Level:
        return (self.database, self.table)


COLUMN_RANK: Final = 3
ROUTINE_RANK: Final = 4


def levels_of(grant: Grant) -> list[Key]:
    """The levels ``grant`` covers: one per column for a column grant, else one."""
    if grant.columns:
        return [Key.of(grant, column) for column in sorted(grant.columns)]
    return [Key.of(grant)]


def describe(key: Key) -> str:
    """The level for people: ``*.*``, ```app_db`.*``, ```app`.`t```, ```app_%`.* (wildcard pattern)``,
    ```app`.`t`.`col```, ``PROCEDURE `app`.`p```."""
    if key.rank == 0:
        return "*.*"
    name = "`" + key.database.replace("`", "``") + "`"
    if key.rank == ROUTINE_RANK:
        return f"{key.routine} {name}.`" + key.table.replace("`", "``") + "`"
    if key.rank == COLUMN_RANK:
        return name + ".`" + key.table.replace("`", "``") + "`.`" + key.column.replace("`", "``") + "`"
    if key.rank == 2:
        return name + ".`" + key.table.replace("`", "``") + "`"
    return name + ".*" + (" (wildcard pattern)" if key.pattern else "")
