"""Every wait on a server that stalls is bounded (a loopback proxy that accepts, then forwards nothing): the
login by ``connect_timeout`` (aiomysql's own bounds only the TCP connect), each answer by ``read_timeout``
(not retried: a stalled server would stall the retry too), a probe by its own bound on its own connection;
a server marked unreachable fails calls at once, those in flight included."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import ConnectionSettings, Database
from dbuser_operator.mysql.errors import DatabaseUnavailableError
from dbuser_operator.mysql.session.probe import Probe
from dbuser_operator.mysql.session.statement import Statement
from tests.support.fault_proxy import FaultProxy
from tests.support.slowness import LoopLag

pytestmark = pytest.mark.integration

# Each bound below is the product's (a timeout, or none: "at once") plus WORK, the time this machine takes
# for what happens besides the wait when idle (a loopback connection, a TLS handshake), plus the event
# loop's lag measured over the same window: the time the product could not run because the machine was busy.
WORK = 1.0


@pytest.fixture
async def proxy(mysql: MySQLServer) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(mysql.host, mysql.port, mysql=False) as fault_proxy:
        yield fault_proxy


def through(settings: ConnectionSettings, proxy: FaultProxy, **update: object) -> ConnectionSettings:
    return settings.model_copy(update={"host": "127.0.0.1", "port": proxy.port, **update})


async def test_a_server_that_never_greets_fails_the_login_within_the_connect_timeout(
    admin_settings: ConnectionSettings, proxy: FaultProxy
) -> None:
    proxy.cut()  # connections accepted, no greeting
    settings = through(admin_settings, proxy, connect_timeout=1.0, name="the test server")
    async with Database(settings) as db, LoopLag() as lag:
        start = time.monotonic()
        with pytest.raises(
            DatabaseUnavailableError, match=r"the test server \(127\.0\.0\.1:\d+\): no login within 1 s"
        ):
            await db.fetch(Statement("SELECT 1"))
        took = time.monotonic() - start
        assert took < 1.0 + WORK + lag.total, f"failed after {took:.2f} s ({lag})"


async def test_a_server_that_stops_answering_fails_the_statement_within_the_read_timeout(
    admin_settings: ConnectionSettings, proxy: FaultProxy
) -> None:
    async with Database(through(admin_settings, proxy, read_timeout=1.0)) as db:
        assert await db.fetch(Statement("SELECT 1")) == [(1,)]  # a pooled connection
        proxy.cut()
        async with LoopLag() as lag:
            start = time.monotonic()
            with pytest.raises(DatabaseUnavailableError, match="did not answer within 1 s"):
                await db.fetch(Statement("SELECT 2"))
            took = time.monotonic() - start
        # Not tried again on a new connection (another 3 s).
        assert took < 1.0 + WORK + lag.total, f"failed after {took:.2f} s ({lag})"
        await proxy.heal()
        assert await db.fetch(Statement("SELECT 3")) == [(3,)]


async def test_marked_unreachable_the_calls_in_flight_and_later_fail_at_once(
    admin_settings: ConnectionSettings, proxy: FaultProxy
) -> None:
    async with Database(through(admin_settings, proxy, read_timeout=20.0)) as db:
        assert await db.fetch(Statement("SELECT 1")) == [(1,)]
        proxy.cut()
        in_flight = asyncio.ensure_future(db.fetch(Statement("SELECT 2")))
        await asyncio.sleep(0.3)
        async with LoopLag() as lag:
            start = time.monotonic()
            db.mark_unreachable("the probe says so")
            with pytest.raises(DatabaseUnavailableError, match="unreachable: the probe says so"):
                await in_flight  # a TLS connection too: aborted, not shut down politely
            with pytest.raises(DatabaseUnavailableError, match="unreachable: the probe says so"):
                await db.fetch(Statement("SELECT 3"))
            took = time.monotonic() - start
        # At once: long before the read timeout (20 s) the call in flight waits on.
        assert took < WORK + lag.total, f"failed after {took:.2f} s ({lag})"
        await proxy.heal()
        db.mark_reachable()
        assert await db.fetch(Statement("SELECT 4")) == [(4,)]


async def test_a_probe_is_bounded_and_uses_a_connection_of_its_own(
    admin_settings: ConnectionSettings, proxy: FaultProxy
) -> None:
    settings = through(admin_settings, proxy, connect_timeout=1.0)
    async with Database(settings) as db:
        probe = Probe(settings, db.tls_context)
        try:
            await probe.check(1.0)
            proxy.cut()  # its connection is now silent, and so is any new one
            async with LoopLag() as lag:
                start = time.monotonic()
                with pytest.raises(DatabaseUnavailableError, match="did not answer a probe within 1 s"):
                    await probe.check(1.0)
                with pytest.raises(DatabaseUnavailableError, match="no login within 1 s"):
                    await probe.check(1.0)
                took = time.monotonic() - start
            assert took < 2 * 1.0 + WORK + lag.total, f"two probes failed after {took:.2f} s ({lag})"
            await proxy.heal()
            await probe.check(1.0)
            assert db.pools_created == 0  # the pool was never opened
        finally:
            probe.close()


async def test_a_refused_probe_fails_at_once(admin_settings: ConnectionSettings, proxy: FaultProxy) -> None:
    settings = through(admin_settings, proxy)
    async with Database(settings) as db:
        probe = Probe(settings, db.tls_context)
        try:
            await probe.check(1.0)
            await proxy.refuse()  # its connection is closed: a new one is tried, and refused
            async with LoopLag() as lag:
                start = time.monotonic()
                with pytest.raises(DatabaseUnavailableError, match="Can't connect"):
                    await probe.check(1.0)
                took = time.monotonic() - start
            # At once: not after the probe's bound (1 s).
            assert took < WORK + lag.total, f"refused after {took:.2f} s ({lag})"
        finally:
            probe.close()
