"""A grant: privileges on one level of the server, wanted (validated) or observed (as the server has it).

A level is global (``*.*``), one database (``db.*``) or one table (``db.table``). Database names are the
databases themselves: ``_`` and ``%`` are literal characters (sent escaped, see
:func:`~.identifiers.grant_level`); a grant made by hand with unescaped wildcards is observed as a *pattern*
level, which no wanted grant can equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dbuser_operator.mysql.errors import (
    InvalidGrantError,
    PrivilegeMisplacedError,
    PrivilegeUnknownError,
    checked_input,
)
from dbuser_operator.mysql.identifiers import (
    InvalidIdentifierError,
    validate_database,
    validate_privilege_name,
    validate_table,
)
from dbuser_operator.mysql.privileges import (
    ALL,
    GLOBAL_ONLY_PRIVILEGES,
    TABLE_PRIVILEGES,
    USAGE,
    Level,
    is_listable,
)


def _normalise_name(name: object) -> str:
    """``" create  temporary tables "`` as ``CREATE TEMPORARY TABLES``; ``ALL PRIVILEGES`` as ``ALL``."""
    if not isinstance(name, str):
        raise InvalidGrantError(f"a privilege must be a string, not {type(name).__name__}")
    words = name.upper().split()
    normal = " ".join(words)
    return ALL if normal == "ALL PRIVILEGES" else normal


def _where(database: str, table: str) -> str:
    return "*.*" if database == "*" else f"{database}.{table}"


@dataclass(frozen=True)
class Grant:
    """Privileges on one level, and whether they may be passed on (``WITH GRANT OPTION``, per level).

    The constructor checks what a wanted grant may be, raising :class:`~.errors.InvalidGrantError`:
    privilege names of the right shape (:func:`~.identifiers.validate_privilege_name`; whether the server
    has them is :func:`~.privileges.refusals`' question) or :data:`ALL` alone (upper-cased, spaces
    collapsed, ``ALL PRIVILEGES`` read as ``ALL``), valid database and table names (:mod:`.identifiers`),
    static global-only privileges only on ``*.*``, only :data:`TABLE_PRIVILEGES` on a table, no table
    without a database.
    Grants read from the server are made by :meth:`observed`, which accepts whatever the server reports.

    ``pattern`` marks a database-level grant whose database is a wildcard pattern (made by hand), kept as
    the server spells it; wanted grants never have it.
    """

    privileges: frozenset[str]
    database: str
    table: str = "*"
    grant_option: bool = False
    pattern: bool = False

    def __post_init__(self) -> None:
        privileges: object = self.privileges
        if isinstance(privileges, str) or not isinstance(privileges, Iterable):
            raise InvalidGrantError("privileges must be a set of privilege names, not a single string")
        names = frozenset(_normalise_name(name) for name in privileges)
        object.__setattr__(self, "privileges", names)
        with checked_input():
            validate_database(self.database)
            validate_table(self.table)
        where = _where(self.database, self.table)
        if type(self.grant_option) is not bool or type(self.pattern) is not bool:
            raise InvalidGrantError(f"grant on {where}: grant_option and pattern must be booleans")
        if self.pattern:
            raise InvalidGrantError(f"grant on {where}: database wildcard patterns cannot be granted")
        if self.database == "*" and self.table != "*":
            raise InvalidGrantError(f'grant on {where}: a table grant needs a database, not "*"')
        if not names:
            raise InvalidGrantError(f"grant on {where}: no privileges")
        for name in sorted(names):
            self._check_privilege(name, where)
        if ALL in names and len(names) > 1:
            raise InvalidGrantError(
                f"grant on {where}: ALL stands for every privilege of its level: list it alone"
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
        if name in GLOBAL_ONLY_PRIVILEGES and self.database != "*":
            raise PrivilegeMisplacedError(
                f'grant on {where}: {name} can only be granted on *.* (database "*")'
            )
        if self.table != "*" and name != ALL and name not in TABLE_PRIVILEGES:
            raise PrivilegeMisplacedError(
                f"grant on {where}: {name} cannot be granted on a table (allowed: ALL, "
                + ", ".join(sorted(TABLE_PRIVILEGES))
                + ")"
            )

    @classmethod
    def observed(
        cls,
        privileges: Iterable[str],
        database: str,
        table: str = "*",
        grant_option: bool = False,
        *,
        pattern: bool = False,
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
        for name in (database, table):
            if not isinstance(name, str) or not name or "\0" in name:
                raise InvalidGrantError(f"the server reported an unexpected object name {name!a}")
        if (database == "*" or pattern) and table != "*":
            raise InvalidGrantError(f"the server reported an unexpected grant level {database!a}.{table!a}")
        grant = object.__new__(cls)
        for field, value in (
            ("privileges", names),
            ("database", database),
            ("table", table),
            ("grant_option", bool(grant_option)),
            ("pattern", pattern),
        ):
            object.__setattr__(grant, field, value)
        return grant

    @property
    def level(self) -> Level:
        """``(database, table)``."""
        return (self.database, self.table)

    def __str__(self) -> str:
        option = " WITH GRANT OPTION" if self.grant_option else ""
        privileges = ", ".join(sorted(self.privileges)) or USAGE
        return f"{privileges} ON {describe(Key.of(self))}{option}"


@dataclass(frozen=True, order=True)
class Key:
    """A level as the planner orders them: global, then databases, then tables, each by name."""

    rank: int  # 0 global, 1 database, 2 table
    database: str
    table: str
    pattern: bool

    @classmethod
    def of(cls, grant: Grant) -> Key:
        rank = 0 if grant.database == "*" else 1 if grant.table == "*" else 2
        return cls(rank, grant.database, grant.table, grant.pattern)

    @property
    def level(self) -> Level:
        return (self.database, self.table)


def describe(key: Key) -> str:
    """The level for people: ``*.*``, ```app_db`.*``, ```app`.`t```, ```app_%`.* (wildcard pattern)``."""
    if key.rank == 0:
        return "*.*"
    name = "`" + key.database.replace("`", "``") + "`"
    if key.rank == 2:
        return name + ".`" + key.table.replace("`", "``") + "`"
    return name + ".*" + (" (wildcard pattern)" if key.pattern else "")
