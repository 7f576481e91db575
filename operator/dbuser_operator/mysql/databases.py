"""Databases (schemas): creating, altering, reading back and dropping them.

Which the operator owns is the ledger's (:mod:`.ownership`, its table ``databases``), whose row is written
*before* ``CREATE DATABASE``: a process that dies between the two leaves a row without a database, which the
next pass reads as "ours, create it"; never a database nobody owns. The operator drops only a database its
row says is the resource's.

Character sets and collations are checked against the patterns of the API, quoted as identifiers (both
servers accept `` CHARACTER SET `utf8mb4` ``), and refused by the server if unknown (errors 1115, 1273,
1253: :class:`CharsetError`, not retried until the spec changes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from dbuser_operator.mysql.bookkeeping.ownership import valid_database
from dbuser_operator.mysql.errors import InvalidNameError, MySQLError
from dbuser_operator.mysql.identifiers import SQL, InvalidIdentifierError, quote_identifier
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.statement import Statement

_CHARSET = re.compile(r"[A-Za-z0-9_]{1,32}")
_COLLATION = re.compile(r"[A-Za-z0-9_]{1,64}")
_UNKNOWN_CHARSET, _UNKNOWN_COLLATION, _MISMATCH = 1115, 1273, 1253
_DATABASE_EXISTS = 1007
_ALIASES: Final = {"utf8": "utf8mb3"}
"""Names the servers store under another (both read ``utf8`` as ``utf8mb3``)."""


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


async def read(db: Database, name: str) -> Schema | None:
    """The database's default character set and collation; None if it does not exist."""
    rows = await db.fetch(
        Statement(
            "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA"
            " WHERE SCHEMA_NAME = %s",
            valid_database(name),
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
        name=quote_identifier(valid_database(name)),
        options=options(character_set, collation),
    )
    try:
        await db.execute(statement)
    except MySQLError as error:
        raise _charset_error(error) from None


async def drop(db: Database, name: str) -> None:
    """``DROP DATABASE IF EXISTS``: the database and every table in it."""
    await db.execute(Statement("DROP DATABASE IF EXISTS {name}", name=quote_identifier(valid_database(name))))
