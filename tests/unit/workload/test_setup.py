"""The signer is wired only with a signing CA, as a controller (run on the leader only, like every one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from dbuser_operator import app
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.settings import Settings
from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import POD_CERTIFICATE_REQUESTS
from dbuser_operator.workload.setup import CONTROLLER_NAME


async def controllers(**settings: Any) -> dict[str, Controller]:
    values: dict[str, Any] = {"kubeconfig": None, "metrics_bind_address": "127.0.0.1:0", **settings}
    async with client.ApiClient() as api:  # never used: building the manager sends nothing
        manager = app.build_manager(Settings(**values), KubeClient(api), None, server_resources=False)
    return {controller.name: controller for controller in manager.controllers}


async def test_without_a_signing_ca_there_is_no_signer() -> None:
    assert CONTROLLER_NAME not in await controllers()


async def test_with_a_signing_ca_the_signer_watches_its_requests_on_the_leader(tmp_path: Path) -> None:
    ca = CertificateAuthority("Workload CA").write_tls(tmp_path / "ca")
    built = await controllers(workload_signing_ca=ca, leader_elect=True, namespaces=["shop"])
    signer = built[CONTROLLER_NAME]
    [requests] = [i for i in signer.informers if i.resource == POD_CERTIFICATE_REQUESTS]
    assert requests.field_selector == f"spec.signerName={SIGNER_NAME}"
    assert requests.namespaces == ("shop",)
    assert signer.gate is not None  # reconciles only while the lease is held
