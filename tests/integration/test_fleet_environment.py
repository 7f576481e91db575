"""The many-servers test environment: three real servers of different flavours at once, one stoppable."""

from __future__ import annotations

import secrets

import pymysql
import pytest

from dbuser_operator.envtest.fleet import FLEET_FLAVOURS, Fleet

pytestmark = [pytest.mark.integration, pytest.mark.fleet]


def _version(fleet: Fleet, flavour: str) -> str:
    with fleet[flavour].admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        (version,) = cursor.fetchone()
    return str(version)


def test_three_flavours_run_at_once_on_their_own_ports_and_data(fleet: Fleet) -> None:
    versions = {flavour: _version(fleet, flavour) for flavour in FLEET_FLAVOURS}
    assert versions["mysql-9.7"].startswith("9.7.")
    assert "MariaDB" not in versions["mysql-9.7"]
    for flavour, line in (("mariadb-11.8", "11.8."), ("mariadb-10.11", "10.11.")):
        assert versions[flavour].startswith(line)
        assert "MariaDB" in versions[flavour]
    assert len({server.port for server in fleet}) == 3
    assert len({server.datadir for server in fleet}) == 3
    # One CA verifies all three (every connection above checked the server's certificate against its CA).
    assert len({server.ca_file.read_bytes() for server in fleet}) == 1


def test_one_server_stops_and_returns_with_its_data_while_the_others_answer(fleet: Fleet) -> None:
    schema = f"fleet_{secrets.token_hex(4)}"
    with fleet["mariadb-11.8"].admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {schema}")
    port = fleet["mariadb-11.8"].port
    with fleet.stopped("mariadb-11.8") as stopped:
        with pytest.raises(pymysql.err.OperationalError):
            stopped.admin.connect()
        assert _version(fleet, "mysql-9.7").startswith("9.7.")
        assert _version(fleet, "mariadb-10.11").startswith("10.11.")
    assert fleet["mariadb-11.8"].port == port
    with fleet["mariadb-11.8"].admin.connect() as connection, connection.cursor() as cursor:
        query = "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s"
        cursor.execute(query, (schema,))
        assert cursor.fetchone() == (schema,)
        cursor.execute(f"DROP DATABASE {schema}")
