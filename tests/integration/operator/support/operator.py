"""The operator, run in-process against the real API server and MySQL server of the test environment: its
settings, its logs, its shutdown, and the ledger of every password the suite hands it."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.envtest.mysql import GENERAL_LOG
from dbuser_operator.local import write_private
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


def component_logs(workdir: Path) -> list[Path]:
    """The logs of the operator and the servers, but the MySQL server's general log: that is the server's
    record of every statement as received, the tests' own included (passwords set by hand, as sent, on
    MariaDB). What the operator sends there is checked by test_password_secrecy.py: hashes on MariaDB,
    ``<secret>`` in MySQL's place."""
    return [path for path in workdir.rglob("*.log") if path.name != GENERAL_LOG]
