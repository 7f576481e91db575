"""Dual passwords (MySQL 8.0.21+): a new password with the old one kept valid, and the old one discarded.

``ALTER USER … IDENTIFIED BY new RETAIN CURRENT PASSWORD`` makes the current password the account's
secondary one (replacing any earlier secondary) and ``new`` its primary: both log in. ``ALTER USER …
DISCARD OLD PASSWORD`` drops the secondary. A plain ``ALTER USER … IDENTIFIED BY`` changes the primary and
keeps the secondary as it is. MariaDB has no dual passwords.

Repeating a retain is not harmless: sent twice, the second would retain the *new* password and lose the old
one. So every password this module sets carries, in the same statement, a marker of which credential it is
(``ATTRIBUTE '{"dbuser-operator.dev/credential": "<version>"}'``, kept in ``mysql.user.User_attributes``
under ``metadata``; 8.0.21+): the account itself tells whether a given credential is already its primary
password (:func:`read_state`), and a retry after a crash between the statement and the caller's own record
of it retains nothing twice. The version is an identifier of the caller's (never the password or a hash).

Sessions that predate a rotation: connection ids grow with every connection the server accepts, so the
highest id when the password was retained (:func:`session_watermark`) separates older sessions from newer
ones, until the server restarts (its uptime tells; then every session is newer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, LiteralString

from pydantic import SecretStr

from dbuser_operator.mysql.accounts import catalog
from dbuser_operator.mysql.accounts.authentication import Method, known
from dbuser_operator.mysql.accounts.passwords import validate_password
from dbuser_operator.mysql.accounts.sessions import client_host, may_be_of
from dbuser_operator.mysql.errors import checked_input
from dbuser_operator.mysql.identifiers import SQL, account, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

MINIMUM_VERSION: Final = (8, 0, 21)
"""The oldest MySQL with dual passwords (8.0.14) and account attributes (8.0.21) together."""

CREDENTIAL_ATTRIBUTE: Final = "dbuser-operator.dev/credential"
_CREDENTIAL_PATH: Final = SQL("'$.metadata.\"dbuser-operator.dev/credential\"'")
_VERSION_MAX: Final = 256


def supports_dual_passwords(server: ServerInfo) -> bool:
    """Whether the server can keep a retained (secondary) password: MySQL 8.0.21 or later."""
    return server.flavour == "mysql" and server.version >= MINIMUM_VERSION


@dataclass(frozen=True)
class PasswordState:
    """What the account shows of its passwords: the credential marker of its primary password (None: set
    by somebody else, or before markers), and whether it has a retained secondary password."""

    credential: str | None
    retained: bool


@dataclass(frozen=True)
class Hashed:
    """A password sent as the string the server stores (``IDENTIFIED WITH plugin AS``), made on the client
    (:mod:`.hashed_password`), and what goes into ``ATTRIBUTE`` with it (its fingerprint)."""

    plugin: str
    string: str = field(repr=False)
    attribute: dict[str, object] = field(repr=False)


def _key(user: str, host: str) -> tuple[str, str]:
    with checked_input():
        return validate_user(user), validate_host(host).lower()


def _credential(version: str) -> dict[str, str]:
    if not isinstance(version, str) or not 0 < len(version) <= _VERSION_MAX or not version.isprintable():
        raise ValueError(f"a credential version must be 1 to {_VERSION_MAX} printable characters")
    return {CREDENTIAL_ATTRIBUTE: version}


def state_columns(server: ServerInfo, alias: str) -> SQL:
    """Two columns of the accounts table (``mysql.user``) aliased ``alias`` (a constant): the credential
    marker and whether a secondary password is retained, as :func:`read_state` reads them; ``NULL, NULL`` on a
    server without dual passwords. For a look that reads the account anyway (:mod:`.account_lookup`)."""
    return catalog.columns_or_nulls(
        alias,
        supports_dual_passwords(server),
        "JSON_UNQUOTE(JSON_EXTRACT({a}.User_attributes, " + _CREDENTIAL_PATH + "))",
        "JSON_CONTAINS_PATH(IFNULL({a}.User_attributes, '{{}}'), 'one', '$.additional_password')",
    )


def state_of(marker: object, retained: object) -> PasswordState:
    """The :class:`PasswordState` of the two columns :func:`state_columns` reads."""
    return PasswordState(None if marker is None else str(marker), bool(retained))


async def read_state(db: Database, user: str, host: str) -> PasswordState | None:
    """The account's credential marker and whether it has a secondary password; None without account."""
    rows = await db.fetch(
        Statement(
            "SELECT JSON_UNQUOTE(JSON_EXTRACT(User_attributes, {path})),"
            " JSON_CONTAINS_PATH(IFNULL(User_attributes, '{{}}'), 'one', '$.additional_password')"
            " FROM mysql.user WHERE User = %s AND Host = %s",
            *_key(user, host),
            path=_CREDENTIAL_PATH,
        )
    )
    return state_of(*rows[0]) if rows else None


async def set_password(
    db: Database,
    user: str,
    host: str,
    password: str | SecretStr,
    version: str,
    *,
    retain: bool,
    method: Method | None = None,
    hashed: Hashed | None = None,
) -> None:
    """Set the primary password and mark it as credential ``version``, in one statement; with ``method``,
    ``IDENTIFIED WITH`` its plugin (the account's already: RETAIN refuses a change of plugin); with
    ``hashed``, ``IDENTIFIED WITH`` its plugin ``AS`` its string, and its fingerprint in the same
    ``ATTRIBUTE`` (:mod:`.hashed_password`).

    ``retain``: the current primary becomes the secondary (RETAIN CURRENT PASSWORD); else the secondary, if
    any, stays as it is. Callers that retain check :func:`read_state` first: never retain a credential that
    is already the primary one.
    """
    with checked_input():
        identified: LiteralString = "IDENTIFIED WITH {plugin} BY %s" if method else "IDENTIFIED BY %s"
        keep: LiteralString = " RETAIN CURRENT PASSWORD" if retain else ""
        named = hashed.plugin if hashed is not None else method.plugin if method is not None else None
        if named is not None:
            known(named)  # one of the known plugins' names: letters, digits and '_'
        plugin = {"plugin": SQL(named)} if named is not None else {}
        sent = validate_password(password)
        if hashed is not None:
            identified, sent = "IDENTIFIED WITH {plugin} AS %s", SecretStr(hashed.string)
        statement = Statement(
            "ALTER USER {account} " + identified + keep + " ATTRIBUTE %s",
            sent,
            json.dumps({**_credential(version), **(hashed.attribute if hashed is not None else {})}),
            account=account(user, host),
            **plugin,
        )
    await db.execute(statement, idempotent=False)  # sent twice, a retain would retain the new password


async def discard_old_password(db: Database, user: str, host: str) -> None:
    """Drop the account's secondary password (nothing happens when it has none)."""
    with checked_input():
        statement = Statement("ALTER USER {account} DISCARD OLD PASSWORD", account=account(user, host))
    await db.execute(statement)


async def session_watermark(db: Database) -> int:
    """The highest connection id the server has given out so far (of the sessions still open)."""
    rows = await db.fetch(Statement("SELECT IFNULL(MAX(ID), 0) FROM information_schema.PROCESSLIST"))
    return int(str(rows[0][0]))


@dataclass(frozen=True)
class OldSessions:
    """Sessions of an account up to a watermark, and the server's uptime in seconds (a restart resets
    connection ids: sessions then are all newer than anything before it)."""

    count: int
    uptime: float


async def sessions_up_to(db: Database, user: str, hosts: Sequence[str], watermark: int) -> OldSessions:
    """The open sessions with a connection id up to ``watermark`` that may be of the accounts of ``user``
    at ``hosts`` (:func:`.sessions.may_be_of`: the processlist shows the client's host, not the account's),
    and the server's uptime."""
    with checked_input():
        name, wanted = validate_user(user), [validate_host(host) for host in hosts]
    # The uptime: SHOW on both flavours (MariaDB's performance_schema is off by default, and MySQL has no
    # information_schema.GLOBAL_STATUS).
    [(_, uptime)] = await db.fetch(Statement("SHOW GLOBAL STATUS LIKE 'Uptime'"))
    rows = await db.fetch(
        Statement(
            "SELECT HOST FROM information_schema.PROCESSLIST WHERE USER = %s AND ID <= %s",
            name,
            int(watermark),
        )
    )
    clients = [client_host(str(host or "")) for (host,) in rows]
    if not clients:
        return OldSessions(0, float(str(uptime)))
    accounts = await db.fetch(Statement("SELECT Host FROM mysql.user WHERE User = %s", name))
    mine = {host.lower() for host in wanted}
    others = [str(host) for (host,) in accounts if str(host).lower() not in mine]
    return OldSessions(sum(may_be_of(wanted, client, others) for client in clients), float(str(uptime)))
