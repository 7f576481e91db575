"""What the operator refuses in grants before it touches MySQL at all, for accounts and roles alike.

Grants on the server's own schemas or the operator's bookkeeping schema, and on ``*.*`` anything beyond the
configured allow-list, are refused: they would let an application account read password hashes or take over
other accounts. On a server, grants on the bookkeeping schema of every server resource that reaches the same
physical server are refused too (:mod:`~dbuser_operator.controllers.servers.admins`). Reserved names (of
accounts, roles and databases) are the frame's to refuse, for every kind
(:mod:`~dbuser_operator.controllers.kit.reserved`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from dbuser_operator.api.v1alpha1 import Grant as GrantSpec
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.reserved import Refusal
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.bookkeeping.reserved import SYSTEM_SCHEMAS

if TYPE_CHECKING:
    from dbuser_operator.controllers.servers.admins import Reservations


class Guard:
    """The refusals of grants that would escalate."""

    def __init__(
        self,
        allowed_global: Iterable[str],
        ownership_schema: str,
        reservations: Reservations | None = None,
    ) -> None:
        self.allowed_global = frozenset(name.upper() for name in allowed_global)
        self.protected_schemas = SYSTEM_SCHEMAS | {ownership_schema.lower()}
        self.reservations = reservations  # the other server resources' schemas (None: none are known)

    async def server_refusal(
        self, server: ServerHandle | None, privileges: Sequence[GrantSpec]
    ) -> Refusal | None:
        """On a server: grants on its bookkeeping schema, and on those of every server resource that reaches
        the same physical server, are refused as the settings' schema is (retried when a server could not
        be asked which one it is), else None."""
        if server is None:
            return None
        for item in privileges:
            if server.key and item.resolved().lower() == server.schema.lower():
                return Refusal(
                    "PrivilegeNotAllowed", f"grants on the {item.resolved()} schema are not allowed"
                )
        if self.reservations is not None:
            return await self.reservations.grant_refusal(server, privileges)
        return None

    async def check(self, server: ServerHandle | None, privileges: Sequence[GrantSpec], shown: str) -> None:
        """Raise a ConditionError naming ``shown`` (``role app``) when these grants are refused, anywhere
        (``PrivilegeNotAllowed``, not retried) or on ``server``."""
        refusal = self.grant_refusal(privileges)
        if refusal is not None:
            raise ConditionError("PrivilegeNotAllowed", f"{shown}: {refusal}", retry=False)
        on_server = await self.server_refusal(server, privileges)
        if on_server is not None:
            raise ConditionError(on_server.reason, f"{shown}: {on_server.message}", retry=on_server.retry)

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
