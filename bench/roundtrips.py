"""Round trips or one multi-statement: what a new account's statements cost the server, and the client.

``python -m bench.roundtrips [--n 3000] [--chunk 250] [--flavours mysql-9.7,mariadb-11.8]``

For each flavour it starts a local server (no general log) and makes ``--n`` accounts the way the
operator's first pass does: the claim (``INSERT … SELECT … WHERE NOT EXISTS`` into a bookkeeping table),
``CREATE USER … IDENTIFIED BY`` and one ``GRANT``, from 5 concurrent workers over TLS. It does so in two
ways that take turns chunk by chunk: one round trip per statement (as the operator sends them), or the three
statements in one multi-statement round trip. It prints each way's CPU seconds, the server's and the
client's, and the claim's own cost (a chunk of claims alone). The turns matter: ``CREATE USER`` and
``GRANT`` cost the server more as it holds more accounts, so ways run one after the other would differ by
that alone. Benchmark code, not a product path.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiomysql
from pymysql.constants import CLIENT

from bench.common import sample_process
from dbuser_operator.envtest import LocalMySQLServer, locate
from dbuser_operator.envtest.mysql import MySQLServer

WORKERS = 5
CLAIM = (
    "INSERT INTO rt_bench.claims (user, host, owner) SELECT %s, '%%', 'bench' FROM DUAL"
    " WHERE NOT EXISTS (SELECT 1 FROM mysql.user u WHERE u.User = %s AND u.Host = '%%')"
)
CREATE = "CREATE USER %s@'%%' IDENTIFIED BY %s"
GRANT = "GRANT SELECT ON `rt_bench`.* TO %s@'%%'"
WAYS = ("round trips", "one multi-statement", "claim alone")


def _plan(way: str, user: str) -> list[tuple[str, tuple[str, ...]]]:
    """The round trips of one account: (text, parameters) each."""
    password = f"pw-{user}-secret"
    if way == "claim alone":
        return [(CLAIM, (user, user))]
    statements = [(CLAIM, (user, user)), (CREATE, (user, password)), (GRANT, (user,))]
    if way == "round trips":
        return statements
    return [(";".join(text for text, _ in statements), tuple(p for _, params in statements for p in params))]


async def _chunk(pool: aiomysql.Pool, way: str, users: list[str]) -> None:
    queue = list(reversed(users))

    async def worker() -> None:
        while queue:
            user = queue.pop()
            for text, params in _plan(way, user):
                async with pool.acquire() as connection, connection.cursor() as cursor:
                    await cursor.execute(text, params)
                    while await cursor.nextset():  # a multi-statement's further results
                        pass
                await asyncio.sleep(0)  # other passes run between two statements, as in the operator

    await asyncio.gather(*(worker() for _ in range(WORKERS)))


async def measure(admin: MySQLServer, server_pid: int, n: int, chunk: int) -> dict[str, tuple[float, float]]:
    """Server and client CPU seconds of each way, over ``n`` accounts of each (``chunk`` at a time)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # encrypted, as the operator's default
    pool = await aiomysql.create_pool(
        host=admin.host,
        port=admin.port,
        user=admin.user,
        password=admin.password,
        autocommit=True,
        minsize=WORKERS,
        maxsize=WORKERS,
        ssl=context,
        client_flag=CLIENT.MULTI_STATEMENTS,
    )
    try:
        async with pool.acquire() as connection, connection.cursor() as cursor:
            await cursor.execute("CREATE DATABASE rt_bench")
            await cursor.execute(
                "CREATE TABLE rt_bench.claims (user VARCHAR(128), host VARCHAR(255), owner VARCHAR(128),"
                " PRIMARY KEY (user, host)) ENGINE=InnoDB"
            )
        spent = {way: (0.0, 0.0) for way in WAYS}
        for start in range(0, n, chunk):
            for index, way in enumerate(WAYS):
                users = [f"rt{index}_{i}" for i in range(start, min(start + chunk, n))]
                server_before, client_before = sample_process(server_pid).cpu_seconds, time.process_time()
                await _chunk(pool, way, users)
                server, client = spent[way]
                spent[way] = (
                    server + sample_process(server_pid).cpu_seconds - server_before,
                    client + time.process_time() - client_before,
                )
        return spent
    finally:
        pool.close()
        await pool.wait_closed()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.roundtrips", description=__doc__)
    parser.add_argument("--n", type=int, default=3000, help="accounts made each way (default 3000)")
    parser.add_argument("--chunk", type=int, default=250, help="accounts per turn (default 250)")
    parser.add_argument("--flavours", default="mysql-9.7,mariadb-11.8")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dbuser-operator-roundtrips-") as workdir:
        for flavour in arguments.flavours.split(","):
            server = LocalMySQLServer(Path(workdir) / flavour, locate(flavour), general_log=False)
            server.start()
            try:
                pid = server.process.pid
                if pid is None:
                    raise RuntimeError(f"{flavour}: the server is not running")
                spent = asyncio.run(measure(server.admin, pid, arguments.n, arguments.chunk))
            finally:
                server.stop()
            print(f"{flavour}, {arguments.n} accounts each way:", flush=True)
            for way, (server_cpu, client_cpu) in spent.items():
                per = 1000 / arguments.n
                print(
                    f"  {way:20s} server {server_cpu:6.2f} CPU s ({server_cpu * per:.2f} ms per account), "
                    f"client {client_cpu:5.2f} CPU s ({client_cpu * per:.2f} ms per account)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
