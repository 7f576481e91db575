"""What the operator refuses before it touches MySQL at all, for accounts and roles alike.

Reserved accounts are never managed. Grants on the server's own schemas or the operator's bookkeeping
schema, and on ``*.*`` anything beyond the configured allow-list, are refused: they would let an
application account read password hashes or take over other accounts. On a server, the admin account and
bookkeeping schema of every server resource that reaches the same physical server are refused too
(:mod:`~dbuser_operator.controllers.servers.admins`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from dbuser_operator.api.v1alpha1 import Grant as GrantSpec
from dbuser_operator.controllers.servers.handle import ServerHandle

if TYPE_CHECKING:
    from dbuser_operator.controllers.servers.admins import Reservations

ALWAYS_RESERVED = frozenset({"root", "mariadb.sys", "debian-sys-maint", "mysql"})
SYSTEM_SCHEMAS = frozenset({"mysql", "sys", "information_schema", "performance_schema"})


def is_reserved(user: str, reserved: Iterable[str]) -> bool:
    """Whether ``user`` is a system account (``mysql.*`` included) or configured as reserved."""
    return user in ALWAYS_RESERVED or user.startswith("mysql.") or user in set(reserved)


class Guard:
    """The refusals: reserved names, and grants that would escalate."""

    def __init__(
        self,
        reserved: Iterable[str],
        allowed_global: Iterable[str],
        ownership_schema: str,
        reservations: Reservations | None = None,
    ) -> None:
        self.reserved = frozenset(reserved)
        self.allowed_global = frozenset(name.upper() for name in allowed_global)
        self.protected_schemas = SYSTEM_SCHEMAS | {ownership_schema.lower()}
        self.reservations = reservations  # the other server resources' admins (None: none are known)

    def is_reserved(self, name: str) -> bool:
        """Whether the account or role ``name`` is never managed."""
        return is_reserved(name, self.reserved)

    async def server_refusal(
        self, server: ServerHandle | None, name: str, privileges: Sequence[GrantSpec]
    ) -> tuple[str, str, bool] | None:
        """On a server: its admin account and bookkeeping schema, and those of every server resource that
        reaches the same physical server, are protected as the settings' are (a reason, why, and whether
        to retry: when a server could not be asked which one it is), else None."""
        if server is None:
            return None
        if server.key and name == server.db.settings.user:
            return "ReservedAccount", f"the admin account of {server.name} is reserved: never managed", False
        for item in privileges:
            if server.key and item.resolved().lower() == server.schema.lower():
                return "PrivilegeNotAllowed", f"grants on the {item.resolved()} schema are not allowed", False
        if self.reservations is not None:
            found = await self.reservations.refusal(server, name, privileges)
            if found is not None:
                return found.reason, found.message, found.retry
        return None

    def grant_refusal(self, privileges: Sequence[GrantSpec]) -> str | None:
        """Why these grants are not allowed, or None."""
        for item in privileges:
            if item.resolved().lower() in self.protected_schemas:
                return f"grants on the {item.database} schema are not allowed"
            if item.database == "*":
                extra = sorted(set(item.privileges) - self.allowed_global)
                if extra:
                    allowed = ", ".join(sorted(self.allowed_global)) or "none"
                    return f"{', '.join(extra)} on *.* is not allowed (allowed on *.*: {allowed})"
                if item.grant_option:
                    return "the grant option on *.* is not allowed"
        return None
