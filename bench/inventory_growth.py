"""How the drift check's inventory grows with the accounts a server holds: its time and the server's CPU.

``python -m bench.inventory_growth [--sizes 1000,2000,4000,8000] [--flavours mysql-9.7,mariadb-11.8,…]``

For each flavour it starts a local server (no general log), and for each size makes that many owned
accounts (``CREATE USER``, one database grant, a row in the bookkeeping table), then runs
:func:`~dbuser_operator.mysql.bookkeeping.inventory.inventory` once, as the periodic drift check does for
each server, and prints its wall time and the server's CPU seconds. Linear growth doubles them with the size.
Benchmark code, not a product path.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import admin_settings, make_owned_accounts, sample_process
from dbuser_operator.envtest import LocalMySQLServer, locate
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.inventory import inventory

SCHEMA = "inventory_bench"  # its bookkeeping table: `inventory_bench`.`accounts` (ownership.TABLE)


async def grow(server: LocalMySQLServer, sizes: Sequence[int]) -> list[tuple[int, float, float]]:
    """``(accounts, seconds, server CPU seconds)`` of one inventory at each size."""
    admin = server.admin
    pid = server.process.pid
    if pid is None:
        raise RuntimeError("the server is not running")
    settings = admin_settings(server)
    results = []
    async with Database(settings) as db:
        await ownership.ensure_schema(db, SCHEMA)
        with admin.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE inventory_app")
            made = 0
            for size in sizes:
                make_owned_accounts(
                    cursor, schema=SCHEMA, database="inventory_app", prefix="inv", first=made, last=size
                )
                connection.commit()
                made = size
                cpu_before, started = sample_process(pid).cpu_seconds, time.monotonic()
                states = await inventory(db, SCHEMA)
                seconds, cpu = time.monotonic() - started, sample_process(pid).cpu_seconds - cpu_before
                if len(states) != size:
                    raise RuntimeError(f"the inventory found {len(states)} accounts of {size}")
                results.append((size, seconds, cpu))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inventory_growth", description=__doc__)
    parser.add_argument("--sizes", default="1000,2000,4000,8000", help="accounts, ascending")
    parser.add_argument("--flavours", default="mysql-9.7,mariadb-11.8,mariadb-10.11")
    arguments = parser.parse_args(argv)
    sizes = sorted(int(size) for size in arguments.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix="dbuser-operator-inventory-") as workdir:
        for flavour in arguments.flavours.split(","):
            server = LocalMySQLServer(Path(workdir) / flavour, locate(flavour), general_log=False)
            server.start()
            try:
                results = asyncio.run(grow(server, sizes))
            finally:
                server.stop()
            for size, seconds, cpu in results:
                line = f"{flavour:14s} {size:6d} accounts: {seconds:6.2f} s, server {cpu:6.2f} CPU s"
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
