"""The fixtures of the operator's end-to-end tests: the operator run in-process against the real API server
and MySQL server of the test environment, the password ledger and its leak check. Helpers: ``support/``."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster, LocalMySQLServer, MySQLServer
from dbuser_operator.envtest.certmanager import CertManager
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from tests.integration.operator.support.instances import (
    Instances,
    finalized_objects,
    forget_own,
    operator_processes,
)
from tests.integration.operator.support.kube import create_secret, read_settled
from tests.integration.operator.support.operator import (
    PasswordLedger,
    RunningOperator,
    StartOperator,
    capture_logs,
    component_logs,
)
from tests.support.pod_certificates import PodCertificates


@pytest.fixture(scope="session")
def passwords() -> PasswordLedger:
    return PasswordLedger()


@pytest.fixture(scope="session")
def operator_logs(envtest_workdir: Path) -> Iterator[Path]:
    """Where the in-process operators log: every line of every instance also goes to ``operator.log``."""
    log_dir = envtest_workdir / "operator"
    log_dir.mkdir(exist_ok=True)
    handler = capture_logs(log_dir / "operator.log")
    yield log_dir
    logging.getLogger().removeHandler(handler)
    handler.close()


@pytest.fixture
async def instances(
    kube: KubeCluster,
    mysql: MySQLServer,
    crds: list[str],
    operator_logs: Path,
    kube_api: client.ApiClient,
    passwords: PasswordLedger,
) -> AsyncIterator[Instances]:
    """The operator instances of this test: cleaned up and stopped when it ends, and whatever they leave
    behind fails it (``support/instances.py``). The server's admin password is checked for leaks too."""
    passwords.values.add(mysql.password)
    started = Instances(kube, mysql, operator_logs)
    yield started
    await started.finish(KubeClient(kube_api))


@pytest.fixture
def start_operator(instances: Instances) -> StartOperator:
    """Start an operator instance for this test: ``await start_operator(target=…, **settings)``."""
    return instances.start


@pytest.fixture(scope="module")
async def start_module_operator(
    kube: KubeCluster,
    mysql: MySQLServer,
    crds: list[str],
    operator_logs: Path,
    kube_api: client.ApiClient,
    passwords: PasswordLedger,
) -> AsyncIterator[StartOperator]:
    """``start_operator`` for a module's fixtures: the instances last until the module's tests are done."""
    passwords.values.add(mysql.password)
    started = Instances(kube, mysql, operator_logs)
    yield started.start
    await started.finish(KubeClient(kube_api))


@pytest.fixture
async def cert_manager_operator(
    instances: Instances, cert_manager: CertManager
) -> AsyncIterator[RunningOperator]:
    """``operator``, requesting client certificates from the session's real cert-manager."""
    try:
        yield await instances.start_own(resync_period=1.0, cert_manager=True)
    finally:
        forget_own()


@pytest.fixture
def server_ca(mysql_provider: MySQLServer | LocalMySQLServer) -> CertificateAuthority:
    """The CA the local MySQL server trusts for client certificates (``--ssl-ca``), with its key."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("needs a local server whose CA the test holds (MYSQL_URL or a container is in use)")
    return mysql_provider.ca


@pytest.fixture
async def operator(instances: Instances) -> AsyncIterator[RunningOperator]:
    """This test's own operator: a target and a bookkeeping schema of its own (the builders label with
    :func:`own_target`; :func:`own_schema` names the schema), every namespace, a drift check every second."""
    try:
        yield await instances.start_own(resync_period=1.0)
    finally:
        forget_own()


@pytest.fixture
async def workload_operator(
    instances: Instances, workload_signing_ca: Path | None, pod_certificates: PodCertificates
) -> AsyncIterator[RunningOperator]:
    """:func:`operator` with the signing CA of :func:`pod_certificates` (``--workload-signing-ca``): the
    workload identities it makes take the certificates those sign."""
    assert workload_signing_ca is not None  # pod_certificates skips otherwise
    try:
        yield await instances.start_own(resync_period=1.0, workload_signing_ca=workload_signing_ca)
    finally:
        forget_own()


@pytest.fixture(scope="session", autouse=True)
async def nothing_left_behind(kube_api: client.ApiClient) -> AsyncIterator[None]:
    """After the operator's tests: no process of the operator still runs (a replica, a render worker), and
    no object of the operator's kinds still carries its finalizers (its namespace could never go) — of
    any target: the in-process operators', the replicas' and the killed processes' of the fault tests."""
    yield
    processes = operator_processes()
    held = await finalized_objects(KubeClient(kube_api))
    assert not processes, f"operator processes left running: {processes}"
    assert not held, f"objects left with the operator's finalizers: {held}"


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
