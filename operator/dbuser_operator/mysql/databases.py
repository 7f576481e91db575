"""Databases (schemas): which the operator owns, creating, altering, reading back and dropping them.

Ownership is a bookkeeping table ``<schema>.databases`` beside ``accounts`` and ``roles``: one row per
owned database, keyed by its name without regard to case (a server with ``lower_case_table_names`` set
reads ``App`` as ``app``: two resources must never own one database under two spellings; where the server
tells them apart, only one of them can be managed), with the owning resource's UID, namespace and name.
The row is written *before* ``CREATE DATABASE``: a process that dies between the two leaves a row without
a database, which the next pass reads as "ours, create it"; never a database nobody owns. The operator
drops only a database its row says is the resource's.

Character sets and collations are checked against the patterns of the API, quoted as identifiers (both
servers accept `` CHARACTER SET `utf8mb4` ``), and refused by the server if unknown (errors 1115, 1273,
1253: :class:`CharsetError`, not retried until the spec changes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from dbuser_operator.mysql.connection import Database
from dbuser_operator.mysql.errors import InvalidNameError, MySQLError, ServerError
from dbuser_operator.mysql.identifiers import SQL, InvalidIdentifierError, quote_identifier, validate_database
from dbuser_operator.mysql.ownership import Claim, Owner, table
from dbuser_operator.mysql.statement import Statement

TABLE: Final = "databases"
_CHARSET = re.compile(r"[A-Za-z0-9_]{1,32}")
_COLLATION = re.compile(r"[A-Za-z0-9_]{1,64}")
_UNKNOWN_CHARSET, _UNKNOWN_COLLATION, _MISMATCH = 1115, 1273, 1253
_DATABASE_EXISTS = 1007
_NO_SUCH_TABLE = 1146
_ALIASES: Final = {"utf8": "utf8mb3"}
"""Names the servers store under another (both read ``utf8`` as ``utf8mb3``)."""

_CREATE_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    " name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,"
    " owner_uid VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " namespace VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " resource VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
    " PRIMARY KEY (name)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    " COMMENT='MySQL databases owned by dbuser-operator, and the resources owning them'"
)


class CharsetError(MySQLError):
    """The server does not know the character set or collation, or they do not go together."""

    reason = "CharacterSetInvalid"


class DatabaseExistsError(MySQLError):
    """``CREATE DATABASE`` found the database there (somebody made it since the operator looked)."""

    reason = "DatabaseExists"


@dataclass(frozen=True)
class Schema:
    """A database as ``information_schema.SCHEMATA`` shows it."""

    character_set: str
    collation: str


def _name(name: str) -> str:
    """A database name, validated (never ``*``); InvalidNameError if not one."""
    try:
        if name == "*":
            raise InvalidIdentifierError("database name", name, "every database", "a database name")
        return validate_database(name)
    except InvalidIdentifierError as error:
        raise InvalidNameError(str(error)) from None


def _option(kind: str, value: str, allowed: re.Pattern[str]) -> SQL:
    if allowed.fullmatch(value) is None:
        raise InvalidNameError(str(InvalidIdentifierError(kind, value, "not a name", allowed.pattern)))
    return quote_identifier(value)


def options(character_set: str | None, collation: str | None) -> SQL:
    """`` CHARACTER SET `cs` COLLATE `co` `` (either may be absent), validated and quoted."""
    parts = []
    if character_set is not None:
        parts.append(" CHARACTER SET " + _option("character set", character_set, _CHARSET))
    if collation is not None:
        parts.append(" COLLATE " + _option("collation", collation, _COLLATION))
    return SQL("".join(parts))


async def ensure_table(db: Database, schema: str) -> None:
    """Create the bookkeeping table of databases if missing (after the schema)."""
    await db.execute(Statement(_CREATE_TABLE, table=table(schema, TABLE)))


async def owner_of(db: Database, schema: str, name: str) -> Owner | None:
    """Who owns the database ``name``; None if nobody does."""
    rows = await db.fetch(
        Statement(
            "SELECT owner_uid, namespace, resource FROM {table} WHERE name = %s",
            _name(name),
            table=table(schema, TABLE),
        )
    )
    return Owner(str(rows[0][0]), str(rows[0][1]), str(rows[0][2])) if rows else None


async def owned(db: Database, schema: str) -> dict[str, Owner]:
    """Every database the bookkeeping records, with its owner (one SELECT); none while the table does not
    exist (no Database was ever managed on the server)."""
    try:
        rows = await db.fetch(
            Statement("SELECT name, owner_uid, namespace, resource FROM {table}", table=table(schema, TABLE))
        )
    except MySQLError as error:
        if error.code == _NO_SUCH_TABLE:
            return {}
        raise
    return {
        str(name): Owner(str(uid), str(namespace), str(resource)) for name, uid, namespace, resource in rows
    }


async def claim(db: Database, schema: str, name: str, owner: Owner) -> Claim:
    """Record ``owner`` as the database's owner unless somebody owns it already; who owns it now (atomic:
    the primary key decides)."""
    insert = Statement(
        "INSERT INTO {table} (name, owner_uid, namespace, resource) VALUES (%s, %s, %s, %s)"
        " ON DUPLICATE KEY UPDATE owner_uid = owner_uid",
        _name(name),
        owner.uid,
        owner.namespace,
        owner.name,
        table=table(schema, TABLE),
    )
    for _ in range(3):
        if await db.execute(insert) == 1:
            return Claim(owner, inserted=True)
        current = await owner_of(db, schema, name)
        if current is not None:
            return Claim(current, inserted=False)
    raise ServerError(f"the ownership of database {name} keeps changing")


async def forget(db: Database, schema: str, name: str, owner_uid: str) -> bool:
    """Delete the database's row if ``owner_uid`` owns it; whether it did."""
    affected = await db.execute(
        Statement(
            "DELETE FROM {table} WHERE name = %s AND owner_uid = %s",
            _name(name),
            owner_uid,
            table=table(schema, TABLE),
        )
    )
    return affected > 0


async def read(db: Database, name: str) -> Schema | None:
    """The database's default character set and collation; None if it does not exist."""
    rows = await db.fetch(
        Statement(
            "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA"
            " WHERE SCHEMA_NAME = %s",
            _name(name),
        )
    )
    return Schema(str(rows[0][0]), str(rows[0][1])) if rows else None


def differs(found: Schema, character_set: str | None, collation: str | None) -> bool:
    """Whether ``found`` has another character set or collation than asked (unset: anything goes)."""

    def same(wanted: str | None, have: str) -> bool:
        return wanted is None or _ALIASES.get(wanted.lower(), wanted.lower()) == have.lower()

    return not (same(character_set, found.character_set) and same(collation, found.collation))


def _charset_error(error: MySQLError) -> MySQLError:
    if error.code in (_UNKNOWN_CHARSET, _UNKNOWN_COLLATION, _MISMATCH):
        return CharsetError(error.message, error.code)
    if error.code == _DATABASE_EXISTS:
        return DatabaseExistsError(error.message, error.code)
    return error


async def create(db: Database, name: str, character_set: str | None, collation: str | None) -> None:
    """``CREATE DATABASE`` (not IF NOT EXISTS: a database somebody made meanwhile is
    :class:`DatabaseExistsError`)."""
    await _define(db, "CREATE", name, character_set, collation)


async def alter(db: Database, name: str, character_set: str | None, collation: str | None) -> None:
    """``ALTER DATABASE`` to the character set and collation (existing tables keep theirs)."""
    await _define(db, "ALTER", name, character_set, collation)


async def _define(
    db: Database,
    verb: Literal["CREATE", "ALTER"],
    name: str,
    character_set: str | None,
    collation: str | None,
) -> None:
    """``<verb> DATABASE`` with the character set and collation; one the server refuses is a charset error."""
    statement = Statement(
        verb + " DATABASE {name}{options}",
        name=quote_identifier(_name(name)),
        options=options(character_set, collation),
    )
    try:
        await db.execute(statement)
    except MySQLError as error:
        raise _charset_error(error) from None


async def drop(db: Database, name: str) -> None:
    """``DROP DATABASE IF EXISTS``: the database and every table in it."""
    await db.execute(Statement("DROP DATABASE IF EXISTS {name}", name=quote_identifier(_name(name))))
