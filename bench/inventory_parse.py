"""The operator's own CPU in one inventory: the server's rows turned into account states, no server needed.

``python -m bench.inventory_parse [--n 10000] [--flavour mysql|mariadb] [--repeat 5] [--profile FILE]``
builds the rows a server with ``--n`` owned accounts returns to
:func:`~dbuser_operator.mysql.bookkeeping.inventory.inventory` (the bookkeeping table joined to
``mysql.user``, and the privilege rows: USAGE and one database grant each, one account in ten with a table
grant too), as the fleet lays them out (owner entry in the attributes on MySQL, none on MariaDB), hands
them to it through a stand-in connection, and prints the CPU seconds of one call and per account (best and
median of ``--repeat``). ``--profile FILE`` writes cProfile's statistics of one more call. Benchmark code,
not a product path.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import statistics
import time
from collections.abc import Sequence

from dbuser_operator.mysql.bookkeeping.inventory import inventory
from dbuser_operator.mysql.session.connection import Row
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

SERVERS = {
    "mysql": ServerInfo(flavour="mysql", version=(9, 7, 0)),
    "mariadb": ServerInfo(flavour="mariadb", version=(11, 8, 2)),
}


def account_rows(n: int, flavour: str) -> list[Row]:
    """The rows of the inventory's first query for ``n`` owned accounts of a settled fleet."""
    rows: list[Row] = []
    for index in range(n):
        user, uid = f"app{index}", f"6806bfd6-bb80-4803-916b-{index:012d}"
        fingerprint = f"{index:064x}"
        if flavour == "mysql":
            owner = {"uid": uid, "name": user, "managedBy": "dbuser-operator", "namespace": "bench"}
            attributes: tuple[object, ...] = (uid, fingerprint, json.dumps(owner), None)
            policy: tuple[object, ...] = ("N", None, None, None, 0)
            tls: tuple[object, ...] = ("", b"", b"", b"")
        else:
            attributes, policy, tls = (None, None, None, None), ("false", None, 0, 0, 0), ("", "", "", "")
        owned = (user, "%", uid, "bench", user, fingerprint)
        rows.append((*owned, user, 0, 0, 0, 0, *tls, fingerprint, *attributes, *policy))
    return rows


def privilege_rows(n: int) -> list[Row]:
    """The rows of the inventory's second query for the same accounts."""
    rows: list[Row] = []
    for index in range(n):
        grantee = f"'app{index}'@'%'"
        rows.append((None, None, grantee, 0, "*", "*", "USAGE", "NO", None))
        rows.append((None, None, grantee, 1, "bench", "*", "SELECT", "NO", None))
        if index % 10 == 0:
            rows.append((None, None, grantee, 2, "bench", "orders", "SELECT", "NO", None))
    return rows


class Rows:
    """A stand-in connection: the accounts' rows, then the privileges' (the inventory's two queries)."""

    def __init__(self, accounts: list[Row], privileges: list[Row]) -> None:
        self.answers = (accounts, privileges)
        self.sent = 0

    async def fetch(self, statement: Statement) -> list[Row]:
        answer = self.answers[self.sent % 2]
        self.sent += 1
        return answer


def once(rows: Rows, server: ServerInfo, n: int) -> float:
    """The CPU seconds of one inventory."""
    started = time.process_time()
    states = asyncio.run(inventory(rows, "dbuser_operator", server))  # type: ignore[arg-type]
    seconds = time.process_time() - started
    if len(states) != n:
        raise RuntimeError(f"{len(states)} states of {n} accounts")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inventory_parse", description=__doc__)
    parser.add_argument("--n", type=int, default=10_000, help="owned accounts")
    parser.add_argument("--flavour", choices=sorted(SERVERS), default="mysql")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", help="write cProfile statistics of one more call here")
    args = parser.parse_args(argv)
    server = SERVERS[args.flavour]
    rows = Rows(account_rows(args.n, args.flavour), privilege_rows(args.n))
    times = [once(rows, server, args.n) for _ in range(args.repeat)]
    best, median = min(times), statistics.median(times)
    print(
        f"{args.flavour}: {args.n} accounts, CPU best {best:.3f} s median {median:.3f} s,"
        f" {best / args.n * 1e6:.1f} µs per account"
    )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(once, rows, server, args.n)
        profiler.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
