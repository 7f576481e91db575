"""The MySQL half of the test environment is a real server."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import aiomysql
import pymysql
import pytest

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer

pytestmark = pytest.mark.integration


async def _connect(server: MySQLServer, user: str, password: str) -> aiomysql.Connection:
    return await aiomysql.connect(
        host=server.host, port=server.port, user=user, password=password, connect_timeout=5, autocommit=True
    )


async def test_aiomysql_creates_a_user_that_can_log_in_and_drops_it(mysql: MySQLServer) -> None:
    user = f"smoke_{secrets.token_hex(4)}"
    password = "p'a\"s`s;--" + secrets.token_hex(4)
    admin = await _connect(mysql, mysql.user, mysql.password)
    try:
        async with admin.cursor() as cursor:
            await cursor.execute("SELECT VERSION()")
            (version,) = await cursor.fetchone()
            assert version
            # With parameters, pymysql formats the query with %: a literal % is written %%.
            await cursor.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))

        login = await _connect(mysql, user, password)
        async with login.cursor() as cursor:
            await cursor.execute("SELECT CURRENT_USER()")
            assert (await cursor.fetchone())[0] == f"{user}@%"
        login.close()

        async with admin.cursor() as cursor:
            await cursor.execute(f"DROP USER '{user}'@'%'")
        with pytest.raises(pymysql.err.OperationalError) as refused:
            await _connect(mysql, user, password)
        assert refused.value.args[0] == 1045  # access denied
    finally:
        admin.close()


def test_local_server_survives_a_stop_and_start(mysql_provider: MySQLServer | LocalMySQLServer) -> None:
    """Tests of an unreachable database stop and start the local server; state and port persist."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("the server is not ours to stop (MYSQL_URL or a container)")
    mysql_provider.stop()
    with pytest.raises(pymysql.err.OperationalError):
        mysql_provider.admin.connect()
    mysql_provider.start()
    with mysql_provider.admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_local_server_speaks_verified_tls_and_logs_every_statement(
    mysql_provider: MySQLServer | LocalMySQLServer,
) -> None:
    """Every flavour: a certificate of the envtest CA for 127.0.0.1, and the general log in the session's
    directory (for a root flavour, written through the bind mount)."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("the server is not ours (MYSQL_URL or a container): its TLS and logs are its own")
    marker = f"envtest-marker-{secrets.token_hex(4)}"
    with mysql_provider.admin.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        (_, cipher) = cursor.fetchone()
        cursor.execute("SELECT %s", (marker,))
    assert cipher  # verified against mysql_provider.ca_file: PyMySQL would refuse another certificate
    assert marker in mysql_provider.general_log.read_text(errors="replace")
    assert mysql_provider.general_log.parent == mysql_provider.workdir


def test_a_port_taken_before_the_server_binds_it_is_traded_for_another(tmp_path: Path) -> None:
    """free_port only probes: another process can bind the port before the server does. A first start
    whose server finds its port taken picks another port and starts again."""
    server = LocalMySQLServer(tmp_path / "squatted")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind((server.admin.host, server.port))
        squatter.listen()
        taken = server.port
        try:
            server.start()
            assert server.port != taken
            assert "already in use" in server.process.log_path.read_text(errors="replace").lower()
            with server.admin.connect() as connection, connection.cursor() as cursor:
                cursor.execute("SELECT @@port")
                assert cursor.fetchone() == (server.port,)
        finally:
            server.stop()


def _processes_of(server: LocalMySQLServer) -> list[int]:
    """Every process whose command line names the server's working directory (a wrapper that starts a
    server in a root) or its port (the server: in a root it sees the directory under another path)."""
    marks = (str(server.workdir).encode(), f"--port={server.port}\0".encode())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if any(mark in cmdline for mark in marks) and state != "Z":
            found.append(int(entry.name))
    return found


def test_no_server_process_outlives_its_stop(tmp_path: Path) -> None:
    """The process the environment tracks is the server itself (not the unshare or chroot wrapper of a
    root flavour): stopped, nothing of it is left."""
    server = LocalMySQLServer(tmp_path / "short-lived")
    try:
        server.start()
        pid = server.process.pid
        assert pid is not None
        assert Path(f"/proc/{pid}/comm").read_text().strip() in {"mysqld", "mariadbd"}
        assert _processes_of(server) == [pid]
    finally:
        server.stop()
    assert not Path(f"/proc/{pid}").exists()
    assert _processes_of(server) == []


def test_a_start_that_fails_once_the_server_runs_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after the server started (here its admin account) stops it before the error is raised:
    a fixture whose setup fails never tears down, so nothing else would."""
    server = LocalMySQLServer(tmp_path / "failing")

    def refuse() -> None:
        raise RuntimeError("the admin account could not be made")

    monkeypatch.setattr(server, "_create_admin", refuse)
    with pytest.raises(RuntimeError, match="admin account"):
        server.start()
    assert not server.process.running
    assert _processes_of(server) == []
