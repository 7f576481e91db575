"""The client certificate the signer issues, and the status that carries it.

Everything in it is the signer's: the subject is :func:`~dbuser_operator.workload.identity.client_subject`
of the pod's namespace and ServiceAccount, the only usage is client authentication, there are no names
(subjectAltName), and the lifetime is the request's ``maxExpirationSeconds`` within the platform's bound.
``notBefore`` is two minutes in the past (as Kubernetes' own signers do: clocks differ); the kubelet starts
refreshing at ``beginRefreshAt``, 30 minutes before expiry as Kubernetes' signers set it, or a third of the
lifetime before when that is longer — so that an operator down for less than that never lets a pod's
certificate expire.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dbuser_operator.runtime.conditions import format_time
from dbuser_operator.workload.ca import SigningCA
from dbuser_operator.workload.identity import SUBJECT_ORGANIZATION
from dbuser_operator.workload.requests import ISSUED, PublicKey

MIN_LIFETIME: Final = 3600  # seconds: what the API accepts at least (and its floor of maxExpirationSeconds)
MAX_LIFETIME: Final = 91 * 24 * 3600  # seconds: what the API accepts at most for a signer not kubernetes.io's
BACKDATE: Final = datetime.timedelta(minutes=2)
REFRESH_MARGIN: Final = datetime.timedelta(minutes=30)


def subject_name(namespace: str, service_account: str) -> x509.Name:
    """``/O=dbuser-operator/OU=<namespace>/CN=<service account>``: the attributes in that order, so that
    OpenSSL's one-line form (what the servers compare) is :func:`~.identity.client_subject`'s."""
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, SUBJECT_ORGANIZATION),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, namespace),
            x509.NameAttribute(NameOID.COMMON_NAME, service_account),
        ]
    )


@dataclass(frozen=True)
class Issued:
    """A certificate and the times the request's status repeats."""

    chain_pem: str  # the leaf, then the signing CA when it is an intermediate
    not_before: datetime.datetime
    begin_refresh_at: datetime.datetime
    not_after: datetime.datetime

    def status(self, message: str, generation: int | None) -> dict[str, Any]:
        """The request's status: the Issued condition, the chain and its times."""
        condition = _condition(ISSUED, "Issued", message, generation, self.not_before + BACKDATE)
        return {
            "conditions": [condition],
            "certificateChain": self.chain_pem,
            "notBefore": format_time(self.not_before),
            "beginRefreshAt": format_time(self.begin_refresh_at),
            "notAfter": format_time(self.not_after),
        }


def lifetime(requested_seconds: int, bound_seconds: float) -> datetime.timedelta:
    """The certificate's lifetime: what the request allows at most, within the platform's bound, never
    under the API's one hour."""
    seconds = max(MIN_LIFETIME, min(int(requested_seconds), int(bound_seconds), MAX_LIFETIME))
    return datetime.timedelta(seconds=seconds)


def begin_refresh(not_before: datetime.datetime, not_after: datetime.datetime) -> datetime.datetime:
    """When the kubelet should start refreshing: the later margin of 30 minutes and a third of the
    lifetime before ``not_after`` (always within the API's bounds: 10 minutes from either end)."""
    return not_after - max(REFRESH_MARGIN, (not_after - not_before) / 3)


def issue(
    ca: SigningCA,
    key: PublicKey,
    namespace: str,
    service_account: str,
    valid_for: datetime.timedelta,
    *,
    now: datetime.datetime | None = None,
) -> Issued:
    """A client certificate for ``key`` with the subject of ``namespace``/``service_account``."""
    now = (now or datetime.datetime.now(datetime.UTC)).replace(microsecond=0)
    not_before = now - BACKDATE
    not_after = not_before + valid_for
    ca_key = ca.key.public_key()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject_name(namespace, service_account))
        .issuer_name(ca.certificate.subject)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    chain = [certificate]
    if ca.certificate.issuer != ca.certificate.subject:  # an intermediate: the servers trust its root
        chain.append(ca.certificate)
    pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in chain)
    return Issued(pem, not_before, begin_refresh(not_before, not_after), not_after)


def denied_status(reason: str, message: str, generation: int | None) -> dict[str, Any]:
    """A request's status once the signer refuses it (no other field may be set with Denied)."""
    return {"conditions": [_condition("Denied", reason, message, generation)]}


def _condition(
    type_: str, reason: str, message: str, generation: int | None, at: datetime.datetime | None = None
) -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_time(at),
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    return condition
