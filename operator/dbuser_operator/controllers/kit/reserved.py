"""What the frame asks before any claim, adoption or drop: is this name reserved on this server?

Every kind manages one name in MySQL (:data:`NameClass`: an account, a role or a database) and declares which
(``Reconciler.manages``). The frame resolves a resource's server and asks the registry of reserved names
(:class:`ReservedNames`) about that name before the kind sees the server: a reserved name is refused, its
reason and message the registry's, before any SQL of the kind; at deletion the answer travels in the pass
(``Pass.reserved``), and the kind only forgets what it recorded, never drops. So a new kind inherits the
reservation with no code of its own.

The registry itself (every server resource's admin account and bookkeeping schema on the same physical
server, the flags' admin, ``--reserved-users`` and ``--ownership-schema``, the system accounts and schemas) is
:class:`~dbuser_operator.controllers.servers.admins.Reservations`; :class:`SystemNames` is what a frame built
without it still refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.mysql.bookkeeping.reserved import system_account, system_schema

RESERVED_ACCOUNT: Final = "ReservedAccount"
RESERVED_DATABASE: Final = "ReservedDatabase"
REASONS: Final[dict[NameClass, str]] = {
    "account": RESERVED_ACCOUNT,
    "role": RESERVED_ACCOUNT,  # roles and accounts share MySQL's names (mysql.user)
    "database": RESERVED_DATABASE,
}


@dataclass(frozen=True)
class Refusal:
    """Why a name or a grant is refused: a Ready reason, a message (no secret), whether to retry."""

    reason: str
    message: str
    retry: bool = False


class ReservedNames(Protocol):
    """The registry, as the frame asks it."""

    async def reserved(self, server: Any, what: NameClass, name: str) -> Refusal | None:
        """Why ``name`` (an account, a role or a database) on ``server`` (a server handle) is never managed,
        or None."""


class SystemNames:
    """The names every server keeps for itself: its system accounts and schemas."""

    async def reserved(self, server: Any, what: NameClass, name: str) -> Refusal | None:
        if what == "database":
            if system_schema(name):
                return Refusal(RESERVED_DATABASE, "a system schema is reserved: never managed")
        elif system_account(name):
            return Refusal(RESERVED_ACCOUNT, "a system account is reserved: never managed")
        return None
