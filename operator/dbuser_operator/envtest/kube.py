"""The Kubernetes side of the test environment: an existing cluster, or etcd + kube-apiserver started here.

A local control plane is set up the way controller-runtime's envtest does it: RBAC authorization,
client-certificate authentication against a generated CA (the admin is in ``system:masters``), a
service-account signing key, and the ServiceAccount admission plugin off. As in a real cluster, the Node
authorizer and the NodeRestriction admission plugin are on too, so that a test can act as a kubelet with a
certificate of ``system:node:<name>`` (``issue_kubeconfig``), e.g. to create PodCertificateRequests. There
is no controller-manager and no kubelet, so no garbage collection and no running pods. Every write is
recorded in an audit log (``audit_log``: JSON lines at Metadata level, with the user who wrote), so that
tests can tell which client wrote what, and when.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import secrets
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID
from kubernetes_asyncio import client, config

from dbuser_operator.envtest.binaries import Binaries
from dbuser_operator.envtest.kubeconfig import cluster_entry, current_cluster, write_kubeconfig
from dbuser_operator.envtest.pki import (
    CertificateAuthority,
    KeyPair,
    new_private_key,
    private_key_pem,
    public_key_pem,
)
from dbuser_operator.envtest.ports import LOOPBACK, free_port
from dbuser_operator.envtest.process import ManagedProcess, on_free_ports
from dbuser_operator.runtime.client import api_client

ADMIN_USER = "envtest-admin"
ADMIN_GROUPS = ("system:masters",)
# Writes at Metadata level (who, what, when, the response code; no bodies, so no secrets); nothing else.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
"""


def audit_policy(users: Sequence[str] = ()) -> str:
    """:data:`AUDIT_POLICY`; with ``users``, every request of those users at Metadata level and nobody
    else's instead (a benchmark: one client's requests, at no cost to the others')."""
    if not users:
        return AUDIT_POLICY
    return (
        'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n'
        f"  - level: Metadata\n    users: {json.dumps(list(users))}\n  - level: None\n"
    )


_REQUEST_TIMEOUT = 30


class LocalControlPlane:
    """etcd and kube-apiserver on free loopback ports, with all state under ``workdir``."""

    def __init__(
        self,
        binaries: Binaries,
        workdir: Path,
        *,
        audit: bool = True,
        audit_users: Sequence[str] = (),
        feature_gates: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self.feature_gates = tuple(feature_gates)  # the API server's, e.g. "WatchList=false"
        self.audit = audit or bool(audit_users)  # False: no audit log (benchmarks: it taxes every write)
        self.audit_users = tuple(audit_users)  # only these users' requests, all of them (audit_policy)
        self._pki = workdir / "pki"
        self._ca = CertificateAuthority()
        self.etcd_url = f"http://{LOOPBACK}:{free_port()}"
        self.server_url = f"https://{LOOPBACK}:{free_port()}"
        self.apiserver_binary = binaries.path("kube-apiserver")
        self._etcd_binary = binaries.path("etcd")
        self._etcd = self._etcd_process()
        self._apiserver = self._apiserver_process()
        self.admin_kubeconfig = workdir / "admin.kubeconfig"
        self.audit_log = workdir / "audit.jsonl"

    @property
    def ca_pem(self) -> bytes:
        """The CA that signs the serving certificate and every client certificate."""
        return self._ca.cert_pem

    def start(self) -> None:
        """Start etcd, then the API server; return once ``/readyz`` answers ok. A port taken before etcd or
        the API server bound it is traded for another (:func:`~.process.on_free_ports`); the admin
        kubeconfig names the port the API server got."""
        self._write_pki()
        (self._pki / "audit-policy.yaml").write_text(audit_policy(self.audit_users))
        on_free_ports(self._start_etcd, self._repick_etcd)
        on_free_ports(self.start_apiserver, self._repick_apiserver)
        self.issue_kubeconfig(ADMIN_USER, ADMIN_GROUPS, self.admin_kubeconfig)

    def _start_etcd(self) -> None:
        self._etcd.start_ready(lambda: _http_ok(f"{self.etcd_url}/health", None), timeout=30)

    def start_apiserver(self) -> None:
        """(Re)start the API server alone, on the same port and storage."""
        self._apiserver.start_ready(self._apiserver_ready, timeout=120)

    def _apiserver_ready(self) -> bool:
        return _http_ok(f"{self.server_url}/readyz", self._ssl())

    def _repick_etcd(self) -> None:
        self.etcd_url = f"http://{LOOPBACK}:{free_port()}"
        self._etcd = self._etcd_process()
        self._apiserver = self._apiserver_process()  # which names etcd's URL

    def _repick_apiserver(self) -> None:
        self.server_url = f"https://{LOOPBACK}:{free_port()}"
        self._apiserver = self._apiserver_process()

    def _etcd_process(self) -> ManagedProcess:
        return ManagedProcess("etcd", self._etcd_argv(self._etcd_binary), self.workdir / "etcd.log")

    def _apiserver_process(self) -> ManagedProcess:
        return ManagedProcess("kube-apiserver", self._apiserver_argv(), self.workdir / "kube-apiserver.log")

    def stop_apiserver(self) -> None:
        """Stop the API server alone (etcd keeps the state)."""
        self._apiserver.stop()

    def stop(self) -> None:
        """Stop both servers."""
        self._apiserver.stop()
        self._etcd.stop()

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (watches from older versions get 410 Gone)."""
        revision = int(_etcd_call(self.etcd_url, "/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        _etcd_call(self.etcd_url, "/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def processes(self) -> Sequence[ManagedProcess]:
        """The managed servers, for their logs."""
        return (self._etcd, self._apiserver)

    def issue_kubeconfig(self, user: str, groups: Sequence[str], path: Path) -> Path:
        """A kubeconfig that authenticates as ``user`` in ``groups`` with a client certificate."""
        credentials = self._ca.issue_client(user, groups)
        return write_kubeconfig(path, cluster_entry(self.server_url, self.ca_pem), user, credentials)

    def _etcd_argv(self, binary: Path) -> list[str]:
        peer_url = f"http://{LOOPBACK}:{free_port()}"
        return [
            str(binary),
            f"--data-dir={self.workdir / 'etcd-data'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def _audit_argv(self) -> list[str]:
        if not self.audit:
            return []
        return [
            f"--audit-policy-file={self._pki / 'audit-policy.yaml'}",
            f"--audit-log-path={self.workdir / 'audit.jsonl'}",
            "--audit-log-maxsize=0",
        ]

    def _apiserver_argv(self) -> list[str]:
        port = self.server_url.rsplit(":", 1)[1]
        return [
            str(self.apiserver_binary),
            f"--etcd-servers={self.etcd_url}",
            f"--secure-port={port}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            "--endpoint-reconciler-type=none",  # a loopback advertise address needs it off
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={self._pki / 'serving.crt'}",
            f"--tls-private-key-file={self._pki / 'serving.key'}",
            f"--client-ca-file={self._pki / 'ca.crt'}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={self.server_url}",
            f"--service-account-key-file={self._pki / 'sa.pub'}",
            f"--service-account-signing-key-file={self._pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--disable-admission-plugins=ServiceAccount",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            *self._audit_argv(),
            *([f"--feature-gates={','.join(self.feature_gates)}"] if self.feature_gates else []),
            "--v=1",
        ]

    def _write_pki(self) -> None:
        self._pki.mkdir(parents=True, exist_ok=True)
        serving = self._ca.issue_server(["localhost"], [LOOPBACK])
        admin = self._ca.issue_client(ADMIN_USER, ADMIN_GROUPS)
        service_account_key = new_private_key()
        files = {
            "ca.crt": self.ca_pem,
            "serving.crt": serving.cert_pem,
            "serving.key": serving.key_pem,
            "admin.crt": admin.cert_pem,
            "admin.key": admin.key_pem,
            "sa.key": private_key_pem(service_account_key),
            "sa.pub": public_key_pem(service_account_key),
        }
        for name, data in files.items():
            (self._pki / name).write_bytes(data)
            (self._pki / name).chmod(0o600)

    def _ssl(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self._pki / "ca.crt"))
        context.load_cert_chain(self._pki / "admin.crt", self._pki / "admin.key")
        return context


def _etcd_call(etcd_url: str, path: str, body: dict[str, object]) -> dict[str, Any]:
    """A call to etcd's JSON gateway."""
    request = urllib.request.Request(  # noqa: S310 - loopback only
        etcd_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback only
        answer: dict[str, Any] = json.load(response)
        return answer


def _http_ok(url: str, context: ssl.SSLContext | None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:  # noqa: S310 - loopback only
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class KubeCluster:
    """A reachable API server and an admin kubeconfig for it; ``control_plane`` is set when it runs here."""

    kubeconfig: Path
    control_plane: LocalControlPlane | None = None

    @property
    def is_local(self) -> bool:
        """Whether the API server was started by this test environment."""
        return self.control_plane is not None

    @asynccontextmanager
    async def api_client(self, kubeconfig: Path | None = None) -> AsyncIterator[client.ApiClient]:
        """An async API client for ``kubeconfig`` (the admin's by default), closed on exit."""
        configuration = client.Configuration()
        await config.load_kube_config(
            config_file=str(kubeconfig or self.kubeconfig), client_configuration=configuration
        )
        async with api_client(configuration) as api:
            yield api

    async def mint_kubeconfig(self, user: str, groups: Sequence[str], path: Path) -> Path:
        """A kubeconfig for ``user`` in ``groups``, for RBAC tests.

        Locally the certificate comes from the test CA; on an existing cluster (kind) through the
        CertificateSigningRequest API, approved by the admin.
        """
        if self.control_plane is not None:
            return self.control_plane.issue_kubeconfig(user, groups, path)
        credentials = await self._certificate_from_csr(user, groups)
        return write_kubeconfig(path, current_cluster(self.kubeconfig), user, credentials)

    async def _certificate_from_csr(self, user: str, groups: Sequence[str]) -> KeyPair:
        key = new_private_key()
        subject = [x509.NameAttribute(NameOID.COMMON_NAME, user)]
        subject += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        request = (
            x509.CertificateSigningRequestBuilder()
            .subject_name(x509.Name(subject))
            .sign(key, hashes.SHA256())
        )
        name = f"envtest-{re.sub(r'[^a-z0-9-]', '-', user.lower())[:40]}-{secrets.token_hex(4)}"
        body = client.V1CertificateSigningRequest(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1CertificateSigningRequestSpec(
                request=base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                signer_name="kubernetes.io/kube-apiserver-client",
                usages=["client auth"],
                expiration_seconds=86400,
            ),
        )
        async with self.api_client() as api:
            certificates = client.CertificatesV1Api(api)
            csr = await certificates.create_certificate_signing_request(
                body, _request_timeout=_REQUEST_TIMEOUT
            )
            csr.status = client.V1CertificateSigningRequestStatus(
                conditions=[
                    client.V1CertificateSigningRequestCondition(
                        type="Approved", status="True", reason="EnvtestMint", message="minted for a test"
                    )
                ]
            )
            await certificates.replace_certificate_signing_request_approval(
                name, csr, _request_timeout=_REQUEST_TIMEOUT
            )
            for _ in range(300):
                csr = await certificates.read_certificate_signing_request(
                    name, _request_timeout=_REQUEST_TIMEOUT
                )
                if csr.status and csr.status.certificate:
                    certificate = base64.b64decode(csr.status.certificate)
                    await certificates.delete_certificate_signing_request(
                        name, _request_timeout=_REQUEST_TIMEOUT
                    )
                    return KeyPair(certificate, private_key_pem(key))
                await asyncio.sleep(0.1)
        raise TimeoutError(f"CertificateSigningRequest {name} was approved but not signed within 30 s")


def apiserver_binary_version(binary: Path) -> str:
    """What ``kube-apiserver --version`` reports, e.g. ``v1.37.1``."""
    output = subprocess.run(  # noqa: S603 - our own binary
        [str(binary), "--version"], capture_output=True, text=True, check=True
    ).stdout
    return output.split()[-1]


def connect_cluster(
    binaries: Binaries, workdir: Path, *, audit: bool = True, audit_users: Sequence[str] = ()
) -> KubeCluster:
    """The cluster that ``KUBECONFIG`` names, or else a local control plane started under ``workdir``
    (``audit``: with its audit log; ``audit_users``: of those users' requests only, :func:`audit_policy`)."""
    external = os.environ.get("KUBECONFIG")
    if external:
        return KubeCluster(kubeconfig=Path(external.split(os.pathsep)[0]))
    control_plane = LocalControlPlane(binaries, workdir, audit=audit, audit_users=audit_users)
    try:
        control_plane.start()
    except BaseException:
        control_plane.stop()
        raise
    return KubeCluster(kubeconfig=control_plane.admin_kubeconfig, control_plane=control_plane)
