"""Account limits: connection and query limits, and what the account must show over TLS.

Read from ``mysql.user`` (a table on MySQL, a view on MariaDB; the same columns) and written with one
``ALTER USER ... REQUIRE NONE|SSL|X509|<issuer, subject, cipher> WITH MAX_QUERIES_PER_HOUR n
MAX_UPDATES_PER_HOUR n MAX_CONNECTIONS_PER_HOUR n MAX_USER_CONNECTIONS n`` (MySQL 8.0/8.4 and MariaDB
10.6+), only when something differs. The numbers are checked ints rendered by :mod:`.identifiers`, never text
from outside; issuer, subject and cipher are checked (:mod:`.tls_identity`) and travel as query parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, LiteralString

from dbuser_operator.mysql.accounts.tls_identity import SSL_NONE, TLSIdentity
from dbuser_operator.mysql.errors import InvalidOptionsError, checked_input
from dbuser_operator.mysql.identifiers import account, unsigned_literal, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database, Row
from dbuser_operator.mysql.session.statement import Statement

LIMIT_MAX: Final = 4294967295
"""The largest hourly limit: MySQL and MariaDB store them as unsigned 32-bit integers (MariaDB silently
wraps a larger one to 0)."""

USER_CONNECTIONS_MAX: Final = 2147483647
"""The largest MAX_USER_CONNECTIONS both servers accept: MariaDB's grammar takes a signed 32-bit integer
(a larger value is a syntax error there); MySQL would take up to 4294967295."""


_BOUNDS: Final = (
    ("max_user_connections", USER_CONNECTIONS_MAX),
    ("max_queries_per_hour", LIMIT_MAX),
    ("max_updates_per_hour", LIMIT_MAX),
    ("max_connections_per_hour", LIMIT_MAX),
)
"""Each limit field and its largest value (checked by :class:`Limits`, once per construction)."""


@dataclass(frozen=True)
class Limits:
    """The account's limits (0: none of its own) and TLS requirement.

    ``require_tls``: TLS at all (REQUIRE SSL); ``tls_identity``: what the connection must show on top
    (a client certificate, an issuer, subject or cipher), which implies ``require_tls``. The constructor
    checks ranges and types (:class:`~.errors.InvalidOptionsError`); an identity read from the server is
    taken as it is, one to write is checked by :func:`alter_statement`.
    """

    max_user_connections: int = 0
    max_queries_per_hour: int = 0
    max_updates_per_hour: int = 0
    max_connections_per_hour: int = 0
    require_tls: bool = False
    tls_identity: TLSIdentity = field(default_factory=TLSIdentity)

    def __post_init__(self) -> None:
        for name, limit in _BOUNDS:
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= limit:
                raise InvalidOptionsError(f"{name} must be an integer from 0 to {limit}, not {value!r}"[:200])
        if type(self.require_tls) is not bool:
            raise InvalidOptionsError(f"require_tls must be a boolean, not {self.require_tls!r}"[:200])
        if not isinstance(self.tls_identity, TLSIdentity):
            raise InvalidOptionsError(f"tls_identity must be a TLSIdentity, not {self.tls_identity!r}"[:200])
        if self.tls_identity and not self.require_tls:
            raise InvalidOptionsError("a TLS identity (X509, issuer, subject, cipher) implies require_tls")

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> Limits:
        """From a ``mysql.user`` row by column name, :data:`LIMIT_COLUMNS` at least; the TLS identity from
        ``ssl_type`` alone (a certificate, or nothing: :meth:`from_columns` reads issuer, subject and cipher
        too)."""
        ssl_type = row["ssl_type"]
        tls = "" if ssl_type is None else str(ssl_type)
        return cls(
            max_user_connections=_number(row["max_user_connections"]),
            max_queries_per_hour=_number(row["max_questions"]),
            max_updates_per_hour=_number(row["max_updates"]),
            max_connections_per_hour=_number(row["max_connections"]),
            require_tls=tls != SSL_NONE,
            tls_identity=TLSIdentity.from_row(tls, None, None, None),
        )

    @classmethod
    def from_columns(cls, row: Mapping[str, object]) -> Limits:
        """From a ``mysql.user`` row by column name, :data:`COLUMNS` at least."""
        identity = TLSIdentity.from_row(
            row["ssl_type"], row["x509_issuer"], row["x509_subject"], row["ssl_cipher"]
        )
        return replace(cls.from_row(row), tls_identity=identity)


LIMIT_COLUMNS: Final = ("max_user_connections", "max_questions", "max_updates", "max_connections", "ssl_type")
"""The ``mysql.user`` columns :meth:`Limits.from_row` reads: the limits and the kind of TLS
requirement."""

COLUMNS: Final = (*LIMIT_COLUMNS, "x509_issuer", "x509_subject", "ssl_cipher")
"""The ``mysql.user`` columns :meth:`Limits.from_columns` reads: the limits and the whole TLS
requirement."""


def column_list(columns: Iterable[LiteralString] = COLUMNS, table: LiteralString = "") -> LiteralString:
    """``columns`` as a SELECT lists them, each prefixed with ``table.`` when a table (alias) is given:
    ``u.max_user_connections, u.max_questions, ...``."""
    prefix = table + "." if table else ""
    return ", ".join(prefix + column for column in columns)


_READ_LIMITS: Final = (
    "SELECT " + column_list() + " FROM mysql.user WHERE User = %s AND Host = %s"  # noqa: S608 - constants
)


def _number(value: object) -> int:
    return int(value) if isinstance(value, int | str) else 0


async def read_limits(db: Database, user: str, host: str) -> Limits | None:
    """The account's limits; None when the account does not exist. Hosts are compared in lower case,
    as both servers store them."""
    with checked_input():
        statement = Statement(_READ_LIMITS, validate_user(user), validate_host(host).lower())
    rows: list[Row] = await db.fetch(statement)
    return Limits.from_columns(dict(zip(COLUMNS, rows[0], strict=True))) if rows else None


def alter_statement(user: str, host: str, limits: Limits) -> Statement:
    """``ALTER USER 'user'@'host' REQUIRE NONE|SSL|X509|ISSUER %s AND ... WITH MAX_QUERIES_PER_HOUR n``."""
    with checked_input():
        who = account(user, host)
    fragments = {
        "queries": unsigned_literal(limits.max_queries_per_hour),
        "updates": unsigned_literal(limits.max_updates_per_hour),
        "connections": unsigned_literal(limits.max_connections_per_hour),
        "user_connections": unsigned_literal(limits.max_user_connections),
    }
    require: LiteralString
    params: tuple[str, ...] = ()
    if limits.tls_identity.checked():
        require, params = limits.tls_identity.require_clause()
    else:
        require = "SSL" if limits.require_tls else "NONE"
    return Statement(
        "ALTER USER {account} REQUIRE " + require + " WITH MAX_QUERIES_PER_HOUR {queries}"
        " MAX_UPDATES_PER_HOUR {updates} MAX_CONNECTIONS_PER_HOUR {connections}"
        " MAX_USER_CONNECTIONS {user_connections}",
        *params,
        account=who,
        **fragments,
    )


async def apply_limits(
    db: Database, user: str, host: str, desired: Limits, *, current: Limits | None = None
) -> bool:
    """Give the account ``desired`` options with one ``ALTER USER``, only if they differ from ``current``
    (as a look just read them; None: read now); whether it wrote.

    A missing account raises :class:`~.errors.InvalidAccountError` (code 1396, from the server).
    """
    statement = alter_statement(user, host, desired)  # checks everything before anything is sent
    if current is None:
        current = await read_limits(db, user, host)
    if current == desired:
        return False
    await db.execute(statement)
    return True
