"""The ledger: which accounts, roles and databases the operator owns, and for which resource.

The ledger is three bookkeeping tables (:class:`Book`) in a schema of the operator's own (``dbuser_operator``
by default): ``accounts`` (one row per owned account, keyed by user and host, with a fingerprint of the
account's authentication string), ``roles`` (the same layout, the host always ``%``) and ``databases`` (keyed
by the database's name, without regard to case), each row naming the owning resource's UID, namespace and
name. The tables keep the layouts existing installs have; one API hides their differences: an
:class:`Entry` says which row (:func:`account`, :func:`role`, :func:`database`), and :func:`owner_of`,
:func:`claim`, :func:`forget`, :func:`forget_owner` and :func:`owned` work on any of them. With it the
operator refuses to adopt or drop what it did not create, sees two resources claiming one name
(:func:`claim` lets exactly one win), and finds orphans (:func:`list_owned`).

User names are compared case-sensitively (binary collation), host names without regard to case: both
servers store hosts in lower case (MariaDB 10.11: ``CREATE USER 'u'@'Example.COM'`` makes
``'u'@'example.com'``). Rows keep the host as it was claimed; joins with ``mysql.user`` compare
``LOWER(host)``.

Password drift without keeping any password or password hash of our own: the fingerprint is
``SHA2(authentication_string, 256)`` of the account (see :mod:`.catalog`), recorded right after the
operator sets the password (:func:`record_fingerprint`) and compared later (:func:`lookup`, and the
inventory for all accounts at once). On MariaDB (``mysql_native_password``, ``ed25519``: unsalted hashes)
setting the same password again keeps the fingerprint; on MySQL 8+ (``caching_sha2_password``: salted)
any ``ALTER USER ... IDENTIFIED BY`` changes it, even to the same password: record the fingerprint again
after every password change of the operator's own.

Only a fingerprint of the operator's own password is recorded: somebody may change the password between
the operator's ``ALTER USER`` and the record. Where the hash is unsalted the fingerprint is computed from
the password (:func:`expected_fingerprint`), and the account is not read at all; where the server salts it
(MySQL's ``caching_sha2_password``) the account's string is read and checked against the password on the
client (:func:`.password_hashes.matches`) before it is recorded. A string that is not the password's is
recorded as :data:`FOREIGN`, which no authentication string has: the next look sees drift and restores.
A new account's fingerprint known beforehand is recorded by the first claim, and the statement that would
record it after ``CREATE USER`` is not needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from dbuser_operator.mysql.accounts import catalog, password_hashes, password_match
from dbuser_operator.mysql.accounts.authentication import Method, effective
from dbuser_operator.mysql.bookkeeping import books
from dbuser_operator.mysql.bookkeeping.books import ROLES_TABLE, TABLE, Book, NameClass
from dbuser_operator.mysql.errors import InvalidNameError, MySQLError, ServerError, checked_input
from dbuser_operator.mysql.identifiers import (
    SQL,
    InvalidIdentifierError,
    quote_identifier,
    validate_database,
    validate_host,
    validate_user,
)
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

DEFAULT_SCHEMA: Final = "dbuser_operator"
ACCOUNTS: Final = books.ACCOUNTS  # the ledger's three books, as its API names them
ROLES: Final = books.ROLES
DATABASES: Final = books.DATABASES
ROLE_HOST: Final = "%"  # the host of every role in the roles table, whatever the flavour
SYSTEM_SCHEMAS: Final = frozenset({"mysql", "information_schema", "performance_schema", "sys"})

_UID_MAX, _NAME_MAX = 128, 253
_NO_SUCH_TABLE = 1146
FOREIGN: Final = "0" * 64
"""The fingerprint recorded for an authentication string that is not the operator's password: it differs
from every ``SHA2(…, 256)``, so the account shows drift."""


def validate_schema(schema: str) -> str:
    """The bookkeeping schema's name: a valid database name, not ``*`` and not a system schema.

    Raises :class:`~.identifiers.InvalidIdentifierError` (a ValueError): the schema is configuration, to
    be checked at start.
    """
    validate_database(schema)
    rule = "a database name other than *, mysql, information_schema, performance_schema and sys"
    if schema == "*" or schema.lower() in SYSTEM_SCHEMAS:
        raise InvalidIdentifierError("ownership schema", schema, "reserved", rule)
    return schema


def table(schema: str, name: str = TABLE) -> SQL:
    """```schema`.`accounts``` (or another bookkeeping table), the schema validated."""
    return SQL(quote_identifier(validate_schema(schema)) + "." + quote_identifier(name))


@dataclass(frozen=True)
class Owner:
    """The resource that owns an account: its UID (what decides), namespace and name (for people)."""

    uid: str
    namespace: str
    name: str

    def __post_init__(self) -> None:
        for field, value, longest in (
            ("uid", self.uid, _UID_MAX),
            ("namespace", self.namespace, _NAME_MAX),
            ("name", self.name, _NAME_MAX),
        ):
            if not isinstance(value, str) or not 0 < len(value) <= longest or not value.isprintable():
                raise ValueError(f"owner {field} must be 1 to {longest} printable characters")

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (uid {self.uid})"


@dataclass(frozen=True)
class OwnedAccount:
    """A row of the bookkeeping table: the account ``'user'@'host'`` and its owner."""

    user: str
    host: str
    owner: Owner


async def ensure_schema(db: Database, schema: str = DEFAULT_SCHEMA) -> None:
    """Create the schema and the table if missing. One look first: a start on a server that has them sends
    no DDL (even with IF NOT EXISTS, a DDL takes a metadata lock and goes to the binary log)."""
    valid = validate_schema(schema)
    if await _table_exists(db, valid, TABLE):
        return
    name = quote_identifier(valid)
    await db.execute(Statement("CREATE DATABASE IF NOT EXISTS {schema} CHARACTER SET utf8mb4", schema=name))
    await db.execute(Statement(ACCOUNTS.create, table=table(schema)))


@dataclass(frozen=True)
class Entry:
    """Which row of the ledger: a book and its key (validated names), as :func:`account`, :func:`role` and
    :func:`database` make them."""

    book: Book
    key: tuple[str, ...]

    def __str__(self) -> str:
        if self.book is DATABASES:
            return f"database {self.key[0]}"
        return f"'{self.key[0]}'@'{self.key[1]}'" if self.book is ACCOUNTS else f"role {self.key[0]}"


def valid_account(user: str, host: str) -> tuple[str, str]:
    """``user`` and ``host`` checked as MySQL names (InvalidInput otherwise)."""
    with checked_input():
        return validate_user(user), validate_host(host)


def valid_database(name: str) -> str:
    """A database name, validated (never ``*``); InvalidNameError if not one."""
    try:
        if name == "*":
            raise InvalidIdentifierError("database name", name, "every database", "a database name")
        return validate_database(name)
    except InvalidIdentifierError as error:
        raise InvalidNameError(str(error)) from None


def account(user: str, host: str) -> Entry:
    """The ledger's row of the account ``'user'@'host'``."""
    return Entry(ACCOUNTS, valid_account(user, host))


def role(name: str) -> Entry:
    """The ledger's row of the role ``name`` (its host ``%`` on either flavour)."""
    return Entry(ROLES, valid_account(name, ROLE_HOST))


def database(name: str) -> Entry:
    """The ledger's row of the database ``name``."""
    return Entry(DATABASES, (valid_database(name),))


def entry_of(what: NameClass, name: str, host: str = ROLE_HOST) -> Entry:
    """The row of an account (on ``host``), a role or a database, by the class of the name."""
    return account(name, host) if what == "account" else role(name) if what == "role" else database(name)


async def ensure_book(db: Database, schema: str, book: Book) -> None:
    """Create ``book``'s table if missing (after :func:`ensure_schema`); as there, a look first: a restart
    over existing tables sends no DDL."""
    if not await _table_exists(db, validate_schema(schema), book.name):
        await db.execute(Statement(book.create, table=table(schema, book.name)))


async def _table_exists(db: Database, schema: str, name: str) -> bool:
    found = await db.fetch(
        Statement(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            schema,
            name,
        )
    )
    return bool(int(str(found[0][0])))


async def owner_of(db: Database, schema: str, entry: Entry) -> Owner | None:
    """Who owns ``entry``; None if nobody does."""
    rows = await db.fetch(Statement(entry.book.select, *entry.key, table=table(schema, entry.book.name)))
    return Owner(str(rows[0][0]), str(rows[0][1]), str(rows[0][2])) if rows else None


async def recorded_owners(db: Database, schema: str, entries: Sequence[Entry]) -> dict[Entry, Owner]:
    """Who owns each of ``entries`` (those nobody owns left out), by reads only: nothing for a book whose
    table, or the bookkeeping schema, does not exist (managementPolicy Observe creates nothing)."""
    query = "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s"
    tables = {str(row[0]) for row in await db.fetch(Statement(query, validate_schema(schema)))}
    found = {entry: await owner_of(db, schema, entry) for entry in entries if entry.book.name in tables}
    return {entry: owner for entry, owner in found.items() if owner is not None}


@dataclass(frozen=True)
class Claim:
    """The outcome of :func:`claim`: who owns the account now, and whether this very call made it so.

    ``inserted`` is False when a row was there already, even one naming the claimant (an earlier pass, or
    another replica, claimed it): then nothing is known of the account but what the server shows.
    """

    owner: Owner
    inserted: bool


async def claim(db: Database, schema: str, entry: Entry, owner: Owner) -> Claim:
    """Record ``owner`` as ``entry``'s owner unless somebody owns it already; who owns it now.

    The insert is atomic (the primary key decides), so of two claimants exactly one wins and both are
    told which. The caller compares the result's ``owner.uid`` with its own, and ``inserted`` tells a row
    it just wrote from one that was there already.
    """
    insert = Statement(
        entry.book.insert,
        *entry.key,
        owner.uid,
        owner.namespace,
        owner.name,
        table=table(schema, entry.book.name),
    )
    for _ in range(3):  # the owner may forget the name between our insert and our read
        if await db.execute(insert) == 1:  # one row inserted: ours, no need to read it back
            return Claim(owner, inserted=True)
        current = await owner_of(db, schema, entry)
        if current is not None:
            return Claim(current, inserted=False)
    raise ServerError(f"the ownership of {entry} keeps changing")


def expected_fingerprint(
    server: ServerInfo, password: str | None, method: Method | None = None
) -> str | None:
    """The fingerprint ``IDENTIFIED`` with ``method`` (None: the server's default plugin) gives the account
    on ``server`` for ``password``, when the hash is unsalted (MariaDB's ``mysql_native_password``: ``*``
    and the upper-case hex of ``SHA1(SHA1(password))``; ``ed25519``; a certificate-only account's empty
    string, without a password); None when it cannot be known beforehand (MySQL's salted
    ``caching_sha2_password``, or no password)."""
    sent = effective(method, server)
    stored = sent.stored(password) if sent is not None else None
    return None if stored is None else password_hashes.fingerprint(stored)


async def claim_new(
    db: Database,
    schema: str,
    user: str,
    host: str,
    owner: Owner,
    *,
    server: ServerInfo,
    fingerprint: str | None = None,
) -> bool:
    """Claim ``'user'@'host'`` for ``owner`` only if nobody owns it and the account does not exist, in one
    statement; whether it did (False: look, then :func:`claim`, as for any other account).

    The fast path of a new resource's first pass: the row is written only while the account is absent, so
    a claim never lands on an account somebody else made, even if the process dies right after.
    ``fingerprint``: the one the account will have once this pass creates it (:func:`expected_fingerprint`).
    """
    user, host = valid_account(user, host)
    inserted = await db.execute(
        Statement(
            "INSERT INTO {table} (user, host, owner_uid, namespace, name, auth_fingerprint)"
            " SELECT %s, %s, %s, %s, %s, %s FROM DUAL"
            " WHERE NOT EXISTS (SELECT 1 FROM {accounts} u WHERE u.User = %s AND u.Host = %s)"
            " ON DUPLICATE KEY UPDATE owner_uid = owner_uid",
            user,
            host,
            owner.uid,
            owner.namespace,
            owner.name,
            fingerprint,
            user,
            host.lower(),
            table=table(schema),
            accounts=catalog.accounts_table(server),
        )
    )
    return inserted == 1


async def forget(db: Database, schema: str, entry: Entry, owner_uid: str) -> bool:
    """Delete ``entry``'s row if ``owner_uid`` owns it; whether it did."""
    delete = Statement(entry.book.delete, *entry.key, owner_uid, table=table(schema, entry.book.name))
    return await db.execute(delete) > 0


async def owned_hosts(db: Database, schema: str, user: str, owner_uid: str) -> list[str]:
    """The hosts of ``user``'s accounts that ``owner_uid`` owns, as claimed, in order (a primary-key prefix
    read)."""
    with checked_input():
        user = validate_user(user)
    rows = await db.fetch(
        Statement(
            "SELECT host FROM {table} WHERE user = %s AND owner_uid = %s ORDER BY host",
            user,
            owner_uid,
            table=table(schema),
        )
    )
    return [str(row[0]) for row in rows]


async def forget_owner(db: Database, schema: str, book: Book, name: str, owner_uid: str) -> int:
    """Delete the rows of ``name`` in ``book`` that ``owner_uid`` owns (an account's on every host); how
    many."""
    with checked_input():
        name = valid_database(name) if book is DATABASES else validate_user(name)
    return await db.execute(Statement(book.delete_name, name, owner_uid, table=table(schema, book.name)))


async def owned(db: Database, schema: str, book: Book) -> dict[tuple[str, ...], Owner]:
    """Every row of ``book``, key to owner (one SELECT); none while its table does not exist."""
    try:
        rows = await db.fetch(Statement(book.every, table=table(schema, book.name)))
    except MySQLError as error:
        if error.code == _NO_SUCH_TABLE:
            return {}
        raise
    return {tuple(str(part) for part in row[:-3]): Owner(*(str(part) for part in row[-3:])) for row in rows}


async def list_owned(db: Database, schema: str) -> list[OwnedAccount]:
    """Every owned account, ordered by user and host."""
    rows = await db.fetch(Statement(ACCOUNTS.every, table=table(schema)))
    return [OwnedAccount(str(u), str(h), Owner(str(uid), str(ns), str(n))) for u, h, uid, ns, n in rows]


async def record_fingerprint(
    db: Database,
    schema: str,
    user: str,
    host: str,
    server: ServerInfo,
    *,
    password: str | None = None,
    method: Method | None = None,
) -> bool:
    """Remember the fingerprint of the password the operator has just set with ``method`` (None: the
    server's default plugin); whether it was the operator's own (False: :data:`FOREIGN` recorded).

    Unsalted (:func:`expected_fingerprint`): the fingerprint of the known hash, one statement, the account
    not read. Salted: the account's plugin and string are read and checked against ``password`` first.
    Without ``password`` (a plugin that takes none; a certificate-only account's empty string is known)
    ``SHA2(authentication_string, 256)`` as it stands, or
    NULL when the account does not exist, as for a plugin whose format the operator does not check. An
    account nobody owns is left alone.
    """
    known = expected_fingerprint(server, password, method)
    if known is not None:
        await _set_fingerprint(db, schema, user, host, known)
        return True
    if password is not None:
        found = await password_match.read_authentication(db, user, host, server)
        if found is not None:
            plugin, auth = found
            verdict = password_hashes.matches(plugin, auth, password)
            if verdict is not None:
                fingerprint = password_hashes.fingerprint(auth) if verdict else FOREIGN
                await _set_fingerprint(db, schema, user, host, fingerprint)
                return verdict
    await db.execute(
        Statement(
            "UPDATE {table} o SET o.auth_fingerprint = ("
            "SELECT SHA2({auth}, 256) FROM {accounts} u WHERE u.User = o.user AND u.Host = LOWER(o.host))"
            " WHERE o.user = %s AND o.host = %s",
            *valid_account(user, host),
            table=table(schema),
            accounts=catalog.accounts_table(server),
            auth=catalog.authentication_string(server, "u"),
        )
    )
    return True


async def _set_fingerprint(db: Database, schema: str, user: str, host: str, fingerprint: str) -> None:
    await db.execute(
        Statement(
            "UPDATE {table} SET auth_fingerprint = %s WHERE user = %s AND host = %s",
            fingerprint,
            *valid_account(user, host),
            table=table(schema),
        )
    )


def compare_fingerprints(recorded: object, current: object) -> bool | None:
    """True if equal, False if not, None when either is missing (NULL)."""
    if recorded is None or current is None:
        return None
    return str(recorded).lower() == str(current).lower()


async def count_owned(db: Database, schema: str) -> int:
    """How many accounts and roles the bookkeeping records (both tables must exist)."""
    rows = await db.fetch(
        Statement(
            "SELECT (SELECT COUNT(*) FROM {accounts}) + (SELECT COUNT(*) FROM {roles})",
            accounts=table(schema),
            roles=table(schema, ROLES_TABLE),
        )
    )
    return int(rows[0][0])
