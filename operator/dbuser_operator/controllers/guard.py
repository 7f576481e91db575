"""The guard step: accounts the operator must never manage."""

from __future__ import annotations

from collections.abc import Iterable

from dbuser_operator.controllers.steps import ConditionError, Context

ALWAYS_RESERVED = frozenset({"root", "mariadb.sys", "debian-sys-maint", "mysql"})


def is_reserved(user: str, reserved: Iterable[str]) -> bool:
    """Whether ``user`` is a system account (``mysql.*`` included) or configured as reserved."""
    return user in ALWAYS_RESERVED or user.startswith("mysql.") or user in set(reserved)


class GuardStep:
    """Refuses reserved accounts before anything else touches MySQL."""

    name = "guard"

    def __init__(self, reserved: Iterable[str]) -> None:
        self.reserved = frozenset(reserved)

    async def ensure(self, ctx: Context) -> None:
        if is_reserved(ctx.user.effective_user(), self.reserved):
            raise ConditionError(
                "ReservedAccount", f"{ctx.account} is reserved: the operator never manages it", retry=False
            )

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo: a reserved account was never touched."""
