"""The chart's RBAC is what the signer needs: the operator runs with the token of the chart's ServiceAccount
(installed with workloadIdentity.signingCA.secretName), issues and denies, and is refused nothing — the API
server's own check of ``sign`` on the signer included (a status update without it is invalid)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster
from dbuser_operator.envtest.kubeconfig import current_cluster
from dbuser_operator.runtime.client import KubeClient
from tests.conftest import Runner
from tests.integration.operator.rbac.test_chart_rbac import (
    forbidden_responses,
    service_account_token,
    write_token_kubeconfig,
)
from tests.integration.operator.support.kubelet import Kubelet
from tests.integration.operator.support.operator import StartOperator
from tests.integration.operator.workload.conftest import GRACE
from tests.integration.operator.workload.support import bound_user, condition
from tests.unit.chart.chart import CHART

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("scope", ["cluster-wide", "namespaced"])
async def test_the_signer_runs_with_exactly_the_charts_permissions(
    scope: str,
    helm: Runner,
    kube: KubeCluster,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    start_operator: StartOperator,
    namespace: str,
    other_namespace: str,
    node: Kubelet,
    signing_ca_dir: Path,
    crds: list[str],
    tmp_path: Path,
) -> None:
    suffix = uuid.uuid4().hex[:6]
    release, target = f"signer-{suffix}", f"signer-rbac-{suffix}"
    watched = [other_namespace] if scope == "namespaced" else []
    arguments = ["--set", f"target={target}", "--set", "replicaCount=0"]
    arguments += ["--set", "workloadIdentity.signingCA.secretName=workload-ca"]
    if watched:
        arguments += ["--set", f"watchNamespaces={{{','.join(watched)}}}"]
    helm("install", release, str(CHART), "--namespace", namespace, "--skip-crds", *arguments)
    try:
        name = f"{release}-dbuser-operator"
        token = await service_account_token(kube_api, name, namespace)
        account = f"system:serviceaccount:{namespace}:{name}"
        kubeconfig = write_token_kubeconfig(
            tmp_path / "sa.kubeconfig", current_cluster(kube.kubeconfig), account, token
        )
        forbidden_before = forbidden_responses()
        await start_operator(
            kubeconfig=kubeconfig,
            target=target,
            namespaces=watched,
            cluster_resource_namespace=namespace,
            workload_signing_ca=signing_ca_dir,
            workload_binding_grace=GRACE,
        )
        where = other_namespace
        await kube_client.create(DATABASE_USERS, bound_user("app-db", "app", target), where)
        issued = await node.request(await node.pod(where, "app-0", "app"))
        denied = await node.request(await node.pod(where, "other-0", "other"))
        assert condition(await node.decided(where, issued))["type"] == "Issued"
        assert condition(await node.decided(where, denied))["reason"] == "ServiceAccountNotBound"
        # The kubelet (this process too) met 403s while the node authorizer lagged: not the operator's.
        refused = forbidden_responses() - forbidden_before - node.forbidden
        assert refused == 0, "the operator was refused something it needed"
    finally:
        helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "60s")
