"""The signer: decides each PodCertificateRequest of :data:`~.identity.SIGNER_NAME`, once.

A request is issued when its key is one the signer takes and its stub request asks for nothing
(:mod:`.requests`), a DatabaseUser of this operator binds its ServiceAccount and is admitted by its
server's policy (:mod:`.bindings`, from the cache), and its pod and ServiceAccount are the ones it names
(:mod:`.review`, read from the API at that moment: the last look before signing). Otherwise it is denied
with a reason and a message (``kubectl describe podcertificaterequests``); the kubelet does not retry a
denied request, so what may still change soon — nothing binds the ServiceAccount *yet*, its server or
namespace is not known *yet* — is denied only once the request is ``--workload-binding-grace`` seconds old
(a DatabaseUser applied with its Deployment is seen first).

Decisions are final (the API makes a decided request's status immutable), so a decided request is never
looked at again. Status writes go through the fenced client: only a leader with a fresh lease decides.
"""

from __future__ import annotations

import datetime
from typing import Any

import structlog
from prometheus_client import Counter

from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.workload.bindings import Bindings
from dbuser_operator.workload.ca import SigningCA
from dbuser_operator.workload.certificate import denied_status, issue, lifetime
from dbuser_operator.workload.identity import client_subject
from dbuser_operator.workload.requests import (
    POD_CERTIFICATE_REQUESTS,
    PODS,
    SERVICE_ACCOUNTS,
    PodCertificateRequest,
    Refused,
    decision,
)
from dbuser_operator.workload.review import check_pod, check_service_account

log = structlog.get_logger(__name__)

ISSUED_TOTAL = Counter(
    "dbuser_operator_workload_certificates_issued_total",
    "Client certificates the signer issued for PodCertificateRequests",
    registry=REGISTRY,
)
DENIED_TOTAL = Counter(
    "dbuser_operator_workload_certificates_denied_total",
    "PodCertificateRequests the signer denied, by the reason of their Denied condition",
    ["reason"],
    registry=REGISTRY,
)


class Signer:
    """The reconciler of PodCertificateRequests: issue or deny each one of this signer, once."""

    def __init__(
        self,
        kube: KubeClient,
        requests: Informer,
        bindings: Bindings,
        ca: SigningCA,
        *,
        max_lifetime: float,
        grace: float,
    ) -> None:
        self.kube = kube  # fenced: every write checks the lease first
        self.requests = requests
        self.bindings = bindings
        self.ca = ca
        self.max_lifetime = max_lifetime
        self.grace = grace  # seconds a request waits for what may still appear (a binding, its server)
        self._written: dict[ObjectKey, str] = {}  # decided here; the resourceVersion decided from

    async def __call__(self, key: ObjectKey) -> Result:
        obj = self.requests.get(key)
        if obj is None or decision(obj) is not None:
            self._written.pop(key, None)
            return Result()
        if self._written.get(key) == obj["metadata"].get("resourceVersion"):
            return Result()  # decided already; the cache has not seen it yet (its event brings it back)
        request = PodCertificateRequest.of(obj)
        try:
            public_key = request.public_key()
            binding = self.bindings.binding(request.namespace, request.service_account_name)  # the cache
            check_pod(request, await self._read(PODS, request.pod_name, request.namespace))
            account = await self._read(SERVICE_ACCOUNTS, request.service_account_name, request.namespace)
            check_service_account(request, account)
        except Refused as refused:
            return await self._deny(obj, refused.reason, refused.message)
        except ConditionError as refused:
            wait = self._grace_left(obj) if refused.retry else 0.0
            if wait > 0:
                return Result(requeue_after=wait)
            return await self._deny(obj, refused.reason, refused.message)
        subject = client_subject(request.namespace, request.service_account_name)
        valid_for = lifetime(request.max_expiration_seconds, self.max_lifetime)
        issued = issue(self.ca, public_key, request.namespace, request.service_account_name, valid_for)
        message = (
            f"issued {subject} for DatabaseUser {binding.user}, valid until "
            f"{issued.not_after.isoformat()}; refresh from {issued.begin_refresh_at.isoformat()}"
        )
        if await self._write(obj, issued.status(message, obj["metadata"].get("generation"))):
            ISSUED_TOTAL.inc()
            log.info("certificate issued", subject=subject, user=str(binding.user), pod=request.pod_name)
        return Result()

    async def _read(self, resource: Any, name: str, namespace: str) -> dict[str, Any] | None:
        try:
            return await self.kube.get(resource, name, namespace)
        except NotFound:
            return None

    def _grace_left(self, obj: dict[str, Any]) -> float:
        created = obj["metadata"].get("creationTimestamp")
        if not created:
            return 0.0
        born = datetime.datetime.fromisoformat(str(created).replace("Z", "+00:00"))
        age = (datetime.datetime.now(datetime.UTC) - born).total_seconds()
        return max(0.0, self.grace - age)

    async def _deny(self, obj: dict[str, Any], reason: str, message: str) -> Result:
        status = denied_status(
            reason, f"{message}: no certificate was issued", obj["metadata"].get("generation")
        )
        if await self._write(obj, status):
            DENIED_TOTAL.labels(reason).inc()
            log.info("request denied", reason=reason, message=message)
        return Result()

    async def _write(self, obj: dict[str, Any], status: dict[str, Any]) -> bool:
        """Write the decision, conditional on the request's resourceVersion (a conflict: someone else wrote;
        the retry sees the cache's newer copy). False when the request is gone."""
        metadata = obj["metadata"]
        body = {
            "apiVersion": POD_CERTIFICATE_REQUESTS.api_version,
            "kind": POD_CERTIFICATE_REQUESTS.kind,
            "metadata": {
                "name": metadata["name"],
                "namespace": metadata["namespace"],
                "resourceVersion": metadata["resourceVersion"],
            },
            "spec": obj["spec"],
            "status": status,
        }
        try:
            await self.kube.replace(
                POD_CERTIFICATE_REQUESTS, metadata["name"], body, metadata["namespace"], subresource="status"
            )
        except NotFound:
            return False
        self._written[ObjectKey.of(obj)] = metadata["resourceVersion"]
        return True
