"""Many servers: the local servers of ``--servers K``, their server resources, and users spread over them.

With ``--servers 1`` (the default) everything runs against one server, as it always did. With ``K > 1`` the
harness starts K local servers of the flavours in :data:`FLEET_FLAVOURS` order (MySQL 9.7, MariaDB 11.8,
MariaDB 10.11, then round again), the operator gets one ``MySQLServer`` per server in the run's namespace
(its admin Secret beside it), and user ``i`` names server ``i mod K`` in ``spec.serverRef``. The floor gets
the same servers (one pool each) in :data:`FLEET_ENV`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Final

from bench.common import OWNERSHIP_SCHEMA, TARGET, TARGET_LABEL, MySQLAddress
from dbuser_operator.controllers.kit.resources import MYSQL_SERVERS
from dbuser_operator.envtest import LocalMySQLServer, locate

FLEET_FLAVOURS: Final = ("mysql-9.7", "mariadb-11.8", "mariadb-10.11")
FLEET_ENV: Final = "BENCH_MYSQL_SERVERS"
"""The floor's servers: a JSON list of ``{name, host, port, user, password}`` (a password: not a flag)."""


def server_name(index: int) -> str:
    """The name of server ``index``'s ``MySQLServer`` resource (and of its pool in the floor)."""
    return f"s{index}"


@contextmanager
def provide_servers(workdir: Path, count: int) -> Iterator[tuple[list[MySQLAddress], list[int]]]:
    """``count`` local servers of :data:`FLEET_FLAVOURS`, each in its own folder, without the general log;
    their admin addresses and process ids. Stopped on exit."""
    with ExitStack() as stack:
        addresses, pids = [], []
        for index in range(count):
            flavour = FLEET_FLAVOURS[index % len(FLEET_FLAVOURS)]
            folder = workdir / f"mysql-{index}-{flavour}"
            server = LocalMySQLServer(
                folder, locate(flavour), general_log=bool(os.environ.get("BENCH_GENERAL_LOG"))
            )
            server.start()
            stack.callback(server.stop)
            admin = server.admin
            addresses.append(
                MySQLAddress(admin.host, admin.port, admin.user, admin.password, server_name(index), flavour)
            )
            pid = server.process.pid
            assert pid is not None, f"{folder}: the server is not running"
            pids.append(pid)
        yield addresses, pids


def admin_secret(server: MySQLAddress) -> dict[str, Any]:
    """The Secret of a server's admin account, in the run's namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"admin-{server.name}"},
        "stringData": {"user": server.user, "password": server.password},
    }


def mysql_server(server: MySQLAddress) -> dict[str, Any]:
    """A ``MySQLServer`` for the benchmark's target: the server, its admin Secret, the bench schema."""
    return {
        "apiVersion": MYSQL_SERVERS.api_version,
        "kind": "MySQLServer",
        "metadata": {"name": server.name, "labels": {TARGET_LABEL: TARGET}},
        "spec": {
            "host": server.host,
            "port": server.port,
            "credentials": {
                "user": {"name": f"admin-{server.name}", "key": "user"},
                "password": {"name": f"admin-{server.name}", "key": "password"},
            },
            "bookkeepingSchema": OWNERSHIP_SCHEMA,
        },
    }


def fleet_env(servers: Sequence[MySQLAddress]) -> str:
    """:data:`FLEET_ENV`'s value for ``servers``."""
    return json.dumps(
        [
            {"name": s.name, "host": s.host, "port": s.port, "user": s.user, "password": s.password}
            for s in servers
        ]
    )


def fleet_from_env(value: str) -> list[MySQLAddress]:
    """The servers :func:`fleet_env` wrote."""
    return [
        MySQLAddress(item["host"], int(item["port"]), item["user"], item["password"], item["name"])
        for item in json.loads(value)
    ]
