"""The MySQL side of the test environment: ``MYSQL_URL``, a testcontainers MySQL, or a local server.

Whichever it is, the caller gets the same thing: admin connection details for a real MySQL-compatible
server. A local server is the selected flavour (:mod:`.flavours`: MySQL 9.7, MariaDB 11.8 or 10.11),
initialised in a temporary data directory and started on a free loopback port with TLS; it can be stopped
and started again on the same port and data, for tests of an unreachable database.
"""

from __future__ import annotations

import getpass
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pymysql

from dbuser_operator.envtest.flavours import Flavour, locate, selected_flavour
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.envtest.ports import LOOPBACK, free_port
from dbuser_operator.envtest.process import ManagedProcess, ProcessFailedError, on_free_ports

ADMIN_USER = "envtest_admin"
GENERAL_LOG = "general.log"  # the local server's log of every statement, in its working directory
DEFAULT_IMAGE = "mysql:8.4"


@dataclass(frozen=True)
class MySQLServer:
    """Admin connection details for a MySQL-compatible server."""

    host: str
    port: int
    user: str
    password: str
    origin: str  # "url", "container" or "local"
    ca_file: Path | None = None  # with it, connections use TLS and verify the server's certificate

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
        if self.ca_file is not None:
            arguments.update(ssl_ca=str(self.ca_file), ssl_verify_identity=True)
        arguments.update(overrides)
        return pymysql.connect(**arguments)

    def __repr__(self) -> str:  # never the password
        return (
            f"MySQLServer(host={self.host!r}, port={self.port}, user={self.user!r}, origin={self.origin!r})"
        )


class LocalMySQLServer:
    """A server of one flavour (:mod:`.flavours`) in its own working directory, on a free loopback port.

    The working directory holds everything of this server: ``data/``, the socket, ``tls/`` (a serving
    certificate of ``ca``, a fresh test CA by default, for 127.0.0.1 and localhost: every flavour speaks
    TLS), ``general.log`` (every statement, to attribute them) and ``mysqld.log`` (the error log).
    ``tls=False`` starts it without TLS, ``general_log=False`` without the general log;
    ``certificate_names`` (DNS names, IP addresses) are what the serving certificate names.
    """

    def __init__(
        self,
        workdir: Path,
        flavour: Flavour | None = None,
        ca: CertificateAuthority | None = None,
        *,
        tls: bool = True,
        general_log: bool = True,
        certificate_names: tuple[Sequence[str], Sequence[str]] = (("localhost",), (LOOPBACK,)),
    ) -> None:
        self.flavour = flavour or locate(selected_flavour())
        self.tls = tls
        self.general_log_on = general_log  # False: no general log (benchmarks: it costs every statement)
        self._certificate_names = certificate_names
        self.workdir = workdir
        self.datadir = workdir / "data"
        self.socket = workdir / "mysqld.sock"
        self.tls_dir = workdir / "tls"
        self.general_log = workdir / GENERAL_LOG
        self.port = free_port()
        self.version = ""  # SELECT VERSION(), once started
        self._ca = ca or CertificateAuthority("dbuser-operator-envtest-mysql-ca")
        self._os_user = "root" if self.flavour.root is not None else getpass.getuser()
        self._admin_password = secrets.token_urlsafe(18)
        self._process = self._server_process()

    @property
    def process(self) -> ManagedProcess:
        """The server process, for its log."""
        return self._process

    @property
    def ca_file(self) -> Path:
        """The CA certificate that signed the server's certificate."""
        return self.tls_dir / "ca.crt"

    @property
    def ca(self) -> CertificateAuthority:
        """The CA the server trusts for client certificates (and that signed its own)."""
        return self._ca

    @property
    def admin(self) -> MySQLServer:
        """Admin connection details over TCP, verifying the server's certificate."""
        return MySQLServer(
            LOOPBACK,
            self.port,
            ADMIN_USER,
            self._admin_password,
            origin="local",
            ca_file=self.ca_file if self.tls else None,
        )

    def start(self) -> None:
        """Initialise the data directory on first use, start the server, create the admin account.

        On the first start, a port taken before the server bound it is traded for another; later starts
        keep the port (tests of a server that goes away and comes back rely on it). A server that does not
        come up, or whose admin account cannot be made, is stopped before the error is raised.
        """
        first_start = not self.datadir.exists()
        if first_start:
            self._write_certificates()
            self._initialise()
            on_free_ports(self._start_process, self._repick_port)
            try:
                self._create_admin()
            except BaseException:
                self._process.stop()
                raise
        else:
            self._start_process()

    def _start_process(self) -> None:
        self._process.start_ready(self._socket_answers, timeout=120)

    def _repick_port(self) -> None:
        self.port = free_port()
        self._process = self._server_process()

    def _server_process(self) -> ManagedProcess:
        argv = self.flavour.command(self._argv(), self.workdir)
        return ManagedProcess(self.flavour.server, argv, self.workdir / "mysqld.log")

    def stop(self) -> None:
        """Stop the server (the data directory stays, so :meth:`start` brings the same server back)."""
        self._process.stop(timeout=30)

    def _inner(self, path: Path) -> str:
        return str(self.flavour.inner(path, self.workdir))

    def _argv(self) -> list[str]:
        mysql = self.flavour.product == "mysql"
        return [
            self.flavour.server,
            "--no-defaults",
            f"--datadir={self._inner(self.datadir)}",
            f"--port={self.port}",
            f"--bind-address={LOOPBACK}",
            f"--socket={self._inner(self.socket)}",
            f"--pid-file={self._inner(self.workdir / 'mysqld.pid')}",
            f"--secure-file-priv={self._inner(self.workdir / 'files')}",
            f"--user={self._os_user}",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=64M",
            "--max-connections=500",
            *self._tls_argv(),
            f"--general-log={int(self.general_log_on)}",
            f"--general-log-file={self._inner(self.general_log)}",
            *(["--mysqlx=OFF", "--log-error-verbosity=2"] if mysql else ["--log-warnings=1"]),
        ]

    def _tls_argv(self) -> list[str]:
        if not self.tls:  # both would otherwise generate certificates of their own
            return ["--skip-ssl" if self.flavour.product == "mariadb" else "--tls-version="]
        return [
            f"--ssl-ca={self._inner(self.ca_file)}",
            f"--ssl-cert={self._inner(self.tls_dir / 'server.crt')}",
            f"--ssl-key={self._inner(self.tls_dir / 'server.key')}",
        ]

    def _write_certificates(self) -> None:
        self.tls_dir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "files").mkdir(exist_ok=True)
        serving = self._ca.issue_server(*self._certificate_names)
        for name, data in {
            "ca.crt": self._ca.cert_pem,
            "server.crt": serving.cert_pem,
            "server.key": serving.key_pem,
        }.items():
            (self.tls_dir / name).write_bytes(data)

    def _initialise(self) -> None:
        self.datadir.mkdir(parents=True)
        datadir, user = f"--datadir={self._inner(self.datadir)}", f"--user={self._os_user}"
        if self.flavour.product == "mariadb":
            if self.flavour.root is None:
                install_db = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
                if install_db is None:
                    raise FileNotFoundError("mariadb-install-db not found: apt-get install mariadb-server")
            else:
                install_db = "mariadb-install-db"
            argv = [install_db, "--no-defaults", datadir, user]
            argv += ["--auth-root-authentication-method=normal", "--skip-test-db"]
            # In a root the host name cannot be resolved (and the root's mysql user may not exist).
            argv += ["--force", "--skip-name-resolve"] if self.flavour.root is not None else []
        else:
            argv = [self.flavour.server, "--no-defaults", "--initialize-insecure", datadir, user]
        command = self.flavour.command(argv, self.workdir)
        result = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
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
                cursor.execute("SELECT VERSION()")
                (self.version,) = cursor.fetchone()
                if not self.version.startswith(f"{self.flavour.version_line}."):
                    raise ProcessFailedError(
                        f"{self.flavour.name}: {self.flavour.server} is version {self.version}"
                    )
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


def describe_mysql() -> str:
    """Which server :func:`provide_mysql` will give, for the test report's header (starts nothing)."""
    url = os.environ.get("MYSQL_URL")
    if url:
        server = MySQLServer.from_url(url)
        return f"mysql: MYSQL_URL {server.host}:{server.port} (an external server)"
    if docker_available():
        return f"mysql: testcontainers {os.environ.get('MYSQL_IMAGE', DEFAULT_IMAGE)}"
    try:
        flavour = locate(selected_flavour())
    except (FileNotFoundError, ValueError) as exc:
        return f"mysql: UNAVAILABLE: {exc}"
    where = f"root {flavour.root}" if flavour.root is not None else "this machine's package"
    return f"mysql: {flavour.name} ({flavour.package_version()}, {where})"


@contextmanager
def provide_mysql(
    workdir: Path, image: str | None = None, *, general_log: bool = True
) -> Iterator[MySQLServer | LocalMySQLServer]:
    """``MYSQL_URL`` if set; else a testcontainers MySQL if Docker answers; else a local server
    (``general_log``: with its general log).

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
    server = LocalMySQLServer(workdir, general_log=general_log)
    try:
        server.start()
        yield server
    finally:
        server.stop()
