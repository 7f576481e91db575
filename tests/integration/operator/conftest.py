"""The operator, run in-process against the real API server and MySQL server of the test environment."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator import app
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.envtest.mysql import GENERAL_LOG
from dbuser_operator.local import write_private
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import Unavailable
from dbuser_operator.runtime.logging import configure_logging
from dbuser_operator.settings import Settings

TARGET = "e2e"


@dataclass
class RunningOperator:
    """An operator instance and what it left behind."""

    settings: Settings
    log_path: Path
    task: asyncio.Task[None]
    stop: asyncio.Event


@dataclass
class PasswordLedger:
    """Every password the suite hands the operator, to prove none leaks."""

    values: set[str] = field(default_factory=set)

    def new(self, prefix: str = "pw") -> str:
        value = f"{prefix}-{secrets.token_urlsafe(12)}"
        self.values.add(value)
        return value


@pytest.fixture(scope="session")
def passwords() -> PasswordLedger:
    return PasswordLedger()


def operator_settings(kube: KubeCluster, mysql: MySQLServer, workdir: Path, **overrides: Any) -> Settings:
    password_file = write_private(workdir / "mysql-admin-password", mysql.password)
    values: dict[str, Any] = {
        "kubeconfig": kube.kubeconfig,
        "mysql_host": mysql.host,
        "mysql_port": mysql.port,
        "mysql_user": mysql.user,
        "mysql_password_file": password_file,
        "mysql_tls_ca": mysql.ca_file,
        "mysql_connect_timeout": 2.0,
        "target": TARGET,
        "metrics_bind_address": "127.0.0.1:0",
        "health_probe_bind_address": "127.0.0.1:0",
        "shutdown_timeout": 5.0,
        "log_format": "json",
        "log_level": "debug",
        **overrides,
    }
    return Settings(**values)


def capture_logs(path: Path) -> logging.Handler:
    """Send every log line (JSON) to ``path`` as well, for the leak check; the files earlier calls opened
    keep theirs (``configure_logging`` replaces the root logger's handlers)."""
    root = logging.getLogger()
    files = [handler for handler in root.handlers if isinstance(handler, logging.FileHandler)]
    configure_logging("json", "debug")
    handler = logging.FileHandler(path)
    handler.setFormatter(root.handlers[0].formatter)
    root.handlers.extend([*files, handler])
    return handler


StartOperator = Callable[..., Awaitable[RunningOperator]]


@pytest.fixture(scope="session")
async def start_operator(
    kube: KubeCluster, mysql: MySQLServer, crds: list[str], envtest_workdir: Path
) -> AsyncIterator[StartOperator]:
    """Start operator instances (stopped at the end of the session); their logs go to files."""
    running: list[RunningOperator] = []
    log_dir = envtest_workdir / "operator"
    log_dir.mkdir(exist_ok=True)
    handler = capture_logs(log_dir / "operator.log")

    async def start(**overrides: Any) -> RunningOperator:
        settings = operator_settings(kube, mysql, log_dir, **overrides)
        stop = asyncio.Event()
        task = asyncio.create_task(app.run(settings, stop))
        instance = RunningOperator(settings, log_dir / "operator.log", task, stop)
        running.append(instance)
        await asyncio.sleep(0)
        return instance

    yield start
    for instance in running:
        instance.stop.set()
    try:
        await stopped_within(SHUTDOWN_LIMIT, [i.task for i in running])
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()


SHUTDOWN_LIMIT = 60.0  # every instance's shutdown_timeout (5 s) and then some


def awaiting(coroutine: Any) -> str:
    """Where a suspended coroutine waits: the chain of its awaits, outermost first, one frame a line."""
    lines = []
    while coroutine is not None:
        frame = getattr(coroutine, "cr_frame", None) or getattr(coroutine, "gi_frame", None)
        if frame is not None:
            lines.append(f"    {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}\n")
        coroutine = getattr(coroutine, "cr_await", None) or getattr(coroutine, "gi_yieldfrom", None)
    return "".join(lines)


async def stopped_within(limit: float, tasks: list[asyncio.Task[Any]]) -> None:
    """Wait for stopped operator instances; one still running after ``limit`` seconds is a shutdown that
    hangs: fail naming where every task of the loop waits (then cancel the instances)."""
    _, pending = await asyncio.wait(tasks, timeout=limit) if tasks else (set(), set())
    if not pending:
        return
    stacks = [
        f"  {task.get_name()}\n{awaiting(task.get_coro())}"
        for task in asyncio.all_tasks()
        if task is not asyncio.current_task()
    ]
    for task in pending:
        task.cancel()
    await asyncio.wait(pending, timeout=10)
    pytest.fail(
        f"{len(pending)} operator instance(s) still running {limit:g} s after stop; tasks:\n"
        + "".join(stacks)
    )


@pytest.fixture(scope="session")
async def operator(start_operator: StartOperator) -> RunningOperator:
    """The session's operator: target "e2e", every namespace, a drift check every second."""
    return await start_operator(resync_period=1.0)


def component_logs(workdir: Path) -> list[Path]:
    """The logs of the operator and the servers, but the MySQL server's general log: that is the server's
    record of every statement as received, the tests' own included (passwords set by hand, as sent, on
    MariaDB). What the operator sends there is checked by test_password_secrecy.py: hashes on MariaDB,
    ``<secret>`` in MySQL's place."""
    return [path for path in workdir.rglob("*.log") if path.name != GENERAL_LOG]


@pytest.fixture(scope="session", autouse=True)
async def no_password_leaks(
    request: pytest.FixtureRequest,
    passwords: PasswordLedger,
    kube: KubeCluster,
    envtest_workdir: Path,
) -> AsyncIterator[None]:
    """After the suite: no password in any log line, Event, status (DatabaseUsers, server resources) or
    component log."""
    yield
    if not passwords.values:
        return
    async with kube.api_client() as api:
        kube_client = KubeClient(api)
        events = await read_settled(kube_client, "/api/v1/events")
        listed = [
            await read_settled(kube_client, f"/apis/mysql.dbuser-operator.dev/v1alpha1/{plural}")
            for plural in ("databaseusers", "mysqlservers", "clustermysqlservers")
        ]
    statuses = [item.get("status") for items in listed for item in items.get("items", [])]
    texts = {
        "events": json.dumps(events),
        "statuses": json.dumps(statuses),
        **{str(path): path.read_text(errors="replace") for path in component_logs(envtest_workdir)},
    }
    leaks = [(where, value) for where, text in texts.items() for value in passwords.values if value in text]
    assert leaks == [], f"passwords leaked into: {sorted({where for where, _ in leaks})}"
    # an operator's own log was scanned (the in-process one's, or a replica process's)
    assert any("operator" in Path(where).parent.parts for where in texts)


async def read_settled(kube: KubeClient, path: str, limit: float = 30.0) -> dict[str, Any]:
    """GET ``path``, again while the API server answers 429/5xx (a resource's storage still initialising
    after its CRD was installed, in a short session): the check must read, not fail on a busy server."""
    deadline = asyncio.get_running_loop().time() + limit
    while True:
        try:
            return await kube.request("GET", path)
        except Unavailable:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


async def create_secret(kube: KubeClient, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    from dbuser_operator.runtime.resources import SECRETS  # noqa: PLC0415

    return await kube.create(SECRETS, {"metadata": {"name": name}, "stringData": data}, namespace)


@pytest.fixture
def kube_client(kube_api: client.ApiClient) -> KubeClient:
    return KubeClient(kube_api)
