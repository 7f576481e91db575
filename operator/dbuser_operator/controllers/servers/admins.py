"""The registry of what is reserved on a physical server: asked by the frame before any claim, adoption or
drop of an account, a role or a database, for every kind (:mod:`~dbuser_operator.controllers.kit.reserved`),
and by the guard before any grant.

Reserved, as names of accounts and roles: the system accounts (``root``, ``mysql.*``, …), the flags' admin
(``--mysql-user``) and ``--reserved-users`` on every server, and the admin account of every server resource
(the operator uses no roles of its own: its admins' names are kept from roles too). As names of databases
(and for grants): the system schemas, ``--ownership-schema`` on every server, and the bookkeeping schema of
every server resource. A server resource's admin and schema are reserved on every server resource that
reaches the same physical server: two of them may reach one MySQL server (a ClusterMySQLServer for the
tenants and a MySQLServer of the platform's, under two host names or addresses, with two admin accounts),
and each one's must be as untouchable through the other as through itself. The registry is keyed by which
physical server a handle reaches, as the server says it
(:func:`~dbuser_operator.mysql.session.server.read_identity`: MySQL's ``@@server_uuid``, MariaDB's
``@@hostname:@@port``), asked of both handles when a name matches, never the spec's host. A server that
cannot be asked (unreachable, or its identity not read in time) might be the same one: the name is refused
(fail closed), and the refusal is retried until it can be told apart. A server resource whose Secrets do not
name its admin (a Secret missing) reserves nothing until they do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from dbuser_operator.api.v1alpha1 import Grant as GrantSpec
from dbuser_operator.controllers.kit.reserved import (
    RESERVED_ACCOUNT,
    RESERVED_DATABASE,
    Refusal,
    SystemNames,
)
from dbuser_operator.controllers.servers.admin_list import FLAGS_SERVER, Admin, AdminIndex, AdminList
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql.bookkeeping.books import NameClass
from dbuser_operator.mysql.bookkeeping.ownership import DEFAULT_SCHEMA
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.informer import Informer

IDENTITY_TIMEOUT: Final = 10.0  # seconds to ask a server which one it is; then it counts as unknown
NEVER: Final = "is reserved: never managed"

__all__ = ["FLAGS_SERVER", "Admin", "Refusal", "Reservations", "same_server"]


@dataclass(frozen=True)
class _Match:
    """What of another server's a name or grant would touch: a Ready reason, the thing, the verdict."""

    reason: str
    what: str
    verdict: str


class Reservations:
    """Every known server's admin and schema, and the flags' names: which of them a name or a grant on a
    server would touch."""

    def __init__(
        self,
        resolver: ServerResolver,
        *,
        users: Iterable[str] = (),
        schema: str = DEFAULT_SCHEMA,
        secrets: Informer | None = None,
    ) -> None:
        """``secrets``: the Secret cache the server resources' Secrets are read from (its changes rebuild
        the list of admins, :class:`~.admin_list.AdminList`)."""
        self.resolver = resolver
        self.users = frozenset(users)  # --mysql-user and --reserved-users: reserved on every server
        self.schema = schema  # --ownership-schema: reserved on every server
        self.system = SystemNames()
        self.admin_list = AdminList(resolver, secrets)
        self._index: AdminIndex | None = None  # of the last list :meth:`admins` gave

    async def admins(self) -> list[Admin]:
        """The admin of the settings' server and of every server resource in the caches (their handles built
        from their Secrets if no reconcile built them yet: no connection is opened for that), resolved
        again only after one of them changed (:class:`~.admin_list.AdminList`)."""
        return await self.admin_list.admins()

    async def _admins(self) -> AdminIndex:
        """:meth:`admins`, indexed (once per list: the same list while nothing changed)."""
        admins = self.admin_list.kept()
        if admins is None:
            admins = await self.admins()
        if self._index is None or self._index.admins is not admins:
            self._index = AdminIndex.of(admins)
        return self._index

    async def reserved(self, server: ServerHandle, what: NameClass, name: str) -> Refusal | None:
        """Why the account, role or database ``name`` on ``server`` is never managed, or None."""
        found = await self.system.reserved(server, what, name)
        if found is not None:
            return found
        if what == "database":
            return await self._database(server, name)
        if name in self.users:
            return Refusal(RESERVED_ACCOUNT, f"a name of --mysql-user or --reserved-users {NEVER}")
        if server.key and name == server.db.settings.user:
            return Refusal(RESERVED_ACCOUNT, f"the admin account of {server.name} {NEVER}")
        match = _Match(RESERVED_ACCOUNT, "the admin account of {}", "is reserved")
        return await self._elsewhere(server, (await self._admins()).named(name), match)

    async def _database(self, server: ServerHandle, name: str) -> Refusal | None:
        """A database name: ``--ownership-schema``, the server's bookkeeping schema, or another's there."""
        if name.lower() == self.schema.lower():
            return Refusal(RESERVED_DATABASE, f"the operator's --ownership-schema {NEVER}")
        if name.lower() == server.schema.lower():
            owner = server.name or FLAGS_SERVER
            return Refusal(RESERVED_DATABASE, f"the bookkeeping schema of {owner} {NEVER}")
        match = _Match(RESERVED_DATABASE, "the bookkeeping schema of {}", "is reserved")
        return await self._elsewhere(server, (await self._admins()).with_schemas({name.lower()}), match)

    async def refusal(
        self, handle: ServerHandle, name: str, privileges: Sequence[GrantSpec]
    ) -> Refusal | None:
        """Why the account or role ``name`` with ``privileges``, on ``handle``'s server, would touch another
        server resource's admin account (ReservedAccount) or bookkeeping schema (PrivilegeNotAllowed) on
        the same physical server; None when it touches neither."""
        account = _Match(RESERVED_ACCOUNT, "the admin account of {}", "is reserved")
        found = await self._elsewhere(handle, (await self._admins()).named(name), account)
        return found or await self.grant_refusal(handle, privileges)

    async def grant_refusal(self, handle: ServerHandle, privileges: Sequence[GrantSpec]) -> Refusal | None:
        """Why ``privileges`` on ``handle``'s server would reach another server resource's bookkeeping
        schema on the same physical server (PrivilegeNotAllowed), or None."""
        databases = {item.resolved().lower() for item in privileges}
        match = _Match("PrivilegeNotAllowed", "grants on the bookkeeping schema of {}", "are not allowed")
        return await self._elsewhere(handle, (await self._admins()).with_schemas(databases), match)

    async def _elsewhere(self, handle: ServerHandle, touched: list[Admin], match: _Match) -> Refusal | None:
        """The refusal for the first other server resource of ``touched`` (whose admin or schema a name
        or a grant names) on the same physical server as ``handle`` (or one that cannot say which it
        reaches: retried)."""
        for admin in touched:
            if admin.handle is handle:  # its own: the rules above
                continue
            same = await same_server(handle, admin.handle)
            if same is False:
                continue
            what = match.what.format(admin.server)
            if same:
                return Refusal(
                    match.reason, f"{what} (which reaches the same server) {match.verdict}: never managed"
                )
            return Refusal(
                match.reason,
                f"{what} {match.verdict} while {admin.server} cannot be asked which server it reaches "
                "(it may be this one): retried",
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
