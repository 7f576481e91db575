"""What the harness, the floor and the peer share: objects, a list+watch loop, MySQL and process readings."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomysql
from kubernetes_asyncio import client, config
from pydantic import SecretStr

from dbuser_operator.controllers.kit.resources import DATABASE_USERS, DATABASES
from dbuser_operator.envtest import LocalMySQLServer
from dbuser_operator.mysql import ConnectionSettings
from dbuser_operator.runtime import client as runtime_client
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import SECRETS, Resource

TARGET_LABEL = "dbuser-operator.dev/target"
TARGET = "bench"
BENCH_DATABASE = "bench"
OWNERSHIP_SCHEMA = "bench_dbuser_operator"
PASSWORD_KEY = "password"  # noqa: S105 - the key's name in the Secret
ADMIN_PASSWORD_ENV = "DBUSER_OPERATOR_MYSQL_PASSWORD"  # noqa: S105 - the variable's name

# Account-changing statements, and what else a pass may run, as the server counts them (SHOW GLOBAL STATUS).
SQL_WRITE_COUNTERS = (
    "Com_create_user",
    "Com_alter_user",
    "Com_drop_user",
    "Com_grant",
    "Com_revoke",
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_delete",
    "Com_replace",
    "Com_create_db",
    "Com_alter_db",
    "Com_drop_db",
)
# Connections: new sessions (a pool that churns pays a TLS handshake and an authentication for each).
SQL_COUNTERS = (*SQL_WRITE_COUNTERS, "Com_select", "Questions", "Connections")
API_WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
API_READ_VERBS = ("GET", "LIST", "WATCH")
WATCH_SILENCE = 120.0  # seconds without a line after which a watch is taken for dead


def database_user(name: str, user: str, secret: str, server: str = "") -> dict[str, Any]:
    """A DatabaseUser for the benchmark target: the password from ``secret``, SELECT on the bench database;
    with ``server``, on that MySQLServer (``spec.serverRef``)."""
    obj: dict[str, Any] = {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {TARGET_LABEL: TARGET}},
        "spec": {
            "user": user,
            "password": {"name": secret, "key": PASSWORD_KEY},
            "privileges": [{"privileges": ["SELECT"], "database": BENCH_DATABASE}],
        },
    }
    if server:
        obj["spec"]["serverRef"] = {"kind": "MySQLServer", "name": server}
    return obj


def database(name: str, database_name: str) -> dict[str, Any]:
    """A Database for the benchmark target, of MySQL name ``database_name`` (on the default server)."""
    return {
        "apiVersion": DATABASES.api_version,
        "kind": "Database",
        "metadata": {"name": name, "labels": {TARGET_LABEL: TARGET}},
        "spec": {"name": database_name},
    }


def secret(name: str, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "stringData": {"password": password},
    }


def ready_condition(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition)
    return None


def is_ready(obj: Mapping[str, Any]) -> bool:
    return (ready_condition(obj) or {}).get("status") == "True"


def ready_status(generation: int | None, message: str, reason: str = "AccountReady") -> dict[str, Any]:
    """The status the floor and the peer write: Ready=True, the shape the operator writes."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "observedGeneration": generation,
    }
    return {"conditions": [condition], "observedGeneration": generation}


async def api_client(kubeconfig: Path) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = 64
    return runtime_client.api_client(configuration)


WatchHandler = Callable[[str, dict[str, Any]], Awaitable[None] | None]


async def list_and_watch(
    kube: KubeClient,
    resource: Resource,
    namespace: str | None,
    handler: WatchHandler,
    *,
    label_selector: str | None = None,
    synced: asyncio.Event | None = None,
) -> None:
    """LIST, then WATCH from the list's resourceVersion, forever; every object goes to ``handler``.

    A benchmark-sized loop: it re-watches from the last version when the server ends the watch, and
    starts over with a LIST after an error (no 410 subtleties: a run lasts minutes). The LIST goes page
    by page, each handled before the next is read: 100 000 objects in one answer would take longer than a
    request may, and all of them parsed at once would take gigabytes.
    """
    while True:
        try:
            version = await _list_pages(kube, resource, namespace, handler, label_selector)
            if synced is not None:
                synced.set()
            while True:
                with contextlib.suppress(TimeoutError):  # silent too long: watch again from there
                    async for kind, obj in _watch(kube, resource, namespace, version, label_selector):
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        if kind != "BOOKMARK":
                            await _call(handler, kind, obj)
        except asyncio.CancelledError:
            raise
        except Exception:  # a benchmark loop: start over
            await asyncio.sleep(0.5)


async def _list_pages(
    kube: KubeClient, resource: Resource, namespace: str | None, handler: WatchHandler, selector: str | None
) -> str:
    """Every object, page by page, to ``handler`` as ADDED; the list's resourceVersion."""
    token: str | None = None
    while True:
        page = await kube.list(resource, namespace, label_selector=selector, limit=500, continue_token=token)
        for item in page.get("items") or []:
            await _call(handler, "ADDED", item)
        token = page["metadata"].get("continue") or None
        if not token:
            return str(page["metadata"]["resourceVersion"])


async def _line(response: Any) -> bytes:
    """The watch's next line; TimeoutError after 2 minutes without one (the server sends a bookmark about
    once a minute: the connection is dead)."""
    async with asyncio.timeout(WATCH_SILENCE):
        line: bytes = await response.content.readline()
        return line


async def _call(handler: WatchHandler, kind: str, obj: dict[str, Any]) -> None:
    result = handler(kind, obj)
    if result is not None:
        await result


async def _watch(
    kube: KubeClient, resource: Resource, namespace: str | None, version: str, label_selector: str | None
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    response = await kube.watch(
        resource, namespace, resource_version=version, timeout_seconds=600, label_selector=label_selector
    )
    async with response:
        while line := await _line(response):
            event = json.loads(line)
            if event["type"] == "ERROR":
                raise RuntimeError(f"watch error: {event['object']}")
            yield event["type"], event["object"]


# --- MySQL ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MySQLAddress:
    host: str
    port: int
    user: str
    password: str
    name: str = ""  # with many servers: its MySQLServer resource's name (and the floor's pool's)
    flavour: str = ""  # with many servers: its flavour (mysql-9.7, ...)


async def sql_counters_of(servers: Sequence[MySQLAddress]) -> dict[str, int]:
    """The statement counters of every server, summed."""
    total = dict.fromkeys(SQL_COUNTERS, 0)
    for counters in await asyncio.gather(*(sql_counters(server) for server in servers)):
        for name, value in counters.items():
            total[name] += value
    return total


async def sql_counters(server: MySQLAddress) -> dict[str, int]:
    """The server's statement counters (``SHOW GLOBAL STATUS``), read over a fresh connection."""
    connection = await aiomysql.connect(
        host=server.host, port=server.port, user=server.user, password=server.password, autocommit=True
    )
    try:
        async with connection.cursor() as cursor:
            placeholders = ", ".join(["%s"] * len(SQL_COUNTERS))
            await cursor.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({placeholders})", SQL_COUNTERS)
            rows = await cursor.fetchall()
    finally:
        connection.close()
    values = {name: int(value) for name, value in rows}
    return {name: values.get(name, 0) for name in SQL_COUNTERS}


def counter_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {name: after.get(name, 0) - before.get(name, 0) for name in after}


def changed_counters(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """:func:`counter_delta` without the counters that did not move."""
    return {name: delta for name, delta in counter_delta(before, after).items() if delta}


async def admin_sql(server: MySQLAddress, *statements: str | tuple[str, tuple[Any, ...]]) -> list[Any]:
    """Run statements as the admin; the rows of the last one."""
    connection = await aiomysql.connect(
        host=server.host, port=server.port, user=server.user, password=server.password, autocommit=True
    )
    rows: list[Any] = []
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                query, args = (statement, None) if isinstance(statement, str) else statement
                await cursor.execute(query, args)
                rows = list(await cursor.fetchall())
    finally:
        connection.close()
    return rows


async def can_log_in(server: MySQLAddress, user: str, password: str) -> bool:
    """Whether a real client login as ``user`` with ``password`` succeeds (1045: it does not)."""
    try:
        connection = await aiomysql.connect(
            host=server.host, port=server.port, user=user, password=password, connect_timeout=5
        )
    except Exception as error:
        if getattr(error, "args", (None,))[0] == 1045:
            return False
        raise
    connection.close()
    return True


async def rotate_password(
    kube: KubeClient,
    namespace: str,
    secret_name: str,
    server: MySQLAddress,
    user: str,
    *,
    limit: float = 30.0,
) -> tuple[float | None, int, str]:
    """Give ``secret_name`` a new password (a merge patch), then try it every 2 ms until ``user`` logs in with
    it: (the seconds from the patch to the first login or None after ``limit``, the logins tried, the
    password)."""
    password = secrets.token_urlsafe(16)
    started = time.monotonic()
    patch = {"stringData": {PASSWORD_KEY: password}}
    await kube.patch(SECRETS, secret_name, patch, runtime_client.PatchType.MERGE, namespace=namespace)
    tries = 0
    while True:
        tries += 1
        if await can_log_in(server, user, password):
            return time.monotonic() - started, tries, password
        if time.monotonic() - started > limit:
            return None, tries, password
        await asyncio.sleep(0.002)


# --- processes --------------------------------------------------------------------------------------------

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcessSample:
    """CPU seconds (user + system) and memory of a process, from /proc."""

    at: float
    cpu_seconds: float
    rss_mib: float
    hwm_mib: float


def sample_process(pid: int) -> ProcessSample:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime (fields 14, 15 of stat)
    memory = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in {"VmRSS", "VmHWM"}:
            memory[key] = int(value.split()[0]) / 1024
    return ProcessSample(time.monotonic(), cpu, memory.get("VmRSS", 0.0), memory.get("VmHWM", 0.0))


def server_pids(workdir: Path) -> dict[str, int]:
    """The servers started under ``workdir`` (kube-apiserver, etcd, mysqld), found by their command lines."""
    found: dict[str, int] = {}
    marker = str(workdir).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and any(marker in arg for arg in argv[1:]):
            name = Path(argv[0].decode(errors="replace")).name
            if name in {"kube-apiserver", "etcd", "mariadbd", "mysqld"}:
                found["mysqld" if name == "mariadbd" else name] = int(entry.name)
    return found


def cpu_seconds(pids: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) each process has used so far."""
    result = {}
    for name, pid in pids.items():
        try:
            result[name] = sample_process(pid).cpu_seconds
        except OSError:
            continue
    return result


_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str, names: set[str]) -> list[tuple[str, dict[str, str], float]]:
    """Samples of the named metrics from a Prometheus text exposition (a fast line filter)."""
    samples = []
    for line in text.splitlines():
        if not line or line[0] == "#" or line.split("{", 1)[0].split(" ", 1)[0] not in names:
            continue
        match = _SAMPLE.match(line)
        if match:
            labels = dict(_LABEL.findall(match["labels"] or ""))
            samples.append((match["name"], labels, float(match["value"])))
    return samples


async def apiserver_writes(api: client.ApiClient) -> dict[str, float]:
    """Write requests the API server has served, by resource (Leases excluded: its own heartbeats)."""
    return await apiserver_requests(api, {*API_WRITE_METHODS, "APPLY"})


async def apiserver_reads(api: client.ApiClient) -> dict[str, float]:
    """Read requests (GET, LIST, WATCH) the API server has served, by resource (Leases excluded)."""
    return await apiserver_requests(api, set(API_READ_VERBS))


async def apiserver_requests(api: client.ApiClient, verbs: set[str]) -> dict[str, float]:
    """Requests of ``verbs`` the API server has served, by resource (Leases excluded)."""
    text = await apiserver_metrics(api)
    counts: dict[str, float] = {}
    for _, labels, value in parse_metrics(text, {"apiserver_request_total"}):
        if labels.get("verb") in verbs and labels.get("resource") != "leases":
            resource = labels.get("resource", "") + (
                f"/{labels['subresource']}" if labels.get("subresource") else ""
            )
            counts[resource] = counts.get(resource, 0) + value
    return counts


async def etcd_requests(api: client.ApiClient) -> dict[str, float]:
    """Requests the API server has sent etcd, by ``resource operation`` (``etcd_requests_total``): the same
    writes take more of them when updates conflict and are retried."""
    text = await apiserver_metrics(api)
    return {
        f"{labels.get('resource', '')} {labels.get('operation', '')}": value
        for _, labels, value in parse_metrics(text, {"etcd_requests_total"})
    }


async def apiserver_metrics(api: client.ApiClient) -> str:
    """The API server's ``/metrics``, as text."""
    response = await api.call_api(
        "/metrics",
        "GET",
        header_params={"Accept": "text/plain"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=60,
    )
    async with response:
        return str((await response.read()).decode())


async def settle_writes(api: client.ApiClient, *, interval: float = 1.0, limit: float = 120.0) -> float:
    """Wait until the API server serves no more writes (Events written in the background included): two
    equal readings of its write counters ``interval`` seconds apart, or ``limit`` seconds; the time taken."""
    started = time.monotonic()
    previous = sum((await apiserver_writes(api)).values())
    while time.monotonic() - started < limit:
        await asyncio.sleep(interval)
        current = sum((await apiserver_writes(api)).values())
        if current == previous:
            break
        previous = current
    return time.monotonic() - started


def admin_settings(server: LocalMySQLServer) -> ConnectionSettings:
    """Connection settings of a local server's admin; a statement timeout no large benchmark hits."""
    admin = server.admin
    return ConnectionSettings(
        host=admin.host,
        port=admin.port,
        user=admin.user,
        password=SecretStr(admin.password),
        ca_file=server.ca_file,
        statement_timeout=3600,
    )


def make_owned_accounts(
    cursor: Any, *, schema: str, database: str, prefix: str, first: int, last: int
) -> None:
    """Accounts ``<prefix><first>`` … ``<prefix><last - 1>``, each with SELECT on ``database`` and a row in
    ``schema``'s bookkeeping table (namespace ``bench``), as the operator would have made them; through a
    pymysql ``cursor`` of the admin, committed by the caller."""
    escaped = database.replace("_", "\\_")  # `_` is a wildcard in a GRANT's database name
    grant = f"GRANT SELECT ON `{escaped}`.* TO %s@'%%'"
    record = (
        f"INSERT INTO `{schema}`.`accounts` (user, host, owner_uid, namespace, name)"  # noqa: S608 - bench constants
        " VALUES (%s, '%%', %s, 'bench', %s)"
    )
    for index in range(first, last):
        user = f"{prefix}{index}"
        cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, f"pw-{user}-secret"))
        cursor.execute(grant, (user,))
        cursor.execute(record, (user, f"uid-{index}", user))
