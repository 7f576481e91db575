"""The guard step: what the operator refuses before it touches MySQL at all.

Reserved accounts are never managed. Grants on the server's own schemas or the operator's bookkeeping
schema, and on ``*.*`` anything beyond the configured allow-list, are refused: they would let an
application account read password hashes or take over other accounts.
"""

from __future__ import annotations

from collections.abc import Iterable

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.servers.handle import ServerHandle

ALWAYS_RESERVED = frozenset({"root", "mariadb.sys", "debian-sys-maint", "mysql"})
SYSTEM_SCHEMAS = frozenset({"mysql", "sys", "information_schema", "performance_schema"})


def is_reserved(user: str, reserved: Iterable[str]) -> bool:
    """Whether ``user`` is a system account (``mysql.*`` included) or configured as reserved."""
    return user in ALWAYS_RESERVED or user.startswith("mysql.") or user in set(reserved)


class GuardStep:
    """Refuses reserved accounts and escalating grants before anything touches MySQL."""

    name = "guard"

    def __init__(self, reserved: Iterable[str], allowed_global: Iterable[str], ownership_schema: str) -> None:
        self.reserved = frozenset(reserved)
        self.allowed_global = frozenset(name.upper() for name in allowed_global)
        self.protected_schemas = SYSTEM_SCHEMAS | {ownership_schema.lower()}

    async def ensure(self, ctx: Context) -> None:
        # The USER column of `kubectl get` shows the name for refused resources too (status.host, which
        # says an account was managed, is written by the ownership step only).
        ctx.status.user = ctx.user.effective_user()
        if is_reserved(ctx.user.effective_user(), self.reserved):
            raise ConditionError(
                "ReservedAccount", f"{ctx.account} is reserved: the operator never manages it", retry=False
            )
        refusal = self.grant_refusal(ctx.user.spec)
        if refusal is not None:
            raise ConditionError("PrivilegeNotAllowed", f"{ctx.account}: {refusal}", retry=False)
        server_refusal = self.server_refusal(ctx.server, ctx.user.effective_user(), ctx.user.spec)
        if server_refusal is not None:
            reason, message = server_refusal
            raise ConditionError(reason, f"{ctx.account}: {message}", retry=False)

    @staticmethod
    def server_refusal(
        target: ServerHandle | None, name: str, spec: DatabaseUserSpec
    ) -> tuple[str, str] | None:
        """On a server resource: its admin account and its bookkeeping schema are protected as the
        settings' are (a reason and why), else None."""
        if target is None or not target.key:
            return None
        if name == target.db.settings.user:
            return "ReservedAccount", f"the admin account of {target.name} is reserved: never managed"
        for item in spec.privileges:
            if item.database.lower() == target.schema.lower():
                return "PrivilegeNotAllowed", f"grants on the {item.database} schema are not allowed"
        return None

    def grant_refusal(self, spec: DatabaseUserSpec) -> str | None:
        """Why the spec's grants are not allowed, or None."""
        for item in spec.privileges:
            if item.database.lower() in self.protected_schemas:
                return f"grants on the {item.database} schema are not allowed"
            if item.database == "*":
                extra = sorted(set(item.privileges) - self.allowed_global)
                if extra:
                    allowed = ", ".join(sorted(self.allowed_global)) or "none"
                    return f"{', '.join(extra)} on *.* is not allowed (allowed on *.*: {allowed})"
                if item.grant_option:
                    return "the grant option on *.* is not allowed"
        return None

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo: a reserved account was never touched."""
