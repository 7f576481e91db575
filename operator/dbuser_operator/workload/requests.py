"""PodCertificateRequests (``certificates.k8s.io/v1``) as the signer reads them: whether one is decided, the
public key its stub PKCS#10 request carries, and what in it the signer refuses.

The kubelet makes a fresh key for each request and sends an *empty* PKCS#10 request signed with it (no
subject, no extensions, no attributes): the API server checks the signature and the key type (RSA 3072 or
4096, ECDSA P-256, P-384 or P-521, Ed25519) and nothing else. Everything the certificate says is this signer's
choice; a request that asks for anything (a subject, DNS names, usages) did not come from a kubelet and is
denied, as Kubernetes asks of its own signers.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import AttributeOID, ExtensionOID

from dbuser_operator.runtime.cache import strip_unread_compact
from dbuser_operator.runtime.resources import Resource

POD_CERTIFICATE_REQUESTS: Final = Resource(
    "certificates.k8s.io", "v1", "podcertificaterequests", "PodCertificateRequest"
)
PODS: Final = Resource("", "v1", "pods", "Pod")
SERVICE_ACCOUNTS: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount")

ISSUED: Final = "Issued"
DENIED: Final = "Denied"
FAILED: Final = "Failed"
TERMINAL: Final = frozenset({ISSUED, DENIED, FAILED})

# Denial reasons the API names (certificates/v1): the signer does not take the key type; an annotation it
# does not know.
UNSUPPORTED_KEY_TYPE: Final = "UnsupportedKeyType"
INVALID_USER_ANNOTATIONS: Final = "InvalidUnverifiedUserAnnotations"
REQUEST_NOT_EMPTY: Final = "RequestNotEmpty"

SUPPORTED_KEY_TYPES: Final = "ECDSAP256 (recommended), ECDSAP384, ECDSAP521, RSA3072 or RSA4096"
_EXTENSION_REQUEST: Final = "1.2.840.113549.1.9.14"  # the attribute that carries the extensions
_EXTENSIONS: Final = {
    ExtensionOID.SUBJECT_ALTERNATIVE_NAME: "names (subjectAltName: DNS names, addresses, URIs)",
    ExtensionOID.EXTENDED_KEY_USAGE: "usages (extendedKeyUsage)",
    ExtensionOID.KEY_USAGE: "key usages (keyUsage)",
    ExtensionOID.BASIC_CONSTRAINTS: "a CA certificate (basicConstraints)",
}
_ATTRIBUTES: Final = {AttributeOID.CHALLENGE_PASSWORD: "a challenge password"}
_CURVES: Final = {"secp256r1", "secp384r1", "secp521r1"}
_RSA_SIZES: Final = {3072, 4096}

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class Refused(Exception):
    """The request cannot be signed as it is: the reason and message of its Denied condition."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def decision(obj: dict[str, Any]) -> str | None:
    """``Issued``, ``Denied`` or ``Failed`` once the request is decided (final: the API keeps its status
    immutable from then on), else None."""
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") in TERMINAL and condition.get("status") == "True":
            return str(condition["type"])
    return None


def compact_request(obj: dict[str, Any]) -> dict[str, Any]:
    """The informer's transform: a decided request is never signed again, so its cached copy keeps only
    what says so (the stub request, the annotations and the certificate chain go)."""
    obj = strip_unread_compact(obj)
    if decision(obj) is not None:
        spec = obj.get("spec") or {}
        spec.pop("stubPKCS10Request", None)
        spec.pop("unverifiedUserAnnotations", None)
        (obj.get("status") or {}).pop("certificateChain", None)
    return obj


@dataclass(frozen=True)
class PodCertificateRequest:
    """The fields of a request the signer decides on (all immutable after creation)."""

    namespace: str
    name: str
    pod_name: str
    pod_uid: str
    service_account_name: str
    service_account_uid: str
    node_name: str
    max_expiration_seconds: int
    stub_pkcs10_request: bytes
    user_annotations: dict[str, str]

    @classmethod
    def of(cls, obj: dict[str, Any]) -> PodCertificateRequest:
        """The request ``obj`` as the API returns it (the API server validated every field)."""
        spec = obj.get("spec") or {}
        try:
            stub = base64.b64decode(spec.get("stubPKCS10Request") or "", validate=True)
        except (binascii.Error, ValueError):
            stub = b""
        return cls(
            namespace=obj["metadata"]["namespace"],
            name=obj["metadata"]["name"],
            pod_name=str(spec.get("podName", "")),
            pod_uid=str(spec.get("podUID", "")),
            service_account_name=str(spec.get("serviceAccountName", "")),
            service_account_uid=str(spec.get("serviceAccountUID", "")),
            node_name=str(spec.get("nodeName", "")),
            max_expiration_seconds=int(spec.get("maxExpirationSeconds") or 86400),
            stub_pkcs10_request=stub,
            user_annotations=dict(spec.get("unverifiedUserAnnotations") or {}),
        )

    def public_key(self) -> PublicKey:
        """The key to certify, from the stub request; :class:`Refused` when the signer will not (a key type
        it does not take, a request that asks for something, an annotation it does not know)."""
        if self.user_annotations:
            keys = ", ".join(sorted(self.user_annotations))
            raise Refused(
                INVALID_USER_ANNOTATIONS,
                f"unverifiedUserAnnotations {keys}: this signer takes none (the certificate's subject is the "
                "pod's namespace and ServiceAccount, nothing else)",
            )
        try:
            request = x509.load_der_x509_csr(self.stub_pkcs10_request)
            key = request.public_key()
        except ValueError:
            raise Refused(
                REQUEST_NOT_EMPTY, "spec.stubPKCS10Request is not a PKCS#10 request this signer can read"
            ) from None
        if isinstance(key, ed25519.Ed25519PublicKey):
            raise Refused(
                UNSUPPORTED_KEY_TYPE,
                "Ed25519 keys are not taken (MySQL and MariaDB clients do not all support them): set the "
                f"podCertificate volume's keyType to {SUPPORTED_KEY_TYPES}",
            )
        if not _supported(key):
            raise Refused(UNSUPPORTED_KEY_TYPE, f"this key type is not taken: use {SUPPORTED_KEY_TYPES}")
        asked = requested(request)
        if asked:
            raise Refused(
                REQUEST_NOT_EMPTY,
                f"the PKCS#10 request asks for {'; '.join(asked)}: this signer chooses the certificate's "
                "subject and usages itself and takes only the empty request a kubelet sends",
            )
        return key  # type: ignore[return-value]  # _supported narrowed it


def _supported(key: object) -> bool:
    if isinstance(key, ec.EllipticCurvePublicKey):
        return key.curve.name in _CURVES
    return isinstance(key, rsa.RSAPublicKey) and key.key_size in _RSA_SIZES


def requested(request: x509.CertificateSigningRequest) -> list[str]:
    """What a PKCS#10 request asks for beyond its key: its subject, each extension (DNS names, usages, …)
    and other attributes, for the denial's message (values shortened: they are the requester's words)."""
    asked = []
    if len(request.subject) > 0:
        asked.append(f"the subject {_short(request.subject.rfc4514_string())}")
    try:
        extensions = list(request.extensions)
    except (ValueError, x509.DuplicateExtension, x509.UnsupportedGeneralNameType):
        asked.append("extensions this signer cannot read")
        extensions = []
    for extension in extensions:
        asked.append(_EXTENSIONS.get(extension.oid, f"the extension {extension.oid.dotted_string}"))
    for attribute in request.attributes:
        if attribute.oid.dotted_string != _EXTENSION_REQUEST:
            asked.append(_ATTRIBUTES.get(attribute.oid, f"the attribute {attribute.oid.dotted_string}"))
    return asked


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
