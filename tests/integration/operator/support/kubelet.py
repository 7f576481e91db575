"""Playing the kubelet for Pod Certificates (there is no kubelet in the test environment).

What the kubelet does for a pod with a ``podCertificate`` projected volume (pkg/kubelet/podcertificate in
Kubernetes 1.37): it reads the pod's ServiceAccount (for its UID) and its own Node (for its UID), makes a
fresh key of the volume's ``keyType`` and an *empty* PKCS#10 request signed with it, and creates a
PodCertificateRequest (``generateName: req-``, owned by the pod) as ``system:node:<name>`` — the API server's
Node authorizer and NodeRestriction admission check that it may. To refresh, it does the same again: a new
key, a new request. Here a :class:`Kubelet` does exactly that, with a certificate of ``system:node:<name>``
(group ``system:nodes``) from the test environment's PKI; pods are created bound to its Node and never run.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from dbuser_operator.envtest import KubeCluster
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import ApiError, Conflict, NotFound
from dbuser_operator.runtime.resources import Resource
from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import (
    POD_CERTIFICATE_REQUESTS,
    PODS,
    SERVICE_ACCOUNTS,
    decision,
)
from tests.integration.operator.support.wait import eventually

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


def new_key(key_type: str) -> PrivateKey:
    """A key of a podCertificate volume's ``keyType``, as the kubelet makes it."""
    if key_type == "ED25519":
        return ed25519.Ed25519PrivateKey.generate()
    if key_type.startswith("RSA"):
        return rsa.generate_private_key(65537, int(key_type.removeprefix("RSA")))
    curves = {"ECDSAP256": ec.SECP256R1(), "ECDSAP384": ec.SECP384R1(), "ECDSAP521": ec.SECP521R1()}
    return ec.generate_private_key(curves[key_type])


def stub_request(key: PrivateKey, builder: x509.CertificateSigningRequestBuilder | None = None) -> bytes:
    """The PKCS#10 request, DER: the kubelet's is empty (``x509.CreateCertificateRequest`` of an empty
    template); ``builder`` makes a forged one (a subject, DNS names, usages)."""
    builder = builder or x509.CertificateSigningRequestBuilder().subject_name(x509.Name([]))
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.DER)


def key_pem(key: PrivateKey) -> bytes:
    """The key as the kubelet writes it into the volume: PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def pod_certificate_pod(
    name: str, service_account: str, node: str, signer: str = SIGNER_NAME, key_type: str = "ECDSAP256"
) -> dict[str, Any]:
    """A pod bound to ``node`` that mounts a podCertificate volume of ``signer`` (it never runs)."""
    source = {
        "signerName": signer,
        "keyType": key_type,
        "maxExpirationSeconds": 86400,
        "credentialBundlePath": "credentials.pem",
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "serviceAccountName": service_account,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.invalid/app:1",
                    "volumeMounts": [{"name": "mysql-client", "mountPath": "/var/run/mysql-client"}],
                }
            ],
            "volumes": [{"name": "mysql-client", "projected": {"sources": [{"podCertificate": source}]}}],
        },
    }


@dataclass
class Credentials:
    """What the kubelet would write into the pod's volume: the key and, once issued, the chain."""

    request: str  # the PodCertificateRequest's name
    key: PrivateKey
    chain_pem: str = ""

    def write(self, directory: Path) -> tuple[Path, Path]:
        """``tls.crt`` (the chain) and ``tls.key`` in ``directory``, for a MySQL client."""
        directory.mkdir(parents=True, exist_ok=True)
        cert, key = directory / "tls.crt", directory / "tls.key"
        cert.write_text(self.chain_pem)
        key.write_bytes(key_pem(self.key))
        key.chmod(0o600)
        return cert, key

    def write_bundle(self, path: Path) -> Path:
        """The volume's ``credentialBundlePath`` file: the PKCS#8 key, then the chain, in one PEM file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(key_pem(self.key) + self.chain_pem.encode())
        path.chmod(0o600)
        return path

    @property
    def leaf(self) -> x509.Certificate:
        return x509.load_pem_x509_certificates(self.chain_pem.encode())[0]


class Kubelet:
    """A Node and the kubelet's side of Pod Certificates, as ``system:node:<name>``."""

    def __init__(self, admin: KubeClient, node: KubeClient, name: str, uid: str) -> None:
        self.admin = admin  # creates the pods (a kubelet does not: the API does, for a controller)
        self.kube = node  # the kubelet's own client
        self.name = name
        self.uid = uid
        self.forbidden = 0  # 403s its requests met while the API server's caches lagged (and were retried)

    async def pod(self, namespace: str, name: str, service_account: str, **options: Any) -> dict[str, Any]:
        """A pod of ``service_account`` bound to this node (the ServiceAccount is made if missing)."""
        with contextlib.suppress(Conflict):  # already there
            await self.admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": service_account}}, namespace)
        body = pod_certificate_pod(name, service_account, self.name, **options)
        return await self.admin.create(PODS, body, namespace)

    async def request(
        self,
        pod: dict[str, Any],
        *,
        key_type: str = "ECDSAP256",
        max_expiration_seconds: int = 86400,
        stub: bytes | None = None,
        key: PrivateKey | None = None,
        as_admin: bool = False,
        **spec: Any,
    ) -> Credentials:
        """Create a PodCertificateRequest for ``pod`` as the kubelet does (``spec`` overrides fields: a
        forged request, which only ``as_admin`` gets past NodeRestriction)."""
        namespace, pod_name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        account_name = pod["spec"]["serviceAccountName"]
        account = await self._settled(lambda: self.kube.get(SERVICE_ACCOUNTS, account_name, namespace))
        key = key or new_key(key_type)
        body = {
            "metadata": {
                "generateName": "req-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod["metadata"]["uid"]}
                ],
            },
            "spec": {
                "signerName": SIGNER_NAME,
                "podName": pod_name,
                "podUID": pod["metadata"]["uid"],
                "serviceAccountName": account_name,
                "serviceAccountUID": account["metadata"]["uid"],
                "nodeName": self.name,
                "nodeUID": self.uid,
                "maxExpirationSeconds": max_expiration_seconds,
                "stubPKCS10Request": base64.b64encode(stub or stub_request(key)).decode(),
                **spec,
            },
        }
        client = self.admin if as_admin else self.kube
        made = await self._settled(lambda: client.create(POD_CERTIFICATE_REQUESTS, body, namespace))
        return Credentials(made["metadata"]["name"], key)

    async def _settled(self, call: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """``call()``, again while the API server's Node authorizer and NodeRestriction have not seen the
        new pod yet (their caches lag the pod's creation by a moment: Forbidden, or an internal error)."""

        async def attempt() -> dict[str, Any]:
            try:
                return await call()
            except ApiError as error:
                self.forbidden += error.status == 403
                if error.status in (403, 404, 500):
                    raise AssertionError(f"not yet: {error.status} {error.reason}") from None
                raise

        return await eventually(attempt, limit=30.0, interval=0.05, message="the node's request went through")

    async def decided(self, namespace: str, credentials: Credentials, limit: float = 60.0) -> dict[str, Any]:
        """The request once the signer decided it (the chain, if issued, goes into ``credentials``)."""

        async def read() -> dict[str, Any] | None:  # as the admin: a forged request may name another node
            obj = await self.admin.get(POD_CERTIFICATE_REQUESTS, credentials.request, namespace)
            return obj if decision(obj) else None

        found: dict[str, Any] | None = await eventually(
            read, limit=limit, interval=0.05, message=f"{credentials.request} decided"
        )
        assert found is not None
        credentials.chain_pem = str((found.get("status") or {}).get("certificateChain", ""))
        return found


@asynccontextmanager
async def kubelet(cluster: KubeCluster, admin: KubeClient, workdir: Path) -> AsyncIterator[Kubelet]:
    """A new Node and its kubelet's client (``system:node:<name>``, group ``system:nodes``); the Node is
    deleted afterwards."""
    assert cluster.control_plane is not None, "a kubelet's certificate comes from the local control plane"
    name = f"node-{secrets.token_hex(4)}"
    node = await admin.create(NODES, {"metadata": {"name": name}})
    path = cluster.control_plane.issue_kubeconfig(
        f"system:node:{name}", ["system:nodes"], workdir / f"{name}.kubeconfig"
    )
    try:
        async with cluster.api_client(path) as api:
            yield Kubelet(admin, KubeClient(api), name, node["metadata"]["uid"])
    finally:
        with contextlib.suppress(NotFound):
            await admin.delete(NODES, name)
