"""The connections to one server that :class:`~.connection.Database` reuses: :class:`Pool`.

What aiomysql's pool did for the layer, without what the layer does itself: :class:`~.connection.Database`
bounds the connections (its own semaphore, across pools) and every wait, so this pool has no lock, no
condition to wake, and no task per release (aiomysql's started one for each statement, to wake waiters
that never exist here). A free connection is reused if the server has not closed it and it has been idle
less than :data:`~.wire.POOL_RECYCLE` seconds (as aiomysql's did); otherwise a new one is made.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiomysql

from dbuser_operator.mysql.session.settings import ConnectionSettings
from dbuser_operator.mysql.session.wire import POOL_RECYCLE, connect_options


class Pool:
    """Free connections to reuse, and those in use; closing it closes each as it comes back."""

    __slots__ = ("_closing", "_free", "_loop", "_options", "_used")

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self._free: list[tuple[Any, float]] = []  # with when each came back; the latest is reused first
        self._used: set[Any] = set()
        self._closing = False
        self._loop = asyncio.get_running_loop()

    @classmethod
    def open(cls, settings: ConnectionSettings, context: Any) -> Pool:
        """A pool for ``settings`` (TLS by ``context``); no connection is made before the first acquire."""
        return cls(connect_options(settings, context))

    def take(self) -> Any:
        """A free connection that is still usable, or None (then :meth:`connect`)."""
        free = self._free
        while free:
            connection, released = free.pop()
            if _usable(connection, self._loop.time() - released):
                self._used.add(connection)
                return connection
            connection.close()
        return None

    async def connect(self) -> Any:
        """A new connection (the caller bounds the wait: the greeting and the login included)."""
        connection = await aiomysql.connect(**self._options)
        self._used.add(connection)
        return connection

    def release(self, connection: Any) -> None:
        """Take a connection back: kept for reuse unless it is closed, in a transaction, or the pool is."""
        self._used.discard(connection)
        if connection.closed:
            return
        if self._closing or connection.get_transaction_status():
            connection.close()
            return
        self._free.append((connection, self._loop.time()))

    def close(self) -> None:
        """No more reuse: connections in use close when they come back (free ones: :meth:`clear`)."""
        self._closing = True

    def terminate(self) -> None:
        """Close every connection now, those in use included (their calls fail)."""
        self._closing = True
        for connection in list(self._used):
            connection.close()
        self._used.clear()

    async def clear(self) -> None:
        """Close the free connections, politely (``COM_QUIT``) where the server still answers."""
        free, self._free = self._free, []
        for connection, _ in free:
            with contextlib.suppress(Exception):
                await connection.ensure_closed()


def _usable(connection: Any, idle: float) -> bool:
    """Whether a free connection, idle for ``idle`` seconds, may be reused: the server has not closed it
    (MySQL 8.0+ sends an error packet before closing an idle one: aiomysql's reader notes the EOF), nor has
    it idled too long."""
    reader = connection._reader
    if reader is None or reader.at_eof() or reader.exception() or getattr(reader, "eof_received", False):
        return False
    return idle <= POOL_RECYCLE
