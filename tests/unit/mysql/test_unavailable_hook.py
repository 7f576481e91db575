"""A statement that finds the server unavailable sets the Database's ``unavailable`` (its server handle's
doubt: the liveness probe looks at once); one refused by an outage already marked does not."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.envtest.ports import free_port
from dbuser_operator.mysql.errors import DatabaseUnavailableError, ServerUnreachableError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.mysql.session.statement import Statement


def closed_port_database() -> Database:
    """A Database of a port nobody listens on: every connect is refused."""
    settings = ConnectionSettings(host="127.0.0.1", port=free_port(), user="admin", password=SecretStr("pw"))
    return Database(settings)


async def test_a_refused_statement_says_the_server_is_unavailable_and_a_marked_outage_does_not() -> None:
    async with closed_port_database() as db:
        assert not db.unavailable.is_set()
        with pytest.raises(DatabaseUnavailableError):
            await db.fetch(Statement("SELECT 1"))
        assert db.unavailable.is_set()

        db.unavailable.clear()  # answered (the liveness probe's part)
        db.mark_unreachable("the probe says so")
        with pytest.raises(ServerUnreachableError):
            await db.execute(Statement("DROP USER 'u'@'%'"))
        assert not db.unavailable.is_set()  # already known: nothing new


async def test_a_server_handle_doubts_its_server_when_a_statement_finds_it_unavailable() -> None:
    async with closed_port_database() as db:
        handle = ServerHandle(db, "dbuser_operator")
        assert not handle.doubted.is_set()
        with pytest.raises(DatabaseUnavailableError):
            await db.fetch(Statement("SELECT 1"))
        assert handle.doubted.is_set()
