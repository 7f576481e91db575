"""The admin accounts and bookkeeping schemas of every server this instance knows, reserved on every server
resource that reaches the same physical server.

Two server resources may reach one MySQL server (a ClusterMySQLServer for the tenants and a MySQLServer of
the platform's, under two host names or addresses, with two admin accounts): each one's admin account and
bookkeeping schema must be as untouchable through the other as through itself. Which physical server a
handle reaches is what the server says (:func:`~dbuser_operator.mysql.server.read_identity`: MySQL's
``@@server_uuid``, MariaDB's ``@@hostname:@@port``), asked of both handles when a name matches, never the
spec's host. A server that cannot be asked (unreachable, or its identity not read in time) might be the same
one: the name is refused (fail closed), and the refusal is retried until it can be told apart. A server
resource whose Secrets do not name its admin (a Secret missing) reserves nothing until they do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from dbuser_operator.api.v1alpha1 import Grant as GrantSpec
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.servers.connection import ServerConfigError
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql.errors import MySQLError

IDENTITY_TIMEOUT: Final = 10.0  # seconds to ask a server which one it is; then it counts as unknown
FLAGS_SERVER: Final = "the server of the --mysql-* flags"


@dataclass(frozen=True)
class Admin:
    """A server's admin account and bookkeeping schema, and which server resource has them."""

    server: str  # "MySQLServer team-a/main", "ClusterMySQLServer shared", FLAGS_SERVER
    user: str
    schema: str
    handle: ServerHandle


@dataclass(frozen=True)
class Refusal:
    """Why a name or a grant is refused: a Ready reason, a message (no secret), whether to retry."""

    reason: str
    message: str
    retry: bool = False


class Reservations:
    """Every known server's admin and schema; which of them a name or a grant on a server would touch."""

    def __init__(self, resolver: ServerResolver) -> None:
        self.resolver = resolver

    async def admins(self) -> list[Admin]:
        """The admin of the settings' server and of every server resource in the caches (their handles built
        from their Secrets if no reconcile built them yet: no connection is opened for that)."""
        registry = self.resolver.registry
        found = []
        if registry.default is not None:
            default = registry.default
            found.append(Admin(FLAGS_SERVER, default.db.settings.user, default.schema, default))
        for kind, informer in self.resolver.informers.items():
            for obj in list(informer.store):
                meta = obj["metadata"]
                namespace = meta.get("namespace") or ""
                key = f"{kind}/{namespace}/{meta['name']}" if namespace else f"{kind}/{meta['name']}"
                try:
                    handle = await registry.current(self.resolver.binding(key, obj))
                except (ConditionError, ServerConfigError):  # no admin name to reserve (yet)
                    continue
                found.append(Admin(handle.name or key, handle.db.settings.user, handle.schema, handle))
        return found

    async def refusal(
        self, handle: ServerHandle, name: str, privileges: Sequence[GrantSpec]
    ) -> Refusal | None:
        """Why the account or role ``name`` with ``privileges``, on ``handle``'s server, would touch another
        server resource's admin account (ReservedAccount) or bookkeeping schema (PrivilegeNotAllowed) on
        the same physical server; None when it touches neither."""
        databases = {item.resolved().lower() for item in privileges}
        for admin in await self.admins():
            if admin.handle is handle:  # its own admin and schema: the guard's own rule
                continue
            account, schema = admin.user == name, admin.schema.lower() in databases
            if not (account or schema):
                continue
            same = await same_server(handle, admin.handle)
            if same is False:
                continue
            if account:
                what, verdict, reason = (
                    f"the admin account of {admin.server}",
                    "is reserved",
                    "ReservedAccount",
                )
            else:
                what = f"grants on the bookkeeping schema of {admin.server}"
                verdict, reason = "are not allowed", "PrivilegeNotAllowed"
            if same:
                return Refusal(reason, f"{what} (which reaches the same server) {verdict}: never managed")
            return Refusal(
                reason,
                f"{what} {verdict} while {admin.server} cannot be asked which server it reaches (it may be "
                "this one): retried",
                retry=True,
            )
        return None


async def same_server(one: ServerHandle, other: ServerHandle) -> bool | None:
    """Whether two handles reach one physical server, asked of both now; None when either cannot say."""
    identities = []
    for handle in (one, other):
        try:
            async with asyncio.timeout(IDENTITY_TIMEOUT):
                identities.append(await handle.identity())
        except (MySQLError, TimeoutError):
            return None
    return identities[0] == identities[1]
