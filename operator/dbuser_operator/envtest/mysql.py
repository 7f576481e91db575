"""The MySQL side of the test environment: ``MYSQL_URL``, a testcontainers MySQL, or a local server.

Whichever it is, the caller gets the same thing: admin connection details for a real MySQL-compatible
server. A local server is MariaDB's ``mariadbd`` (or Oracle's ``mysqld``) from the machine, initialised in
a temporary data directory and started on a free loopback port; it can be stopped and started again on
the same port and data, for tests of an unreachable database.
"""

from __future__ import annotations

import getpass
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pymysql

from dbuser_operator.envtest.ports import LOOPBACK, free_port
from dbuser_operator.envtest.process import ManagedProcess, ProcessFailedError

ADMIN_USER = "envtest_admin"
DEFAULT_IMAGE = "mysql:8.4"
_SBIN = ("/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin")


@dataclass(frozen=True)
class MySQLServer:
    """Admin connection details for a MySQL-compatible server."""

    host: str
    port: int
    user: str
    password: str
    origin: str  # "url", "container" or "local"

    @classmethod
    def from_url(cls, url: str) -> MySQLServer:
        """Parse ``mysql://user:password@host:port/``."""
        parts = urlsplit(url)
        if parts.scheme not in {"mysql", "mariadb"} or not parts.hostname:
            raise ValueError("MYSQL_URL must look like mysql://user:password@host:3306/")
        return cls(
            host=parts.hostname,
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            origin="url",
        )

    @property
    def url(self) -> str:
        """The server as a ``mysql://`` URL (contains the password: never log it)."""
        return f"mysql://{quote(self.user, safe='')}:{quote(self.password, safe='')}@{self.host}:{self.port}/"

    def connect(self, **overrides: Any) -> pymysql.connections.Connection[Any]:
        """A blocking admin connection (for fixtures and checks; the operator itself uses aiomysql)."""
        arguments: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "connect_timeout": 5,
            "autocommit": True,
        }
        arguments.update(overrides)
        return pymysql.connect(**arguments)

    def __repr__(self) -> str:  # never the password
        return (
            f"MySQLServer(host={self.host!r}, port={self.port}, user={self.user!r}, origin={self.origin!r})"
        )


def _find_server_binary() -> tuple[str, Path] | None:
    search = os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
    for flavour in ("mariadbd", "mysqld"):
        found = shutil.which(flavour, path=search)
        if found:
            return flavour, Path(found)
    return None


class LocalMySQLServer:
    """A MariaDB or MySQL server from the machine, in a temporary data directory on a free port."""

    def __init__(self, workdir: Path) -> None:
        found = _find_server_binary()
        if found is None:
            raise FileNotFoundError(
                "no mariadbd or mysqld found: apt-get install mariadb-server (or set MYSQL_URL)"
            )
        self.flavour, self.binary = found
        self.workdir = workdir
        self.datadir = workdir / "data"
        self.socket = workdir / "mysqld.sock"
        self.port = free_port()
        self._os_user = getpass.getuser()
        self._admin_password = secrets.token_urlsafe(18)
        self._process = ManagedProcess("mysqld", self._argv(), workdir / "mysqld.log")

    @property
    def process(self) -> ManagedProcess:
        """The server process, for its log."""
        return self._process

    @property
    def admin(self) -> MySQLServer:
        """Admin connection details over TCP."""
        return MySQLServer(LOOPBACK, self.port, ADMIN_USER, self._admin_password, origin="local")

    def start(self) -> None:
        """Initialise the data directory on first use, start the server, create the admin account."""
        first_start = not self.datadir.exists()
        if first_start:
            self._initialise()
        self._process.start()
        self._process.wait_ready(self._socket_answers, timeout=60)
        if first_start:
            self._create_admin()

    def stop(self) -> None:
        """Stop the server (the data directory stays, so :meth:`start` brings the same server back)."""
        self._process.stop(timeout=30)

    def _argv(self) -> list[str]:
        return [
            str(self.binary),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            f"--bind-address={LOOPBACK}",
            f"--socket={self.socket}",
            f"--pid-file={self.workdir / 'mysqld.pid'}",
            f"--user={self._os_user}",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=64M",
            "--max-connections=500",
            "--log-error-verbosity=2" if self.flavour == "mysqld" else "--log-warnings=1",
        ]

    def _initialise(self) -> None:
        self.datadir.mkdir(parents=True)
        if self.flavour == "mariadbd":
            install_db = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
            if install_db is None:
                raise FileNotFoundError("mariadb-install-db not found: apt-get install mariadb-server")
            argv = [
                install_db,
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--user={self._os_user}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]
        else:
            argv = [
                str(self.binary),
                "--no-defaults",
                "--initialize-insecure",
                f"--datadir={self.datadir}",
                f"--user={self._os_user}",
            ]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)  # noqa: S603
        (self.workdir / "install-db.log").write_text(result.stdout + result.stderr)
        if result.returncode != 0:
            raise ProcessFailedError(f"{Path(argv[0]).name} failed:\n{result.stdout}{result.stderr}")

    def _socket_answers(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            pymysql.connect(unix_socket=str(self.socket), user="root", connect_timeout=1).close()
        except pymysql.err.MySQLError:
            return False
        return True

    def _create_admin(self) -> None:
        connection = pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)
        try:
            with connection.cursor() as cursor:
                for host in (LOOPBACK, "localhost"):
                    cursor.execute(
                        f"CREATE USER '{ADMIN_USER}'@'{host}' IDENTIFIED BY %s",
                        (self._admin_password,),
                    )
                    cursor.execute(f"GRANT ALL ON *.* TO '{ADMIN_USER}'@'{host}' WITH GRANT OPTION")
        finally:
            connection.close()


def docker_available() -> bool:
    """Whether a Docker engine answers (the users' CI); the docker package comes with testcontainers."""
    try:
        import docker  # type: ignore[import-untyped]  # noqa: PLC0415 - optional, slow to import

        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


@contextmanager
def provide_mysql(workdir: Path, image: str | None = None) -> Iterator[MySQLServer | LocalMySQLServer]:
    """``MYSQL_URL`` if set; else a testcontainers MySQL if Docker answers; else a local server.

    Yields a :class:`MySQLServer` (URL or container) or a running :class:`LocalMySQLServer`, stopped on exit.
    """
    url = os.environ.get("MYSQL_URL")
    if url:
        yield MySQLServer.from_url(url)
        return
    if docker_available():
        from testcontainers.community.mysql import MySqlContainer  # noqa: PLC0415 - only with a Docker engine

        password = secrets.token_urlsafe(18)
        image = image or os.environ.get("MYSQL_IMAGE", DEFAULT_IMAGE)
        with MySqlContainer(image, username="root", root_password=password, password=password) as container:
            host = container.get_container_host_ip()
            port = int(container.get_exposed_port(3306))
            yield MySQLServer(host, port, "root", password, origin="container")
        return
    server = LocalMySQLServer(workdir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
