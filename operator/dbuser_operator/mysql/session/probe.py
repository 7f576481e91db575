"""A health probe: ``SELECT 1`` on one dedicated connection, outside the pool, within a short bound.

The pool's connections may all be busy, or stalled on a frozen server: the probe neither waits for them nor
holds one. Its connection stays open between probes (one connection per server, not one login per probe)
and is closed after any failure, so that the next probe connects anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from typing import Any

import aiomysql

from dbuser_operator.mysql.errors import DatabaseUnavailableError, MySQLError, TLSError, classify
from dbuser_operator.mysql.session.settings import ConnectionSettings
from dbuser_operator.mysql.session.wire import connect_options, hard_close, keep_alive

PROBE_STATEMENT = "SELECT 1"  # all a probe sends: it reads nothing and changes nothing


class _Silence(DatabaseUnavailableError):
    """The server did not answer in time."""


class Probe:
    """Probes one server as the admin account. Raises only :class:`~.errors.MySQLError`."""

    def __init__(
        self,
        settings: ConnectionSettings,
        context: ssl.SSLContext | None,
        before: Callable[[], None] | None = None,
    ) -> None:
        """``before`` is called before each probe and may raise to refuse it (nothing is sent): the hook
        that guards every other statement (``Database``'s ``before_write``: the fence)."""
        self._settings = settings
        self._context = context
        self._before = before
        self._connection: Any = None
        self._lock = asyncio.Lock()  # one probe at a time on the connection

    async def check(self, bound: float) -> None:
        """Log in if needed (within ``connect_timeout``), then ``SELECT 1`` within ``bound`` seconds.

        A connection kept from an earlier probe that broke (the server restarted, or killed it) is replaced
        by a new one at once: only a new connection's failure, or silence, says the server is down.
        """
        async with self._lock:
            if self._before is not None:
                self._before()
            reused = self._connection is not None
            try:
                await self._check(bound)
                return
            except DatabaseUnavailableError as error:
                if not reused or isinstance(error, _Silence):  # a new connection's failure, or silence
                    raise
            await self._check(bound)

    async def _check(self, bound: float) -> None:
        failure: MySQLError
        try:
            connection = await self._connected()
            async with asyncio.timeout(bound):
                async with connection.cursor() as cursor:
                    await cursor.execute(PROBE_STATEMENT)
                    await cursor.fetchall()
            return
        except TimeoutError:
            failure = _Silence(f"the server did not answer a probe within {bound:g} s")
        except Exception as exc:
            failure = classify(exc)
        except BaseException:
            self.close()
            raise
        self.close()
        raise failure

    async def _connected(self) -> Any:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        self.close()
        bound = self._settings.connect_timeout
        try:
            async with asyncio.timeout(bound):  # the greeting and the login too
                connection = await aiomysql.connect(**connect_options(self._settings, self._context))
        except TimeoutError:
            raise _Silence(f"no login within {bound:g} s of connecting") from None
        self._connection = connection
        keep_alive(connection)
        if self._settings.mode.requires_tls and not getattr(connection, "_secure", False):
            raise TLSError("TLS is required but the server does not offer it")
        return connection

    def close(self) -> None:
        """Close the probe's connection (the next probe opens another)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                hard_close(connection)
