"""A cancellation arriving as a connection is made stops the call (Python 3.11's ``wait_for`` swallows it)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from pydantic import SecretStr

from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.mysql.session.statement import Statement


class _Connection:
    closed = False

    def close(self) -> None:
        self.closed = True


class _ConnectingPool:
    """A pool whose acquire connects as aiomysql does (``asyncio.wait_for`` with a timeout), and whose
    connect ends in the very loop iteration in which the caller is cancelled: with a connection, or
    ``refused`` (as to a stopped server), when 3.11's ``wait_for`` raises that error instead of
    ``CancelledError``."""

    def __init__(self, caller: asyncio.Task[Any], *, refused: bool = False) -> None:
        self.caller = caller
        self.refused = refused
        self.connection = _Connection()
        self.released: list[_Connection] = []

    def take(self) -> None:
        return None  # no free connection: connect

    async def connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        connected = loop.create_future()
        if self.refused:
            loop.call_soon(connected.set_exception, ConnectionRefusedError(111, "Connection refused"))
        else:
            loop.call_soon(connected.set_result, None)
        loop.call_soon(self.caller.cancel)
        await asyncio.wait_for(connected, timeout=5)
        return self.connection

    def release(self, connection: _Connection) -> None:
        self.released.append(connection)


async def test_a_cancellation_during_connect_stops_the_statement_and_closes_the_connection() -> None:
    database = Database(ConnectionSettings(host="db", user="admin", password=SecretStr("pw")))
    started = asyncio.Event()

    async def statement() -> int:
        started.set()
        await asyncio.sleep(0)
        return await database.execute(Statement("DROP USER 'u'@'%'"))

    task = asyncio.create_task(statement())
    await started.wait()
    pool = _ConnectingPool(task)
    database._pool = pool  # type: ignore[assignment]  # a fake: the pool the first call would have opened

    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert pool.connection.closed  # neither used nor handed back open
    assert pool.released == [pool.connection]
    assert database.statements_written == 0


async def test_a_cancellation_during_a_failed_connect_stops_the_call_instead_of_an_error() -> None:
    """A caller that logs MySQL errors and tries again (the periodic drift checks) must see the
    cancellation, not the refused connect, or it never stops (a shutdown that hangs)."""
    database = Database(ConnectionSettings(host="db", user="admin", password=SecretStr("pw")))
    attempts = 0

    async def periodic_check() -> None:
        nonlocal attempts
        while True:
            attempts += 1
            database._pool = _ConnectingPool(task, refused=attempts == 1)  # type: ignore[assignment]
            try:
                await database.fetch(Statement("SELECT 1"))
            except MySQLError:
                await asyncio.sleep(0)  # logged, tried again next period

    task = asyncio.create_task(periodic_check())
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert task.cancelled()
    assert attempts == 1


async def test_an_earlier_uncancelled_request_does_not_stop_a_later_statement() -> None:
    """Only a cancellation requested during the connect counts: one left over before it (as a failed
    TaskGroup leaves on Python 3.11) does not make every later statement fail."""
    database = Database(ConnectionSettings(host="db", user="admin", password=SecretStr("pw")))

    class _Pool:
        def __init__(self) -> None:
            self.connection = _Connection()

        def take(self) -> None:
            return None

        async def connect(self) -> _Connection:
            return self.connection

        def release(self, connection: _Connection) -> None:
            pass

    async def statement() -> int:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # a request still counted by cancelling(), its CancelledError swallowed below
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)
        assert task.cancelling() == 1
        database._pool = _Pool()  # type: ignore[assignment]  # a fake
        with pytest.raises(MySQLError):  # past the guard: the fake connection has no cursor to run it
            await database.execute(Statement("DROP USER 'u'@'%'"))
        return 0

    assert await asyncio.create_task(statement()) == 0
