"""Fixtures of the signer's tests: the signing CA (the one the session's MySQL server trusts for client
certificates, ``ssl_ca``), the operator signing with it, and a kubelet of a new Node."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.envtest import KubeCluster, LocalMySQLServer, MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import NAMESPACES
from tests.integration.operator.support.instances import Instances, forget_own
from tests.integration.operator.support.kubelet import Kubelet, kubelet
from tests.integration.operator.support.operator import RunningOperator

GRACE = 1.0  # seconds a request waits for its binding here (the default, 10 s, would only slow the tests)


@pytest.fixture(scope="session")
def signing_ca(mysql_provider: MySQLServer | LocalMySQLServer) -> CertificateAuthority:
    """The CA that signs workload certificates: the local MySQL server's own, which it trusts for client
    certificates (its ssl_ca), as a DBA sets the signing CA up (docs/workload-signer.md)."""
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip(
            "needs a local server, whose ssl_ca the test controls (MYSQL_URL or a container is in use)"
        )
    return mysql_provider.ca


@pytest.fixture(scope="session")
def signing_ca_dir(signing_ca: CertificateAuthority, envtest_workdir: Path) -> Path:
    """The CA as the chart mounts it: a kubernetes.io/tls Secret's files (``--workload-signing-ca``)."""
    return signing_ca.write_tls(envtest_workdir / "workload-signing-ca")


StartSigner = Callable[..., Awaitable[RunningOperator]]


@pytest.fixture
async def start_signer(instances: Instances, signing_ca_dir: Path) -> AsyncIterator[StartSigner]:
    """Start this test's own operator, signing pod certificates with the session's signing CA:
    ``await start_signer(**settings)``."""

    async def start(**overrides: Any) -> RunningOperator:
        settings = {"resync_period": 1.0, "workload_binding_grace": GRACE, **overrides}
        return await instances.start_own(workload_signing_ca=signing_ca_dir, **settings)

    try:
        yield start
    finally:
        forget_own()


@pytest.fixture
async def signer(start_signer: StartSigner) -> RunningOperator:
    """This test's own operator, signing pod certificates with the session's signing CA."""
    return await start_signer()


@pytest.fixture
async def node(kube: KubeCluster, kube_client: KubeClient, tmp_path: Path) -> AsyncIterator[Kubelet]:
    """A new Node and its kubelet, as ``system:node:<name>``."""
    async with kubelet(kube, kube_client, tmp_path) as playing:
        yield playing


@pytest.fixture
async def other_namespace(kube_client: KubeClient) -> AsyncIterator[str]:
    """A second fresh namespace for one test."""
    name = f"test-{uuid.uuid4().hex[:10]}"
    await kube_client.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    await kube_client.delete(NAMESPACES, name)
