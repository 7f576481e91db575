"""Privileges, as a DatabaseUser and a DatabaseRole grant them: :class:`Grant` (and its :class:`Routine`),
with the CEL rules on privilege names and levels that the schema and the models check alike."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, JsonValue, field_validator, model_validator

from dbuser_operator.api.v1alpha1.meta import (
    DNS_SUBDOMAIN_MAX_LENGTH,
    DNS_SUBDOMAIN_PATTERN,
    Model,
    cel_format,
    cel_list,
)
from dbuser_operator.mysql import grants as mysql_grants

# MySQL names databases and tables (a GRANT's object) with up to 64 characters; "*" is every one of them.
OBJECT_NAME_PATTERN: Final = r"^(\*|[A-Za-z0-9_$-]{1,64})$"
OBJECT_NAME_MAX_LENGTH: Final = 64
MAX_GRANTS: Final = 64
MAX_PRIVILEGES_PER_GRANT: Final = 32

PRIVILEGE_PATTERN: Final = r"^[A-Z][A-Z_]*( [A-Z][A-Z_]*)*$"
PRIVILEGE_MAX_LENGTH: Final = 32  # MySQL's mysql.global_grants.PRIV is CHAR(32)
COLUMN_NAME_PATTERN: Final = r"^[A-Za-z0-9_$-]{1,64}$"
MAX_COLUMNS: Final = 64

Privilege = Annotated[str, Field(max_length=PRIVILEGE_MAX_LENGTH, pattern=PRIVILEGE_PATTERN)]
"""A privilege as MySQL writes it in GRANT: upper-case words of letters and '_' separated by one space
(SELECT, CREATE TEMPORARY TABLES, BACKUP_ADMIN, SLAVE MONITOR), at most 32 characters. ALL means every
privilege of the grant's level (ALL PRIVILEGES). The schema checks the shape; the operator checks the name
against the live server's SHOW PRIVILEGES and the level it is wanted at, and refuses an unknown or
misplaced one with a Ready=False condition that names it (PrivilegeUnknown, PrivilegeMisplaced)."""

PRIVILEGES: Final[tuple[str, ...]] = (mysql_grants.ALL, *mysql_grants.PRIVILEGE_NAMES)
"""The static privileges whose levels the schema knows (the enum of earlier versions), from the MySQL layer
(its only list): ALL, the database-level ones, then the global-only ones. The schema's rules refuse the
global-only ones elsewhere than on *.*, and on a table anything but the table privileges. Any other name of
the right shape is the server's to judge (MySQL's dynamic privileges, MariaDB's administrative ones: global
only)."""

NOT_LISTED: Final[tuple[str, ...]] = ("ALL PRIVILEGES", "USAGE", "GRANT OPTION", "PROXY")
"""Names of the right shape that are no privilege to list: ALL PRIVILEGES is written ALL, USAGE is no
privilege, GRANT OPTION is grantOption, PROXY is granted on an account."""

COLUMN_PRIVILEGES: Final[tuple[str, ...]] = mysql_grants.COLUMN_PRIVILEGE_NAMES
"""The privileges a column grant allows."""

ROUTINE_PRIVILEGES: Final[tuple[str, ...]] = (mysql_grants.ALL, *mysql_grants.ROUTINE_PRIVILEGE_NAMES)
"""The privileges a routine grant allows (ALL meaning EXECUTE and ALTER ROUTINE)."""

GLOBAL_ONLY_PRIVILEGES: Final[tuple[str, ...]] = tuple(
    name for name in PRIVILEGES if name in mysql_grants.GLOBAL_ONLY_PRIVILEGES
)
"""The privileges that exist only at the global level: MySQL grants them on *.* alone (database "*")."""

TABLE_PRIVILEGES: Final[tuple[str, ...]] = tuple(
    name for name in PRIVILEGES if name == mysql_grants.ALL or name in mysql_grants.TABLE_PRIVILEGES
)
"""The privileges that MySQL grants on a single table (ALL meaning all of them)."""


def _english_list(values: tuple[str, ...]) -> str:
    return f"{', '.join(values[:-1])} and {values[-1]}"


_GLOBAL_ONLY_CEL: Final = cel_list(GLOBAL_ONLY_PRIVILEGES)
_TABLE_CEL: Final = cel_list(TABLE_PRIVILEGES)
_NOT_LISTED_CEL: Final = cel_list(NOT_LISTED)
_COLUMN_CEL: Final = cel_list(COLUMN_PRIVILEGES)
_ROUTINE_CEL: Final = cel_list(ROUTINE_PRIVILEGES)

# The messages of the CEL rules below, which the models' validators raise too.
TABLE_NEEDS_DATABASE_MESSAGE: Final = 'a table grant needs a database: table must be "*" when database is "*"'
ALL_ALONE_MESSAGE: Final = "ALL stands for every privilege of its level: list it alone"
GLOBAL_ONLY_MESSAGE: Final = (
    '{privilege} can only be granted on *.* (database "*"), not on {database}.{table}'
)
TABLE_ONLY_MESSAGE: Final = (
    "{privilege} cannot be granted on a table ({database}.{table}): a table grant allows only "
    + _english_list(TABLE_PRIVILEGES)
)
ONE_ENTRY_MESSAGE: Final = "one entry per database and table (and routine; column grants excepted)"
NOT_LISTED_MESSAGE: Final = (
    "{privilege} is not a privilege to list: write ALL for ALL PRIVILEGES, grantOption for GRANT OPTION; "
    "USAGE and PROXY are not granted here"
)
COLUMNS_NEED_TABLE_MESSAGE: Final = 'a column grant names a table: table must not be "*" with columns'
COLUMNS_PRIVILEGES_MESSAGE: Final = (
    "{privilege} cannot be granted on columns: a column grant allows only " + _english_list(COLUMN_PRIVILEGES)
)
COLUMNS_NO_OPTION_MESSAGE: Final = (
    "a column grant has no grant option: grantOption must be false with columns"
)
ROUTINE_LEVEL_MESSAGE: Final = (
    'a routine grant names a database and nothing else: database must not be "*", table must be "*", no '
    "columns"
)
ROUTINE_PRIVILEGES_MESSAGE: Final = (
    "{privilege} cannot be granted on a routine: a routine grant allows only "
    + _english_list(ROUTINE_PRIVILEGES)
)
ESCAPED_DATABASE_MESSAGE: Final = (
    "database name too long for a database grant: GRANT writes each '_' as '\\_', and the name must stay "
    f"within {OBJECT_NAME_MAX_LENGTH} characters that way"
)

ONE_DATABASE_MESSAGE: Final = "exactly one of database and databaseRef"

_DATABASE_CEL: Final = "(has(self.database) ? self.database : self.databaseRef.name)"
"""The database a rule's message names: database, or the Database resource databaseRef names."""

GRANT_DATABASE_CEL: Final = "(has({0}.database) ? {0}.database : '@' + {0}.databaseRef.name)"
"""A list rule's key for an entry's database: its name, or '@' and the Database resource's name (no
database name has an '@', so the two never meet)."""

_GRANT_RULES: Final[list[JsonValue]] = [
    {
        "rule": "has(self.database) != has(self.databaseRef)",
        "message": ONE_DATABASE_MESSAGE,
        "fieldPath": ".database",
    },
    {
        # A database grant names the database with its wildcards escaped ('_' as '\_', see
        # mysql.identifiers.escape_wildcards; the pattern admits no '%'), which MySQL bounds to 64 too.
        "rule": f"!has(self.database) || self.table != '*' || has(self.routine)"
        f" || size(self.database.replace('_', '__')) <= {OBJECT_NAME_MAX_LENGTH}",
        "message": ESCAPED_DATABASE_MESSAGE,
        "fieldPath": ".database",
    },
    {
        "rule": "!has(self.database) || self.database != '*' || self.table == '*'",
        "message": TABLE_NEEDS_DATABASE_MESSAGE,
        "fieldPath": ".table",
    },
    {
        "rule": "!('ALL' in self.privileges) || size(self.privileges) == 1",
        "message": ALL_ALONE_MESSAGE,
        "fieldPath": ".privileges",
    },
    {
        "rule": f"(has(self.database) && self.database == '*')"
        f" || !self.privileges.exists(p, p in {_GLOBAL_ONLY_CEL})",
        "message": f'{_english_list(GLOBAL_ONLY_PRIVILEGES)} can only be granted on *.* (database "*")',
        "messageExpression": cel_format(
            GLOBAL_ONLY_MESSAGE,
            privilege=f"self.privileges.filter(p, p in {_GLOBAL_ONLY_CEL})[0]",
            database=_DATABASE_CEL,
            table="self.table",
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": f"self.table == '*' || self.privileges.all(p, p in {_TABLE_CEL})",
        "message": "a table grant allows only " + _english_list(TABLE_PRIVILEGES),
        "messageExpression": cel_format(
            TABLE_ONLY_MESSAGE,
            privilege=f"self.privileges.filter(p, !(p in {_TABLE_CEL}))[0]",
            database=_DATABASE_CEL,
            table="self.table",
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": f"!self.privileges.exists(p, p in {_NOT_LISTED_CEL})",
        "message": NOT_LISTED_MESSAGE.format(privilege=_english_list(NOT_LISTED)),
        "messageExpression": cel_format(
            NOT_LISTED_MESSAGE, privilege=f"self.privileges.filter(p, p in {_NOT_LISTED_CEL})[0]"
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": "!has(self.columns) || self.table != '*'",
        "message": COLUMNS_NEED_TABLE_MESSAGE,
        "fieldPath": ".columns",
    },
    {
        "rule": "!has(self.columns) || !self.grantOption",
        "message": COLUMNS_NO_OPTION_MESSAGE,
        "fieldPath": ".grantOption",
    },
    {
        "rule": f"!has(self.columns) || self.privileges.all(p, p in {_COLUMN_CEL})",
        "message": COLUMNS_PRIVILEGES_MESSAGE.format(privilege="a privilege"),
        "messageExpression": cel_format(
            COLUMNS_PRIVILEGES_MESSAGE, privilege=f"self.privileges.filter(p, !(p in {_COLUMN_CEL}))[0]"
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": "!has(self.routine)"
        " || ((!has(self.database) || self.database != '*') && self.table == '*' && !has(self.columns))",
        "message": ROUTINE_LEVEL_MESSAGE,
        "fieldPath": ".routine",
    },
    {
        "rule": f"!has(self.routine) || self.privileges.all(p, p in {_ROUTINE_CEL})",
        "message": ROUTINE_PRIVILEGES_MESSAGE.format(privilege="a privilege"),
        "messageExpression": cel_format(
            ROUTINE_PRIVILEGES_MESSAGE, privilege=f"self.privileges.filter(p, !(p in {_ROUTINE_CEL}))[0]"
        ),
        "fieldPath": ".privileges",
    },
]


# An enum item: its maxLength bounds the estimated cost of the CEL rules that compare it.
_PrivilegeItem = Privilege

RoutineType = Literal["PROCEDURE", "FUNCTION"]
"""A stored procedure or a stored function."""


class Routine(Model):
    """A stored procedure or function of the grant's database."""

    type: RoutineType
    """PROCEDURE or FUNCTION."""

    name: str = Field(max_length=OBJECT_NAME_MAX_LENGTH, pattern=COLUMN_NAME_PATTERN)
    """Name of the routine: 1 to 64 letters, digits, '_', '$' or '-' (the servers compare routine names
    without regard to case). It must exist when the grant is made (RoutineNotFound otherwise)."""


class DatabaseRef(Model):
    """A Database resource in the grant's own namespace."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the Database (in the namespace of the resource that grants): the grant waits until it is
    Ready, on the same server, and then applies to its MySQL database (status.name)."""


class Grant(Model):
    """Privileges of the account on one level: global (database "*"), one database (table "*"), one
    table, columns of a table (columns), or one stored procedure or function (routine)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _GRANT_RULES})

    privileges: list[_PrivilegeItem] = Field(
        min_length=1, max_length=MAX_PRIVILEGES_PER_GRANT, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Privileges granted, as MySQL writes them: upper-case words, e.g. SELECT, INSERT, UPDATE, DELETE,
    EXECUTE, CREATE TEMPORARY TABLES, LOCK TABLES, and any other the server lists in SHOW PRIVILEGES (MySQL's
    dynamic BACKUP_ADMIN, REPLICATION_SLAVE_ADMIN…, MariaDB's SLAVE MONITOR, BINLOG MONITOR…: global only).
    ALL means every privilege of the grant's level and is listed alone. CREATE USER, FILE, PROCESS, RELOAD,
    REPLICATION CLIENT, REPLICATION SLAVE, SHOW DATABASES, SHUTDOWN, SUPER and CREATE TABLESPACE are global:
    only on database "*". A table grant allows only ALL, ALTER, CREATE, CREATE VIEW, DELETE, DROP, INDEX,
    INSERT, REFERENCES, SELECT, SHOW VIEW, TRIGGER and UPDATE. A name the server does not have, or not at
    this level, makes the resource Ready=False (PrivilegeUnknown, PrivilegeMisplaced)."""

    database: str | None = Field(default=None, max_length=OBJECT_NAME_MAX_LENGTH, pattern=OBJECT_NAME_PATTERN)
    """Database the privileges apply to: a name of 1 to 64 letters, digits, '_', '$' or '-', or "*" for
    every database (global privileges, GRANT ... ON *.*). The database need not exist. For a grant on the
    whole database (table "*"), each '_' counts twice: GRANT writes it escaped ('\\_'). Exactly one of
    database and databaseRef."""

    database_ref: DatabaseRef | None = None
    """A Database resource in the same namespace, instead of database (DatabaseUser only): the account waits
    for it to be Ready (Ready=False DatabaseNotFound, DatabaseNotReady, DatabaseOnAnotherServer meanwhile),
    then the privileges apply to its MySQL database. Exactly one of database and databaseRef."""

    table: str = Field(default="*", max_length=OBJECT_NAME_MAX_LENGTH, pattern=OBJECT_NAME_PATTERN)
    """Table of the database the privileges apply to (1 to 64 letters, digits, '_', '$' or '-'), or "*" for
    every table of the database. Defaults to "*". A table needs a database other than "*". MySQL (unlike
    MariaDB) refuses to grant on a table that does not exist yet."""

    grant_option: bool = Field(default=False, strict=True)
    """Whether the account may grant these privileges to other accounts (WITH GRANT OPTION). Defaults to
    false."""

    columns: (
        list[Annotated[str, Field(max_length=OBJECT_NAME_MAX_LENGTH, pattern=COLUMN_NAME_PATTERN)]] | None
    ) = Field(
        default=None,
        min_length=1,
        max_length=MAX_COLUMNS,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    """Columns of the table the privileges apply to, instead of the whole table (GRANT SELECT (a, b) ON
    db.table): 1 to 64 letters, digits, '_', '$' or '-' each. Only SELECT, INSERT, UPDATE and REFERENCES,
    without grantOption; the table and columns must exist (ColumnNotFound otherwise). Several entries with
    columns may name the same table."""

    routine: Routine | None = None
    """A stored procedure or function of the database the privileges apply to (GRANT EXECUTE ON PROCEDURE
    db.name): only EXECUTE, ALTER ROUTINE or ALL; table stays "*"."""

    @field_validator("privileges")
    @classmethod
    def _a_set(cls, privileges: list[Privilege]) -> list[Privilege]:
        duplicates = sorted({privilege for privilege in privileges if privileges.count(privilege) > 1})
        if duplicates:
            raise ValueError(f"duplicate privileges: {', '.join(duplicates)}")
        return privileges

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str] | None) -> list[str] | None:
        duplicates = sorted({column for column in columns or [] if (columns or []).count(column) > 1})
        if duplicates:
            raise ValueError(f"duplicate columns: {', '.join(duplicates)}")
        return columns

    @model_validator(mode="after")
    def _rules(self) -> Grant:
        """The CEL rules of the schema, with their messages."""
        if (self.database is None) == (self.database_ref is None):
            raise ValueError(ONE_DATABASE_MESSAGE)
        database = self.database if self.database is not None else ""
        named = self.database_ref.name if self.database_ref is not None else database
        where = {"database": named, "table": self.table}
        escaped = len(database) + database.count("_")
        if self.table == "*" and self.routine is None and escaped > OBJECT_NAME_MAX_LENGTH:
            raise ValueError(ESCAPED_DATABASE_MESSAGE)
        if database == "*" and self.table != "*":
            raise ValueError(TABLE_NEEDS_DATABASE_MESSAGE)
        if "ALL" in self.privileges and len(self.privileges) > 1:
            raise ValueError(ALL_ALONE_MESSAGE)
        if database != "*":
            for privilege in self.privileges:
                if privilege in GLOBAL_ONLY_PRIVILEGES:
                    raise ValueError(GLOBAL_ONLY_MESSAGE.format(privilege=privilege, **where))
        if self.table != "*":
            for privilege in self.privileges:
                if privilege not in TABLE_PRIVILEGES:
                    raise ValueError(TABLE_ONLY_MESSAGE.format(privilege=privilege, **where))
        self._listed_and_narrow_levels()
        return self

    def _listed_and_narrow_levels(self) -> None:
        """The rules on names that are no privilege, column grants and routine grants."""
        for privilege in self.privileges:
            if privilege in NOT_LISTED:
                raise ValueError(NOT_LISTED_MESSAGE.format(privilege=privilege))
        if self.columns is not None:
            if self.table == "*":
                raise ValueError(COLUMNS_NEED_TABLE_MESSAGE)
            if self.grant_option:
                raise ValueError(COLUMNS_NO_OPTION_MESSAGE)
            for privilege in self.privileges:
                if privilege not in COLUMN_PRIVILEGES:
                    raise ValueError(COLUMNS_PRIVILEGES_MESSAGE.format(privilege=privilege))
        if self.routine is not None:
            if self.database == "*" or self.table != "*" or self.columns is not None:
                raise ValueError(ROUTINE_LEVEL_MESSAGE)
            for privilege in self.privileges:
                if privilege not in ROUTINE_PRIVILEGES:
                    raise ValueError(ROUTINE_PRIVILEGES_MESSAGE.format(privilege=privilege))

    def level_key(self) -> str:
        """The entry's database for the one-entry-per-level rules (:data:`GRANT_DATABASE_CEL`)."""
        if self.database_ref is not None:
            return "@" + self.database_ref.name
        return self.database or ""

    def resolved(self) -> str:
        """The database name, once any databaseRef was resolved into it."""
        if self.database is None:
            raise ValueError("databaseRef not resolved")
        return self.database
