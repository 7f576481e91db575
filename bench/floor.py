"""The floor: a straight-line script doing exactly the unavoidable work of the operator's job, nothing else.

``python -m bench.floor --kubeconfig … --namespace … --mysql-host … --mysql-port … --mysql-user …``
(admin password in ``DBUSER_OPERATOR_MYSQL_PASSWORD``). Benchmark code, not a product path.

It keeps Secrets in a list+watch cache, watches the benchmark's DatabaseUsers, and for each new one, with
``--concurrency`` workers and as many MySQL connections: adds a finalizer (one JSON Patch), reads the
password from the cache, runs ``CREATE USER IF NOT EXISTS … IDENTIFIED BY`` and ``GRANT``, and writes the
Ready condition (one status merge patch). No checks, no bookkeeping, no Events, no retries worth the name.
With ``--events`` it also posts the one Event per new user that the operator promises (``AccountCreated``,
the operator's shape) once the status is written, in the background as the operator does (the worker goes
on to the next user): the floor of the job *with* its Event, for comparison.

MySQL connections use TLS as the operator's default does (``--mysql-tls PREFERRED``: encrypted when the
server offers it, unverified; the operator's own TLS code builds the context): the passwords of ``CREATE
USER`` cross the network, so encryption is part of the job. ``--mysql-tls DISABLED`` speaks plain text, as
the floor did before 2026-11-24.

With many servers (``BENCH_MYSQL_SERVERS``, :mod:`bench.servers`) it keeps one pool per server, of
``--concurrency`` connections each (as the operator's per-server pool), and runs each user's statements on
the server its ``spec.serverRef`` names; the workers are still ``--concurrency`` in all.

With ``--kind Database`` it does the floor of the Database kind's job instead: for each new Database, the
finalizer, ``CREATE DATABASE IF NOT EXISTS`` and the Ready condition (no bookkeeping row, no read-back).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import secrets
import signal
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomysql

from bench.common import (
    ADMIN_PASSWORD_ENV,
    BENCH_DATABASE,
    TARGET,
    TARGET_LABEL,
    MySQLAddress,
    api_client,
    is_ready,
    list_and_watch,
    ready_status,
)
from bench.servers import FLEET_ENV, fleet_from_env
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, DATABASES
from dbuser_operator.mysql.session.tls import SSLMode, TLSOptions, negotiate_tls_like_mysql_clients
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import EVENTS, SECRETS, Resource

FINALIZER = "bench.dbuser-operator.dev/floor"


class Floor:
    resource: Resource = DATABASE_USERS

    def __init__(
        self,
        kube: KubeClient,
        pools: dict[str, aiomysql.Pool],
        namespace: str,
        concurrency: int,
        *,
        events: bool = False,
    ) -> None:
        self.kube = kube
        self.events = events  # one Event per new user, as the operator posts
        self.posting: set[asyncio.Task[Any]] = set()  # Events being posted
        self.pools = pools  # by server resource name; "" without spec.serverRef
        self.namespace = namespace
        self.concurrency = concurrency
        self.secrets: dict[str, dict[str, Any]] = {}
        self.secret_seen = asyncio.Condition()
        self.users: dict[str, dict[str, Any]] = {}
        self.queued: set[str] = set()
        self.queue: asyncio.Queue[str] = asyncio.Queue()

    async def on_secret(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self.secrets.pop(name, None)
            return
        self.secrets[name] = obj
        async with self.secret_seen:
            self.secret_seen.notify_all()

    def on_user(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self.users.pop(name, None)
            return
        self.users[name] = obj
        if name not in self.queued and not is_ready(obj):
            self.queued.add(name)
            self.queue.put_nowait(name)

    async def password(self, name: str, key: str) -> str:
        async with self.secret_seen:
            await self.secret_seen.wait_for(lambda: name in self.secrets)
        return base64.b64decode(self.secrets[name]["data"][key]).decode()

    async def work(self) -> None:
        while True:
            name = await self.queue.get()
            try:
                await self.handle(self.users[name])
            except Exception as error:  # no retry policy: report and go on
                print(f"floor: {name}: {error!r}", flush=True)

    async def handle(self, obj: dict[str, Any]) -> None:
        metadata, spec = obj["metadata"], obj["spec"]
        name = metadata["name"]
        obj = await self.add_finalizer(obj)
        password = await self.password(spec["password"]["name"], spec["password"]["key"])
        user, host = spec.get("user") or name, spec.get("host") or "%"
        pool = self.pools[(spec.get("serverRef") or {}).get("name", "")]
        async with pool.acquire() as connection, connection.cursor() as cursor:
            await cursor.execute("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", (user, host, password))
            await cursor.execute(f"GRANT SELECT ON `{BENCH_DATABASE}`.* TO %s@%s", (user, host))
        status = ready_status(obj["metadata"].get("generation"), f"account '{user}'@'{host}' is ready")
        obj = await self.write_status(name, status)
        if self.events:
            event = created_event(obj, f"created account '{user}'@'{host}'")
            posting = asyncio.create_task(self.kube.create(EVENTS, event, self.namespace))
            self.posting.add(posting)
            posting.add_done_callback(self._posted)

    async def add_finalizer(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The floor's finalizer on ``obj`` (one JSON Patch), unless there."""
        if FINALIZER in (obj["metadata"].get("finalizers") or []):
            return obj
        return await self.kube.patch(
            self.resource,
            obj["metadata"]["name"],
            [{"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]}],
            PatchType.JSON,
            namespace=self.namespace,
        )

    async def write_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        """The status (one merge patch of the status subresource)."""
        return await self.kube.patch(
            self.resource,
            name,
            {"status": status},
            PatchType.MERGE,
            namespace=self.namespace,
            subresource="status",
        )

    def _posted(self, posting: asyncio.Task[Any]) -> None:
        self.posting.discard(posting)
        if not posting.cancelled() and posting.exception() is not None:
            print(f"floor: event not posted: {posting.exception()!r}", flush=True)

    async def run(self) -> None:
        synced = asyncio.Event()
        tasks = [
            asyncio.create_task(
                list_and_watch(self.kube, SECRETS, self.namespace, self.on_secret, synced=synced)
            ),
            asyncio.create_task(
                list_and_watch(
                    self.kube,
                    self.resource,
                    self.namespace,
                    self.on_user,
                    label_selector=f"{TARGET_LABEL}={TARGET}",
                )
            ),
            *(asyncio.create_task(self.work()) for _ in range(self.concurrency)),
        ]
        await synced.wait()
        print("floor: running", flush=True)
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in [*tasks, *self.posting]:
                task.cancel()


class DatabaseFloor(Floor):
    """The floor of the Database kind: finalizer, ``CREATE DATABASE IF NOT EXISTS``, Ready."""

    resource = DATABASES

    async def handle(self, obj: dict[str, Any]) -> None:
        obj = await self.add_finalizer(obj)
        name = obj["spec"].get("name") or obj["metadata"]["name"]
        pool = self.pools[(obj["spec"].get("serverRef") or {}).get("name", "")]
        async with pool.acquire() as connection, connection.cursor() as cursor:
            await cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{name}`")  # a name the API validated
        status = ready_status(obj["metadata"].get("generation"), f"database {name} is ready", "DatabaseReady")
        await self.write_status(obj["metadata"]["name"], status)


def created_event(obj: dict[str, Any], message: str) -> dict[str, Any]:
    """The ``AccountCreated`` Event the operator posts for a new user, in the shape its recorder writes."""
    metadata = obj["metadata"]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{metadata['name']}.{secrets.token_hex(8)}",
            "namespace": metadata["namespace"],
        },
        "involvedObject": {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "uid": metadata["uid"],
            "resourceVersion": metadata["resourceVersion"],
        },
        "type": "Normal",
        "reason": "AccountCreated",
        "message": message,
        "source": {"component": "bench-floor"},
        "reportingComponent": "bench-floor",
        "reportingInstance": "",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


async def amain(arguments: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    servers = [
        MySQLAddress(
            arguments.mysql_host,
            arguments.mysql_port,
            arguments.mysql_user,
            os.environ.get(ADMIN_PASSWORD_ENV, ""),
        )
    ]
    if os.environ.get(FLEET_ENV):
        servers = fleet_from_env(os.environ[FLEET_ENV])
    pools: dict[str, aiomysql.Pool] = {}
    negotiate_tls_like_mysql_clients()  # PREFERRED: plain text when the server offers no TLS
    try:
        for server in servers:
            pools[server.name] = await aiomysql.create_pool(
                host=server.host,
                port=server.port,
                user=server.user,
                password=server.password,
                minsize=arguments.concurrency,
                maxsize=arguments.concurrency,
                autocommit=True,
                ssl=TLSOptions(SSLMode(arguments.mysql_tls)).client_context(),
            )
        async with await api_client(arguments.kubeconfig) as api:
            kind = DatabaseFloor if arguments.kind == DATABASES.kind else Floor
            floor = kind(
                KubeClient(api), pools, arguments.namespace, arguments.concurrency, events=arguments.events
            )
            running = asyncio.create_task(floor.run())
            await stop.wait()
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
    finally:
        for pool in pools.values():
            pool.close()
            await pool.wait_closed()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--mysql-host", default="127.0.0.1")
    parser.add_argument("--mysql-port", type=int, default=3306)
    parser.add_argument("--mysql-user", default="root")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--mysql-tls",
        choices=[SSLMode.PREFERRED.value, SSLMode.DISABLED.value],
        default=SSLMode.PREFERRED.value,
        help="TLS towards MySQL, as the operator's --mysql-ssl-mode (default: the operator's default)",
    )
    parser.add_argument("--kind", choices=[DATABASE_USERS.kind, DATABASES.kind], default=DATABASE_USERS.kind)
    parser.add_argument(
        "--events",
        action="store_true",
        help="post one AccountCreated Event per new user, as the operator does",
    )
    asyncio.run(amain(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
