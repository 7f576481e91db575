"""An account's lock and password policy: ``ACCOUNT LOCK | UNLOCK``, ``PASSWORD EXPIRE NEVER | DEFAULT |
INTERVAL n DAY`` and, on MySQL 8.0.19+, ``FAILED_LOGIN_ATTEMPTS n PASSWORD_LOCK_TIME n | UNBOUNDED``.

Where the servers keep it:

- MySQL: ``mysql.user.account_locked`` (``Y``/``N``), ``password_lifetime`` (NULL: the server's default,
  0: never, n days), and ``User_attributes`` (JSON) ``$.Password_locking.failed_login_attempts`` and
  ``password_lock_time_days`` (-1: unbounded);
- MariaDB (10.4+): ``mysql.global_priv.Priv`` (JSON) ``$.account_locked`` and ``$.password_lifetime``
  (absent or -1: the server's default); its ``mysql.user`` view shows neither. It has no per-account
  failed-login lock, only the server-wide ``max_password_errors``.
- Both: ``@@global.default_password_lifetime`` (days; 0: passwords do not expire).

Written with one ``ALTER USER`` that names what differs, only when something does. Numbers are checked
ints rendered by :mod:`.identifiers`; nothing from outside is spliced in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, LiteralString

from dbuser_operator.mysql.accounts.catalog import accounts_table
from dbuser_operator.mysql.errors import InvalidAccountError, InvalidOptionsError, checked_input
from dbuser_operator.mysql.identifiers import SQL, account, unsigned_literal, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database, Row
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

DEFAULT_LIFETIME: Final = -1
"""``password_lifetime`` of an account that follows the server's ``default_password_lifetime``."""
NEVER: Final = 0
"""``password_lifetime`` of a password that never expires."""
UNBOUNDED: Final = -1
"""``password_lock_time`` of a lock that lasts until an administrator unlocks the account."""
LIFETIME_MAX: Final = 65535
ATTEMPTS_MAX: Final = 32767
LOCK_TIME_MAX: Final = 32767

FAILED_LOGIN_LOCK_SINCE: Final = (8, 0, 19)
"""The first MySQL with FAILED_LOGIN_ATTEMPTS and PASSWORD_LOCK_TIME."""

COLUMNS: Final = ("account_locked", "password_lifetime", "failed_login_attempts", "password_lock_time")
"""The names of :func:`column_list`'s columns, in order; then ``default_password_lifetime``."""


@dataclass(frozen=True)
class LockPolicy:
    """An account's lock and password policy, as the server has it.

    ``password_lifetime``: :data:`DEFAULT_LIFETIME`, :data:`NEVER` or days; ``failed_login_attempts`` 0:
    none; ``password_lock_time``: days or :data:`UNBOUNDED` (0 with no failed-login lock)."""

    locked: bool = False
    password_lifetime: int = DEFAULT_LIFETIME
    failed_login_attempts: int = 0
    password_lock_time: int = 0

    def __post_init__(self) -> None:
        bounds = {
            "password_lifetime": (DEFAULT_LIFETIME, LIFETIME_MAX),
            "failed_login_attempts": (0, ATTEMPTS_MAX),
            "password_lock_time": (UNBOUNDED, LOCK_TIME_MAX),
        }
        for name, (least, most) in bounds.items():
            value = getattr(self, name)
            if type(value) is not int or not least <= value <= most:
                raise InvalidOptionsError(
                    f"{name} must be an integer from {least} to {most}, not {value!r}"[:200]
                )
        if type(self.locked) is not bool:
            raise InvalidOptionsError(f"locked must be a boolean, not {self.locked!r}"[:200])

    @property
    def failed_login_lock(self) -> bool:
        """Whether failed logins lock the account (MySQL: both numbers non-zero)."""
        return self.failed_login_attempts > 0 and self.password_lock_time != 0

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> LockPolicy:
        """From :func:`column_list`'s columns, by :data:`COLUMNS` name."""
        return cls(
            locked=str(row["account_locked"]).lower() in ("y", "true", "1"),
            password_lifetime=_number(row["password_lifetime"], DEFAULT_LIFETIME),
            failed_login_attempts=_number(row["failed_login_attempts"], 0),
            password_lock_time=_number(row["password_lock_time"], 0),
        )


@dataclass(frozen=True)
class WantedPolicy:
    """What the spec asks for. ``password_lifetime`` None: the password must not expire *in effect* — the
    server's default is kept while ``default_password_lifetime`` is 0, else :data:`NEVER` is written."""

    locked: bool = False
    password_lifetime: int | None = None
    failed_login_attempts: int = 0
    password_lock_time: int = 0

    def for_account(self, live: LockPolicy, default_lifetime: int) -> LockPolicy:
        """The policy to give an account that has ``live`` on a server whose default lifetime is
        ``default_lifetime``: equal to ``live`` when nothing needs to change."""
        lifetime = self.password_lifetime
        if lifetime is None:
            expires = live.password_lifetime > 0 or (
                live.password_lifetime == DEFAULT_LIFETIME and default_lifetime > 0
            )
            lifetime = NEVER if expires else live.password_lifetime
        return LockPolicy(
            locked=self.locked,
            password_lifetime=lifetime,
            failed_login_attempts=self.failed_login_attempts,
            password_lock_time=self.password_lock_time if self.failed_login_attempts else 0,
        )


def failed_login_lock_supported(server: ServerInfo) -> bool:
    """Whether the server has a per-account failed-login lock (MySQL 8.0.19 and later)."""
    return server.flavour == "mysql" and server.version >= FAILED_LOGIN_LOCK_SINCE


def column_list(server: ServerInfo, alias: LiteralString) -> SQL:
    """The policy's columns (:data:`COLUMNS`) read from :func:`.catalog.accounts_table` aliased ``alias``
    (a constant letter), then ``@@global.default_password_lifetime``."""
    if not alias.isidentifier():
        raise ValueError(f"not an alias: {alias!r}")
    if server.flavour == "mariadb":
        columns = (
            f"JSON_VALUE({alias}.Priv, '$.account_locked'), JSON_VALUE({alias}.Priv, '$.password_lifetime'),"
            " 0, 0"
        )
    elif failed_login_lock_supported(server):
        columns = (
            f"{alias}.account_locked, {alias}.password_lifetime,"
            f" JSON_EXTRACT({alias}.User_attributes, '$.Password_locking.failed_login_attempts'),"
            f" JSON_EXTRACT({alias}.User_attributes, '$.Password_locking.password_lock_time_days')"
        )
    else:
        columns = f"{alias}.account_locked, {alias}.password_lifetime, 0, 0"
    return SQL(columns + ", @@global.default_password_lifetime")


def _number(value: object, absent: int) -> int:
    """A column's number: NULL (and JSON null) is ``absent``; MariaDB's default lifetime reads -1."""
    if value is None:
        return absent
    text = value.decode() if isinstance(value, bytes | bytearray) else str(value)
    text = text.strip().strip('"')
    if text.lower() in ("", "null"):
        return absent
    return int(text)


async def read_policy(
    db: Database, user: str, host: str, server: ServerInfo
) -> tuple[LockPolicy, int] | None:
    """The account's policy and the server's ``default_password_lifetime``; None when the account does not
    exist."""
    with checked_input():
        user, host = validate_user(user), validate_host(host).lower()
    statement = Statement(
        "SELECT {columns} FROM {table} a WHERE a.User = %s AND a.Host = %s",
        user,
        host,
        columns=column_list(server, "a"),
        table=accounts_table(server),
    )
    rows: list[Row] = await db.fetch(statement)
    if not rows:
        return None
    return LockPolicy.from_row(dict(zip(COLUMNS, rows[0], strict=False))), _number(rows[0][4], 0)


def alter_statement(
    user: str, host: str, live: LockPolicy, desired: LockPolicy, server: ServerInfo
) -> Statement:
    """``ALTER USER 'user'@'host' ACCOUNT LOCK|UNLOCK PASSWORD EXPIRE … FAILED_LOGIN_ATTEMPTS n
    PASSWORD_LOCK_TIME n|UNBOUNDED``, naming only what differs between ``live`` and ``desired``."""
    with checked_input():
        who = account(user, host)
    clauses: list[str] = []
    if live.locked != desired.locked:
        clauses.append("ACCOUNT LOCK" if desired.locked else "ACCOUNT UNLOCK")
    if live.password_lifetime != desired.password_lifetime:
        clauses.append(_expire_clause(desired.password_lifetime))
    locking = (desired.failed_login_attempts, desired.password_lock_time)
    if locking != (live.failed_login_attempts, live.password_lock_time):
        if not failed_login_lock_supported(server):
            raise InvalidOptionsError(f"{server} has no FAILED_LOGIN_ATTEMPTS and PASSWORD_LOCK_TIME")
        lock_time = "UNBOUNDED" if desired.password_lock_time == UNBOUNDED else desired.password_lock_time
        attempts = unsigned_literal(desired.failed_login_attempts)
        clauses.append(f"FAILED_LOGIN_ATTEMPTS {attempts} PASSWORD_LOCK_TIME {lock_time}")
    if not clauses:
        raise ValueError("nothing differs")
    return Statement("ALTER USER {account} {clauses}", account=who, clauses=SQL(" ".join(clauses)))


def _expire_clause(lifetime: int) -> str:
    if lifetime == NEVER:
        return "PASSWORD EXPIRE NEVER"
    if lifetime == DEFAULT_LIFETIME:
        return "PASSWORD EXPIRE DEFAULT"
    return f"PASSWORD EXPIRE INTERVAL {unsigned_literal(lifetime)} DAY"


async def apply_policy(
    db: Database,
    user: str,
    host: str,
    wanted: WantedPolicy,
    server: ServerInfo,
    *,
    live: tuple[LockPolicy, int] | None = None,
) -> tuple[LockPolicy, LockPolicy] | None:
    """Give the account ``wanted`` with one ``ALTER USER``, only if it differs: ``(before, after)`` when it
    wrote, None when nothing changed. ``live``: the account's policy and the server's default lifetime as
    the caller read them in this pass (None: read here). A missing account raises
    :class:`~.errors.InvalidAccountError`."""
    found = live if live is not None else await read_policy(db, user, host, server)
    if found is None:
        raise InvalidAccountError(f"'{user}'@'{host}' does not exist", 1396)
    current, default_lifetime = found
    desired = wanted.for_account(current, default_lifetime)
    if desired == current:
        return None
    await db.execute(alter_statement(user, host, current, desired, server))
    return current, desired
