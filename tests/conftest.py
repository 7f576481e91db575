"""Session fixtures for the real test environment: API server, MySQL server, CRDs, kubectl and helm.

Every integration fixture uses a real component (DESIGN.md §7); which one depends on the environment:
``KUBECONFIG`` names an existing cluster (kind in the users' CI), ``MYSQL_URL`` an existing MySQL server.
Otherwise the servers are started here from the test binaries (``hack/testbin.sh``) and the MySQL flavour
that ``DBUSER_OPERATOR_MYSQL_FLAVOUR`` names (MySQL 9.7 by default; see ``dbuser_operator.envtest.flavours``),
named in the report's header. Component logs are kept, and their last lines printed, when a test fails.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from kubernetes_asyncio import client

from dbuser_operator.envtest import (
    Binaries,
    KubeCluster,
    LocalMySQLServer,
    MySQLServer,
    connect_cluster,
    describe_mysql,
    install_crds,
    provide_mysql,
)
from dbuser_operator.envtest.certmanager import CLUSTER_RESOURCE_NAMESPACE, CertManager
from dbuser_operator.envtest.flavours import DEFAULT_FLAVOUR, selected_flavour
from dbuser_operator.envtest.fleet import Fleet, provide_fleet
from dbuser_operator.envtest.mysql import GENERAL_LOG
from dbuser_operator.envtest.process import stop_servers_on_sigterm
from tests.support import passes
from tests.support.pod_certificates import PodCertificates

REPO = Path(__file__).resolve().parent.parent
_KEPT_LOGS = pytest.StashKey[Path]()

Runner = Callable[..., subprocess.CompletedProcess[str]]

# Hypothesis's per-example deadline (200 ms by default) and its "too slow" health check are wall-clock
# bounds: a busy machine misses them (DESIGN.md §7). The number of examples stays bounded.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


def read_pins() -> dict[str, str]:
    """The pinned versions of hack/versions.env."""
    pins = {}
    for line in (REPO / "hack" / "versions.env").read_text().splitlines():
        assignment = line.split("#", 1)[0].strip()
        if "=" in assignment:
            key, value = assignment.split("=", 1)
            pins[key.strip()] = value.strip()
    return pins


def testbin_directory() -> Path:
    """Where hack/testbin.sh puts the binaries (``DBUSER_OPERATOR_TESTBIN`` overrides)."""
    configured = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    if configured:
        return Path(configured)
    script = REPO / "hack" / "testbin.sh"
    return Path(subprocess.run([script, "--dir"], capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="session")
def envtest_workdir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A temporary directory for the servers' state and logs; kept when a test failed."""
    path = Path(tempfile.mkdtemp(prefix="dbuser-operator-test-"))
    yield path
    if request.session.testsfailed:
        request.config.stash[_KEPT_LOGS] = path
    else:
        shutil.rmtree(path, ignore_errors=True)


def fleet_pass() -> bool:
    """Whether this session runs the ``fleet`` tests (three local servers of every flavour at once, whatever
    the selected flavour): the default flavour's pass only, without MYSQL_URL, so that hack/test.sh runs
    them once and not again in each flavour's pass."""
    return not os.environ.get("MYSQL_URL") and selected_flavour() == DEFAULT_FLAVOUR


def pytest_configure(config: pytest.Config) -> None:
    """SIGTERM (a CI job's timeout) stops the run as Ctrl-C does: fixtures tear down and every server this
    session started is stopped, instead of being left running under init."""
    stop_servers_on_sigterm()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that needs what hack/testbin.sh builds (a binary, a server, a root) is marked ``testbin``:
    the integration tests and those that use the ``binaries`` fixture; hack/test.sh runs the others while
    the binaries build. Of those, the tests that need the Go binaries (the ``binaries`` fixture) are marked
    ``gobin``: the others (the MySQL layer) run as soon as the server roots are there. Then each run keeps
    the tests whose result its server can change (``tests/support/passes.py``): on the default flavour
    every one, elsewhere only those that touch the server and are neither ``fleet`` nor ``one_flavour``,
    shared out between the MariaDB versions when hack/test.sh asks. (Every flavour started here has the
    DualPassword strategy: MySQL 9.7, MariaDB 11.8 and 10.11.)"""
    integration = REPO / "tests" / "integration"
    default_pass, shared, flavour = fleet_pass(), passes.shared_out(), selected_flavour()
    kept = []
    for item in items:
        names = getattr(item, "fixturenames", ())
        markers = {marker.name for marker in item.iter_markers()}
        if "binaries" in names or item.path.is_relative_to(integration):
            item.add_marker(pytest.mark.testbin)
        if passes.needs_go_binaries(names, markers) and "gobin" not in markers:
            item.add_marker(pytest.mark.gobin)
        path = item.path.relative_to(REPO).as_posix()
        if passes.runs_on(
            flavour, default_pass=default_pass, shared=shared, path=path, fixturenames=names, markers=markers
        ):
            kept.append(item)
    if len(kept) != len(items):
        selected = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in selected])
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The MySQL server the session runs against: flavour and version (or MYSQL_URL); none for a session
    of tests that need no server (``-m "not testbin"``, as the suite's first phase, which runs while the
    servers' roots are still being built)."""
    if config.option.markexpr.replace(" ", "") == "nottestbin":
        return ["mysql: not used (-m 'not testbin')"]
    return [describe_mysql()]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """After failures: where the component logs are, and their last lines."""
    kept = config.stash.get(_KEPT_LOGS, None)
    if kept is None:
        return
    terminalreporter.section("test environment logs")
    terminalreporter.write_line(f"kept in {kept}")
    for log in sorted(kept.rglob("*.log")):
        if log.name == GENERAL_LOG:  # every statement the server received: read it whole, in the directory
            continue
        lines = log.read_text(errors="replace").splitlines()[-30:]
        terminalreporter.write_line(f"--- {log.relative_to(kept)} (last {len(lines)} lines)")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    """The test binaries: ``KUBEBUILDER_ASSETS`` first, then those hack/testbin.sh built."""
    return Binaries.from_environment(testbin_directory())


@pytest.fixture(scope="session")
def kube(binaries: Binaries, envtest_workdir: Path) -> Iterator[KubeCluster]:
    """A real API server: ``KUBECONFIG``'s cluster, or etcd + kube-apiserver started here."""
    cluster = connect_cluster(binaries, envtest_workdir / "kube")
    yield cluster
    if cluster.control_plane is not None:
        cluster.control_plane.stop()


@pytest.fixture(scope="session")
async def kube_api(kube: KubeCluster) -> AsyncIterator[client.ApiClient]:
    """An admin API client for the whole session."""
    async with kube.api_client() as api:
        yield api


@pytest.fixture(scope="session")
async def crds(kube_api: client.ApiClient) -> list[str]:
    """The project's CRDs from crds/, installed and Established."""
    return await install_crds(kube_api, REPO / "crds")


@pytest.fixture(scope="session")
async def cert_manager(
    binaries: Binaries, kube: KubeCluster, kube_api: client.ApiClient, envtest_workdir: Path
) -> AsyncIterator[CertManager]:
    """cert-manager's real controller (built by hack/testbin.sh) against the local API server, its CRDs
    installed, and the namespace of its ClusterIssuers' Secrets (cert-manager)."""
    if kube.control_plane is None:
        pytest.skip("runs cert-manager's controller against the local API server only")
    manager = CertManager(
        binaries, read_pins()["CERT_MANAGER_VERSION"], kube.kubeconfig, envtest_workdir / "cert-manager"
    )
    await manager.install_crds(kube_api)
    core = client.CoreV1Api(kube_api)
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=CLUSTER_RESOURCE_NAMESPACE))
    await core.create_namespace(body, _request_timeout=30)
    await asyncio.to_thread(manager.start)
    yield manager
    await asyncio.to_thread(manager.stop)


@pytest.fixture(scope="session")
def mysql_provider(envtest_workdir: Path) -> Iterator[MySQLServer | LocalMySQLServer]:
    """Where the MySQL server comes from: ``MYSQL_URL``, a container, or a local server we control."""
    with provide_mysql(envtest_workdir / "mysql") as provided:
        yield provided


@pytest.fixture(scope="session")
def fleet(envtest_workdir: Path) -> Iterator[Fleet]:
    """Three local servers at once, one of each flavour (MySQL 9.7, MariaDB 11.8, MariaDB 10.11), each
    with its own data directory and port, any of them stoppable and restartable (``fleet.stopped(name)``);
    for the tests marked ``fleet`` (see :func:`fleet_pass`)."""
    with provide_fleet(envtest_workdir / "fleet") as servers:
        yield servers


@pytest.fixture(scope="session")
def workload_signing_ca(mysql_provider: MySQLServer | LocalMySQLServer, envtest_workdir: Path) -> Path | None:
    """The CA workload certificates are signed with, as a mounted ``kubernetes.io/tls`` Secret holds it
    (``--workload-signing-ca``): the local server's own CA, which is its ``ssl_ca``, so the server verifies
    what it signs. None for a server whose CA is not ours (``MYSQL_URL``, a container)."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        return None
    return mysql_provider.ca.write_tls(envtest_workdir / "workload-signing-ca")


@pytest.fixture(scope="session")
def pod_certificates(
    mysql_provider: MySQLServer | LocalMySQLServer, workload_signing_ca: Path | None, envtest_workdir: Path
) -> PodCertificates:
    """Workload client certificates signed with :func:`workload_signing_ca` (the tests play the signer);
    skipped where the server's CA is not ours (``MYSQL_URL``, a container)."""
    if workload_signing_ca is None or not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("needs a local server of the session's flavour (MYSQL_URL or a container is in use)")
    directory = envtest_workdir / "pod-certificates"
    directory.mkdir(exist_ok=True)
    return PodCertificates(mysql_provider.ca, directory)


@pytest.fixture(scope="session")
def mysql(mysql_provider: MySQLServer | LocalMySQLServer) -> MySQLServer:
    """Admin connection details of a real MySQL-compatible server."""
    return mysql_provider.admin if isinstance(mysql_provider, LocalMySQLServer) else mysql_provider


def _runner(binary: Path, env: dict[str, str]) -> Runner:
    def run(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(binary), *args], capture_output=True, text=True, check=check, env=env, timeout=timeout
        )

    return run


@pytest.fixture(scope="session")
def kubectl(binaries: Binaries, kube: KubeCluster) -> Runner:
    """Run the pinned real kubectl as the admin: ``kubectl("get", "dbu", "-A")``."""
    return _runner(binaries.path("kubectl"), {**os.environ, "KUBECONFIG": str(kube.kubeconfig)})


@pytest.fixture(scope="session")
def helm(binaries: Binaries, kube: KubeCluster, envtest_workdir: Path) -> Runner:
    """Run the pinned real helm as the admin, with its state kept in the test directory."""
    home = envtest_workdir / "helm"
    env = {
        **os.environ,
        "KUBECONFIG": str(kube.kubeconfig),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    return _runner(binaries.path("helm"), env)


@pytest.fixture
async def namespace(kube_api: client.ApiClient) -> AsyncIterator[str]:
    """A fresh namespace for one test (locally no namespace controller removes it: it stays Terminating)."""
    name = f"test-{uuid.uuid4().hex[:10]}"
    core = client.CoreV1Api(kube_api)
    await core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name)), _request_timeout=30
    )
    yield name
    await core.delete_namespace(name, _request_timeout=30)
