"""What the access report costs the leader at a few thousand accounts: its reads, its build, its size.

``python -m bench.access_report [--sizes 1000,5000] [--unmanaged 50] [--flavours mysql-9.7,mariadb-10.11]``

For each flavour it starts a local server (no general log) and, for each size, makes that many owned
accounts (``CREATE USER``, one database grant, a row in the bookkeeping table) next to ``--unmanaged``
accounts of nobody's with a global privilege; then it does what the drift check does for a server resource
on top of its inventory — :func:`~dbuser_operator.mysql.bookkeeping.inventory.read_inventory`, then
:func:`~dbuser_operator.mysql.bookkeeping.access.read_accounts` (the one more query), then
:func:`~dbuser_operator.controllers.servers.access.build` and the status's JSON — and prints the process
CPU seconds of each part (this process is the leader's stand-in: one event loop, as the operator's), the
server's CPU for the extra query, and the size of ``status.access``. Benchmark code, not a product path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import admin_settings, make_owned_accounts, sample_process
from dbuser_operator.controllers.servers.access import DriftFound, build
from dbuser_operator.envtest import LocalMySQLServer, locate
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.access import read_accounts
from dbuser_operator.mysql.bookkeeping.inventory import read_inventory
from dbuser_operator.mysql.session.server import read_server

SCHEMA = "access_bench"


def _make(server: LocalMySQLServer, first: int, last: int, unmanaged: int) -> None:
    """Owned accounts ``acc<first>`` … ``acc<last - 1>``, and (once) ``unmanaged`` accounts with PROCESS."""
    with server.admin.connect() as connection, connection.cursor() as cursor:
        if first == 0:
            cursor.execute("CREATE DATABASE access_app")
            for index in range(unmanaged):
                cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (f"dba{index}", f"pw-dba{index}-x"))
                cursor.execute("GRANT PROCESS ON *.* TO %s@'%%'", (f"dba{index}",))
        make_owned_accounts(
            cursor, schema=SCHEMA, database="access_app", prefix="acc", first=first, last=last
        )
        connection.commit()


async def measure(server: LocalMySQLServer, sizes: Sequence[int], unmanaged: int) -> list[dict[str, float]]:
    """One line of figures per size."""
    pid = server.process.pid
    if pid is None:
        raise RuntimeError("the server is not running")
    settings = admin_settings(server)
    results = []
    async with Database(settings) as db:
        await ownership.ensure_schema(db, SCHEMA)
        await ownership.ensure_book(db, SCHEMA, ownership.ROLES)
        info = await read_server(db)
        made = 0
        for size in sizes:
            await asyncio.to_thread(_make, server, made, size, unmanaged)
            made = size
            cpu = time.process_time()
            full = await read_inventory(db, SCHEMA, info)
            inventory_cpu = time.process_time() - cpu
            server_cpu, cpu = sample_process(pid).cpu_seconds, time.process_time()
            accounts = await read_accounts(db, info, SCHEMA)
            read_cpu, server_cpu = time.process_time() - cpu, sample_process(pid).cpu_seconds - server_cpu
            cpu = time.process_time()
            report = build(accounts, full, DriftFound({}))
            status = json.dumps(report.model_dump(by_alias=True, exclude_none=True, mode="json"))
            build_cpu = time.process_time() - cpu
            results.append({
                "owned": size,
                "accounts": report.accounts,
                "inventory_cpu": inventory_cpu,
                "read_cpu": read_cpu,
                "build_cpu": build_cpu,
                "server_cpu": server_cpu,
                "status_bytes": len(status),
            })  # fmt: skip
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.access_report", description=__doc__)
    parser.add_argument("--sizes", default="1000,5000", help="owned accounts, ascending")
    parser.add_argument("--unmanaged", type=int, default=50, help="accounts of nobody's, with PROCESS")
    parser.add_argument("--flavours", default="mysql-9.7,mariadb-10.11")
    arguments = parser.parse_args(argv)
    sizes = sorted(int(size) for size in arguments.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="dbuser-operator-access-") as workdir:
        for flavour in arguments.flavours.split(","):
            server = LocalMySQLServer(Path(workdir) / flavour, locate(flavour), general_log=False)
            server.start()
            try:
                results = asyncio.run(measure(server, sizes, arguments.unmanaged))
            finally:
                server.stop()
            for line in results:
                print(
                    f"{flavour:14s} {line['accounts']:6.0f} accounts: leader CPU s inventory "
                    f"{line['inventory_cpu']:.2f} (the drift check's, as before), accounts query "
                    f"{line['read_cpu']:.2f}, build and JSON {line['build_cpu']:.2f}; server CPU s for the "
                    f"accounts query {line['server_cpu']:.2f}; status.access {line['status_bytes']} bytes",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
