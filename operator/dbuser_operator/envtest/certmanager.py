"""cert-manager's real controller against the test API server.

``hack/testbin.sh`` builds it (``hack/cert-manager/main.go`` over the published module, upstream's controllers
unchanged) into ``cert-manager-<version>/`` of the test binaries, with the CRDs of the same module version
(its ``deploy/crds``, which cert-manager's own integration tests load). Here the CRDs are installed, and the
controller runs with the admin's kubeconfig, no leader election, and only the controllers a CA issuer needs:
Issuers and ClusterIssuers, the CertificateRequest approver and CA signer, and the Certificate controllers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from kubernetes_asyncio import client

from dbuser_operator.envtest.binaries import Binaries
from dbuser_operator.envtest.crds import install_crds
from dbuser_operator.envtest.process import ManagedProcess

CONTROLLER: Final = "cert-manager-controller"
CONTROLLERS: Final = (
    "issuers",
    "clusterissuers",
    "certificaterequests-approver",
    "certificaterequests-issuer-ca",
    "certificates-trigger",
    "certificates-issuing",
    "certificates-key-manager",
    "certificates-request-manager",
    "certificates-readiness",
    "certificates-revision-manager",
)
CLUSTER_RESOURCE_NAMESPACE: Final = "cert-manager"
"""Where the Secrets of ClusterIssuers live (cert-manager's --cluster-resource-namespace)."""

_STARTED: Final = re.compile(r'"starting controller".*controller="([a-z-]+)"')


class CertManager:
    """The controller of one test session: :meth:`start` installs the CRDs and runs it; :meth:`stop`."""

    def __init__(self, binaries: Binaries, version: str, kubeconfig: Path, workdir: Path) -> None:
        self.binary = binaries.path(f"cert-manager-{version}/{CONTROLLER}")
        self.crds = self.binary.parent / "crds"
        self.process = ManagedProcess(
            CONTROLLER,
            [
                str(self.binary),
                f"--kubeconfig={kubeconfig}",
                f"--cluster-resource-namespace={CLUSTER_RESOURCE_NAMESPACE}",
                f"--controllers={','.join(CONTROLLERS)}",
                "--v=2",
            ],
            workdir / "cert-manager.log",
        )

    async def install_crds(self, api: client.ApiClient) -> list[str]:
        """cert-manager's CRDs, Established."""
        return await install_crds(api, self.crds)

    def start(self) -> None:
        """Run the controller until each of its controllers has started (its informers then sync)."""
        self.process.start_ready(self._all_started, timeout=120)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        self.process.stop(timeout=15)

    def _all_started(self) -> bool:
        try:
            text = self.process.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return False
        return set(_STARTED.findall(text)) >= set(CONTROLLERS)
