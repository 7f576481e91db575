"""Fixtures of the fault tests: real operator processes of one instance (the replicas harness)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.integration.operator.support.instances import Instances
from tests.integration.operator.support.operator import PasswordLedger
from tests.integration.operator.support.replicas import Failover, GeneralLog


@pytest.fixture
async def replica_pair(
    kube: KubeCluster,
    mysql: MySQLServer,
    crds: list[str],
    namespace: str,
    kube_api: client.ApiClient,
    envtest_workdir: Path,
    instances: Instances,
    passwords: PasswordLedger,
) -> AsyncIterator[Failover]:
    """Replicas ``a`` and ``b`` of one instance in ``namespace`` (their MySQL passwords checked for
    leaks); what they managed is cleaned up with the test."""
    workdir = envtest_workdir / "operator" / namespace  # the replicas' logs are checked for leaks too
    workdir.mkdir(parents=True)
    setup = Failover(kube, mysql, namespace, workdir)
    await setup.prepare(kube_api, "a", "b")
    passwords.values.update(setup.admin_passwords)
    try:
        yield setup
    finally:
        await setup.tear_down(kube_api, instances)


@pytest.fixture
def failover(replica_pair: Failover, mysql: MySQLServer) -> Iterator[Failover]:
    """:func:`replica_pair`, the general log on (the failover tests read who sent what)."""
    with GeneralLog(mysql):
        yield replica_pair
