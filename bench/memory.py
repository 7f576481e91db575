"""``python -m bench.memory``: where the operator's resident memory goes, measured on real servers.

Phases (``--phases``, default all, in this order):

- **imports**: a fresh interpreter imports the libraries one after another, printing ``VmRSS`` after
  each (cumulative), then ``dbuser_operator.app``; and, under tracemalloc, which packages the app's
  import allocates in; and the app imported as ``python -m dbuser_operator`` does (``lean_imports``
  first: kubernetes-asyncio without its generated models). "The libraries" are the third-party packages
  the operator runs on, imported whole (``kubernetes_asyncio.client`` and ``config``, aiohttp, aiomysql,
  pydantic, structlog, prometheus_client).
- **idle**: the operator (watching every namespace) with no DatabaseUser, ready and settled: its RSS.
- **secrets**: ``--unrelated`` (10 000) Secrets of 100 bytes created in another namespace while it idles:
  RSS once it is quiet again; then the operator restarted with them present (they come by LIST): RSS.
- **users**: DatabaseUsers (a Secret each, one grant) added in steps up to each size of ``--n``
  (1000,2000,5000,10000); after each step all Ready, writes settled, RSS: the slope in KiB per user.

Each RSS figure is the median of ``--samples`` readings of ``/proc/<pid>/status`` a second apart, once
the process has used less than 20 ms of CPU over two seconds. Results go to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import processes
from bench.cli import REPO, git_state, machine, say
from bench.common import (
    MySQLAddress,
    admin_sql,
    api_client,
    database_user,
    settle_writes,
)
from bench.common import secret as password_secret
from bench.scenarios import ReadyWatch
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, LocalMySQLServer, connect_cluster, install_crds, provide_mysql
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import NAMESPACES, SECRETS

PHASES = ("imports", "idle", "secrets", "users")
LIBRARIES = (
    "aiohttp",
    "kubernetes_asyncio.client",
    "kubernetes_asyncio.config",
    "aiomysql",
    "pydantic",
    "structlog",
    "prometheus_client",
)
OPTIONAL_LIBRARIES = ("jinja2",)  # the connection Secret's templates only
APP = "dbuser_operator.app"
UNRELATED_NAMESPACE = "memory-unrelated"
USERS_NAMESPACE = "memory-users"
TAG = "mem"

_IMPORT_PROBE = """
import importlib, json, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
steps = [("python", rss())]
for name in sys.argv[1:]:
    if name == "+lean":  # as the operator's entry point does first
        from dbuser_operator.runtime import lean_imports
        lean_imports.install()
    else:
        importlib.import_module(name)
    steps.append((name, rss()))
print(json.dumps(steps))
"""

_TRACE_PROBE = """
import json, sys, tracemalloc
tracemalloc.start()
__import__(sys.argv[1])
by_package = {}
for stat in tracemalloc.take_snapshot().statistics("filename"):
    path = stat.traceback[0].filename
    parts = path.split("/")
    if "site-packages" in parts:
        package = parts[parts.index("site-packages") + 1]
    elif "dbuser_operator" in parts:
        package = "dbuser_operator"
    elif path.startswith("<"):
        package = path
    else:
        package = "(standard library)"
    package = package.removesuffix(".py").split(".")[0]
    by_package[package] = by_package.get(package, 0) + stat.size
print(json.dumps(sorted(by_package.items(), key=lambda item: -item[1])))
"""


def _probe(code: str, *arguments: str) -> Any:
    output = subprocess.run(  # noqa: S603 - our interpreter, fixed code
        [sys.executable, "-c", code, *arguments], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(output)


def _rss_after(modules: Sequence[str], repeat: int = 3) -> list[tuple[str, float]]:
    """Cumulative VmRSS (MiB) after each import, the median of ``repeat`` fresh interpreters."""
    runs = [_probe(_IMPORT_PROBE, *modules) for _ in range(repeat)]
    return [(runs[0][i][0], statistics.median(run[i][1] for run in runs)) for i in range(len(runs[0]))]


def measure_imports() -> dict[str, Any]:
    """RSS of the bare interpreter, of the libraries one after another, of the app, of each library alone."""
    libraries = _rss_after([*LIBRARIES, *OPTIONAL_LIBRARIES, APP])
    app_alone = _rss_after([APP])
    app_lean = _rss_after(["+lean", APP])
    alone = {name: _rss_after([name])[-1][1] - _rss_after([])[0][1] for name in (*LIBRARIES, "jinja2")}
    traced = _probe(_TRACE_PROBE, APP)
    python = libraries[0][1]
    return {
        "python_mib": round(python, 1),
        "cumulative_mib": [(name, round(value, 1)) for name, value in libraries],
        "libraries_mib": round(libraries[len(LIBRARIES)][1], 1),
        "app_import_mib": round(app_alone[-1][1], 1),
        "app_import_lean_mib": round(app_lean[-1][1], 1),
        "each_alone_mib": {name: round(value, 1) for name, value in alone.items()},
        "tracemalloc_app_import_kib": [(name, round(size / 1024)) for name, size in traced[:12]],
    }


async def quiet_rss(implementation: processes.Implementation, samples: int) -> dict[str, float]:
    """Once the process is quiet (< 20 ms CPU in 2 s, at most 120 s), the median of ``samples`` readings."""
    deadline = time.monotonic() + 120
    previous = implementation.sample()
    while time.monotonic() < deadline:
        await asyncio.sleep(2)
        current = implementation.sample()
        if current.cpu_seconds - previous.cpu_seconds < 0.02:
            break
        previous = current
    readings = []
    for _ in range(samples):
        readings.append(implementation.sample())
        await asyncio.sleep(1)
    return {
        "rss_mib": round(statistics.median(r.rss_mib for r in readings), 2),
        "hwm_mib": round(readings[-1].hwm_mib, 2),
        "cpu_seconds": round(readings[-1].cpu_seconds, 2),
    }


class Memory:
    """The operator against one API server and one MySQL server, sampled between phases."""

    def __init__(
        self, api: Any, kubeconfig: Path, mysql: MySQLAddress, workdir: Path, arguments: argparse.Namespace
    ) -> None:
        self.kube = KubeClient(api, timeout=60)
        self.api = api
        self.kubeconfig = kubeconfig
        self.mysql = mysql
        self.workdir = workdir
        self.arguments = arguments
        self.operator: processes.Implementation | None = None
        self.runs = 0

    async def start_operator(self) -> processes.Implementation:
        """The operator over every namespace (so that it sees the unrelated Secrets), ready."""
        self.runs += 1
        implementation = processes.operator(
            self.workdir,
            self.kubeconfig,
            self.mysql,
            USERS_NAMESPACE,
            concurrency=None,
            resync_period=300,
            log_name=f"operator-{self.runs}",
        )
        implementation.argv = [arg for arg in implementation.argv if not arg.startswith("--namespaces=")]
        await implementation.start()
        await implementation.wait_ready(120)
        self.operator = implementation
        return implementation

    async def stop_operator(self) -> None:
        if self.operator is not None:
            await self.operator.stop()
            self.operator = None

    async def parallel(self, indexes: range, work: Callable[[int], Awaitable[None]]) -> None:
        iterator = iter(indexes)

        async def worker() -> None:
            for index in iterator:
                await work(index)

        await asyncio.gather(*(worker() for _ in range(32)))

    async def namespace(self, name: str) -> None:
        try:
            await self.kube.create(NAMESPACES, {"metadata": {"name": name}})
        except Exception as error:
            say(f"namespace {name}: {error}")

    async def unrelated_secrets(self, count: int) -> float:
        await self.namespace(UNRELATED_NAMESPACE)
        payload = secrets.token_hex(50)  # 100 bytes

        async def create(index: int) -> None:
            body = {"metadata": {"name": f"unrelated-{index:05d}"}, "stringData": {"value": payload}}
            await self.kube.create(SECRETS, body, UNRELATED_NAMESPACE)

        started = time.monotonic()
        await self.parallel(range(count), create)
        return time.monotonic() - started

    async def delete_unrelated(self) -> None:
        await self.kube.request("DELETE", SECRETS.path(UNRELATED_NAMESPACE))

    async def add_users(self, start: int, stop: int, watch: ReadyWatch) -> float:
        async def create(index: int) -> None:
            name = f"u{index:05d}"
            await self.kube.create(
                SECRETS, password_secret(f"pw-{name}", secrets.token_urlsafe(16)), USERS_NAMESPACE
            )
            await self.kube.create(
                DATABASE_USERS, database_user(name, f"{TAG}_{index:05d}", f"pw-{name}"), USERS_NAMESPACE
            )

        started = time.monotonic()
        await self.parallel(range(start, stop), create)
        names = {f"u{index:05d}" for index in range(stop)}
        assert self.operator is not None
        while not names <= watch.ready_at.keys():
            self.operator.check_running()
            if time.monotonic() - started > self.arguments.time_limit:
                raise TimeoutError(f"{len(names - watch.ready_at.keys())} DatabaseUsers not Ready")
            await asyncio.sleep(0.5)
        return time.monotonic() - started


async def run_servers_phases(
    arguments: argparse.Namespace,
    kubeconfig: Path,
    mysql: MySQLAddress,
    workdir: Path,
    results: dict[str, Any],
) -> None:
    phases: set[str] = arguments.phases
    async with await api_client(kubeconfig) as api:
        await install_crds(api, REPO / "crds")
        results["machine"]["mysql_version"] = (await admin_sql(mysql, "SELECT VERSION()"))[0][0]
        await admin_sql(mysql, "CREATE DATABASE IF NOT EXISTS `bench`")
        memory = Memory(api, kubeconfig, mysql, workdir, arguments)
        samples = arguments.samples
        try:
            operator = await memory.start_operator()
            idle = await quiet_rss(operator, samples)
            results["idle"] = idle
            say(f"idle, no DatabaseUser: {idle}")
            if "secrets" in phases:
                seconds = await memory.unrelated_secrets(arguments.unrelated)
                await settle_writes(api)
                watched = await quiet_rss(operator, samples)
                await memory.stop_operator()
                operator = await memory.start_operator()
                listed = await quiet_rss(operator, samples)
                results["secrets"] = {
                    "count": arguments.unrelated,
                    "create_seconds": round(seconds, 1),
                    "after_watch": watched,
                    "after_restart": listed,
                    "delta_watch_mib": round(watched["rss_mib"] - idle["rss_mib"], 2),
                    "delta_restart_mib": round(listed["rss_mib"] - idle["rss_mib"], 2),
                }
                say(f"{arguments.unrelated} unrelated Secrets: {results['secrets']}")
                await memory.delete_unrelated()
                await memory.stop_operator()
                operator = await memory.start_operator()
                results["idle_before_users"] = await quiet_rss(operator, samples)
            if "users" in phases:
                await memory.namespace(USERS_NAMESPACE)
                watch = ReadyWatch(memory.kube, USERS_NAMESPACE)
                await watch.start()
                points = []
                done = 0
                try:
                    for size in arguments.n:
                        seconds = await memory.add_users(done, size, watch)
                        done = size
                        await settle_writes(api)
                        point = {
                            "n": size,
                            "seconds": round(seconds, 1),
                            **await quiet_rss(operator, samples),
                        }
                        points.append(point)
                        say(f"N={size}: {point}")
                        results["users"] = {"points": points, **slope(points)}
                finally:
                    await watch.stop()
        finally:
            await memory.stop_operator()


def slope(points: list[dict[str, Any]]) -> dict[str, float]:
    """Least-squares slope of RSS and of peak RSS over N, in KiB per user."""
    if len(points) < 2:
        return {}
    result = {}
    for field in ("rss_mib", "hwm_mib"):
        fitted = statistics.linear_regression([p["n"] for p in points], [p[field] for p in points])
        result[f"{field.removesuffix('_mib')}_kib_per_user"] = round(fitted.slope * 1024, 2)
    return result


def parser() -> argparse.ArgumentParser:
    arguments = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.split("\n")[0])
    arguments.add_argument(
        "--phases",
        type=lambda text: {part.strip() for part in text.split(",") if part.strip()},
        default=set(PHASES),
        help=f"comma-separated, from {','.join(PHASES)} (default: all)",
    )
    arguments.add_argument(
        "--n",
        type=lambda text: sorted({int(part) for part in text.split(",")}),
        default=[1000, 2000, 5000, 10000],
        help="sizes of the users phase (1000,2000,5000,10000)",
    )
    arguments.add_argument("--unrelated", type=int, default=10000, help="unrelated Secrets (10000)")
    arguments.add_argument("--samples", type=int, default=5, help="RSS readings per figure (5)")
    arguments.add_argument("--time-limit", type=float, default=600.0, help="seconds per users step (600)")
    arguments.add_argument(
        "--out", type=Path, default=REPO / "bench" / "results" / "memory.json", help="the results JSON"
    )
    arguments.add_argument("--label", default="", help="a note stored with the results (e.g. 'before')")
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    results: dict[str, Any] = {
        "command": "python -m bench.memory " + " ".join(sys.argv[1:] if argv is None else argv),
        "label": arguments.label,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "git": git_state(),
    }
    out: Path = arguments.out
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        out.write_text(json.dumps(results, indent=2) + "\n")

    if "imports" in arguments.phases:
        results["imports"] = measure_imports()
        say(f"imports: {json.dumps(results['imports'])}")
        save()
    if arguments.phases & {"idle", "secrets", "users"}:
        workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-memory-"))
        say(f"state and logs in {workdir}")
        testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
        binaries = Binaries.from_environment(*([Path(testbin)] if testbin else []))
        cluster = connect_cluster(binaries, workdir / "kube", audit=False)
        try:
            with provide_mysql(workdir / "mysql", general_log=False) as provided:
                server = provided.admin if isinstance(provided, LocalMySQLServer) else provided
                mysql = MySQLAddress(server.host, server.port, server.user, server.password)
                try:
                    asyncio.run(run_servers_phases(arguments, cluster.kubeconfig, mysql, workdir, results))
                finally:
                    save()
        finally:
            if cluster.control_plane is not None:
                cluster.control_plane.stop()
    save()
    say(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
