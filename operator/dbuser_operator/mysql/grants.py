"""Grants: what an account may do, read from the server, compared with what is wanted, and put right.

A :class:`Grant` gives privileges on one *level*: global (``*.*``), one database (``db.*``) or one table
(``db.table``); column and routine levels are not managed. :func:`read_grants` reads the account's grants
from ``information_schema`` (``USER_PRIVILEGES``, ``SCHEMA_PRIVILEGES``, ``TABLE_PRIVILEGES``: structured,
and the same on MySQL and MariaDB), or on MariaDB from the privilege tables by key (:mod:`.grant_tables`);
:func:`plan` computes the fewest ``GRANT``/``REVOKE`` statements that make them equal to the wanted ones,
level by level, and :func:`apply` runs them. A level that is already
right yields no statement; privileges granted by hand, on a wanted level or another one, are revoked.

Database names: at the database level the servers read ``_`` and ``%`` of ``GRANT ... ON db.*`` as
wildcards, so the names are always sent escaped (```app\\_db`.*``), and read back from the server's escaped
form (``SCHEMA_PRIVILEGES.TABLE_SCHEMA`` is ``app\\_db``, as stored in ``mysql.db``). A grant made by hand
with unescaped wildcards (``GRANT ... ON app_db.*`` matches ``appXdb`` too) is read back as a *pattern*
level, ``Grant(..., pattern=True)``, which no wanted grant can equal: it is revoked as it is spelt.

``ALL`` stands for every privilege of its level on the server at hand (:func:`expand_all`): it is granted
as that explicit list, so that reading back gives the same set and a second pass changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from dbuser_operator.mysql import grant_tables
from dbuser_operator.mysql.connection import Database
from dbuser_operator.mysql.errors import (
    InvalidAccountError,
    InvalidGrantError,
    MySQLError,
    TableNotFoundError,
    checked_input,
)
from dbuser_operator.mysql.identifiers import (
    OBJECT_MAX_LENGTH,
    InvalidIdentifierError,
    grant_level,
    grantee_account,
    privilege_list,
    validate_database,
    validate_grantee_host,
    validate_privilege_name,
    validate_table,
    validate_user,
)
from dbuser_operator.mysql.server import Flavour, ServerInfo
from dbuser_operator.mysql.statement import Statement

ALL: Final = "ALL"
"""Every privilege of the grant's level (``ALL PRIVILEGES``), as :func:`expand_all` lists it."""

_COMMON_DATABASE: Final = frozenset(
    {
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
    }
)
_COMMON_GLOBAL_ONLY: Final = frozenset(
    {
        "CREATE TABLESPACE",
        "CREATE USER",
        "FILE",
        "PROCESS",
        "RELOAD",
        "REPLICATION CLIENT",
        "REPLICATION SLAVE",
        "SHOW DATABASES",
        "SHUTDOWN",
        "SUPER",
    }
)
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

DATABASE_PRIVILEGES: Final = _COMMON_DATABASE | {"DELETE HISTORY"}
"""The static privileges that may be granted on a database (and globally), on one flavour at least."""

GLOBAL_ONLY_PRIVILEGES: Final = _COMMON_GLOBAL_ONLY | {
    "BINLOG MONITOR",
    "SLAVE MONITOR",
    "CREATE ROLE",
    "DROP ROLE",
}
"""The static privileges that exist only at the global level (``*.*``)."""

TABLE_PRIVILEGES: Final = _COMMON_TABLE | {"DELETE HISTORY"}
"""The privileges that may be granted on one table (routines, events, temporary tables and locks may not)."""

PRIVILEGES: Final = DATABASE_PRIVILEGES | GLOBAL_ONLY_PRIVILEGES
"""Every privilege name a wanted :class:`Grant` may list, besides :data:`ALL`."""

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

_USAGE: Final = (
    "USAGE"  # "no privilege": information_schema's row for an account without any (or only GRANT OPTION)
)

Level = tuple[str, str]
"""``(database, table)``: ``("*", "*")`` global, ``(db, "*")`` a database, ``(db, table)`` a table."""

GLOBAL: Final[Level] = ("*", "*")


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
    privilege names from :data:`PRIVILEGES` or :data:`ALL` alone (upper-cased, spaces collapsed,
    ``ALL PRIVILEGES`` read as ``ALL``), valid database and table names (:mod:`.identifiers`), global-only
    privileges only on ``*.*``, only :data:`TABLE_PRIVILEGES` on a table, no table without a database.
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
        if name in {"GRANT OPTION", _USAGE}:
            raise InvalidGrantError(
                f"grant on {where}: {name} is not a privilege to list"
                + (" (use grant_option)" if name == "GRANT OPTION" else "")
            )
        if name != ALL and name not in PRIVILEGES:
            raise InvalidGrantError(
                f"grant on {where}: unknown privilege {name[:OBJECT_MAX_LENGTH]!a} (allowed: ALL, "
                + ", ".join(sorted(PRIVILEGES))
                + ")"
            )
        if name in GLOBAL_ONLY_PRIVILEGES and self.database != "*":
            raise InvalidGrantError(f'grant on {where}: {name} can only be granted on *.* (database "*")')
        if self.table != "*" and name != ALL and name not in TABLE_PRIVILEGES:
            raise InvalidGrantError(
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
        privileges = ", ".join(sorted(self.privileges)) or _USAGE
        return f"{privileges} ON {_describe(_Key.of(self))}{option}"


@dataclass(frozen=True, order=True)
class _Key:
    """A level as the planner orders them: global, then databases, then tables, each by name."""

    rank: int  # 0 global, 1 database, 2 table
    database: str
    table: str
    pattern: bool

    @classmethod
    def of(cls, grant: Grant) -> _Key:
        rank = 0 if grant.database == "*" else 1 if grant.table == "*" else 2
        return cls(rank, grant.database, grant.table, grant.pattern)

    @property
    def level(self) -> Level:
        return (self.database, self.table)


def _describe(key: _Key) -> str:
    """The level for people: ``*.*``, ```app_db`.*``, ```app`.`t```, ```app_%`.* (wildcard pattern)``."""
    if key.rank == 0:
        return "*.*"
    name = "`" + key.database.replace("`", "``") + "`"
    if key.rank == 2:
        return name + ".`" + key.table.replace("`", "``") + "`"
    return name + ".*" + (" (wildcard pattern)" if key.pattern else "")


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


def server_privileges(grant: Grant, server: ServerInfo) -> frozenset[str]:
    """The privileges of ``grant`` as the server reports them: ALL expanded, old names in the server's."""
    if ALL in grant.privileges:
        return expand_all(grant.level, server)
    if server.flavour == "mariadb":
        return frozenset(_MARIADB_ALIASES.get(name, name) for name in grant.privileges)
    return grant.privileges


def unavailable(desired: Iterable[Grant], server: ServerInfo) -> list[str]:
    """Why the wanted grants cannot be given on this server, one sentence per privilege it lacks: a
    privilege of the other flavour (:data:`FLAVOUR_ONLY_PRIVILEGES`), or one that the server's
    ``SHOW PRIVILEGES`` does not list (when :func:`~.server.read_server` read them). Empty when all exist."""
    problems: dict[str, str] = {}
    for grant in desired:
        if ALL in grant.privileges:
            continue
        for name in sorted(grant.privileges):
            only_on = FLAVOUR_ONLY_PRIVILEGES.get(name)
            spelt = _MARIADB_ALIASES.get(name, name) if server.flavour == "mariadb" else name
            if only_on is not None and only_on != server.flavour:
                problems[name] = (
                    f"{name} is a {_FLAVOUR_NAMES[only_on]} privilege: {server} has no such privilege"
                )
            elif server.privileges and spelt not in server.privileges:
                problems[name] = f"{name} is not a privilege of {server} (not in its SHOW PRIVILEGES)"
    return [problems[name] for name in sorted(problems)]


_FLAVOUR_NAMES: Final[Mapping[Flavour, str]] = {"mysql": "MySQL-only", "mariadb": "MariaDB-only"}


def _by_level(grants: Iterable[Grant], server: ServerInfo | None) -> dict[_Key, tuple[frozenset[str], bool]]:
    """One entry per level: privileges united, grant option if any grant of the level has it."""
    levels: dict[_Key, tuple[frozenset[str], bool]] = {}
    for grant in grants:
        key = _Key.of(grant)
        privileges = server_privileges(grant, server) if server is not None else grant.privileges
        held, option = levels.get(key, (frozenset(), False))
        levels[key] = (held | privileges, option or grant.grant_option)
    return levels


def normalise(grants: Iterable[Grant], server: ServerInfo) -> frozenset[Grant]:
    """``grants`` as :func:`read_grants` would report them once applied: one grant per level, ALL expanded."""
    return frozenset(
        Grant.observed(privileges, key.database, key.table, option, pattern=key.pattern)
        for key, (privileges, option) in _by_level(grants, server).items()
    )


@dataclass(frozen=True)
class Change:
    """One GRANT or REVOKE on one level: ``privileges`` (sorted), or the grant option alone."""

    action: Literal["grant", "revoke", "revoke grant option"]
    key: _Key
    privileges: tuple[str, ...] = ()
    with_grant_option: bool = False  # for "grant": WITH GRANT OPTION

    def statement(self, user: str, host: str) -> Statement:
        """The statement for the account ``'user'@'host'``."""
        level = grant_level(self.key.database, self.key.table, pattern=self.key.pattern)
        who = grantee_account(user, host)
        if self.action == "revoke grant option":
            return Statement("REVOKE GRANT OPTION ON {level} FROM {account}", level=level, account=who)
        privileges = privilege_list(self.privileges or (_USAGE,))
        if self.action == "revoke":
            return Statement(
                "REVOKE {privileges} ON {level} FROM {account}",
                privileges=privileges,
                level=level,
                account=who,
            )
        if self.with_grant_option:
            return Statement(
                "GRANT {privileges} ON {level} TO {account} WITH GRANT OPTION",
                privileges=privileges,
                level=level,
                account=who,
            )
        return Statement(
            "GRANT {privileges} ON {level} TO {account}", privileges=privileges, level=level, account=who
        )

    def __str__(self) -> str:
        where = _describe(self.key)
        if self.action == "revoke grant option":
            return f"revoked GRANT OPTION ON {where}"
        names = ", ".join(self.privileges)
        if self.action == "revoke":
            return f"revoked {names} ON {where}"
        if not self.privileges:
            return f"granted GRANT OPTION ON {where}"
        return f"granted {names} ON {where}" + (" WITH GRANT OPTION" if self.with_grant_option else "")


def changes(current: Iterable[Grant], desired: Iterable[Grant], server: ServerInfo) -> list[Change]:
    """The changes that make ``current`` (as read) equal to ``desired``, level by level, in a fixed order.

    Per level, at most: a REVOKE of the privileges held but not wanted, a REVOKE of the grant option, and a
    GRANT of the privileges wanted but missing (``WITH GRANT OPTION`` when that is missing too). A level
    that is already right gives nothing; a level held but not wanted at all is revoked entirely.
    """
    have = _by_level(current, None)
    want = _by_level(desired, server)
    result: list[Change] = []
    for key in sorted(have.keys() | want.keys()):
        held, held_option = have.get(key, (frozenset(), False))
        wanted, wanted_option = want.get(key, (frozenset(), False))
        extra = held - wanted
        if extra:
            result.append(Change("revoke", key, tuple(sorted(extra))))
        if held_option and not wanted_option:
            result.append(Change("revoke grant option", key))
        missing = wanted - held
        add_option = wanted_option and not held_option
        if missing or add_option:
            result.append(Change("grant", key, tuple(sorted(missing)), with_grant_option=add_option))
    return result


def plan(
    current: Iterable[Grant], desired: Iterable[Grant], server: ServerInfo, *, user: str, host: str
) -> list[Statement]:
    """The GRANT/REVOKE statements for ``'user'@'host'`` that make ``current`` equal ``desired`` (see
    :func:`changes`); none when they are equal already."""
    with checked_input():
        validate_user(user)
        validate_grantee_host(host)
    return [change.statement(user, host) for change in changes(current, desired, server)]


# --- Reading -------------------------------------------------------------------------------------------

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
    """Grants from ``(rank, schema, table, privilege, is_grantable)`` rows of the privilege tables:
    one per level, ``USAGE`` dropped, the grant option per level."""
    levels: dict[tuple[int, str, str], tuple[set[str], bool]] = {}
    for rank, schema, table, privilege, grantable in rows:
        key = (int(str(rank)), str(schema), str(table))
        held, option = levels.setdefault(key, (set(), False))
        if privilege != _USAGE:
            held.add(str(privilege))
        levels[key] = (held, option or grantable == "YES")
    grants = set()
    for (rank, schema, table), (held, option) in levels.items():
        if not held and not option:
            continue  # USAGE alone: no privilege at all
        if rank == _GLOBAL_RANK:
            grants.add(Grant.observed(held, "*", "*", option))
        elif rank == _DATABASE_RANK:
            database, pattern = parse_schema(schema)
            grants.add(Grant.observed(held, database, "*", option, pattern=pattern))
        else:
            grants.add(Grant.observed(held, schema, table, option))
    return frozenset(grants)


_ACCOUNT_RANK: Final = 9  # the row that says the account exists

_READ_GRANTS: Final = (
    "SELECT GRANTEE, 0, '*', '*', PRIVILEGE_TYPE, IS_GRANTABLE"
    " FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %s"
    " UNION ALL SELECT GRANTEE, 1, TABLE_SCHEMA, '*', PRIVILEGE_TYPE, IS_GRANTABLE"
    " FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = %s"
    " UNION ALL SELECT GRANTEE, 2, TABLE_SCHEMA, TABLE_NAME, PRIVILEGE_TYPE, IS_GRANTABLE"
    " FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = %s"
    # The account's own row, which says it exists: NULL, not a string, so that no collations are mixed.
    " UNION ALL SELECT NULL, 9, '*', '*', 'USAGE', 'NO' FROM mysql.user WHERE User = %s AND Host = %s"
)


async def _read(
    db: Database, user: str, host: str, server: ServerInfo | None = None
) -> tuple[bool, set[Grant]]:
    """Whether the account exists, and its grants (one query; two when the privilege tables of ``server``
    are read first and the account turns out to hold global privileges)."""
    with checked_input():
        who = grantee(validate_user(user), validate_grantee_host(host))
    if server is not None and grant_tables.supported(server):
        read = await grant_tables.read_rows(db, user, host, server)
        if read is not None:
            return read[0], set(grants_from_rows(read[1]))
    statement = Statement(_READ_GRANTS, who, who, who, user, host.lower())
    rows = await db.fetch(statement)
    exists = any(row[1] == _ACCOUNT_RANK for row in rows)
    mine = (row[1:] for row in rows if row[1] != _ACCOUNT_RANK and is_grantee(str(row[0]), user, host))
    return exists, set(grants_from_rows(mine))


async def read_grants(db: Database, user: str, host: str, server: ServerInfo | None = None) -> set[Grant]:
    """The account's global, database and table grants, one per level (none if no account). With
    ``server``, MariaDB's privilege tables are read by key where they can be (:mod:`.grant_tables`)."""
    _, grants = await _read(db, user, host, server)
    return grants


async def apply(
    db: Database,
    user: str,
    host: str,
    desired: Iterable[Grant],
    server: ServerInfo,
    *,
    current: Iterable[Grant] | None = None,
) -> list[str]:
    """Make the account's grants equal ``desired``: read them, plan, run the statements in order.

    Returns what changed, for people (``["granted INSERT, SELECT ON `app`.*", "revoked DELETE ON
    `app`.*"]``); empty, with nothing sent but the read, when they were equal. A missing account raises
    :class:`~.errors.InvalidAccountError` before any statement (MariaDB without ``NO_AUTO_CREATE_USER``
    in its sql_mode would create it, without a password, on GRANT). A statement that fails stops the run
    (the next pass starts from what the server then has): a table grant on a missing table raises
    :class:`~.errors.TableNotFoundError`, a level the server refuses :class:`~.errors.InvalidGrantError`.
    ``current``, when the caller knows it (an account it has just created has no grants), saves the read.
    A privilege this server does not have (:func:`unavailable`) raises :class:`~.errors.InvalidGrantError`
    naming it, before anything is read or sent.
    """
    desired = list(desired)
    problems = unavailable(desired, server)
    if problems:
        raise InvalidGrantError("; ".join(problems))
    if current is None:
        exists, held = await _read(db, user, host, server)
    else:
        exists, held = True, set(current)
    planned = changes(held, desired, server)
    if planned and not exists:
        raise InvalidAccountError(f"cannot grant to '{user}'@'{host}': the account does not exist")
    summary: list[str] = []
    for change in planned:
        try:
            await db.execute(change.statement(user, host))
        except MySQLError as exc:
            if exc.code == _NO_SUCH_TABLE:
                raise TableNotFoundError(
                    f"cannot grant on {_describe(change.key)}: no such table (MySQL error {exc.code})",
                    exc.code,
                ) from None
            raise
        summary.append(str(change))
    return summary


_NO_SUCH_TABLE: Final = 1146
