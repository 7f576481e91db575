"""Is the request about a real pod, on the node it names, running as the ServiceAccount it names?

The API server checks this when a *node* creates a request (the NodeRestriction admission plugin), but
anyone else allowed to create PodCertificateRequests is not checked, and a pod may go between the request
and its signing. So the signer looks again, at the pod and the ServiceAccount as they are now: each
mismatch is a denial naming what differs.
"""

from __future__ import annotations

from typing import Any, Final

from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import PodCertificateRequest, Refused

POD_NOT_FOUND: Final = "PodNotFound"
POD_MISMATCH: Final = "PodMismatch"
NODE_MISMATCH: Final = "NodeMismatch"
NO_VOLUME: Final = "NoPodCertificateVolume"
MIRROR_POD: Final = "MirrorPod"
SERVICE_ACCOUNT_NOT_FOUND: Final = "ServiceAccountNotFound"
SERVICE_ACCOUNT_MISMATCH: Final = "ServiceAccountMismatch"
MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"


def check_pod(request: PodCertificateRequest, pod: dict[str, Any] | None) -> None:
    """Refused unless ``pod`` (None: not found) is the request's pod, bound to its node, running as its
    ServiceAccount, and mounts a podCertificate volume of this signer."""
    name = f"pod {request.namespace}/{request.pod_name}"
    if pod is None:
        raise Refused(POD_NOT_FOUND, f"{name} does not exist (deleted before the request was signed)")
    metadata, spec = pod["metadata"], pod.get("spec") or {}
    if metadata.get("uid") != request.pod_uid:
        raise Refused(
            POD_MISMATCH,
            f"{name} has UID {metadata.get('uid')}, not the request's {request.pod_uid}: the pod the "
            "request was made for is gone",
        )
    node = spec.get("nodeName") or ""
    if node != request.node_name:
        where = f"runs on node {node}" if node else "is not scheduled to a node"
        raise Refused(NODE_MISMATCH, f"{name} {where}, not on node {request.node_name} the request names")
    if MIRROR_ANNOTATION in (metadata.get("annotations") or {}):
        raise Refused(MIRROR_POD, f"{name} is a mirror pod (a static pod's): mirror pods get no certificate")
    account = spec.get("serviceAccountName") or "default"
    if account != request.service_account_name:
        raise Refused(
            SERVICE_ACCOUNT_MISMATCH,
            f"{name} runs as ServiceAccount {account}, not as {request.service_account_name} the request "
            "names",
        )
    if not mounts_signer(pod):
        raise Refused(NO_VOLUME, f"{name} mounts no podCertificate projected volume of signer {SIGNER_NAME}")


def check_service_account(request: PodCertificateRequest, account: dict[str, Any] | None) -> None:
    """Refused unless ``account`` (None: not found) is the request's ServiceAccount (the same UID: not one
    deleted and made again under the same name)."""
    name = f"ServiceAccount {request.namespace}/{request.service_account_name}"
    if account is None:
        raise Refused(SERVICE_ACCOUNT_NOT_FOUND, f"{name} does not exist")
    uid = account["metadata"].get("uid")
    if uid != request.service_account_uid:
        raise Refused(
            SERVICE_ACCOUNT_MISMATCH,
            f"{name} has UID {uid}, not the request's {request.service_account_uid} (it was made again)",
        )


def mounts_signer(pod: dict[str, Any]) -> bool:
    """Whether a projected volume of ``pod`` has a podCertificate source of this signer."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        for source in (volume.get("projected") or {}).get("sources") or ():
            if (source.get("podCertificate") or {}).get("signerName") == SIGNER_NAME:
                return True
    return False
