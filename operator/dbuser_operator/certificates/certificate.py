"""The cert-manager ``Certificate`` (cert-manager.io/v1) the operator asks for, and what its status says.

One per DatabaseUser, named after it, in its namespace: ``literalSubject`` is the account's required subject
(:func:`~.names.literal_subject`), the usages a TLS client needs and nothing more (no server auth), a fresh
ECDSA P-256 key at every issuance (``rotationPolicy: Always``) that cert-manager makes and writes into the
Secret itself (PKCS#8, which Java and .NET read too), the issuer the spec names, and one old
CertificateRequest kept (``revisionHistoryLimit``). Only these fields are the operator's: a change of one by
hand is put back; cert-manager's own (status, defaults it may add) are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

GROUP: Final = "cert-manager.io"
API_VERSION: Final = f"{GROUP}/v1"
KIND: Final = "Certificate"
CERTIFICATE_NAME_ANNOTATION: Final = "cert-manager.io/certificate-name"
"""cert-manager's annotation on the Secret it writes: the Certificate it belongs to."""
REVISION_ANNOTATION: Final = "cert-manager.io/certificate-revision"
"""cert-manager's annotation on a CertificateRequest: the revision of the Certificate it requests."""
USAGES: Final = ("digital signature", "client auth")
PRIVATE_KEY: Final = {"algorithm": "ECDSA", "size": 256, "encoding": "PKCS8", "rotationPolicy": "Always"}


@dataclass(frozen=True)
class Request:
    """What the operator asks of cert-manager for one DatabaseUser."""

    name: str
    secret_name: str
    literal_subject: str
    issuer_name: str
    issuer_kind: str
    duration: str | None = None
    renew_before: str | None = None

    def spec(self) -> dict[str, Any]:
        """The Certificate's spec, as far as it is the operator's."""
        spec: dict[str, Any] = {
            "secretName": self.secret_name,
            "literalSubject": self.literal_subject,
            "usages": list(USAGES),
            "privateKey": dict(PRIVATE_KEY),
            "issuerRef": {"name": self.issuer_name, "kind": self.issuer_kind, "group": GROUP},
            "revisionHistoryLimit": 1,
            "duration": self.duration,
            "renewBefore": self.renew_before,
        }
        return {key: value for key, value in spec.items() if value is not None}

    def body(self, labels: Mapping[str, str], owner: Mapping[str, Any]) -> dict[str, Any]:
        """The whole Certificate to create, with its labels and controller ownerReference."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.name, "labels": dict(labels), "ownerReferences": [dict(owner)]},
            "spec": self.spec(),
        }

    def patch(self, current: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
        """A merge patch bringing the operator's fields of ``current`` in line (an optional one the request
        leaves out is removed); empty when they are."""
        wanted = self.spec()
        have = current.get("spec") or {}
        spec: dict[str, Any] = {key: value for key, value in wanted.items() if have.get(key) != value}
        spec |= {key: None for key in ("duration", "renewBefore") if key in have and key not in wanted}
        patch: dict[str, Any] = {"spec": spec} if spec else {}
        held = (current.get("metadata") or {}).get("labels") or {}
        if any(held.get(key) != value for key, value in labels.items()):
            patch["metadata"] = {"labels": dict(labels)}
        return patch


@dataclass(frozen=True)
class Progress:
    """How far cert-manager is with a Certificate, from its conditions."""

    ready: bool  # Ready=True: the Secret holds a certificate that is up to date with the spec
    failed: bool  # the last issuance failed (Issuing=False, reason Failed); cert-manager retries later
    message: str  # cert-manager's words (the failure's, else Ready's)

    @classmethod
    def of(cls, certificate: Mapping[str, Any]) -> Progress:
        """From ``certificate``'s status conditions, of its current generation only (older ones describe a
        spec that is no longer asked for)."""
        generation = (certificate.get("metadata") or {}).get("generation")
        conditions = {
            condition.get("type"): condition
            for condition in (certificate.get("status") or {}).get("conditions") or []
            if generation is None or condition.get("observedGeneration") in (None, generation)
        }
        ready, issuing = conditions.get("Ready") or {}, conditions.get("Issuing") or {}
        failed = issuing.get("status") == "False" and issuing.get("reason") == "Failed"
        message = str((issuing if failed else ready).get("message") or "")
        return cls(ready=ready.get("status") == "True", failed=failed, message=message)


def pending_request_message(requests: Sequence[Mapping[str, Any]], certificate_uid: str) -> str:
    """The message of the newest CertificateRequest of the Certificate with ``certificate_uid`` that is not
    Ready (e.g. its issuer not found), or ''."""

    def revision(request: Mapping[str, Any]) -> int:
        annotations = (request.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(REVISION_ANNOTATION)
        return int(value) if isinstance(value, str) and value.isdigit() else 0

    owned = [
        request
        for request in requests
        if any(
            reference.get("uid") == certificate_uid
            for reference in (request.get("metadata") or {}).get("ownerReferences") or []
        )
    ]
    for request in sorted(owned, key=revision, reverse=True):
        for condition in (request.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") != "True":
                name = request["metadata"].get("name", "")
                return f"CertificateRequest {name}: {condition.get('message') or condition.get('reason')}"
        return ""
    return ""
