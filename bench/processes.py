"""The implementations under test, each run as a subprocess: the operator, the floor, the kopf peer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.common import (
    ADMIN_PASSWORD_ENV,
    API_WRITE_METHODS,
    OWNERSHIP_SCHEMA,
    TARGET,
    MySQLAddress,
    ProcessSample,
    parse_metrics,
    sample_process,
)
from dbuser_operator.envtest.ports import LOOPBACK, free_port

USER_CONTROLLER = "databaseuser"
TRACEMALLOC_ENV = "BENCH_TRACEMALLOC"  # set: the operator runs under tracemalloc (bench.traced_operator)
LOG_LEVEL_ENV = "BENCH_OPERATOR_LOG_LEVEL"  # diagnosis: the operator's log level (default warning)
TRACEMALLOC_OUT_ENV = "BENCH_TRACEMALLOC_OUT"  # the controller label of the DatabaseUser controller's metrics


@dataclass
class Implementation:
    """One implementation of the job, started as a subprocess with its output in a log file."""

    kind: str  # "operator", "floor" or "kopf"
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    metrics_port: int | None = None
    health_port: int | None = None
    process: asyncio.subprocess.Process | None = None
    started_at: float = 0.0
    profile_path: Path | None = None  # py-spy samples of the process, as collapsed stacks
    profiler: asyncio.subprocess.Process | None = None
    controller: str = USER_CONTROLLER  # whose reconciles the operator's metrics count

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.started_at = time.monotonic()
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": _pythonpath(), **self.env},
            )
        if self.profile_path is not None:
            await self._start_profiler(self.profile_path)

    async def _start_profiler(self, path: Path) -> None:
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        # --gil: only the thread running Python, so a sample is CPU spent in that stack; without it a
        # loopback send() or SSL write is counted for as long as the call takes, and skews the breakdown.
        argv = [
            py_spy,
            "record",
            f"--pid={self.pid}",
            "--rate=200",
            "--gil",
            "--format=raw",
            f"--output={path}",
        ]
        self.profiler = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )

    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def check_running(self) -> None:
        if self.process is not None and self.process.returncode is not None:
            tail = self.log_path.read_text(errors="replace").splitlines()[-20:]
            raise RuntimeError(f"{self.kind} exited with {self.process.returncode}:\n" + "\n".join(tail))

    async def stop(self, limit: float = 20.0) -> None:
        if self.profiler is not None and self.profiler.returncode is None:
            self.profiler.send_signal(signal.SIGINT)  # py-spy writes its output and exits
            await asyncio.wait_for(self.profiler.wait(), limit)
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), limit)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    def events_dropped(self) -> int:
        """Events the operator logged as dropped (its recorder's buffer was full)."""
        if self.kind != "operator" or not self.log_path.exists():
            return 0
        with self.log_path.open(errors="replace") as log:
            return sum(1 for line in log if "event dropped" in line)

    def sample(self) -> ProcessSample:
        return sample_process(self.pid)

    async def wait_ready(self, limit: float = 60.0) -> None:
        """For the operator: until ``/readyz`` answers 200 (caches synced, controller running)."""
        if self.health_port is None:
            return
        deadline = time.monotonic() + limit
        url = f"http://{LOOPBACK}:{self.health_port}/readyz"
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                self.check_running()
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as response:
                        if response.status == 200:
                            return
                await asyncio.sleep(0.1)
        raise TimeoutError(f"{self.kind} not ready within {limit} s (log: {self.log_path})")

    async def metrics_text(self) -> str:
        """The operator's ``/metrics``, as Prometheus text."""
        assert self.metrics_port is not None
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://{LOOPBACK}:{self.metrics_port}/metrics") as response,
        ):
            text: str = await response.text()
        return text

    async def metrics(self) -> OperatorMetrics:
        """The operator's own counters from ``/metrics``."""
        return OperatorMetrics.parse(await self.metrics_text(), self.controller)


def _pythonpath() -> str:
    """The repository root first, so that ``python -m bench.…`` works from any directory."""
    root = str(Path(__file__).resolve().parent.parent)
    return os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])


@dataclass(frozen=True)
class OperatorMetrics:
    """API requests by method, reconciles (of one controller: DatabaseUsers' by default) by result."""

    requests: dict[str, float]
    reconciles: dict[str, float]

    @classmethod
    def parse(cls, text: str, controller: str = USER_CONTROLLER) -> OperatorMetrics:
        requests: dict[str, float] = {}
        reconciles: dict[str, float] = {}
        for name, labels, value in parse_metrics(
            text, {"rest_client_requests_total", "controller_runtime_reconcile_total"}
        ):
            if name == "rest_client_requests_total":
                requests[labels["method"]] = requests.get(labels["method"], 0) + value
            elif labels.get("controller", controller) == controller:  # not the other kinds'
                reconciles[labels["result"]] = reconciles.get(labels["result"], 0) + value
        return cls(requests, reconciles)

    @property
    def writes(self) -> float:
        return sum(self.requests.get(method, 0) for method in API_WRITE_METHODS)

    @property
    def reads(self) -> float:
        return sum(value for method, value in self.requests.items() if method not in API_WRITE_METHODS)

    @property
    def reconcile_total(self) -> float:
        return sum(self.reconciles.values())


def operator(
    workdir: Path,
    kubeconfig: Path,
    mysql: MySQLAddress,
    namespace: str,
    *,
    concurrency: int | None,
    resync_period: float,
    log_name: str,
    leader_elect: bool = False,
    flags: Sequence[str] = (),
) -> Implementation:
    """``python -m dbuser_operator`` for the benchmark's target and namespace (``""``: every namespace),
    logging warnings only (``flags``: more of its flags).

    ``leader_elect``: as a replica of an HA install (a Lease in ``namespace``), every write fenced.
    """
    metrics_port, health_port = free_port(), free_port()
    env = {ADMIN_PASSWORD_ENV: mysql.password}
    traced = bool(os.environ.get(TRACEMALLOC_ENV))  # diagnosis: bench.traced_operator
    if traced:
        env[TRACEMALLOC_OUT_ENV] = str(workdir / f"{log_name}-tracemalloc.json")
    argv = [
        sys.executable,
        "-m",
        "bench.traced_operator" if traced else "dbuser_operator",
        f"--kubeconfig={kubeconfig}",
        *_mysql_flags(mysql),
        f"--target={TARGET}",
        *([f"--namespaces={namespace}"] if namespace else []),
        f"--ownership-schema={OWNERSHIP_SCHEMA}",
        f"--resync-period={resync_period:g}",
        f"--metrics-bind-address={LOOPBACK}:{metrics_port}",
        f"--health-probe-bind-address={LOOPBACK}:{health_port}",
        "--shutdown-timeout=5",
        f"--log-level={os.environ.get(LOG_LEVEL_ENV, 'warning')}",
    ]
    if concurrency is not None:
        argv.append(f"--max-concurrent-reconciles={concurrency}")
    argv += flags
    if leader_elect:
        argv += [
            "--leader-elect",
            f"--leader-election-namespace={namespace}",
            "--leader-election-identity=bench-operator",
        ]
    return Implementation(
        "operator",
        argv,
        workdir / f"{log_name}.log",
        env=env,
        metrics_port=metrics_port,
        health_port=health_port,
    )


def _mysql_flags(mysql: MySQLAddress) -> list[str]:
    """Where the MySQL server is, as every implementation's flags say it (the password goes by env)."""
    return [f"--mysql-host={mysql.host}", f"--mysql-port={mysql.port}", f"--mysql-user={mysql.user}"]


def _peer_argv(module: str, namespace: str, mysql: MySQLAddress, concurrency: int) -> list[str]:
    """``python -m module`` with the flags the floor and the kopf peer share."""
    return [
        sys.executable,
        "-m",
        module,
        f"--namespace={namespace}",
        *_mysql_flags(mysql),
        f"--concurrency={concurrency}",
    ]


def floor(
    workdir: Path,
    kubeconfig: Path,
    mysql: MySQLAddress,
    namespace: str,
    *,
    concurrency: int,
    log_name: str,
    events: bool = False,
    kind: str = "DatabaseUser",
) -> Implementation:
    """The floor of ``kind``'s job (``events``: with one Event per new object, as the operator posts)."""
    argv = [
        *_peer_argv("bench.floor", namespace, mysql, concurrency),
        f"--kubeconfig={kubeconfig}",
        f"--kind={kind}",
        *(["--events"] if events else []),
    ]
    return Implementation(
        "floor", argv, workdir / f"{log_name}.log", env={ADMIN_PASSWORD_ENV: mysql.password}
    )


def kopf_peer(
    workdir: Path, kubeconfig: Path, mysql: MySQLAddress, namespace: str, *, concurrency: int, log_name: str
) -> Implementation:
    argv = _peer_argv("bench.kopf_peer", namespace, mysql, concurrency)
    env = {ADMIN_PASSWORD_ENV: mysql.password, "KUBECONFIG": str(kubeconfig)}
    return Implementation("kopf", argv, workdir / f"{log_name}.log", env=env)
