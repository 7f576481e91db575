"""Validation and quoting of SQL identifiers: account names, hosts, databases, tables.

Validation is deliberately stricter than MySQL: a name that passes contains no quote, backslash,
backtick, whitespace, control or non-ASCII character, so quoting can never be subverted. Quoting
escapes anyway, as defence in depth.

Quoted fragments are :class:`SQL` strings: the only kind of text a :class:`~.statement.Statement`
accepts besides its own template.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

USER_MAX_LENGTH = 32
HOST_MAX_LENGTH = 255
OBJECT_MAX_LENGTH = 64

# Each pattern matches one allowed character (a name that fails is looked at character by character, to
# name the first offending one).
# A user name: ASCII letters, digits, "_", "." and "-", 1 to 32 characters, not starting with "." or "-".
_USER = re.compile(r"[A-Za-z0-9_.-]")
_USER_RULE = "1 to 32 characters from A-Z a-z 0-9 _ . -, not starting with . or -"
# A host or host pattern: a name, an IPv4/IPv6 address, a netmask, with the wildcards % and _.
_HOST = re.compile(r"[A-Za-z0-9._%:/-]")
_HOST_RULE = "1 to 255 characters from A-Z a-z 0-9 . - _ % : /"
# A database or table name (or "*", all of them, for grants).
_OBJECT = re.compile(r"[A-Za-z0-9_$-]")
_OBJECT_RULE = "1 to 64 characters from A-Z a-z 0-9 _ $ -, or *"

_SHOWN_MAX = 80  # longest part of a rejected value quoted in a message


class InvalidIdentifierError(ValueError):
    """A name that the rules of this module reject; the message names the rule."""

    def __init__(self, kind: str, value: object, problem: str, rule: str) -> None:
        self.kind = kind
        super().__init__(f"invalid {kind} {_show(value)}: {problem} (allowed: {rule})")


class SQL(str):
    """A fragment of SQL text that is safe to splice into a statement (built by this module)."""

    __slots__ = ()


def _show(value: object) -> str:
    """The value for a message: ASCII only, control characters and look-alikes escaped, bounded."""
    if not isinstance(value, str):
        return f"of type {type(value).__name__}"
    shown = ascii(value[:_SHOWN_MAX])
    return shown + ("..." if len(value) > _SHOWN_MAX else "")


def _check(kind: str, value: object, allowed: re.Pattern[str], max_length: int, rule: str) -> str:
    if not isinstance(value, str):
        raise InvalidIdentifierError(kind, value, "not a string", rule)
    if not value:
        raise InvalidIdentifierError(kind, value, "empty", rule)
    if len(value) > max_length:
        raise InvalidIdentifierError(kind, value, f"{len(value)} characters, at most {max_length}", rule)
    if _whole(allowed).fullmatch(value) is None:
        offending = next(c for c in value if allowed.fullmatch(c) is None)
        raise InvalidIdentifierError(kind, value, f"character {offending!a} not allowed", rule)
    return value


@functools.cache
def _whole(allowed: re.Pattern[str]) -> re.Pattern[str]:
    """The pattern of a whole name made of ``allowed``'s characters (one match instead of one per
    character)."""
    return re.compile(f"(?:{allowed.pattern})+")


def validate_user(name: str) -> str:
    """A MySQL user name: ``^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$`` (MySQL's limit is 32 characters)."""
    _check("user name", name, _USER, USER_MAX_LENGTH, _USER_RULE)
    if name[0] in ".-":
        raise InvalidIdentifierError("user name", name, f"starts with {name[0]!a}", _USER_RULE)
    return name


def validate_host(host: str) -> str:
    """A host (pattern): letters, digits, ``. - _``, ``%`` (wildcard), ``:`` (IPv6), ``/`` (netmask)."""
    return _check("host", host, _HOST, HOST_MAX_LENGTH, _HOST_RULE)


def validate_database(name: str) -> str:
    """A database name: ``^[A-Za-z0-9_$-]{1,64}$``, or ``*`` (every database, for grants)."""
    return name if name == "*" else _check("database name", name, _OBJECT, OBJECT_MAX_LENGTH, _OBJECT_RULE)


def validate_table(name: str) -> str:
    """A table name: ``^[A-Za-z0-9_$-]{1,64}$``, or ``*`` (every table, for grants)."""
    return name if name == "*" else _check("table name", name, _OBJECT, OBJECT_MAX_LENGTH, _OBJECT_RULE)


def validate_column(name: str) -> str:
    """A column name (of a column grant): ``^[A-Za-z0-9_$-]{1,64}$``."""
    return _check("column name", name, _OBJECT, OBJECT_MAX_LENGTH, _OBJECT_RULE.removesuffix(", or *"))


def validate_routine(name: str) -> str:
    """A stored procedure or function name (of a routine grant): ``^[A-Za-z0-9_$-]{1,64}$``."""
    return _check("routine name", name, _OBJECT, OBJECT_MAX_LENGTH, _OBJECT_RULE.removesuffix(", or *"))


def quote_string(value: str) -> SQL:
    """A single-quoted string literal: quotes doubled (valid in every ``sql_mode``), backslashes doubled.

    For identifiers that validation already passed; never for passwords, which are query parameters.
    """
    if "\0" in value:
        raise ValueError("a string literal cannot contain NUL")
    return SQL("'" + value.replace("\\", "\\\\").replace("'", "''") + "'")


def quote_identifier(name: str) -> SQL:
    """A backtick-quoted identifier (database, table): backticks doubled."""
    if not name or "\0" in name:
        raise ValueError("an identifier must be non-empty and cannot contain NUL")
    return SQL("`" + name.replace("`", "``") + "`")


# A privilege name as the servers spell them: upper-case words of letters and "_", separated by one space
# ("SELECT", "CREATE TEMPORARY TABLES", MariaDB's "READ_ONLY ADMIN", MySQL's dynamic "BACKUP_ADMIN").
_PRIVILEGE = re.compile(r"[A-Z][A-Z_]*(?: [A-Z][A-Z_]*)*")
_PRIVILEGE_RULE = "upper-case words of A-Z and _ separated by single spaces, at most 64 characters"


def validate_privilege_name(name: str) -> str:
    """A privilege name (syntax only): ``SELECT``, ``CREATE TEMPORARY TABLES``, ``BACKUP_ADMIN``."""
    if not isinstance(name, str) or len(name) > OBJECT_MAX_LENGTH or _PRIVILEGE.fullmatch(name) is None:
        raise InvalidIdentifierError("privilege", name, "not a privilege name", _PRIVILEGE_RULE)
    return name


def privilege_list(names: Iterable[str]) -> SQL:
    """``SELECT, INSERT``: the names, checked by :func:`validate_privilege_name`, in the order given."""
    checked = [validate_privilege_name(name) for name in names]
    if not checked:
        raise ValueError("a privilege list cannot be empty")
    return SQL(", ".join(checked))


def column_privilege_list(names: Iterable[str], column: str) -> SQL:
    """``SELECT (`a`), INSERT (`a`)``: each privilege (checked) on one column (quoted)."""
    quoted = quote_identifier(column)
    return SQL(", ".join(f"{name} ({quoted})" for name in privilege_list(names).split(", ")))


def unsigned_literal(value: int) -> SQL:
    """A non-negative integer as SQL text (the caller checks the range it allows)."""
    if type(value) is not int or value < 0:
        raise ValueError(f"expected a non-negative int, not {value!r}"[:_SHOWN_MAX])
    return SQL(str(value))


def escape_wildcards(database: str) -> str:
    r"""A database name as GRANT must spell it to mean that database alone: ``_`` and ``%`` escaped (``\_``).

    In ``GRANT ... ON db.*`` (the database level only) MySQL and MariaDB read ``_`` and ``%`` as wildcards;
    ``app_db`` would also match ``appXdb``. The name must not contain a backslash (validated names do not).
    """
    if "\\" in database:
        raise ValueError("a database name to escape cannot contain a backslash")
    return database.replace("_", "\\_").replace("%", "\\%")


def grant_level(database: str, table: str = "*", *, pattern: bool = False) -> SQL:
    """The object of a GRANT or REVOKE: ``*.*``, ```db`.*`` or ```db`.`table```.

    A database-level name is escaped (:func:`escape_wildcards`) unless ``pattern`` says it is a wildcard
    pattern already, as the server stores it (read back from it), which is then quoted as it is. Table-level
    database names are never wildcards and are not escaped. Names are quoted, not validated: they may come
    from the server (grants made by hand) as well as from validated input.
    """
    if database == "*":
        if table != "*":
            raise ValueError("a table needs a database")
        return SQL("*.*")
    if table == "*":
        return SQL(quote_identifier(database if pattern else escape_wildcards(database)) + ".*")
    return SQL(quote_identifier(database) + "." + quote_identifier(table))


ROUTINE_TYPES = ("PROCEDURE", "FUNCTION")


def routine_level(routine_type: str, database: str, name: str) -> SQL:
    """The object of a routine GRANT or REVOKE: ``PROCEDURE `db`.`name``` (quoted, not validated: the names
    may come from the server)."""
    if routine_type not in ROUTINE_TYPES:
        raise ValueError(f"a routine is a PROCEDURE or a FUNCTION, not {_show(routine_type)}")
    return SQL(f"{routine_type} {quote_identifier(database)}.{quote_identifier(name)}")


def account(user: str, host: str) -> SQL:
    """The account literal ``'user'@'host'``, validated first and escaped anyway."""
    return SQL(quote_string(validate_user(user)) + "@" + quote_string(validate_host(host)))


def validate_grantee_host(host: str) -> str:
    """The host of a grantee: a host (:func:`validate_host`), or ``''`` for a MariaDB role."""
    return host if host == "" else validate_host(host)


def grantee_account(user: str, host: str) -> SQL:
    """The grantee of a GRANT or REVOKE: :func:`account`, or ``'role'`` alone for a MariaDB role (host
    ``''``: MariaDB names roles without a host)."""
    return quote_string(validate_user(user)) if host == "" else account(user, host)
