"""The server registry: one :class:`ServerHandle` per server, for the steps, checks and the server controller.

The server of the operator's settings is the ``""`` key (absent when the operator runs without one). A
server resource's ServerHandle is built on first use from its spec and Secrets; its pool opens on the first
statement. It is rebuilt (the old pool closed after a grace period, so that calls in flight finish) when the
spec or a Secret's content changes, closed when no reconcile used it for ``idle_timeout`` seconds (the next
use reopens it), and forgotten when the server resource goes away.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import structlog

from dbuser_operator.controllers.servers.connection import (
    DatabaseFactory,
    SecretReader,
    ServerDefaults,
    open_database,
    read_material,
)
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resource import ServerResource

log = structlog.get_logger(__name__)

RETIRE_AFTER = 60.0  # seconds a replaced pool stays open for the calls that were using it
IDLE_TIMEOUT = 300.0  # seconds without use before a server resource's pool is closed


@dataclass
class _Entry:
    handle: ServerHandle
    fingerprint: str
    generation: int | None
    used: float = field(default_factory=time.monotonic)  # monotonic time of the last use


class ServerRegistry:
    """The handles of the servers in use, by server key (``controllers.kit.resources.server_key``)."""

    def __init__(
        self,
        default: ServerHandle | None,
        defaults: ServerDefaults,
        read_secret: SecretReader,
        make_database: DatabaseFactory,
        *,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self.default, self.defaults, self.idle_timeout = default, defaults, idle_timeout
        self.read_secret, self.make_database = read_secret, make_database
        self._entries: dict[str, _Entry] = {}
        self.version = 0  # changes whenever a handle is built, replaced or forgotten
        self._locks: dict[str, asyncio.Lock] = {}
        self._retiring: list[tuple[float, ServerHandle]] = []

    def handles(self) -> dict[str, ServerHandle]:
        """Every server's ServerHandle built so far, the settings' server (``""``) included."""
        found = {key: entry.handle for key, entry in self._entries.items()}
        return {"": self.default, **found} if self.default is not None else found

    def cached(self, key: str) -> ServerHandle | None:
        """The ServerHandle of ``key`` if it was built (no I/O)."""
        if key == "":
            return self.default
        entry = self._entries.get(key)
        return entry.handle if entry else None

    async def handle(self, resource: ServerResource) -> ServerHandle:
        """The server's ServerHandle: built on first use and after its spec changed (a new generation).

        Raises :class:`~.server_connection.ServerConfigError` when its Secrets or spec do not make a
        connection.
        """
        entry = self._entries.get(resource.key)
        if entry is not None and entry.generation == resource.generation:
            entry.used = time.monotonic()
            return entry.handle
        handle = await self.refresh(resource)
        entry = self._entries.get(resource.key)
        if entry is not None:  # (unless the server went away meanwhile)
            entry.used = time.monotonic()
        return handle

    async def current(self, resource: ServerResource) -> ServerHandle:
        """The server's ServerHandle as :meth:`handle` gives it, without counting as a use (for who only
        asks which admin account a server has)."""
        entry = self._entries.get(resource.key)
        if entry is not None and entry.generation == resource.generation:
            return entry.handle
        return await self.refresh(resource)

    async def refresh(self, resource: ServerResource) -> ServerHandle:
        """Read the server's Secrets again; rebuild its ServerHandle when they or the spec changed (a use by a
        reconcile is :meth:`handle`'s: this does not count as one)."""
        key = resource.key
        async with self._locks.setdefault(key, asyncio.Lock()):
            material = await read_material(resource, self.defaults, self.read_secret)
            fingerprint = material.fingerprint(resource, self.defaults)
            entry = self._entries.get(key)
            if entry is not None and entry.fingerprint == fingerprint:
                entry.generation = resource.generation
                return entry.handle
            db = open_database(resource, self.defaults, material, self.make_database)
            schema = resource.spec.bookkeeping_schema or self.defaults.schema
            handle = ServerHandle(db, schema, key=key, name=str(resource))
            used = entry.used if entry is not None else time.monotonic()
            self._entries[key] = _Entry(handle, fingerprint, resource.generation, used)
            self.version += 1
            if entry is not None:
                log.info("server connection changed; reconnecting", server=str(resource))
                self._retiring.append((time.monotonic() + RETIRE_AFTER, entry.handle))
            return handle

    async def forget(self, key: str) -> None:
        """The server resource is gone: close its pool and forget it."""
        entry = self._entries.pop(key, None)
        self._locks.pop(key, None)
        if entry is not None:
            self.version += 1
            await entry.handle.close()

    def idle(self, key: str) -> bool:
        """Whether no reconcile used the server for ``idle_timeout`` seconds."""
        entry = self._entries.get(key)
        return entry is None or time.monotonic() - entry.used >= self.idle_timeout

    async def sweep(self) -> None:
        """Close the pools of idle servers and those of replaced handles whose grace period is over."""
        now = time.monotonic()
        due = [handle for until, handle in self._retiring if until <= now]
        self._retiring = [(until, handle) for until, handle in self._retiring if until > now]
        for handle in due:
            await handle.close()
        for key in list(self._entries):
            if self.idle(key):
                await self._entries[key].handle.db.close()  # reopened by the next statement

    async def run_sweeper(self, period: float = 30.0) -> None:
        """Sweep every ``period`` seconds until cancelled."""
        while True:
            await asyncio.sleep(period)
            await self.sweep()

    async def close(self) -> None:
        """Close every pool (the settings' server's is its owner's to close)."""
        handles = [entry.handle for entry in self._entries.values()] + [t for _, t in self._retiring]
        self._entries.clear()
        self.version += 1
        self._retiring.clear()
        await asyncio.gather(*(handle.close() for handle in handles), return_exceptions=True)
