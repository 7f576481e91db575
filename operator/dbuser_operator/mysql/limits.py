"""Account options: connection and query limits, and whether the account must use TLS.

Read from ``mysql.user`` (a table on MySQL, a view on MariaDB; the same columns) and written with one
``ALTER USER ... REQUIRE SSL|NONE WITH MAX_QUERIES_PER_HOUR n MAX_UPDATES_PER_HOUR n
MAX_CONNECTIONS_PER_HOUR n MAX_USER_CONNECTIONS n`` (MySQL 8.0/8.4 and MariaDB 10.6+), only when something
differs. The numbers are checked ints rendered by :mod:`.identifiers`, never text from outside.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from dbuser_operator.mysql.connection import Database, Row
from dbuser_operator.mysql.errors import InvalidOptionsError, checked_input
from dbuser_operator.mysql.identifiers import account, unsigned_literal, validate_host, validate_user
from dbuser_operator.mysql.statement import Statement

LIMIT_MAX: Final = 4294967295
"""The largest hourly limit: MySQL and MariaDB store them as unsigned 32-bit integers (MariaDB silently
wraps a larger one to 0)."""

USER_CONNECTIONS_MAX: Final = 2147483647
"""The largest MAX_USER_CONNECTIONS both servers accept: MariaDB's grammar takes a signed 32-bit integer
(a larger value is a syntax error there); MySQL would take up to 4294967295."""

# mysql.user.ssl_type: '' (REQUIRE NONE), ANY (REQUIRE SSL), X509, SPECIFIED (issuer, subject or cipher).
_SSL_NONE, _SSL_ANY = "", "ANY"
_STRICTER_TLS: Final = frozenset({"X509", "SPECIFIED"})


@dataclass(frozen=True)
class AccountOptions:
    """The account's limits (0: none of its own) and TLS requirement.

    ``other_tls_requirement`` is what the operator never asks for: ``X509`` or ``SPECIFIED`` (a certificate,
    issuer, subject or cipher required, by hand); :func:`read_options` reports it (with ``require_tls``
    true), so that it differs from any wanted options and :func:`apply_options` puts back ``REQUIRE SSL``
    or ``NONE``. The constructor checks ranges and types (:class:`~.errors.InvalidOptionsError`).
    """

    max_user_connections: int = 0
    max_queries_per_hour: int = 0
    max_updates_per_hour: int = 0
    max_connections_per_hour: int = 0
    require_tls: bool = False
    other_tls_requirement: str = ""

    def __post_init__(self) -> None:
        for field in fields(self)[:4]:
            value = getattr(self, field.name)
            limit = USER_CONNECTIONS_MAX if field.name == "max_user_connections" else LIMIT_MAX
            if type(value) is not int or not 0 <= value <= limit:
                raise InvalidOptionsError(
                    f"{field.name} must be an integer from 0 to {limit}, not {value!r}"[:200]
                )
        if type(self.require_tls) is not bool:
            raise InvalidOptionsError(f"require_tls must be a boolean, not {self.require_tls!r}"[:200])
        if self.other_tls_requirement not in _STRICTER_TLS | {""}:
            shown = repr(self.other_tls_requirement)[:80]
            raise InvalidOptionsError(f"other_tls_requirement must be '', 'X509' or 'SPECIFIED', not {shown}")
        if self.other_tls_requirement and not self.require_tls:
            raise InvalidOptionsError(f"REQUIRE {self.other_tls_requirement} implies require_tls")

    @classmethod
    def from_row(
        cls,
        max_user_connections: object,
        max_questions: object,
        max_updates: object,
        max_connections: object,
        ssl_type: object,
    ) -> AccountOptions:
        """From the ``mysql.user`` columns (in this order)."""
        tls = "" if ssl_type is None else str(ssl_type)
        return cls(
            max_user_connections=_number(max_user_connections),
            max_queries_per_hour=_number(max_questions),
            max_updates_per_hour=_number(max_updates),
            max_connections_per_hour=_number(max_connections),
            require_tls=tls != _SSL_NONE,
            other_tls_requirement=tls if tls in _STRICTER_TLS else "",
        )


def _number(value: object) -> int:
    return int(value) if isinstance(value, int | str) else 0


async def read_options(db: Database, user: str, host: str) -> AccountOptions | None:
    """The account's options; None when the account does not exist. Hosts are compared in lower case,
    as both servers store them."""
    with checked_input():
        statement = Statement(
            "SELECT max_user_connections, max_questions, max_updates, max_connections, ssl_type"
            " FROM mysql.user WHERE User = %s AND Host = %s",
            validate_user(user),
            validate_host(host).lower(),
        )
    rows: list[Row] = await db.fetch(statement)
    return AccountOptions.from_row(*rows[0]) if rows else None


def alter_statement(user: str, host: str, options: AccountOptions) -> Statement:
    """``ALTER USER 'user'@'host' REQUIRE SSL|NONE WITH MAX_QUERIES_PER_HOUR n ...``."""
    if options.other_tls_requirement:
        raise InvalidOptionsError(f"REQUIRE {options.other_tls_requirement} is not an option to set")
    with checked_input():
        who = account(user, host)
    fragments = {
        "queries": unsigned_literal(options.max_queries_per_hour),
        "updates": unsigned_literal(options.max_updates_per_hour),
        "connections": unsigned_literal(options.max_connections_per_hour),
        "user_connections": unsigned_literal(options.max_user_connections),
    }
    if options.require_tls:
        return Statement(
            "ALTER USER {account} REQUIRE SSL WITH MAX_QUERIES_PER_HOUR {queries}"
            " MAX_UPDATES_PER_HOUR {updates} MAX_CONNECTIONS_PER_HOUR {connections}"
            " MAX_USER_CONNECTIONS {user_connections}",
            account=who,
            **fragments,
        )
    return Statement(
        "ALTER USER {account} REQUIRE NONE WITH MAX_QUERIES_PER_HOUR {queries}"
        " MAX_UPDATES_PER_HOUR {updates} MAX_CONNECTIONS_PER_HOUR {connections}"
        " MAX_USER_CONNECTIONS {user_connections}",
        account=who,
        **fragments,
    )


async def apply_options(db: Database, user: str, host: str, desired: AccountOptions) -> bool:
    """Give the account ``desired`` options with one ``ALTER USER``, only if they differ; whether it wrote.

    A missing account raises :class:`~.errors.InvalidAccountError` (code 1396, from the server).
    """
    statement = alter_statement(user, host, desired)  # checks everything before anything is sent
    if await read_options(db, user, host) == desired:
        return False
    await db.execute(statement)
    return True
