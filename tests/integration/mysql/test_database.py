"""The Database against the real server: results, counters, errors, timeouts, outages and recovery."""

from __future__ import annotations

import asyncio
import secrets
import time
import warnings

import pytest
from pydantic import SecretStr

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.mysql import (
    AccessDeniedError,
    AdminPrivilegeMissingError,
    ConnectionSettings,
    Database,
    DatabaseUnavailableError,
    MySQLError,
    ServerError,
    Statement,
    TLSError,
)
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.identifiers import quote_identifier
from dbuser_operator.mysql.session.server import read_server
from tests.integration.mysql.support import Accounts
from tests.support.slowness import LoopLag

pytestmark = pytest.mark.integration

# A bound below is the product's (a timeout) plus WORK, what this machine takes besides the wait when idle,
# plus the event loop's lag measured over the same window (docs/testing.md, "Time in tests").
WORK = 1.0


async def test_read_server(db: Database, mysql: MySQLServer) -> None:
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION(), @@global.default_password_lifetime")
        (version, lifetime) = cursor.fetchone()
    info = await read_server(db)
    assert info.default_lifetime == int(lifetime)  # what a new account's first pass takes
    assert info.flavour == ("mariadb" if "mariadb" in version.lower() else "mysql")
    assert ".".join(map(str, info.version)) in version
    assert info.version >= (8, 0, 0)
    assert "SELECT" in info.privileges
    # VERSION(), SHOW PRIVILEGES, and the identity with the default lifetime (MariaDB: and @@old_passwords)
    assert db.statements_read == 3


async def test_parameters_round_trip_unchanged(db: Database) -> None:
    values = ["it's", 'a "b"', "back\\slash", "100% %s %%", "-- ;", "Grüße 日本語 🔑", "nul\0byte"]
    rows = await db.fetch(Statement("SELECT " + ", ".join(["%s"] * len(values)), *values))
    assert rows == [tuple(values)]


async def test_counters_split_reads_and_writes(db: Database) -> None:
    assert (db.statements_read, db.statements_written) == (0, 0)
    assert await db.fetch(Statement("SELECT 1")) == [(1,)]
    assert await db.fetch(Statement("SELECT 2")) == [(2,)]
    assert await db.execute(Statement("DO 1")) == 0
    assert (db.statements_read, db.statements_written) == (2, 1)


async def test_execute_returns_the_rows_affected(db: Database) -> None:
    schema = quote_identifier(f"it_{secrets.token_hex(5)}")
    await db.execute(Statement("CREATE DATABASE {schema}", schema=schema))
    try:
        await db.execute(Statement("CREATE TABLE {schema}.t (v VARCHAR(20))", schema=schema))
        assert (
            await db.execute(
                Statement("INSERT INTO {schema}.t VALUES (%s), (%s), (%s)", "a", "100%", "c", schema=schema)
            )
            == 3
        )
        assert (
            await db.execute(Statement("DELETE FROM {schema}.t WHERE v LIKE %s", "%0%", schema=schema)) == 1
        )
        assert await db.fetch(Statement("SELECT v FROM {schema}.t ORDER BY v", schema=schema)) == [
            ("a",),
            ("c",),
        ]
    finally:
        await db.execute(Statement("DROP DATABASE {schema}", schema=schema))


async def test_expected_server_notes_raise_no_python_warnings(db: Database, accounts_made: Accounts) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await accounts.create(db, user, "%", "pw")
        await accounts.drop(db, user, "%")
        await accounts.drop(db, user, "%")  # "does not exist" note
    assert db.statements_written == 3


async def test_concurrent_calls_share_the_pool(admin_settings: ConnectionSettings) -> None:
    async with Database(admin_settings.model_copy(update={"pool_size": 2})) as db:
        rows = await asyncio.gather(*(db.fetch(Statement("SELECT %s, SLEEP(0.05)", i)) for i in range(10)))
        assert [r[0][0] for r in rows] == list(range(10))
        ids = {
            r[0][0]
            for r in await asyncio.gather(*(db.fetch(Statement("SELECT CONNECTION_ID()")) for _ in range(6)))
        }
        assert 1 <= len(ids) <= 2
        assert db.pools_created == 1


async def test_a_syntax_error_never_shows_the_parameters(db: Database) -> None:
    with pytest.raises(ServerError) as raised:
        await db.execute(Statement("ALTER USER nobody IDENTIFIED BYY %s", SecretStr("Sup3r-s3cret")))
    error = raised.value
    assert error.code == 1064
    assert "Sup3r" not in str(error)
    assert "Sup3r" not in repr(error)
    assert error.__cause__ is None
    assert error.__context__ is None


async def test_wrong_admin_password_is_access_denied(admin_settings: ConnectionSettings) -> None:
    wrong = admin_settings.model_copy(update={"password": SecretStr("wrong-Sup3r-s3cret")})
    async with Database(wrong) as db:
        with pytest.raises(AccessDeniedError) as raised:
            await db.fetch(Statement("SELECT 1"))
    assert raised.value.code == 1045
    assert raised.value.reason == "AccessDenied"
    assert "Sup3r" not in str(raised.value)


async def test_an_admin_without_privileges(
    db: Database, admin_settings: ConnectionSettings, accounts_made: Accounts
) -> None:
    weak_user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, weak_user, "%", "weak-pw")
    weak = admin_settings.model_copy(update={"user": weak_user, "password": SecretStr("weak-pw")})
    victim = accounts_made.track(accounts_made.name(), "%")
    async with Database(weak) as weak_db:
        with pytest.raises(AdminPrivilegeMissingError) as create_denied:
            await accounts.create(weak_db, victim, "%", "pw")
        with pytest.raises(AdminPrivilegeMissingError) as lookup_denied:
            await accounts.exists(weak_db, victim, "%")
        assert await weak_db.fetch(Statement("SELECT 1")) == [(1,)]  # the connection survived the errors
        assert weak_db.pools_created == 1
    assert create_denied.value.code == 1227
    assert lookup_denied.value.code == 1142
    assert not await accounts.exists(db, victim, "%")


async def test_tls_required_refuses_a_plaintext_or_unverified_server(
    admin_settings: ConnectionSettings,
) -> None:
    # Verified against the system's CAs, the local server's certificate (from the test CA) and a
    # container's (self-signed) fail: no fallback to plaintext, or to an unverified connection.
    async with Database(admin_settings.model_copy(update={"tls_required": True, "ca_file": None})) as db:
        with pytest.raises(TLSError) as raised:
            await db.fetch(Statement("SELECT 1"))
    assert raised.value.reason == "TLSError"
    assert db.statements_read == 0


async def test_a_statement_timeout(admin_settings: ConnectionSettings) -> None:
    async with Database(admin_settings.model_copy(update={"statement_timeout": 0.5})) as db:
        async with LoopLag() as lag:
            start = time.monotonic()
            with pytest.raises(DatabaseUnavailableError, match=r"did not answer within 0\.5 s"):
                await db.fetch(Statement("SELECT SLEEP(5)"))
            took = time.monotonic() - start
        assert took < 0.5 + WORK + lag.total, f"failed after {took:.2f} s ({lag})"
        assert await db.fetch(Statement("SELECT 1")) == [(1,)]


async def test_a_killed_connection_is_replaced(db: Database, mysql: MySQLServer) -> None:
    [(first,)] = await db.fetch(Statement("SELECT CONNECTION_ID()"))
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"KILL CONNECTION {int(first)}")
    # The pooled connection fails (the loop has not yet seen it close): the pool is replaced and the
    # statement retried on a new connection, invisibly to the caller.
    [(second,)] = await db.fetch(Statement("SELECT CONNECTION_ID()"))
    assert second != first
    assert db.pools_created == 2
    assert db.statements_read == 3


async def test_a_statement_that_is_not_idempotent_is_not_sent_twice(db: Database, mysql: MySQLServer) -> None:
    [(first,)] = await db.fetch(Statement("SELECT CONNECTION_ID()"))
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"KILL CONNECTION {int(first)}")
    # The server may have run it before the connection broke: the caller is told, nothing is resent.
    with pytest.raises(DatabaseUnavailableError):
        await db.execute(Statement("DO 1"), idempotent=False)
    assert db.statements_written == 1
    [(second,)] = await db.fetch(Statement("SELECT CONNECTION_ID()"))
    assert second != first
    assert db.pools_created == 2  # the broken pool was replaced all the same


async def test_an_outage_fails_fast_and_the_same_database_recovers(
    mysql_provider: MySQLServer | LocalMySQLServer, admin_settings: ConnectionSettings
) -> None:
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("the server is not ours to stop (MYSQL_URL or a container)")
    settings = admin_settings.model_copy(update={"connect_timeout": 2.0, "pool_size": 2})
    async with Database(settings) as db:
        warm = await asyncio.gather(*(db.fetch(Statement("SELECT SLEEP(0.05)")) for _ in range(2)))
        assert warm == [[(0,)], [(0,)]]  # two pooled connections to break
        await asyncio.to_thread(mysql_provider.stop)
        try:
            for concurrency in (1, 1, 8):  # the pooled connections, a new one, more calls than connections
                async with LoopLag() as lag:
                    start = time.monotonic()
                    outcomes = await asyncio.gather(
                        *(db.execute(Statement("DO 1")) for _ in range(concurrency)), return_exceptions=True
                    )
                    took = time.monotonic() - start
                assert took < settings.connect_timeout + WORK + lag.total, f"{took:.2f} s ({lag})"
                assert all(isinstance(o, DatabaseUnavailableError) for o in outcomes), outcomes
                assert all(o.reason == "DatabaseUnavailable" for o in outcomes if isinstance(o, MySQLError))
        finally:
            await asyncio.to_thread(mysql_provider.start)
        assert await db.fetch(Statement("SELECT 1")) == [(1,)]
        assert db.pools_created >= 2


async def test_calls_waiting_for_a_connection_fail_fast_when_the_busy_ones_break(
    mysql_provider: MySQLServer | LocalMySQLServer, admin_settings: ConnectionSettings
) -> None:
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("the server is not ours to stop (MYSQL_URL or a container)")
    settings = admin_settings.model_copy(update={"connect_timeout": 2.0, "pool_size": 2})
    async with Database(settings) as db:
        busy = [asyncio.ensure_future(db.fetch(Statement("SELECT SLEEP(20)"))) for _ in range(2)]
        await asyncio.sleep(0.3)  # both connections are busy
        waiting = [asyncio.ensure_future(db.fetch(Statement("SELECT 1"))) for _ in range(4)]
        await asyncio.sleep(0.1)
        # Timed from the server's exit: its own shutdown takes seconds on MySQL (a fraction on MariaDB).
        await asyncio.to_thread(mysql_provider.stop)
        try:
            async with LoopLag() as lag:
                start = time.monotonic()
                outcomes = await asyncio.gather(*busy, *waiting, return_exceptions=True)
                took = time.monotonic() - start
            assert took < settings.connect_timeout + WORK + lag.total, f"{took:.2f} s ({lag})"
            # A busy call breaks with its connection; on MySQL, whose shutdown first interrupts the
            # SLEEP (which then returns 1), it may instead get that answer before the connection goes.
            busy_outcomes, waiting_outcomes = outcomes[:2], outcomes[2:]
            assert all(o == [(1,)] or isinstance(o, DatabaseUnavailableError) for o in busy_outcomes)
            assert all(isinstance(o, DatabaseUnavailableError) for o in waiting_outcomes), outcomes
        finally:
            await asyncio.to_thread(mysql_provider.start)
        assert await db.fetch(Statement("SELECT 1")) == [(1,)]


async def test_calls_waiting_for_a_connection_go_on_when_one_breaks(
    mysql: MySQLServer, admin_settings: ConnectionSettings
) -> None:
    settings = admin_settings.model_copy(update={"pool_size": 2, "statement_timeout": 10.0})
    async with Database(settings) as db:
        killed = asyncio.ensure_future(db.fetch(Statement("SELECT 'to-kill', SLEEP(1)")))
        busy = asyncio.ensure_future(db.fetch(Statement("SELECT 'busy', SLEEP(1)")))
        await asyncio.sleep(0.3)  # both connections are busy
        waiting = [asyncio.ensure_future(db.fetch(Statement("SELECT %s", i))) for i in range(4)]
        await asyncio.sleep(0.1)
        async with LoopLag() as lag:
            start = time.monotonic()
            with mysql.connect() as connection, connection.cursor() as cursor:
                cursor.execute(
                    "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT ''to-kill''%%'"
                )
                (victim,) = cursor.fetchone()
                cursor.execute(f"KILL CONNECTION {int(victim)}")
            assert await busy == [("busy", 0)]
            assert [await w for w in waiting] == [[(i,)] for i in range(4)]
            took = time.monotonic() - start
        # The busy SLEEP(1) ends, then the four run: long before the statement timeout (10 s).
        assert took < 1.0 + 2 * WORK + lag.total, f"{took:.2f} s ({lag})"
        with pytest.raises(DatabaseUnavailableError):
            await killed
