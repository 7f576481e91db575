"""The fleet scenarios: N users over K servers (:mod:`bench.fleet`) made Ready by one operator, then the
operator restarted over them.

``fleet`` — the servers and their resources first, then an idle operator measured (its baseline RSS, no
user), then every role, password Secret and DatabaseUser seeded with no operator running (with the chart's
finalizer policy over the fleet's namespaces unless ``--no-finalizer-policy``: held from their creation, as a
chart install creates them), then the operator started: seconds from its start until every user is Ready
(a watch of the harness), its CPU and peak RSS, the API server's writes (``apiserver_request_total`` by
verb, Leases excluded) and the servers' statements (``Questions`` and ``Com_*``) per user, the CPU of
kube-apiserver, etcd and every mysqld, and its RSS once settled: (settled - baseline) ÷ N is the memory per
account.

``restart`` — with everything Ready, the operator stopped and started again: when its first pass over every
resource ended (its own ``dbuser_operator_first_pass_seconds``, per controller), and what it wrote meanwhile
and for ``--restart-window`` seconds after: API writes by the API server's counters and by its own, SQL
writes by the servers' ``Com_*`` counters; none is expected. Its peak RSS. On the local control plane
it runs as :data:`RESTART_USER`, whose every request, and no other client's, the API server's audit log
records (``audit``): its writes by the API server's own account, none expected either.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import periodic_pass, processes
from bench.common import (
    SQL_WRITE_COUNTERS,
    TARGET,
    TARGET_LABEL,
    MySQLAddress,
    admin_sql,
    apiserver_metrics,
    apiserver_reads,
    apiserver_writes,
    can_log_in,
    changed_counters,
    counter_delta,
    cpu_seconds,
    parse_metrics,
    sample_process,
    sql_counters_of,
)
from bench.fleet import Fleet, cleanup, create_servers, create_users
from bench.general_log import GeneralLog
from bench.scenarios import Bench, ReadyWatch
from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, DATABASE_ROLES, MYSQL_SERVERS
from dbuser_operator.envtest.admission import install_finalizer_policy, remove_finalizer_policy
from dbuser_operator.runtime.resources import Resource

FIRST_PASS = "dbuser_operator_first_pass_seconds"  # noqa: S105 - a metric's name
STARTED = "controller_runtime_max_concurrent_reconciles"  # set by every controller as it starts
REQUESTS = "rest_client_requests_total"
RECONCILES = "controller_runtime_reconcile_total"
CONVERGED = "dbuser_operator_converged_at_start_total"  # first-pass reconciles skipped: found converged
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
AUDITED_WRITES = ("create", "update", "patch", "delete", "deletecollection")
RESTART_USER = "bench-restarted-operator"  # the restarted operator's identity: the audit log's only user
SCRAPE_PERIOD = 5.0  # seconds between two scrapes of the operator's metrics while waiting for its first pass


@dataclass
class OperatorReading:
    """What the operator's ``/metrics`` says: first passes, requests by method, reconciles by controller."""

    started: set[str]
    first_pass: dict[str, float]
    requests: dict[str, float]
    reconciles: dict[str, float]
    converged: float = 0.0  # DatabaseUsers the first pass found converged (not reconciled)

    @classmethod
    async def of(cls, implementation: processes.Implementation) -> OperatorReading:
        reading = cls(set(), {}, {}, {})
        for name, labels, value in parse_metrics(
            await implementation.metrics_text(), {FIRST_PASS, STARTED, REQUESTS, RECONCILES, CONVERGED}
        ):
            if name == CONVERGED:
                reading.converged += value
            elif name == STARTED:
                reading.started.add(labels["controller"])
            elif name == FIRST_PASS:
                reading.first_pass[labels["controller"]] = value
            elif name == REQUESTS:
                reading.requests[labels["method"]] = reading.requests.get(labels["method"], 0) + value
            else:
                controller = labels["controller"]
                reading.reconciles[controller] = reading.reconciles.get(controller, 0) + value
        return reading

    @property
    def first_pass_done(self) -> bool:
        return bool(self.started) and self.started <= self.first_pass.keys()

    @property
    def writes(self) -> float:
        return sum(self.requests.get(method, 0) for method in WRITE_METHODS)


class FleetBench:
    """The fleet and restart scenarios, on a :class:`~bench.scenarios.Bench`'s API server and servers."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.kube = bench.kube
        self.say = bench.say
        self.servers: list[MySQLAddress] = bench.fleet

    def operator(
        self, fleet: Fleet, log_name: str, kubeconfig: Path | None = None
    ) -> processes.Implementation:
        """The operator for every namespace, the server resources only (no default server); as the
        bench's client, or as who ``kubeconfig`` names."""
        options = self.bench.options
        return processes.operator(
            self.bench.workdir,
            kubeconfig or self.bench.kubeconfig,
            self.servers[0],
            "",
            concurrency=options.concurrency,
            resync_period=options.resync_period,
            log_name=log_name,
            flags=["--no-default-server", f"--cluster-resource-namespace={fleet.admin_namespace}"],
        )

    async def run(
        self, n: int, run: str, *, restart: bool, clean: bool, window: float, general_log: bool = False
    ) -> dict[str, Any]:
        """One fleet of ``n`` users (``run``: its tag): converged, then (``restart``) restarted; removed
        afterwards if ``clean``."""
        fleet = Fleet(run, tuple(self.servers), n)
        self.say(f"fleet N={n}: {len(self.servers)} servers, {fleet.namespaces} namespaces, run {fleet.run}")
        await create_servers(self.kube, fleet)
        policy = f"fleet-{fleet.run}" if self.bench.options.finalizer_policy else None
        if policy is not None:
            namespaces = fleet.all_namespaces()
            await install_finalizer_policy(
                self.bench.api, policy, TARGET_LABEL, TARGET, namespaces, probe_namespace=namespaces[0]
            )
        baseline = await self._baseline(fleet)
        watch = ReadyWatch(self.kube, None)
        await watch.start()
        implementation: processes.Implementation | None = None
        try:
            seeded = await create_users(self.kube, fleet)
            self.say(f"  seeded {len(fleet.roles())} roles and {n} users (+{n} Secrets) in {seeded:.1f} s")
            implementation = self.operator(fleet, f"fleet-{n}")
            result = await self._converge(fleet, watch, implementation)
            result |= {"seed_seconds": seeded, "seed_objects_per_second": 2 * n / seeded} | baseline
            result["kib_per_account"] = 1024 * (result["settled_rss_mib"] - baseline["baseline_rss_mib"]) / n
            if restart and result["converged"]:
                result["restart"] = await self.restart(fleet, implementation, window, general_log=general_log)
        finally:
            if implementation is not None:
                await implementation.stop()
            await watch.stop()
            if policy is not None:
                await remove_finalizer_policy(self.bench.api, policy)
            if clean:
                self.say("  removing the fleet")
                await cleanup(self.kube, fleet)
        return result

    async def _baseline(self, fleet: Fleet) -> dict[str, Any]:
        """The operator with the servers and no user: its RSS once its first pass is over and it is quiet."""
        implementation = self.operator(fleet, f"fleet-{fleet.size}-baseline")
        await implementation.start()
        try:
            await implementation.wait_ready(limit=120)
            await self._first_pass(implementation, 120)
            await self.bench.settle_writes()
            rss = await quiet_rss(implementation)
            traced = await tracemalloc_snapshot(implementation)
        finally:
            await implementation.stop()
        self.say(f"  baseline: the operator with {len(self.servers)} servers and no user, RSS {rss:.1f} MiB")
        return {"baseline_rss_mib": rss, **({"baseline_tracemalloc": traced} if traced else {})}

    async def _converge(
        self, fleet: Fleet, watch: ReadyWatch, implementation: processes.Implementation
    ) -> dict[str, Any]:
        bench, n = self.bench, fleet.size
        names = {fleet.name(i) for i in range(n)}
        await asyncio.sleep(1.0)
        sql_before = await sql_counters_of(self.servers)
        api_before, reads_before = await apiserver_writes(bench.api), await apiserver_reads(bench.api)
        servers_before = cpu_seconds(bench.servers)
        await implementation.start()
        timeline = Timeline(implementation, watch)
        sampling = asyncio.create_task(timeline.run())
        try:
            converged = await bench.wait_all_ready(watch, names, implementation)
            period, wait = self.bench.options.resync_period, self.bench.options.settled_after_pass
            ready = (
                await periodic_pass.Passes.of(implementation) if converged and wait and period > 0 else None
            )
        finally:
            sampling.cancel()
            await asyncio.gather(sampling, return_exceptions=True)
        seconds = time.monotonic() - implementation.started_at if converged else math.nan
        process = implementation.sample()
        servers = counter_delta(servers_before, cpu_seconds(bench.servers))
        await bench.settle_writes()
        sql = counter_delta(sql_before, await sql_counters_of(self.servers))
        sql["Questions"] -= len(self.servers)  # the second SHOW GLOBAL STATUS itself
        api = changed_counters(api_before, await apiserver_writes(bench.api))
        reads = changed_counters(reads_before, await apiserver_reads(bench.api))
        reading = await OperatorReading.of(implementation)
        periodic = await periodic_pass.whole_pass(implementation, ready, period, timeline.run, self.say)
        settled = await quiet_rss(implementation)
        traced = await tracemalloc_snapshot(implementation)
        logins = await self._logins(fleet)
        stored = await storage(bench.api)
        login_ms = await self._login_times(fleet)
        result = {
            "n": n,
            "servers": len(self.servers),
            "flavours": [server.flavour for server in self.servers],
            "namespaces": fleet.namespaces,
            "roles": len(fleet.roles()),
            "role_users": sum(1 for i in range(n) if fleet.has_role(i)),
            "connection_secrets": sum(1 for i in range(n) if fleet.has_connection_secret(i)),
            "converged": converged,
            "finalizer_policy": bench.options.finalizer_policy,
            "ready": len(names & watch.ready_at.keys()),
            "seconds": seconds,
            "first_pass_seconds": reading.first_pass,
            "cpu_seconds": process.cpu_seconds,
            "cpu_ms_per_user": 1000 * process.cpu_seconds / n,
            "peak_rss_mib": process.hwm_mib,
            "settled_rss_mib": settled,
            "api_writes": sum(api.values()),
            "api_writes_per_user": sum(api.values()) / n,
            "apiserver_writes_by_resource": api,
            "apiserver_reads_by_resource": reads,
            "operator_api_writes_per_user": reading.writes / n,
            "operator_requests_by_method": reading.requests,
            "reconciles": reading.reconciles,
            "sql": sql,
            "sql_statements_per_user": sql["Questions"] / n,
            "sql_writes_per_user": sum(sql[name] for name in SQL_WRITE_COUNTERS) / n,
            "server_cpu_seconds": servers,
            "apiserver_cpu_seconds": servers.get("kube-apiserver", math.nan),
            "etcd_cpu_seconds": servers.get("etcd", math.nan),
            "mysqld_cpu_seconds": sum(v for k, v in servers.items() if k.startswith("mysqld")),
            "events_dropped": implementation.events_dropped(),
            "logins_checked": logins[0],
            "logins_ok": logins[1],
            "ready_roles": await self._ready_count(DATABASE_ROLES),
            "ready_servers": await self._ready_count(MYSQL_SERVERS)
            + await self._ready_count(CLUSTER_MYSQL_SERVERS),
            "timeline": timeline.points,
            "periodic_pass_before_settled": periodic,
            "login_ms_by_flavour": login_ms,
            **({"tracemalloc": traced} if traced else {}),
            "servers_rss_mib": rss_of(bench.servers),
            "etcd_db_bytes": stored.pop("etcd_db_bytes", math.nan),
            "apiserver_objects": stored,
        }
        self.say(
            f"  operator N={n}: {result['ready']}/{n} Ready in {seconds:.1f} s, "
            f"CPU {process.cpu_seconds:.1f} s, peak RSS {process.hwm_mib:.0f} MiB, settled {settled:.0f} MiB "
            f"({1024 * settled / n:.2f} KiB per user before the baseline), "
            f"{result['api_writes_per_user']:.2f} API writes and {result['sql_statements_per_user']:.2f} SQL "
            f"statements per user; kube-apiserver {result['apiserver_cpu_seconds']:.0f} CPU s, etcd "
            f"{result['etcd_cpu_seconds']:.0f}, mysqld {result['mysqld_cpu_seconds']:.0f}"
        )
        return result

    async def _ready_count(self, resource: Resource) -> int:
        items, _ = await self.kube.list_all(resource)
        return sum(
            1
            for item in items
            for condition in (item.get("status") or {}).get("conditions") or []
            if condition.get("type") == "Ready" and condition.get("status") == "True"
        )

    async def _logins(self, fleet: Fleet) -> tuple[int, int]:
        """Log in as a few users, on the server each names, with their passwords."""
        indexes = self.bench.random.sample(range(fleet.size), min(5, fleet.size))
        ok = 0
        for index in indexes:
            server = self.servers[fleet.server_of(index)]
            ok += await can_log_in(server, fleet.user(index), fleet.password(index))
        return len(indexes), ok

    async def _login_times(self, fleet: Fleet, per_server: int = 10) -> dict[str, float]:
        """Median milliseconds of a first login (a full authentication) of ``per_server`` users of each
        server, by flavour: how the server's account lookup fares with the accounts it holds."""
        times: dict[str, list[float]] = {}
        for server in range(len(self.servers)):
            users = [i for i in range(server, fleet.size, len(self.servers))]
            for index in self.bench.random.sample(users, min(per_server, len(users))):
                started = time.monotonic()
                await can_log_in(self.servers[server], fleet.user(index), fleet.password(index))
                times.setdefault(self.servers[server].flavour, []).append(1000 * (time.monotonic() - started))
        return {flavour: round(statistics.median(found), 2) for flavour, found in times.items()}

    async def _first_pass(self, implementation: processes.Implementation, limit: float) -> OperatorReading:
        """Poll the operator's metrics until every controller's first pass is over. Every 5 s: a scrape
        cost the operator O(N) until issue 40 (its compliance and Degraded metrics counted every resource:
        25 ms at 10 000 users here), so polling it 4 times a second took 60 % of a restart's CPU; they are
        counted per event now, a scrape costs the (server, namespace) pairs."""
        deadline = time.monotonic() + limit
        while True:
            implementation.check_running()
            try:
                reading = await OperatorReading.of(implementation)
            except OSError:  # not listening yet
                reading = None
            if reading is not None and reading.first_pass_done:
                return reading
            if time.monotonic() > deadline:
                raise TimeoutError(f"the operator's first pass did not end within {limit:g} s")
            await asyncio.sleep(SCRAPE_PERIOD)

    async def restart(
        self, fleet: Fleet, running: processes.Implementation, window: float, *, general_log: bool = False
    ) -> dict[str, Any]:
        """Stop the converged operator and start it again; what the new one writes (none expected).
        ``general_log``: the servers' general logs on meanwhile (:mod:`bench.general_log`)."""
        await self.wait_server_status(fleet)
        await self._gate()
        await running.stop()
        self.say(f"  restart: the operator stopped over {fleet.size} Ready users; starting it again")
        await asyncio.sleep(1.0)
        sql_before = await sql_counters_of(self.servers)
        api_before = await apiserver_writes(self.bench.api)
        reads_before = await apiserver_reads(self.bench.api)
        audit_log = self.bench.options.restart_audit_log
        audited_from = audit_log.stat().st_size if audit_log is not None and audit_log.exists() else 0
        implementation = self._restarted(fleet)
        logged = GeneralLog(self.servers) if general_log else None
        window_start = datetime.now(UTC).isoformat()
        async with logged or contextlib.nullcontext():
            await implementation.start()
            started = implementation.started_at
            try:
                await implementation.wait_ready(limit=600)
                ready_probe = time.monotonic() - started
                reading = await self._first_pass(implementation, 600 + fleet.size * 0.05)
                seen = time.monotonic() - started  # up to a scrape period late
                # By its own clock: the controllers start as /readyz first passes (polled every 0.1 s).
                checked = ready_probe + max(reading.first_pass.values())
                await asyncio.sleep(window)
                reading = await OperatorReading.of(implementation)
                sample = implementation.sample()
                traced = await tracemalloc_snapshot(implementation)  # BENCH_TRACEMALLOC: what it holds
            finally:
                await implementation.stop()
        window_end = datetime.now(UTC).isoformat()
        sql = counter_delta(sql_before, await sql_counters_of(self.servers))
        sql["Questions"] -= len(self.servers)
        api = changed_counters(api_before, await apiserver_writes(self.bench.api))
        reads = changed_counters(reads_before, await apiserver_reads(self.bench.api))
        objects = sum(reading.reconciles.values())
        result: dict[str, Any] = {
            "n": fleet.size,
            "seconds_to_ready_probe": ready_probe,
            "seconds_to_first_pass_done": checked,
            "seconds_to_first_pass_seen": seen,
            "first_pass_seconds": reading.first_pass,
            "window_seconds": window,
            "reconciles": reading.reconciles,
            "apiserver_writes": sum(api.values()),
            "apiserver_writes_by_resource": api,
            "apiserver_reads_by_resource": reads,
            "operator_api_writes": reading.writes,
            "operator_requests_by_method": reading.requests,
            "sql": sql,
            "sql_writes": sum(sql[name] for name in SQL_WRITE_COUNTERS),
            "sql_statements_per_object": sql["Questions"] / objects if objects else math.nan,
            "sql_statements_per_server": sql["Questions"] / len(self.servers),
            "converged_at_start": reading.converged,  # DatabaseUsers whose first-pass reconcile was skipped
            "cpu_seconds": sample.cpu_seconds,
            "peak_rss_mib": sample.hwm_mib,
            "rss_mib": sample.rss_mib,
            "window_utc": [window_start, window_end],  # the new operator's life: for the audit log
        }
        if audit_log is not None:
            result["audit"] = audited(audit_log, audited_from)
        if traced:
            result["tracemalloc"] = traced
        if logged is not None:
            result["general_log"] = {
                "writes": logged.writes,
                "statements": logged.statements,
                "shapes": dict(logged.shapes.most_common(30)),
            }
        self.say(
            f"  restart: every resource checked {checked:.1f} s after the start "
            f"(ready probe {ready_probe:.1f} s), {result['apiserver_writes']:.0f} API writes "
            f"({result['operator_api_writes']:.0f} by its own count), "
            f"{result['sql_writes']:.0f} SQL writes, peak RSS {result['peak_rss_mib']:.0f} MiB"
            + (
                f"; audit log: {result['audit']['requests']} requests, "
                f"{len(result['audit']['writes'])} writes"
                if "audit" in result
                else ""
            )
        )
        return result

    async def _gate(self) -> None:
        """Until ``--restart-gate``'s file exists (at once without one)."""
        gate = self.bench.options.restart_gate
        if gate is not None and not gate.exists():
            self.say(f"  restart: waiting until {gate} exists")
            while not gate.exists():  # noqa: ASYNC110 - a file someone else creates: nothing to wait on
                await asyncio.sleep(2.0)

    def _restarted(self, fleet: Fleet) -> processes.Implementation:
        """The operator to start again: as :data:`RESTART_USER` where audited; under py-spy with
        ``--profile``."""
        options = self.bench.options
        implementation = self.operator(fleet, f"fleet-{fleet.size}-restart", options.restart_kubeconfig)
        if options.profile_dir is not None:
            options.profile_dir.mkdir(parents=True, exist_ok=True)
            implementation.profile_path = options.profile_dir / f"fleet-{fleet.size}-restart.txt"
        return implementation

    async def wait_server_status(self, fleet: Fleet, limit: float = 120.0) -> None:
        """Until every server resource's ``status.accounts`` is what its server records (the periodic
        health check refreshes it): a count written late is not the restart's doing."""
        deadline = time.monotonic() + limit
        for index, server in enumerate(self.servers):
            owned = await owned_count(server)
            resource = CLUSTER_MYSQL_SERVERS if fleet.is_cluster(index) else MYSQL_SERVERS
            namespace = None if fleet.is_cluster(index) else fleet.server_namespace(index)
            while time.monotonic() < deadline:
                current = await self.kube.get(resource, fleet.server_name(index), namespace)
                if (current.get("status") or {}).get("accounts") == owned:
                    break
                await asyncio.sleep(1.0)
            else:
                self.say(f"  {fleet.server_name(index)}: status.accounts still not {owned} after {limit:g} s")


def audited(log: Path, offset: int) -> dict[str, Any]:
    """The audit log's records from byte ``offset`` on (one client's, :data:`RESTART_USER`): its requests
    by verb and resource, and every write listed (none expected)."""
    by_verb: dict[str, int] = {}
    writes: list[dict[str, Any]] = []
    users: set[str] = set()
    with log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            event = json.loads(line)
            verb = event.get("verb", "")
            resource = (event.get("objectRef") or {}).get("resource", event.get("requestURI", ""))
            by_verb[f"{verb} {resource}"] = by_verb.get(f"{verb} {resource}", 0) + 1
            users.add((event.get("user") or {}).get("username", ""))
            if verb in AUDITED_WRITES:
                status = event.get("responseStatus")
                writes.append({"verb": verb, "uri": event.get("requestURI"), "status": status})
    return {"users": sorted(users), "requests": sum(by_verb.values()), "by_verb": by_verb, "writes": writes}


async def storage(api: Any) -> dict[str, float]:
    """The API server's view of its storage: etcd's database size (``etcd_db_bytes``), and the objects
    it counts per resource (``apiserver_resource_objects``, refreshed about once a minute)."""
    found: dict[str, float] = {}
    text = await apiserver_metrics(api)
    for name, labels, value in parse_metrics(
        text, {"apiserver_storage_size_bytes", "apiserver_resource_objects"}
    ):
        if name == "apiserver_storage_size_bytes":
            found["etcd_db_bytes"] = found.get("etcd_db_bytes", 0) + value
        elif value:
            found[labels.get("resource", "?")] = value
    return found


def rss_of(pids: dict[str, int]) -> dict[str, float]:
    """Resident memory of each process, MiB."""
    found = {}
    for name, pid in pids.items():
        with contextlib.suppress(OSError):
            found[name] = round(sample_process(pid).rss_mib, 1)
    return found


async def tracemalloc_snapshot(implementation: processes.Implementation) -> dict[str, Any] | None:
    """Under ``BENCH_TRACEMALLOC``: the operator's allocations now (its SIGUSR1 writes them), else None."""
    path = implementation.env.get(processes.TRACEMALLOC_OUT_ENV)
    if not path:
        return None
    _remove(Path(path))
    implementation.process.send_signal(signal.SIGUSR1)  # type: ignore[union-attr]
    for _ in range(600):
        await asyncio.sleep(0.5)
        found = _read_json(Path(path))
        if found is not None:
            keep = ("total_kib", "blocks", "garbage_kib", "lines", "garbage")
            return {key: found[key] for key in keep if key in found}
    return None


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _read_json(path: Path) -> dict[str, Any] | None:
    """The file's JSON, or None while it is missing or half written."""
    try:
        found: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found


async def owned_count(server: MySQLAddress) -> int:
    """The accounts and roles the bookkeeping on ``server`` records (what a server's status counts)."""
    from bench.common import OWNERSHIP_SCHEMA  # noqa: PLC0415

    schema = f"`{OWNERSHIP_SCHEMA}`"
    query = f"SELECT (SELECT COUNT(*) FROM {schema}.accounts) + (SELECT COUNT(*) FROM {schema}.roles)"  # noqa: S608 - constants
    rows = await admin_sql(server, query)
    return int(rows[0][0])


async def quiet_rss(implementation: processes.Implementation, limit: float = 120.0) -> float:
    """The process's RSS once it is quiet (under 20 ms of CPU in 2 s, or after ``limit`` seconds): the median
    of 5 readings a second apart, in MiB."""
    deadline = time.monotonic() + limit
    previous = implementation.sample()
    while time.monotonic() < deadline:
        await asyncio.sleep(2.0)
        current = implementation.sample()
        if current.cpu_seconds - previous.cpu_seconds < 0.02:
            break
        previous = current
    readings = []
    for _ in range(5):
        readings.append(implementation.sample().rss_mib)
        await asyncio.sleep(1.0)
    return statistics.median(readings)


class Timeline:
    """Every 5 s while the operator converges: seconds since its start, users Ready, its RSS and CPU."""

    def __init__(self, implementation: processes.Implementation, watch: ReadyWatch) -> None:
        self.implementation = implementation
        self.watch = watch
        self.points: list[tuple[float, int, float, float]] = []

    async def run(self) -> None:
        while True:
            sample = self.implementation.sample()
            self.points.append(
                (
                    round(sample.at - self.implementation.started_at, 1),
                    len(self.watch.ready_at),
                    round(sample.rss_mib, 1),
                    round(sample.cpu_seconds, 1),
                )
            )
            await asyncio.sleep(5.0)
