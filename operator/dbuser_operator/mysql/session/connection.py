"""Connection settings, and :class:`Database`: the one way the layer talks to the server.

Every call takes a connection from a :class:`~.pool.Pool` (created on first use, autocommit on), is bounded
by ``statement_timeout`` (connecting included), and raises only :class:`~.errors.MySQLError`. Within that,
``connect_timeout`` bounds a new connection up to its login (aiomysql's own bounds only the TCP connect,
not the server's greeting nor authentication), and ``read_timeout`` the wait for the server's answer (a
stalled server holds no caller longer): one timer per call, moved along (:class:`~.bound.CallBound`).
Connections have TCP keepalive probes after 30 s of silence. When the connection breaks, the pool is
replaced by a fresh one; a call that failed on a connection reused from the pool is tried once more on a
new connection (the server may have restarted since it was last used), unless it failed by timing out (a
stalled server would only stall the retry too).

A health check that finds the server unreachable says so (:meth:`Database.mark_unreachable`): the
connections in use are closed (their calls fail at once), and every call fails at once, without trying,
until :meth:`Database.mark_reachable`. Its own probe (:mod:`.probe`) uses a dedicated connection. Before
that, a call that finds the server unavailable sets :attr:`Database.unavailable`, for whoever follows the
server's health (a liveness probe) to look at once.

Two hooks let the caller fence its writes without this layer knowing why (see :mod:`.fencing`):
``before_write`` is called before each attempt of every statement (a read may open, and so register, a
connection) and again right before a write is sent, and may raise to refuse it (nothing is sent then, not
even a connection attempt); ``on_connect`` runs on each new connection before its first statement (a
:class:`Session` on that connection) and may raise a :class:`~.errors.MySQLError` to refuse the
connection, which is then closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Self

__all__ = ["ConnectionSettings", "Database", "Row", "Session"]

import aiomysql

from dbuser_operator.mysql.errors import (
    DatabaseUnavailableError,
    MySQLError,
    ServerUnreachableError,
    TLSError,
    classify,
)
from dbuser_operator.mysql.session.bound import ANSWER, LOGIN, WHOLE, CallBound
from dbuser_operator.mysql.session.pool import Pool
from dbuser_operator.mysql.session.settings import ConnectionSettings
from dbuser_operator.mysql.session.statement import Statement
from dbuser_operator.mysql.session.tls import negotiate_tls_like_mysql_clients
from dbuser_operator.mysql.session.wire import hard_close, keep_alive

_log = logging.getLogger(__name__)


Row = tuple[Any, ...]


class Session:
    """One connection of the pool, for ``on_connect``: statements on exactly that connection."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def execute(self, statement: Statement) -> int:
        """Run a statement; the rows it affected. Raises :class:`~.errors.MySQLError`."""
        affected, _ = await self._run(statement, read=False)
        return affected

    async def fetch(self, statement: Statement) -> list[Row]:
        """Run a query; its rows. Raises :class:`~.errors.MySQLError`."""
        _, rows = await self._run(statement, read=True)
        return rows

    async def _run(self, statement: Statement, *, read: bool) -> tuple[int, list[Row]]:
        try:
            affected, rows = await _query(self._connection, statement, read=read)
        except Exception as exc:
            error = classify(exc, statement.secrets)
        else:
            return int(affected), rows
        raise error


OnConnect = Callable[[Session], Awaitable[None]]


class _WriteRefused(BaseException):
    """``before_write`` refused a statement: nothing was sent."""

    def __init__(self, refusal: Exception) -> None:
        super().__init__()
        self.refusal = refusal


@dataclass(frozen=True)
class _Failure:
    error: MySQLError
    pool: Any
    reused: bool  # the connection came from the pool, used before
    timed_out: bool = False  # no answer in time: not retried


class Database:
    """A pool of connections to one server, with bounded calls, classified errors and statement counters.

    ``statements_read`` (:meth:`fetch`) and ``statements_written`` (:meth:`execute`) count the statements
    sent, for the operator to export; ``pools_created`` counts pool (re)creations.
    """

    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        before_write: Callable[[], None] | None = None,
        on_connect: OnConnect | None = None,
    ) -> None:
        self._settings = settings
        self._requires_tls = settings.mode.requires_tls  # settings are frozen: not worked out per statement
        self._before_write = before_write
        self._on_connect = on_connect
        self._connected: weakref.WeakSet[Any] = weakref.WeakSet()  # connections on_connect accepted
        self._ssl = settings.ssl_context()
        negotiate_tls_like_mysql_clients()
        self._pool: Pool | None = None
        # Calls wait here for a connection (the pool itself never waits). At most pool_size connections
        # exist, old pools' included.
        self._slots = asyncio.Semaphore(settings.pool_size)
        self._retiring: set[asyncio.Task[None]] = set()
        self._in_use: set[Any] = set()  # connections a call holds now
        self._unreachable: str | None = None  # why a health check found the server unreachable
        # Set when a call finds the server unavailable (not one refused by an outage already marked); whoever
        # follows the server's health looks at once and clears it
        self.unavailable = asyncio.Event()
        self.statements_read = 0
        self.statements_written = 0
        self.pools_created = 0

    @property
    def settings(self) -> ConnectionSettings:
        """The settings this database was opened with."""
        return self._settings

    def __repr__(self) -> str:
        s = self._settings
        return f"Database(host={s.host!r}, port={s.port}, user={s.user!r})"

    @property
    def guard(self) -> Callable[[], None] | None:
        """The ``before_write`` hook, for other traffic to the server to check first (a probe)."""
        return self._before_write

    @property
    def tls_context(self) -> ssl.SSLContext | None:
        """The TLS context connections use (for a probe's own connection, :mod:`.probe`)."""
        return self._ssl

    @property
    def where(self) -> str:
        """The server as messages name it: ``MySQLServer team-a/main (db:3306)``, or ``db:3306``."""
        s = self._settings
        address = f"{s.host}:{s.port}"
        return f"{s.name} ({address})" if s.name else address

    @property
    def unreachable(self) -> str | None:
        """Why the last health check found the server unreachable; None if it did not."""
        return self._unreachable

    def mark_unreachable(self, cause: str) -> None:
        """A health check failed: close the connections in use (their calls fail now) and fail every call
        at once, naming ``cause``, until :meth:`mark_reachable`."""
        self._unreachable = cause
        for connection in list(self._in_use):
            hard_close(connection)

    def mark_reachable(self) -> None:
        """A health check passed: calls try the server again."""
        self._unreachable = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def execute(self, statement: Statement, *, idempotent: bool = True) -> int:
        """Run a statement that changes something; the number of rows it affected.

        When a pooled connection turns out broken an ``idempotent`` statement is sent once more; any other
        fails (the server may have run it before the connection broke: the caller must find out).
        """
        affected, _ = await self._run(statement, read=False, retry=idempotent)
        return affected

    async def fetch(self, statement: Statement) -> list[Row]:
        """Run a query; all its rows."""
        _, rows = await self._run(statement, read=True)
        return rows

    async def close(self) -> None:
        """Close every connection (calls in flight fail); a later call opens a new pool."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()
            await _close_free(pool)
        if self._retiring:
            await asyncio.gather(*self._retiring, return_exceptions=True)

    async def _run(self, statement: Statement, *, read: bool, retry: bool = True) -> tuple[int, list[Row]]:
        failure: MySQLError
        bound = asyncio.timeout(None)  # set by the first wait
        call = CallBound(bound, self._settings)
        try:
            async with bound:
                return await self._run_with_retry(statement, call, read=read, retry=retry)
        except TimeoutError:
            self._retire(call.pool if call.pool is not None else self._pool)
            failure = DatabaseUnavailableError(call.expired())
        except DatabaseUnavailableError as error:
            failure = error
        if not isinstance(failure, ServerUnreachableError):  # news, unlike a call the marked outage refused
            self.unavailable.set()
        # Raised outside the handlers: no driver exception chained to ours; the message names the server.
        raise type(failure)(f"{self.where}: {failure.message}", failure.code)

    async def _run_with_retry(
        self, statement: Statement, call: CallBound, *, read: bool, retry: bool
    ) -> tuple[int, list[Row]]:
        outcome = await self._attempt(statement, call, read=read)
        if isinstance(outcome, _Failure) and self._retry_after(outcome) and retry:
            outcome = await self._attempt(statement, call, read=read)
            if isinstance(outcome, _Failure):
                self._retry_after(outcome)
        if isinstance(outcome, _Failure):
            raise outcome.error
        return outcome

    def _retry_after(self, failure: _Failure) -> bool:
        """Retire the pool if the connection broke; whether to try again on a new connection."""
        if not isinstance(failure.error, DatabaseUnavailableError | TLSError):
            return False
        self._retire(failure.pool)
        if isinstance(failure.error, DatabaseUnavailableError) and failure.reused and not failure.timed_out:
            _log.debug("retrying on a new connection after: %s", failure.error.message)
            return True
        return False

    async def _attempt(
        self, statement: Statement, call: CallBound, *, read: bool
    ) -> tuple[int, list[Row]] | _Failure:
        """One try; a failure is returned (not raised) so that no driver exception is chained to it."""
        try:
            if self._before_write is not None:
                self._before_write()  # before a connection is even taken
            if self._unreachable is not None:
                return _Failure(ServerUnreachableError(f"unreachable: {self._unreachable}"), None, False)
            if self._slots.locked():
                call.limit(WHOLE)  # waiting for a connection: bounded by the call's own bound
            async with self._slots:
                return await self._attempt_with_slot(statement, call, read=read)
        except _WriteRefused as refused:
            refusal = refused.refusal
        raise refusal  # outside the handler: the hook's own exception, as it raised it

    async def _attempt_with_slot(
        self, statement: Statement, call: CallBound, *, read: bool
    ) -> tuple[int, list[Row]] | _Failure:
        pool = self._get_pool()
        call.pool = pool
        connection = pool.take()
        reused = connection is not None
        if connection is None:
            connected = await self._connect(pool, statement, call)
            if isinstance(connected, _Failure):
                return connected
            connection = connected
            keep_alive(connection)
        self._in_use.add(connection)
        call.limit(ANSWER)
        try:
            return await self._send(connection, statement, pool, reused, read=read)
        except Exception as exc:
            error = classify(exc, statement.secrets)
            if isinstance(error, DatabaseUnavailableError | TLSError) or not _is_server_error(exc):
                connection.close()  # not returned to the pool
            return _Failure(error, pool, reused)
        except _WriteRefused:
            connection.close()
            raise
        except BaseException:  # cancelled: by the call's bound (no answer in time), or by the caller
            hard_close(connection)  # its answer may still come: never reused
            raise
        finally:
            self._in_use.discard(connection)
            pool.release(connection)

    async def _connect(self, pool: Any, statement: Statement, call: CallBound) -> Any:
        """A new connection, its login bounded by ``connect_timeout``; a :class:`_Failure` if it fails."""
        call.limit(LOGIN)  # the greeting and the login too
        cancels = _cancels_requested()
        try:
            connection = await pool.connect()
        except Exception as exc:
            if _cancels_requested() > cancels:  # a failed connect that swallowed a cancellation
                raise asyncio.CancelledError from None
            if isinstance(exc, TimeoutError):  # aiomysql's own bound of the TCP connect
                silent = DatabaseUnavailableError(call.expired(LOGIN))
                return _Failure(silent, pool, reused=False, timed_out=True)
            return _Failure(classify(exc, statement.secrets), pool, reused=False)
        if _cancels_requested() > cancels:  # a cancellation the connect swallowed: see _cancels_requested
            connection.close()
            pool.release(connection)
            raise asyncio.CancelledError
        return connection

    async def _send(
        self, connection: Any, statement: Statement, pool: Any, reused: bool, *, read: bool
    ) -> tuple[int, list[Row]] | _Failure:
        """The checks before the statement (TLS, ``on_connect`` once per connection, ``before_write``),
        then the statement.

        A refusal of ``before_write`` is raised as :class:`_WriteRefused` (a BaseException, so that the
        caller's classification does not catch it); :meth:`_attempt` unwraps it.
        """
        # A connection that requires TLS refuses a server without it before authenticating (.tls); checked
        # once more here, so that no statement ever goes out in plain text then.
        if self._requires_tls and not getattr(connection, "_secure", False):
            connection.close()
            return _Failure(TLSError("TLS is required but the server does not offer it"), pool, reused)
        if self._on_connect is not None and connection not in self._connected:
            await self._on_connect(Session(connection))  # a MySQLError refuses the connection
            self._connected.add(connection)
        if read:
            self.statements_read += 1
        else:
            if self._before_write is not None:
                try:
                    self._before_write()
                except Exception as refusal:
                    raise _WriteRefused(refusal) from None
            self.statements_written += 1
        return await _query(connection, statement, read=read)

    def _get_pool(self) -> Pool:
        pool = self._pool
        if pool is None:
            pool = self._pool = Pool.open(self._settings, self._ssl)
            self.pools_created += 1
        return pool

    def _retire(self, pool: Any) -> None:
        """Stop using ``pool``: connections in use close when released, idle ones close now."""
        if pool is None:  # a call refused before it took a connection
            return
        if self._pool is pool:
            self._pool = None
        pool.close()
        task = asyncio.get_running_loop().create_task(_close_free(pool))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)


async def _query(connection: Any, statement: Statement, *, read: bool) -> tuple[int, list[Row]]:
    """Send ``statement`` on ``connection``; the rows it affected, and its rows if ``read``.

    What aiomysql's cursor does for one statement (the same escaping of the parameters, the same
    ``query``), without a cursor per statement (its future, context manager and extra coroutines), and
    without fetching the server's warnings after it (the cursor sends ``SHOW WARNINGS`` and turns each
    note into a Python warning: a round trip, and noise for the expected ones such as "user does not
    exist" from ``DROP USER IF EXISTS``). Results left unread are drained by the driver before the next
    command.
    """
    text = statement.text
    if statement.params:
        escape = connection.escape
        text = text % tuple(escape(param) for param in statement.params)
    affected = await connection.query(text)
    rows = connection._result.rows if read else None
    return int(affected), list(rows) if rows else []


def _cancels_requested() -> int:
    """How many cancellations of the current task are pending (``Task.cancelling``).

    On Python 3.11 ``asyncio.wait_for`` returns the result, not ``CancelledError``, when what it awaits
    finishes in the same loop iteration as the cancellation (gh-86296, fixed in 3.12): aiomysql connects
    through it, so a connection may come back from a cancelled acquire, or its error (a refused or failed
    connect) instead of the cancellation; a caller that retries on errors (a periodic check) would then
    never stop. A count that grew meanwhile says so (compared with itself before the call: on 3.11 a
    failed ``TaskGroup`` leaves its count raised).
    """
    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0


async def _close_free(pool: Any) -> None:
    with contextlib.suppress(Exception):  # the server may be gone: closing is best effort
        await pool.clear()


def _is_server_error(exc: Exception) -> bool:
    """An error the server sent back (not a client-side 2xxx one): the connection is still usable."""
    code = exc.args[0] if isinstance(exc, aiomysql.DatabaseError) and exc.args else None
    return isinstance(code, int) and code > 0 and not 2000 <= code < 3000
