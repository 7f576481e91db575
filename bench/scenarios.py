"""The scenarios: convergence (operator, floor, kopf peer), rotation, idle cost, cold start.

Every measurement comes from a real server or a real process: readiness from a client-side watch of the
DatabaseUsers (a timestamp per object), API writes from the operator's ``rest_client_requests_total`` and
from the API server's ``apiserver_request_total`` (for the floor and the peer), SQL statements from the
MySQL server's status counters, CPU and memory from ``/proc``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from bench import apiserver_profile, floor, processes
from bench.canary import Canary
from bench.common import (
    API_WRITE_METHODS,
    BENCH_DATABASE,
    OWNERSHIP_SCHEMA,
    SQL_WRITE_COUNTERS,
    TARGET,
    TARGET_LABEL,
    MySQLAddress,
    admin_sql,
    apiserver_reads,
    apiserver_writes,
    can_log_in,
    changed_counters,
    counter_delta,
    cpu_seconds,
    database_user,
    etcd_requests,
    is_ready,
    list_and_watch,
    rotate_password,
    secret,
    server_pids,
    settle_writes,
    sql_counters_of,
)
from bench.servers import FLEET_ENV, admin_secret, fleet_env, mysql_server
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest.admission import install_finalizer_policy, remove_finalizer_policy
from dbuser_operator.runtime.client import REQUESTS, KubeClient, PatchType
from dbuser_operator.runtime.resources import EVENTS, NAMESPACES, SECRETS, Resource

SHORT = {"operator": "op", "floor": "fl", "kopf": "kp"}
WARMUP = "warmup"


@dataclass
class Options:
    """What to run, and how."""

    sizes: list[int]
    scenarios: set[str]
    idle_seconds: float
    peer: bool
    peer_max_n: int
    steady_n: int | None
    coldstart_n: int | None
    rotation_samples: int
    concurrency: int
    create_concurrency: int
    resync_period: float
    leader_elect: bool = False
    finalizer_policy: bool = True  # the operator's runs with the chart's finalizer policy in their namespace
    floor_finalizer_policy: bool = False  # the floor's runs with the same policy, for the floor's finalizer
    time_limit: float = 600.0
    profile_dir: Path | None = None
    login_checks: int = 5
    pairs: int = 1
    floor_events: bool = False  # the floor posts the operator's one Event per new user
    restart_window: float = 10.0  # seconds the restarted operator is watched after its first pass
    restart_general_log: bool = False  # the servers' general logs on while the operator restarts
    settled_after_pass: bool = True  # fleet: settled RSS after a whole drift check (bench.periodic_pass)
    clean_last_fleet: bool = False  # the largest fleet removed too (a shared API server)
    restart_gate: Path | None = None  # the restart waits until this file exists (the fleet kept meanwhile)
    restart_kubeconfig: Path | None = None  # the restarted operator's identity, the one the audit log records
    restart_audit_log: Path | None = None  # the API server's audit log of that identity's requests


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, round(fraction * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


class ReadyWatch:
    """A client-side watch of one namespace's DatabaseUsers: when each was first seen Ready."""

    def __init__(self, kube: KubeClient, namespace: str | None, resource: Resource = DATABASE_USERS) -> None:
        self.kube = kube
        self.namespace = namespace
        self.resource = resource
        self.ready_at: dict[str, float] = {}
        self._waiters: list[tuple[Callable[[], bool], asyncio.Event]] = []
        self._task: asyncio.Task[None] | None = None

    def on_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind != "DELETED" and name not in self.ready_at and is_ready(obj):
            self.ready_at[name] = time.monotonic()
            for predicate, event in self._waiters:
                if predicate():
                    event.set()

    async def start(self) -> None:
        synced = asyncio.Event()
        self._task = asyncio.create_task(
            list_and_watch(self.kube, self.resource, self.namespace, self.on_event, synced=synced)
        )
        await synced.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def wait_for(self, predicate: Callable[[], bool], limit: float) -> bool:
        if predicate():
            return True
        event = asyncio.Event()
        self._waiters.append((predicate, event))
        try:
            async with asyncio.timeout(limit):
                await event.wait()
        except TimeoutError:
            return False
        finally:
            self._waiters.remove((predicate, event))
        return True


@dataclass
class Population:
    """The DatabaseUsers of one run: names, MySQL users, passwords, when each create was sent."""

    namespace: str
    tag: str
    size: int
    servers: list[MySQLAddress]  # user i is on servers[i mod len]
    passwords: dict[str, str] = field(default_factory=dict)  # MySQL user -> password
    created_at: dict[str, float] = field(default_factory=dict)  # object name -> monotonic time

    @staticmethod
    def name(index: int) -> str:
        return f"u{index:05d}"

    def user(self, index: int) -> str:
        return f"{self.tag}_{index:05d}"

    def names(self) -> list[str]:
        return [self.name(i) for i in range(self.size)]

    def server(self, index: int) -> MySQLAddress:
        return self.servers[index % len(self.servers)]


class Bench:
    """The environment (API server, MySQL server) and the scenarios run against it."""

    resource: Resource = DATABASE_USERS  # the kind whose objects are created and timed to Ready

    def __init__(
        self,
        *,
        api: client.ApiClient,
        kubeconfig: Path,
        mysql: MySQLAddress,
        workdir: Path,
        options: Options,
        say: Callable[[str], None],
        fleet: list[MySQLAddress] | None = None,
        mysql_pids: list[int] | None = None,
    ) -> None:
        self.api = api
        self.kube = KubeClient(api, timeout=60)
        self.kubeconfig = kubeconfig
        self.mysql = mysql
        self.workdir = workdir
        self.options = options
        self.say = say
        self.run_id = secrets.token_hex(2)
        self.fleet = fleet or [mysql]  # with many servers (--servers K), each has its MySQLServer resource
        self.servers = server_pids(workdir)  # empty when the servers are not ours (KUBECONFIG, MYSQL_URL)
        if mysql_pids:  # by name: one of them may also be the "mysqld" found above
            self.servers.pop("mysqld", None)
            self.servers.update({f"mysqld-{self.fleet[i].name}": pid for i, pid in enumerate(mysql_pids)})
        self.random = random.Random(20240601)  # noqa: S311 - sampling, not security
        self.canary = Canary(workdir / "canary.txt")  # the machine's own speed, run by run

    # --- environment -------------------------------------------------------------------------------------

    async def prepare(self) -> None:
        for server in self.fleet:
            await admin_sql(server, f"CREATE DATABASE IF NOT EXISTS `{BENCH_DATABASE}`")
        self.canary.start()

    def close(self) -> None:
        self.canary.stop()

    @property
    def many(self) -> bool:
        """Whether the users are spread over several servers (by ``spec.serverRef``)."""
        return len(self.fleet) > 1

    async def create_server_resources(self, namespace: str) -> None:
        """With many servers: a MySQLServer per server in ``namespace`` (and its admin Secret)."""
        if not self.many:
            return
        for server in self.fleet:
            await self.kube.create(SECRETS, admin_secret(server), namespace)
            await self.kube.create(MYSQL_SERVERS, mysql_server(server), namespace)

    async def apiserver_writes(self) -> dict[str, float]:
        """Write requests the API server has served, by resource (Leases excluded)."""
        return await apiserver_writes(self.api)

    @staticmethod
    def harness_writes() -> float:
        """Write requests this process sent (its KubeClient counts them)."""
        total = 0.0
        for metric in REQUESTS.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total") and sample.labels.get("method") in API_WRITE_METHODS:
                    total += sample.value
        return total

    async def new_namespace(self, kind: str, size: int, mode: str = "") -> str:
        name = f"bench-{self.run_id}-{SHORT[kind]}{mode}-{size}"
        await self.kube.create(NAMESPACES, {"metadata": {"name": name}})
        await self.create_server_resources(name)
        policies = {"operator": self.options.finalizer_policy, "floor": self.options.floor_finalizer_policy}
        if policies.get(kind):  # the floor's for its own finalizer
            finalizer = floor.FINALIZER if kind == "floor" else None
            await install_finalizer_policy(
                self.api, name, TARGET_LABEL, TARGET, [name], probe_namespace=name, finalizer=finalizer
            )
        return name

    async def _parallel(self, count: int, work: Callable[[int], Awaitable[None]], width: int) -> None:
        indexes = iter(range(count))

        async def worker() -> None:
            for index in indexes:
                await work(index)

        await asyncio.gather(*(worker() for _ in range(min(width, count) or 1)))

    async def create_population(self, population: Population) -> None:
        async def create(index: int) -> None:
            name, user = population.name(index), population.user(index)
            password = secrets.token_urlsafe(16)
            population.passwords[user] = password
            await self.kube.create(SECRETS, secret(f"pw-{name}", password), population.namespace)
            population.created_at[name] = time.monotonic()
            server = population.server(index).name if self.many else ""
            await self.kube.create(
                DATABASE_USERS, database_user(name, user, f"pw-{name}", server), population.namespace
            )

        await self._parallel(population.size, create, self.options.create_concurrency)

    def warm_up_names(self) -> list[str]:
        """The warm-up objects: one per server (``warmup`` alone with one server)."""
        return [WARMUP + (str(index) if index else "") for index in range(len(self.fleet))]

    async def warm_up(self, namespace: str, tag: str, watch: ReadyWatch, implementation: str) -> None:
        """One object per server through the whole path first: connections, caches and schemas are warm."""
        names = self.warm_up_names()
        for index, name in enumerate(names):
            await self.kube.create(SECRETS, secret(f"pw-{name}", secrets.token_urlsafe(16)), namespace)
            server = self.fleet[index].name if self.many else ""
            user = database_user(name, f"{tag}_warm{index or ''}", f"pw-{name}", server)
            await self.kube.create(DATABASE_USERS, user, namespace)
        if not await watch.wait_for(lambda: set(names) <= watch.ready_at.keys(), 120):
            raise TimeoutError(f"{implementation}: the warm-up DatabaseUsers were not Ready within 120 s")
        await self.settle_writes()

    async def wait_all_ready(
        self, watch: ReadyWatch, names: set[str], implementation: processes.Implementation
    ) -> bool:
        """Whether every object was seen Ready within the time limit, while the implementation ran."""
        waiting = asyncio.create_task(
            watch.wait_for(lambda: names <= watch.ready_at.keys(), self.options.time_limit)
        )
        while not waiting.done():
            await asyncio.wait([waiting], timeout=1.0)
            if not implementation.running() and not waiting.done():
                waiting.cancel()
                await asyncio.gather(waiting, return_exceptions=True)
                self.say(f"  {implementation.kind} exited: log {implementation.log_path}")
                return False
        if not waiting.result():
            self.say(f"  {implementation.kind}: not all Ready after {self.options.time_limit:g} s; giving up")
        return waiting.result()

    async def settle_writes(self, limit: float = 120.0) -> float:
        """Wait until the API server serves no more writes; the time taken (:func:`common.settle_writes`)."""
        return await settle_writes(self.api, limit=limit)

    async def cleanup(self, namespace: str, tag: str) -> None:
        """Drop the run's accounts and ownership rows; remove its objects (finalizers first), its Events and
        its namespace, so that the next run meets the API server as this one did (Events live an hour, and
        the API server holds them meanwhile)."""
        await remove_finalizer_policy(self.api, namespace)  # the operator's runs have one (new_namespace)
        for server in self.fleet:
            await self.drop_made(server, tag)
        listed = await self.kube.list(self.resource, namespace)
        items = [item for item in listed.get("items") or [] if item["metadata"].get("finalizers")]

        async def release(index: int) -> None:
            with contextlib.suppress(client.ApiException):
                await self.kube.patch(
                    self.resource,
                    items[index]["metadata"]["name"],
                    {"metadata": {"finalizers": None}},
                    PatchType.MERGE,
                    namespace=namespace,
                )

        await self._parallel(len(items), release, 16)
        for server in self.fleet if self.many else []:  # the operator is gone: nobody would remove it
            with contextlib.suppress(client.ApiException):
                await self.kube.patch(
                    MYSQL_SERVERS,
                    server.name,
                    {"metadata": {"finalizers": None}},
                    PatchType.MERGE,
                    namespace=namespace,
                )
        for resource in (self.resource, *([MYSQL_SERVERS] if self.many else []), SECRETS, EVENTS):
            await self.kube.request("DELETE", resource.path(namespace))
        with contextlib.suppress(client.ApiException):
            await self.kube.delete(NAMESPACES, namespace)

    async def drop_made(self, server: MySQLAddress, tag: str) -> None:
        """Drop what a run made on ``server`` (its accounts) and forget it in the bookkeeping."""
        await self.drop_accounts(server, tag)

    @staticmethod
    async def drop_accounts(server: MySQLAddress, tag: str) -> None:
        """Drop the run's accounts on ``server`` and forget them in its ownership table."""
        rows = await admin_sql(
            server, ("SELECT User, Host FROM mysql.user WHERE User LIKE %s", (f"{tag}\\_%",))
        )
        for start in range(0, len(rows), 200):
            accounts = ", ".join(f"'{user}'@'{host}'" for user, host in rows[start : start + 200])
            await admin_sql(server, f"DROP USER IF EXISTS {accounts}")
        with contextlib.suppress(Exception):
            forget = f"DELETE FROM `{OWNERSHIP_SCHEMA}`.accounts WHERE user LIKE %s"  # noqa: S608 - a constant
            await admin_sql(server, (forget, (f"{tag}\\_%",)))

    def implementation(self, kind: str, namespace: str, log_name: str) -> processes.Implementation:
        where = (self.workdir, self.kubeconfig, self.mysql, namespace)
        concurrency = self.options.concurrency
        implementation: processes.Implementation
        if kind == "operator":
            implementation = processes.operator(
                *where,
                concurrency=concurrency,
                log_name=log_name,
                resync_period=self.options.resync_period,
                leader_elect=self.options.leader_elect,
            )
        elif kind == "floor":
            implementation = processes.floor(
                *where,
                concurrency=concurrency,
                log_name=log_name,
                events=self.options.floor_events,
                kind=self.resource.kind,
            )
            if self.many:
                implementation.env[FLEET_ENV] = fleet_env(self.fleet)
        else:
            implementation = processes.kopf_peer(*where, concurrency=concurrency, log_name=log_name)
        if self.options.profile_dir is not None:
            self.options.profile_dir.mkdir(parents=True, exist_ok=True)
            implementation.profile_path = self.options.profile_dir / f"{log_name}.txt"
        return implementation

    # --- convergence -------------------------------------------------------------------------------------

    async def convergence(self, kind: str, size: int, pair: int = 0) -> tuple[dict[str, Any], Run]:
        """Create ``size`` DatabaseUsers (and Secrets) and time them to Ready under one implementation
        (``pair``: the how-manieth live run of this kind and size, each in a namespace of its own)."""
        again = f"p{pair + 1}" if pair else ""
        namespace = await self.new_namespace(kind, size, again)
        tag = f"{SHORT[kind]}{again}{size}{self.run_id}"
        population = Population(namespace, tag, size, self.fleet)
        watch = ReadyWatch(self.kube, namespace, self.resource)
        await watch.start()
        implementation = self.implementation(kind, namespace, f"{SHORT[kind]}{again}-{size}")
        await implementation.start()
        run = Run(implementation, watch, population)
        try:
            await implementation.wait_ready()
            await self.warm_up(namespace, tag, watch, kind)
            result = await self._converge(run)
        except BaseException:
            await run.close(self)
            raise
        return result, run

    async def backlog(self, kind: str, size: int) -> dict[str, Any]:
        """Processing alone: ``size`` DatabaseUsers created first, then the implementation started."""
        namespace = await self.new_namespace(kind, size, "b")
        population = Population(namespace, f"{SHORT[kind]}b{size}{self.run_id}", size, self.fleet)
        watch = ReadyWatch(self.kube, namespace, self.resource)
        await watch.start()
        implementation = self.implementation(kind, namespace, f"{SHORT[kind]}-backlog-{size}")
        run = Run(implementation, watch, population)
        try:
            self.say(f"  {kind}: backlog of {size} {self.resource.kind}s in {namespace}, then start")
            await self.create_population(population)
            await asyncio.sleep(1.0)
            load_before = os.getloadavg()[0]
            sql_before = await sql_counters_of(self.fleet)
            api_before, harness_before = await self.apiserver_writes(), self.harness_writes()
            reads_before = await apiserver_reads(self.api)
            servers_before = cpu_seconds(self.servers)
            await implementation.start()
            names = set(population.names())
            converged = await self.wait_all_ready(watch, names, implementation)
            finished = time.monotonic() if converged else float("nan")
            process = implementation.sample()
            servers = counter_delta(servers_before, cpu_seconds(self.servers))
            settle = await self.settle_writes()  # trailing (background) Events are part of the work
            sql = counter_delta(sql_before, await sql_counters_of(self.fleet))
            sql["Questions"] -= len(self.fleet)
            api_by_resource = changed_counters(api_before, await self.apiserver_writes())
            api_writes = sum(api_by_resource.values()) - (self.harness_writes() - harness_before)
            reads = changed_counters(reads_before, await apiserver_reads(self.api))
            metrics = await implementation.metrics() if implementation.metrics_port else None
            implementation.check_running()
            logins = await self._check_logins(population)
            seconds = finished - implementation.started_at
            waited = time.monotonic() - implementation.started_at
            result: dict[str, Any] = {
                "implementation": kind,
                "n": size,
                "loadavg_1m_before": load_before,
                "writes_settled_after_seconds": settle,
                "converged": converged,
                "ready": len(names & watch.ready_at.keys()),
                "seconds": seconds,
                "gave_up_after_seconds": None if converged else waited,
                "objects_per_second": size / seconds if converged else float("nan"),
                "api_writes": api_writes,
                "api_writes_per_user": api_writes / size,
                "apiserver_writes_by_resource": api_by_resource,
                "apiserver_reads_by_resource": reads,
                "sql": sql,
                "sql_statements_per_user": sql["Questions"] / size,
                "cpu_seconds": process.cpu_seconds,
                "cpu_ms_per_user": 1000 * process.cpu_seconds / size,
                "server_cpu_seconds": servers,
                "peak_rss_mib": process.hwm_mib,
                "logins_checked": logins[0],
                "logins_ok": logins[1],
            }
            if metrics is not None:
                result["operator_api_writes_per_user"] = metrics.writes / size
                result["reconciles"] = metrics.reconcile_total
                result["events_dropped"] = implementation.events_dropped()
            self.say(
                f"  {kind} backlog N={size}: {result['ready']}/{size} Ready {seconds:.2f} s after the start "
                f"({result['objects_per_second']:.0f}/s), {process.cpu_seconds:.1f} CPU s; "
                f"logins {logins[1]}/{logins[0]}"
            )
            return result
        finally:
            await run.close(self)

    async def _converge(self, run: Run) -> dict[str, Any]:
        implementation, watch, population = run.implementation, run.watch, run.population
        size = population.size
        self.say(f"  {implementation.kind}: creating {size} {self.resource.kind}s in {population.namespace}")
        sql_before = await sql_counters_of(self.fleet)
        api_before, harness_before = await self.apiserver_writes(), self.harness_writes()
        reads_before = await apiserver_reads(self.api)
        etcd_before = await etcd_requests(self.api)
        metrics_before = await implementation.metrics() if implementation.metrics_port else None
        process_before = implementation.sample()
        servers_before = cpu_seconds(self.servers)
        names = set(population.names())
        load_before = os.getloadavg()[0]
        profile = implementation.profile_path
        async with apiserver_profile.recording(
            self.api, profile and profile.parent, f"apiserver-{profile.stem}" if profile else ""
        ):
            started = time.monotonic()
            creating = asyncio.create_task(self.create_population(population))
            all_ready = asyncio.create_task(self.wait_all_ready(watch, names, implementation))
            await creating
            created = time.monotonic()
            converged = await all_ready
            finished = time.monotonic() if converged else float("nan")
        process_after = implementation.sample()
        servers = counter_delta(servers_before, cpu_seconds(self.servers))
        settle = await self.settle_writes()  # trailing (background) Events are part of the work
        process_settled = implementation.sample()
        sql_after = await sql_counters_of(self.fleet)
        api_after, harness_after = await self.apiserver_writes(), self.harness_writes()
        reads = changed_counters(reads_before, await apiserver_reads(self.api))
        etcd = changed_counters(etcd_before, await etcd_requests(self.api))
        metrics_after = await implementation.metrics() if implementation.metrics_port else None
        implementation.check_running()

        ready_names = names & watch.ready_at.keys()
        latencies = [watch.ready_at[name] - population.created_at[name] for name in ready_names]
        sql = counter_delta(sql_before, sql_after)
        sql["Questions"] -= len(self.fleet)  # the second SHOW GLOBAL STATUS itself
        api_by_resource = changed_counters(api_before, api_after)
        harness = harness_after - harness_before
        api_writes = sum(api_by_resource.values()) - harness
        logins = await self._check_logins(population)
        result: dict[str, Any] = {
            "implementation": implementation.kind,
            "n": size,
            "loadavg_1m_before": load_before,
            "writes_settled_after_seconds": settle,
            "converged": converged,
            "ready": len(ready_names),
            "seconds": finished - started,
            "gave_up_after_seconds": None if converged else time.monotonic() - started,
            "create_seconds": created - started,
            "after_last_create_seconds": finished - created,
            "objects_per_second": size / (finished - started) if converged else float("nan"),
            "latency_p50_ms": 1000 * percentile(latencies, 0.50),
            "latency_p99_ms": 1000 * percentile(latencies, 0.99),
            "latency_max_ms": 1000 * max(latencies, default=float("nan")),
            "latency_mean_ms": 1000 * statistics.fmean(latencies) if latencies else float("nan"),
            "api_writes": api_writes,
            "api_writes_per_user": api_writes / size,
            "apiserver_writes_by_resource": api_by_resource,
            "apiserver_reads_by_resource": reads,
            "server_resource_writes": sum(
                v for k, v in api_by_resource.items() if k.startswith("mysqlservers")
            ),
            "harness_writes": harness,
            "sql": sql,
            "sql_statements_per_user": sql["Questions"] / size,
            "sql_writes_per_user": sum(sql[name] for name in SQL_WRITE_COUNTERS) / size,
            "cpu_seconds": process_after.cpu_seconds - process_before.cpu_seconds,
            "cpu_seconds_settled": process_settled.cpu_seconds - process_before.cpu_seconds,
            "server_cpu_seconds": servers,
            "peak_rss_mib": process_after.hwm_mib,
            "etcd_requests": etcd,
            "canary": self.canary.window(started, finished if converged else time.monotonic()),
            "logins_checked": logins[0],
            "logins_ok": logins[1],
        }
        if metrics_before is not None and metrics_after is not None:
            result["operator_api_writes"] = metrics_after.writes - metrics_before.writes
            result["operator_api_writes_per_user"] = result["operator_api_writes"] / size
            result["operator_api_requests_by_method"] = counter_delta(
                metrics_before.requests, metrics_after.requests
            )
            result["reconciles"] = metrics_after.reconcile_total - metrics_before.reconcile_total
            by_result = counter_delta(metrics_before.reconciles, metrics_after.reconciles)
            result["reconciles_by_result"] = by_result
            result["events_dropped"] = implementation.events_dropped()
        self.say(
            f"  {implementation.kind} N={size}: {result['ready']}/{size} Ready in {result['seconds']:.2f} s "
            f"(p50 {result['latency_p50_ms']:.0f} ms, p99 {result['latency_p99_ms']:.0f} ms), "
            f"{result['api_writes_per_user']:.2f} API writes and {result['sql_statements_per_user']:.1f} SQL "
            f"statements per user, {result['cpu_seconds']:.1f} CPU s; logins {logins[1]}/{logins[0]}"
        )
        return result

    async def _check_logins(self, population: Population) -> tuple[int, int]:
        """Log in as a few of the created accounts with their passwords (real client logins)."""
        indexes = self.random.sample(range(population.size), min(self.options.login_checks, population.size))
        ok = 0
        for index in indexes:
            user = population.user(index)
            ok += await can_log_in(population.server(index), user, population.passwords[user])
        return len(indexes), ok

    # --- rotation ----------------------------------------------------------------------------------------

    async def rotation(self, run: Run) -> dict[str, Any]:
        """Change one Secret at a time; time from the Secret's patch until the new password logs in."""
        population = run.population
        samples = min(self.options.rotation_samples, population.size)
        self.say(f"  rotation: {samples} Secrets, one at a time (N={population.size} Ready)")
        sql_before = await sql_counters_of(self.fleet)
        metrics_before = await run.implementation.metrics()
        latencies: list[float] = []
        attempts = 0
        timeouts = 0
        for index in self.random.sample(range(population.size), samples):
            name, user = population.name(index), population.user(index)
            seconds, tries, password = await rotate_password(
                self.kube, population.namespace, f"pw-{name}", population.server(index), user
            )
            attempts += tries
            if seconds is None:
                timeouts += 1
            else:
                latencies.append(seconds)
                population.passwords[user] = password
        await self.settle_writes()
        sql = counter_delta(sql_before, await sql_counters_of(self.fleet))
        # Not the operator's: the second SHOW GLOBAL STATUS, and the SET AUTOCOMMIT = 0 of each login that
        # succeeded (a refused login sends no statement).
        sql["Questions"] -= len(self.fleet) + len(latencies)
        metrics_after = await run.implementation.metrics()
        reconciles = metrics_after.reconcile_total - metrics_before.reconcile_total
        result = {
            "n": population.size,
            "samples": samples,
            "timeouts": timeouts,
            "login_attempts": attempts,
            "p50_ms": 1000 * percentile(latencies, 0.50),
            "p99_ms": 1000 * percentile(latencies, 0.99),
            "max_ms": 1000 * max(latencies, default=float("nan")),
            "mean_ms": 1000 * statistics.fmean(latencies) if latencies else float("nan"),
            "latencies_ms": [round(1000 * value, 2) for value in latencies],
            "operator_api_writes_per_rotation": (metrics_after.writes - metrics_before.writes) / samples,
            "sql_writes_per_rotation": sum(sql[name] for name in SQL_WRITE_COUNTERS) / samples,
            "sql_statements_per_rotation": sql["Questions"] / samples,
            "sql": sql,
            "reconciles_per_rotation": reconciles / samples,
        }
        self.say(
            f"  rotation: p50 {result['p50_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms, max "
            f"{result['max_ms']:.0f} ms over {samples} samples ({timeouts} timeouts)"
        )
        return result

    # --- idle --------------------------------------------------------------------------------------------

    async def idle(self, run: Run) -> dict[str, Any]:
        """Nothing changes for ``idle_seconds``: what does the operator cost?"""
        seconds = self.options.idle_seconds
        self.say(f"  idle: {seconds:g} s with N={run.population.size} Ready, no changes")
        await self.settle_writes()  # the previous scenario's trailing work ends first
        await asyncio.sleep(2.0)
        sql_before = await sql_counters_of(self.fleet)
        metrics_before = await run.implementation.metrics()
        api_before, harness_before = await self.apiserver_writes(), self.harness_writes()
        process_before = run.implementation.sample()
        await asyncio.sleep(seconds)
        process_after = run.implementation.sample()
        sql = counter_delta(sql_before, await sql_counters_of(self.fleet))
        sql["Questions"] -= len(self.fleet)
        metrics_after = await run.implementation.metrics()
        api_after, harness_after = await self.apiserver_writes(), self.harness_writes()
        wall = process_after.at - process_before.at
        cpu = process_after.cpu_seconds - process_before.cpu_seconds
        period = self.options.resync_period
        checks = int(seconds // period) if period > 0 else 0
        result = {
            "n": run.population.size,
            "seconds": wall,
            "resync_period": period,
            "drift_checks_expected": checks,
            "operator_api_writes": metrics_after.writes - metrics_before.writes,
            "operator_api_reads": metrics_after.reads - metrics_before.reads,
            "operator_requests_by_method": counter_delta(metrics_before.requests, metrics_after.requests),
            "apiserver_writes": sum(counter_delta(api_before, api_after).values())
            - (harness_after - harness_before),
            "sql": sql,
            "sql_writes": sum(sql[name] for name in SQL_WRITE_COUNTERS),
            "sql_selects": sql["Com_select"],
            "sql_selects_per_check": sql["Com_select"] / checks if checks else float("nan"),
            "reconciles": metrics_after.reconcile_total - metrics_before.reconcile_total,
            "cpu_seconds": cpu,
            "cpu_percent_of_core": 100 * cpu / wall,
            "rss_mib": process_after.rss_mib,
            "peak_rss_mib": process_after.hwm_mib,
        }
        self.say(
            f"  idle: {result['operator_api_writes']:.0f} API writes, {result['sql_writes']:.0f} SQL writes, "
            f"{result['sql_selects']:.0f} SELECTs ({checks} drift checks), CPU "
            f"{result['cpu_percent_of_core']:.2f} % of a core, RSS {result['rss_mib']:.0f} MiB"
        )
        return result

    async def wait_server_status(self, namespace: str, limit: float = 120.0) -> None:
        """With many servers: until every MySQLServer's ``status.accounts`` is what its server records (the
        periodic health check refreshes it): a count written late is not the restart's doing."""
        deadline = time.monotonic() + limit
        for server in self.fleet if self.many else []:
            owned = await _owned(server)
            while time.monotonic() < deadline:
                current = await self.kube.get(MYSQL_SERVERS, server.name, namespace)
                if (current.get("status") or {}).get("accounts") == owned:
                    break
                await asyncio.sleep(1.0)
            else:
                self.say(f"  {server.name}: status.accounts still not {owned} after {limit:g} s")

    # --- cold start --------------------------------------------------------------------------------------

    async def cold_start(self, run: Run) -> dict[str, Any]:
        """Restart the operator with everything Ready: time until every object was checked, and the cost."""
        count = run.population.size + len(self.warm_up_names())  # the warm-up objects too
        self.say(f"  cold start: restarting the operator with {count} DatabaseUsers Ready")
        await self.wait_server_status(run.population.namespace)
        await run.implementation.stop()
        await asyncio.sleep(1.0)
        sql_before = await sql_counters_of(self.fleet)
        api_before, harness_before = await self.apiserver_writes(), self.harness_writes()
        implementation = self.implementation(
            "operator", run.population.namespace, f"op-{run.population.size}-restart"
        )
        await implementation.start()
        run.implementation = implementation
        started = implementation.started_at
        ready_at = checked_at = float("nan")
        peak_rss = 0.0
        deadline = started + 120 + count * 0.1
        while time.monotonic() < deadline:
            implementation.check_running()
            peak_rss = max(peak_rss, implementation.sample().hwm_mib)
            try:
                metrics = await implementation.metrics()
            except Exception:  # not listening yet
                await asyncio.sleep(0.1)
                continue
            if math.isnan(ready_at) and await _answers(implementation):
                ready_at = time.monotonic()
            if metrics.reconcile_total >= count:
                checked_at = time.monotonic()
                break
            await asyncio.sleep(0.25)
        await asyncio.sleep(2.0)
        sample = implementation.sample()
        metrics = await implementation.metrics()
        sql = counter_delta(sql_before, await sql_counters_of(self.fleet))
        sql["Questions"] -= len(self.fleet)
        api_after, harness_after = await self.apiserver_writes(), self.harness_writes()
        result = {
            "n": count,
            "seconds_to_all_checked": checked_at - started,
            "seconds_to_ready_probe": ready_at - started,
            "reconciles": metrics.reconcile_total,
            "reconciles_by_result": metrics.reconciles,
            "operator_api_writes": metrics.writes,
            "operator_requests_by_method": metrics.requests,
            "apiserver_writes": sum(counter_delta(api_before, api_after).values())
            - (harness_after - harness_before),
            "sql": sql,
            "sql_writes": sum(sql[name] for name in SQL_WRITE_COUNTERS),
            "sql_statements_per_object": sql["Questions"] / count,
            "cpu_seconds": sample.cpu_seconds,
            "peak_rss_mib": max(peak_rss, sample.hwm_mib),
            "rss_mib": sample.rss_mib,
        }
        self.say(
            f"  cold start: {count} checked in {result['seconds_to_all_checked']:.2f} s, "
            f"{result['operator_api_writes']:.0f} API writes, {result['sql_writes']:.0f} SQL writes, "
            f"peak RSS {result['peak_rss_mib']:.0f} MiB"
        )
        return result


async def _owned(server: MySQLAddress) -> int:
    """The accounts and roles the bookkeeping on ``server`` records (what a MySQLServer's status counts)."""
    schema = f"`{OWNERSHIP_SCHEMA}`"
    query = f"SELECT (SELECT COUNT(*) FROM {schema}.accounts) + (SELECT COUNT(*) FROM {schema}.roles)"  # noqa: S608 - constants
    rows = await admin_sql(server, query)
    return int(rows[0][0])


async def _answers(implementation: processes.Implementation) -> bool:
    try:
        await implementation.wait_ready(limit=0.5)
    except TimeoutError:
        return False
    return True


@dataclass
class Run:
    """A running implementation, its namespace's objects and the watch on them."""

    implementation: processes.Implementation
    watch: ReadyWatch
    population: Population

    async def close(self, bench: Bench) -> None:
        await self.implementation.stop()
        await self.watch.stop()
        await bench.cleanup(self.population.namespace, self.population.tag)
