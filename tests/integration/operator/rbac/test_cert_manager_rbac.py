"""The chart's RBAC with certManager.enabled is enough for spec.tls.certificate, and no more: the
operator runs with a token of the chart's ServiceAccount, in the one namespace it watches; a certificate is
requested, issued by the real cert-manager, copied into the connection Secret and deleted with its
DatabaseUser without a single 403; the token may not touch another namespace's Certificates, Issuers,
ClusterIssuers, nor CertificateRequests beyond a list."""

from __future__ import annotations

import asyncio
import functools
import uuid
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.databaseuser.cert_manager import CERTIFICATES
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.envtest.certmanager import CertManager
from dbuser_operator.envtest.kubeconfig import current_cluster
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import Forbidden
from dbuser_operator.runtime.resources import SECRETS
from tests.conftest import Runner
from tests.integration.operator.rbac.test_chart_rbac import (
    forbidden_responses,
    service_account_token,
    write_token_kubeconfig,
)
from tests.integration.operator.support.builders import database_user
from tests.integration.operator.support.certmanager import ca_issuer, connect_with
from tests.integration.operator.support.kube import create_secret, deleted, wait_for_ready, wait_for_secret
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.wait import eventually
from tests.unit.chart.chart import CHART

pytestmark = [pytest.mark.integration, pytest.mark.one_flavour]  # the same on every MySQL flavour


async def test_the_charts_cert_manager_rules_are_enough_and_no_more(
    helm: Runner,
    kube: KubeCluster,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    crds: list[str],
    cert_manager: CertManager,
    start_operator: StartOperator,
    mysql: MySQLServer,
    server_ca: CertificateAuthority,
    passwords: PasswordLedger,
    namespace: str,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(kube_api)
    suffix = uuid.uuid4().hex[:6]
    app, release, target = f"{namespace}-app", f"cm-rbac-{suffix}", f"cm-rbac-{suffix}"
    await core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=app)), _request_timeout=30
    )
    arguments = ["--set", f"target={target}", "--set", "replicaCount=0", "--set", "certManager.enabled=true"]
    arguments += ["--set", f"watchNamespaces={{{app}}}", "--set", "leaderElection.enabled=false"]
    helm("install", release, str(CHART), "--namespace", namespace, "--skip-crds", *arguments)
    account = f"{release}-dbuser-operator"
    token = await service_account_token(kube_api, account, namespace)
    kubeconfig = write_token_kubeconfig(
        tmp_path / "sa.kubeconfig",
        current_cluster(kube.kubeconfig),
        f"system:serviceaccount:{namespace}:{account}",
        token,
    )
    forbidden_before = forbidden_responses()
    instance = await start_operator(
        kubeconfig=kubeconfig, target=target, namespaces=[app], cert_manager=True, resync_period=1.0
    )
    try:
        await ca_issuer(kube_client, server_ca, "clients", app)
        await create_secret(kube_client, app, "pw", {"password": passwords.new()})
        user = f"rbac-{suffix}"
        tls = {
            "subject": f"/O=dbuser-operator-tests/CN={user}",
            "certificate": {"issuerRef": {"name": "clients"}},
        }
        body = database_user(user, "pw", target=target, tls=tls, connectionSecret={"name": user})
        await kube_client.create(DATABASE_USERS, body, app)
        await wait_for_ready(kube_client, app, user, limit=120)
        connection = await wait_for_secret(kube_client, app, user, lambda s: "tls.crt" in s["data"])
        assert connect_with(connection, tmp_path / "login") == f"{user}@%"

        await kube_client.delete(DATABASE_USERS, user, app)
        for resource, name in ((DATABASE_USERS, user), (CERTIFICATES, user), (SECRETS, f"{user}-client-tls")):
            await eventually(
                functools.partial(deleted, kube_client, resource, app, name),
                limit=60,
                message=f"{resource.kind} {name} was not deleted",
            )
        assert forbidden_responses() == forbidden_before, "the operator was refused something it needed"
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=30)

    async with kube.api_client(kubeconfig=kubeconfig) as api:
        token_client = KubeClient(api)
        for call in (
            token_client.list(CERTIFICATES, namespace),  # not a watched namespace
            token_client.request("GET", f"/apis/cert-manager.io/v1/namespaces/{app}/certificaterequests/x"),
            token_client.request("GET", f"/apis/cert-manager.io/v1/namespaces/{app}/issuers"),
            token_client.request("GET", "/apis/cert-manager.io/v1/clusterissuers"),
        ):
            with pytest.raises(Forbidden):
                await call
    helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "60s")
    await core.delete_namespace(app, _request_timeout=30)
