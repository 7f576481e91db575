"""Fixtures for the MySQL layer against the real server: settings, a Database, tracked test accounts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import SecretStr

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import ConnectionSettings, Database, ServerInfo
from dbuser_operator.mysql.bookkeeping import ownership
from tests.integration.mysql.support import Accounts, Databases


@pytest.fixture
def accounts_made(mysql: MySQLServer) -> Iterator[Accounts]:
    """Tracks the accounts a test creates, and drops them (with a plain PyMySQL admin connection)."""
    tracker = Accounts(mysql)
    yield tracker
    tracker.drop_all()


@pytest.fixture
def admin_settings(mysql: MySQLServer) -> ConnectionSettings:
    """The operator's settings for the test server's admin account (TLS verified, when the server's CA
    is known: a local server)."""
    return ConnectionSettings(
        host=mysql.host,
        port=mysql.port,
        user=mysql.user,
        password=SecretStr(mysql.password),
        connect_timeout=3,
        ca_file=mysql.ca_file,
    )


@pytest.fixture
async def db(admin_settings: ConnectionSettings) -> AsyncIterator[Database]:
    """A Database as the admin, closed after the test."""
    database = Database(admin_settings)
    yield database
    await database.close()


@pytest.fixture(scope="session")
def client_host(mysql: MySQLServer) -> str:
    """Our address as the server sees it (127.0.0.1 for a local server)."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT SUBSTRING_INDEX(USER(), '@', -1)")
        (host,) = cursor.fetchone()
    return str(host)


@pytest.fixture
def databases_made(mysql: MySQLServer) -> Iterator[Databases]:
    """Tracks the databases (schemas) a test names or creates, and drops them afterwards."""
    tracker = Databases(mysql)
    yield tracker
    tracker.drop_all()


@pytest.fixture(scope="session")
def server(mysql: MySQLServer) -> ServerInfo:
    """The test server's flavour, version and privilege names, as :func:`~.server.read_server` reads them."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        (version,) = cursor.fetchone()
        cursor.execute("SHOW PRIVILEGES")
        names = frozenset(" ".join(str(row[0]).upper().split()) for row in cursor.fetchall())
    info = ServerInfo.parse(str(version))
    return ServerInfo(info.flavour, info.version, names)


@pytest.fixture
async def owned_schema(db: Database, databases_made: Databases) -> str:
    """A fresh bookkeeping schema with its table (dropped after the test)."""
    schema = databases_made.name("_own")
    await ownership.ensure_schema(db, schema)
    return schema
