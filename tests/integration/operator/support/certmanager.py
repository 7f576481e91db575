"""cert-manager in the operator's tests: CA issuers of a test CA, cert-manager's objects as the tests read
them, a forced renewal (``cmctl renew``'s way), and logins with what a connection Secret carries."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbuser_operator.certificates.issued import IssuedCertificate
from dbuser_operator.controllers.databaseuser.cert_manager import CERTIFICATE_REQUESTS, CERTIFICATES
from dbuser_operator.envtest.certmanager import CLUSTER_RESOURCE_NAMESPACE
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.resources import SECRETS, Resource
from tests.integration.mysql.support import current_user
from tests.integration.operator.support.kube import wait_for_condition

ISSUERS = Resource("cert-manager.io", "v1", "issuers", "Issuer")
CLUSTER_ISSUERS = Resource("cert-manager.io", "v1", "clusterissuers", "ClusterIssuer", namespaced=False)


def data(secret: dict[str, Any], key: str) -> str:
    """A key of a Secret's data, decoded."""
    return base64.b64decode(secret["data"][key]).decode()


async def ca_issuer(
    kube: KubeClient, ca: CertificateAuthority, name: str, namespace: str | None = None
) -> dict[str, Any]:
    """A CA Issuer of ``namespace`` (a ClusterIssuer when None) signing with ``ca``, once Ready."""
    home = namespace or CLUSTER_RESOURCE_NAMESPACE
    secret = {
        "metadata": {"name": f"{name}-ca"},
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": ca.cert_pem.decode(), "tls.key": ca.key_pem.decode()},
    }
    await kube.create(SECRETS, secret, home)
    resource = ISSUERS if namespace else CLUSTER_ISSUERS
    body = {
        "apiVersion": "cert-manager.io/v1",
        "kind": resource.kind,
        "metadata": {"name": name},
        "spec": {"ca": {"secretName": f"{name}-ca"}},
    }
    await kube.create(resource, body, namespace)
    return await wait_for_condition(kube, resource, namespace, name)


async def certificate(kube: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    """The Certificate, or None."""
    try:
        return await kube.get(CERTIFICATES, name, namespace)
    except NotFound:
        return None


async def certificate_requests(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await kube.list(CERTIFICATE_REQUESTS, namespace))["items"]
    return items


async def renew(kube: KubeClient, namespace: str, name: str) -> None:
    """Force a renewal as ``cmctl renew`` does: the Certificate's Issuing condition set True (manually)."""
    current = await kube.get(CERTIFICATES, name, namespace)
    conditions = [c for c in (current.get("status") or {}).get("conditions") or [] if c["type"] != "Issuing"]
    conditions.append(
        {
            "type": "Issuing",
            "status": "True",
            "reason": "ManuallyTriggered",
            "message": "Certificate re-issuance manually triggered",
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "observedGeneration": current["metadata"]["generation"],
        }
    )
    await kube.patch(
        CERTIFICATES,
        name,
        {"status": {"conditions": conditions}},
        PatchType.MERGE,
        namespace=namespace,
        subresource="status",
    )


def serial(secret: dict[str, Any]) -> str:
    """The serial number of the certificate a Secret's tls.crt holds."""
    return IssuedCertificate.from_pem(data(secret, "tls.crt").encode()).serial_number


def write_files(secret: dict[str, Any], directory: Path) -> dict[str, str]:
    """The Secret's tls.crt, tls.key and ca.crt as files, named as PyMySQL's options."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for option, key in (("ssl_cert", "tls.crt"), ("ssl_key", "tls.key"), ("ssl_ca", "ca.crt")):
        path = directory / f"{serial(secret)}-{key}"
        path.write_text(data(secret, key))
        files[option] = str(path)
    return files


def connect_with(secret: dict[str, Any], directory: Path, **override: Any) -> str | int:
    """Log in with nothing but a connection Secret: its host, port, username and password, its ca.crt to
    verify the server, its tls.crt and tls.key as the client certificate (``override`` replaces any).
    CURRENT_USER(), or the refusal's error code."""
    options: dict[str, Any] = {
        "host": data(secret, "host"),
        "port": int(data(secret, "port")),
        "user": data(secret, "username"),
        "password": data(secret, "password").encode(),
        "connect_timeout": 5,
        **write_files(secret, directory),
        **override,
    }
    return current_user(**options)
