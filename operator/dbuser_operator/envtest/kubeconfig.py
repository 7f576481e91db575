"""Kubeconfig files: written for a client certificate, and read back for the cluster they name."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from dbuser_operator.envtest.pki import KeyPair


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def write_kubeconfig(path: Path, cluster: dict[str, Any], user: str, credentials: KeyPair) -> Path:
    """Write a one-context kubeconfig for ``cluster`` (a kubeconfig ``cluster`` entry) and a client cert."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "envtest", "cluster": cluster}],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(credentials.cert_pem),
                    "client-key-data": _b64(credentials.key_pem),
                },
            }
        ],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": user}}],
        "current-context": "envtest",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path


def cluster_entry(server: str, ca_pem: bytes) -> dict[str, Any]:
    """A kubeconfig ``cluster`` entry that trusts ``ca_pem``."""
    return {"server": server, "certificate-authority-data": _b64(ca_pem)}


def current_cluster(path: Path) -> dict[str, Any]:
    """The ``cluster`` entry of the current context of the kubeconfig at ``path``."""
    document = yaml.safe_load(path.read_text())
    contexts = {c["name"]: c["context"] for c in document.get("contexts", [])}
    clusters = {c["name"]: c["cluster"] for c in document.get("clusters", [])}
    context = contexts[document["current-context"]]
    cluster: dict[str, Any] = dict(clusters[context["cluster"]])
    authority = cluster.pop("certificate-authority", None)
    if authority:  # a relative path is relative to the kubeconfig file
        cluster["certificate-authority-data"] = _b64((path.parent / authority).read_bytes())
    return cluster
