"""The fixtures of the operator's end-to-end tests: the operator run in-process against the real API server
and MySQL server of the test environment, the password ledger and its leak check. Helpers: ``support/``."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator import app
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.runtime.client import KubeClient
from tests.integration.operator.support.kube import create_secret, read_settled
from tests.integration.operator.support.operator import (
    SHUTDOWN_LIMIT,
    PasswordLedger,
    RunningOperator,
    StartOperator,
    capture_logs,
    component_logs,
    operator_settings,
    stopped_within,
)


@pytest.fixture(scope="session")
def passwords() -> PasswordLedger:
    return PasswordLedger()


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


@pytest.fixture(scope="session")
async def operator(start_operator: StartOperator) -> RunningOperator:
    """The session's operator: target "e2e", every namespace, a drift check every second."""
    return await start_operator(resync_period=1.0)


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


@pytest.fixture
async def secret(kube_client: KubeClient, namespace: str, passwords: PasswordLedger) -> str:
    """A Secret "pw" in the test namespace, its key "password" a new password of the ledger; the password."""
    password = passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    return password


@pytest.fixture
def kube_client(kube_api: client.ApiClient) -> KubeClient:
    return KubeClient(kube_api)
