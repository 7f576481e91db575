"""Owner metadata on the account itself, so that a DBA sees on the server whose an account is.

MySQL 8.0.21+ keeps account attributes: a JSON object, ``mysql.user.User_attributes`` under ``metadata``,
shown by ``information_schema.USER_ATTRIBUTES``. ``ALTER USER … ATTRIBUTE '<json>'`` merges into it as
``JSON_MERGE_PATCH`` does: a key set to ``null`` is removed, an object merged key by key, anything else
replaced; ``COMMENT 'text'`` is the same as ``ATTRIBUTE '{"comment": "text"}'``. Owned accounts carry

    {"dbuser-operator.dev/owner": {"managedBy": "dbuser-operator", "namespace": …, "name": …, "uid": …},
     "comment": <spec.comment>}

next to the credential marker of :mod:`.dual_password`, which this module never touches. The JSON is built
here with :func:`json.dumps` and sent as one query parameter: a comment cannot leave its JSON string, nor
the statement. The owner entry is information for people: the operator never reads it as proof of
ownership (the bookkeeping table of :mod:`.ownership` is the authority).

MariaDB (10.11, 11.8) has neither ``ATTRIBUTE`` nor ``COMMENT`` for accounts: :func:`supports_attributes`
says False there, and the bookkeeping table is where a DBA looks (docs/ownership.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, LiteralString

from dbuser_operator.mysql.accounts import dual_password
from dbuser_operator.mysql.errors import checked_input
from dbuser_operator.mysql.identifiers import SQL, account, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

MINIMUM_VERSION: Final = (8, 0, 21)
"""The oldest MySQL with account attributes (``ATTRIBUTE``, ``COMMENT``)."""

OWNER_ATTRIBUTE: Final[LiteralString] = "dbuser-operator.dev/owner"
COMMENT_ATTRIBUTE: Final[LiteralString] = "comment"
FINGERPRINT_ATTRIBUTE: Final[LiteralString] = "dbuser-operator.dev/fingerprint"
"""The fingerprint a new account is created with (:mod:`.new_password`)."""
RELEASED: Final = (OWNER_ATTRIBUTE, FINGERPRINT_ATTRIBUTE, dual_password.CREDENTIAL_ATTRIBUTE)
"""What a released account loses: the owner entry and the operator's own bookkeeping in its attributes."""
MANAGED_BY: Final = "dbuser-operator"
COMMENT_MAX_LENGTH: Final = 256


def supports_attributes(server: ServerInfo) -> bool:
    """Whether the server keeps account attributes and comments: MySQL 8.0.21 or later."""
    return server.flavour == "mysql" and server.version >= MINIMUM_VERSION


def columns(server: ServerInfo, alias: str) -> SQL:
    """Two columns, the owner entry and the comment as JSON text (NULL when absent, and always on a server
    without attributes), from the accounts table (``mysql.user``) aliased ``alias`` (a constant)."""
    if not alias.isidentifier():
        raise ValueError(f"not an alias: {alias!r}")
    if not supports_attributes(server):
        return SQL("NULL, NULL")
    return SQL(
        f"JSON_EXTRACT({alias}.User_attributes, '$.metadata.\"{OWNER_ATTRIBUTE}\"'),"
        f" JSON_EXTRACT({alias}.User_attributes, '$.metadata.{COMMENT_ATTRIBUTE}')"
    )


@dataclass(frozen=True)
class AccountMetadata:
    """What the account's attributes hold of ours: the owner entry and the comment, as parsed JSON (None:
    absent; anything else may be there after a hand edit)."""

    owner: Any = None
    comment: Any = None

    @classmethod
    def from_columns(cls, owner: object, comment: object) -> AccountMetadata:
        """From the two columns of :func:`columns` (JSON text, or NULL)."""
        return cls(_parsed(owner), _parsed(comment))


def _parsed(value: object) -> Any:
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else str(value)
    return json.loads(text)


def owner_entry(namespace: str, name: str, uid: str) -> dict[str, str]:
    """The owner entry an account owned by the resource ``namespace/name`` (``uid``) carries."""
    return {"managedBy": MANAGED_BY, "namespace": namespace, "name": name, "uid": uid}


def validate_comment(comment: str) -> str:
    """A comment: at most :data:`COMMENT_MAX_LENGTH` printable characters (ValueError otherwise)."""
    if not isinstance(comment, str) or len(comment) > COMMENT_MAX_LENGTH or not comment.isprintable():
        raise ValueError(f"a comment must be at most {COMMENT_MAX_LENGTH} printable characters")
    return comment


def patch(
    current: AccountMetadata, owner: dict[str, str] | None, comment: str | None = None
) -> dict[str, Any]:
    """The attributes to merge so that the account carries the owner entry ``owner`` (:func:`owner_entry`;
    None: no owner entry) and, when ``comment`` is given, that comment (an empty one: none); empty when
    nothing differs. Keys of the owner entry that do not belong there are set to null (a merge keeps what
    it is not told to remove)."""
    changes: dict[str, Any] = {}
    if owner is None:
        if current.owner is not None:
            changes[OWNER_ATTRIBUTE] = None
    else:
        wanted = dict(owner)
        if current.owner != wanted:
            extra = current.owner if isinstance(current.owner, dict) else {}
            changes[OWNER_ATTRIBUTE] = {key: None for key in extra if key not in wanted} | wanted
    if comment is not None:
        wanted_comment = validate_comment(comment) or None
        if current.comment != wanted_comment:
            changes[COMMENT_ATTRIBUTE] = wanted_comment
    return changes


def _key(user: str, host: str) -> tuple[str, str]:
    with checked_input():
        return validate_user(user), validate_host(host).lower()


async def read(db: Database, user: str, host: str, server: ServerInfo) -> AccountMetadata | None:
    """The account's owner entry and comment; None when the account does not exist."""
    rows = await db.fetch(
        Statement(
            "SELECT {columns} FROM mysql.user u WHERE u.User = %s AND u.Host = %s",
            *_key(user, host),
            columns=columns(server, "u"),
        )
    )
    return AccountMetadata.from_columns(*rows[0]) if rows else None


async def apply(db: Database, user: str, host: str, changes: dict[str, Any]) -> None:
    """Merge ``changes`` (from :func:`patch`) into the account's attributes, in one statement."""
    if not changes:
        return
    with checked_input():
        statement = Statement(
            "ALTER USER {account} ATTRIBUTE %s", json.dumps(changes), account=account(user, host)
        )
    await db.execute(statement)


async def release(
    db: Database,
    schema_table: SQL,
    user: str,
    owner_uid: str,
    server: ServerInfo,
    *,
    host: str | None = None,
) -> int:
    """Remove the owner entry (and the operator's credential marker and fingerprint: :data:`RELEASED`)
    from the existing accounts of ``user`` (on ``host`` only, if given) that
    ``owner_uid`` owns in the bookkeeping table ``schema_table`` (:func:`.ownership.table`); how many
    accounts it changed. One read, then one statement per account that carries an entry. Nothing on a
    server without attributes."""
    if not supports_attributes(server):
        return 0
    with checked_input():
        user = validate_user(user)
        hosts: tuple[str, ...] = () if host is None else (validate_host(host),)
    one_host: LiteralString = " AND o.host = %s" if hosts else ""
    rows = await db.fetch(
        Statement(
            "SELECT o.host FROM {table} o JOIN mysql.user u ON u.User = o.user AND u.Host = LOWER(o.host)"  # noqa: S608 - constant text
            " WHERE o.user = %s AND o.owner_uid = %s"
            + one_host
            + " AND JSON_CONTAINS_PATH(u.User_attributes, 'one', '$.metadata.\""
            + OWNER_ATTRIBUTE
            + "\"')",
            user,
            owner_uid,
            *hosts,
            table=schema_table,
        )
    )
    for (found,) in rows:
        await apply(db, user, str(found), dict.fromkeys(RELEASED))
    return len(rows)
