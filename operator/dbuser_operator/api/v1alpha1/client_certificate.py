"""A DatabaseUser's client certificate from cert-manager (``spec.tls.certificate``), what status shows of it,
and what a server's policy lets tenants request (``certificates`` of a policy entry)."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field, model_validator

from dbuser_operator.api.duration import DURATION_MAX_LENGTH, DURATION_PATTERN, parse_duration
from dbuser_operator.api.v1alpha1.meta import DNS_SUBDOMAIN_MAX_LENGTH, DNS_SUBDOMAIN_PATTERN, Model

SECRET_SUFFIX: Final = "-client-tls"  # noqa: S105 - a name's suffix, not a secret
"""The default name of cert-manager's Secret: "<metadata.name>-client-tls"."""
SECRET_NAME_ROOM: Final = DNS_SUBDOMAIN_MAX_LENGTH - len(SECRET_SUFFIX)

SHORTEST_DURATION: Final = 3600.0
SHORTEST_RENEW_BEFORE: Final = 300.0
DURATION_MESSAGE: Final = "duration is at least 1h (cert-manager's shortest)"
RENEW_BEFORE_MESSAGE: Final = "renewBefore is at least 5m and shorter than duration"
MAX_CLUSTER_ISSUERS: Final = 32
MAX_SUBJECT_PATTERNS: Final = 32
SUBJECT_PATTERN_PATTERN: Final = r"^/[ -~]*$"

IssuerKind = Literal["Issuer", "ClusterIssuer"]
_IssuerName = Annotated[str, Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)]
_SET: Final[dict[str, Any]] = {"x-kubernetes-list-type": "set"}
_SubjectPattern = Annotated[str, Field(max_length=1024, pattern=SUBJECT_PATTERN_PATTERN)]


class IssuerRef(Model):
    """A cert-manager issuer: an Issuer of the DatabaseUser's namespace, or a ClusterIssuer that the
    server's policy (or the operator's --cert-manager-cluster-issuers) admits."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the Issuer or ClusterIssuer."""

    kind: IssuerKind = "Issuer"
    """Issuer (the default: in the namespace of the DatabaseUser, and no other) or ClusterIssuer."""


class ClientCertificate(Model):
    """Ask the operator to request the account's client certificate from cert-manager."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.duration) || duration(self.duration) >= duration('1h')",
                    "message": DURATION_MESSAGE,
                    "fieldPath": ".duration",
                },
                {
                    "rule": "!has(self.renewBefore) || (duration(self.renewBefore) >= duration('5m')"
                    " && (!has(self.duration) || duration(self.renewBefore) < duration(self.duration)))",
                    "message": RENEW_BEFORE_MESSAGE,
                    "fieldPath": ".renewBefore",
                },
            ]
        }
    )

    issuer_ref: IssuerRef
    """The issuer that signs it. Its CA must be the one the MySQL server trusts for client certificates
    (ssl_ca); with spec.tls.issuer set, the certificate's issuer must be that name (else Ready=False,
    reason CertificateIssuerMismatch)."""

    secret_name: str | None = Field(
        default=None, max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN
    )
    """The Secret cert-manager writes the certificate and its key to (tls.crt, tls.key, ca.crt), in the
    namespace of the DatabaseUser. Defaults to "<metadata.name>-client-tls". An existing Secret of that
    name that is not cert-manager's for this certificate is refused (Ready=False, reason SecretNotOwned)."""

    duration: str | None = Field(default=None, max_length=DURATION_MAX_LENGTH, pattern=DURATION_PATTERN)
    """How long each certificate is valid (e.g. 2160h; at least 1h). Unset: the issuer's default
    (cert-manager: 90 days)."""

    renew_before: str | None = Field(default=None, max_length=DURATION_MAX_LENGTH, pattern=DURATION_PATTERN)
    """How long before it expires cert-manager renews it (at least 5m, less than duration). Unset: after
    two thirds of its lifetime."""

    @model_validator(mode="after")
    def _bounds(self) -> ClientCertificate:
        """The CEL rules, with their messages."""
        duration = parse_duration(self.duration) if self.duration is not None else None
        if duration is not None and duration < SHORTEST_DURATION:
            raise ValueError(DURATION_MESSAGE)
        if self.renew_before is not None:
            renew = parse_duration(self.renew_before)
            if renew < SHORTEST_RENEW_BEFORE or (duration is not None and renew >= duration):
                raise ValueError(RENEW_BEFORE_MESSAGE)
        return self

    def secret_name_for(self, user_name: str) -> str:
        """The Secret's name: secretName, else "<metadata.name>-client-tls"."""
        return self.secret_name or f"{user_name}{SECRET_SUFFIX}"


class ClientCertificateStatus(Model):
    """The client certificate as the operator last saw it in cert-manager's Secret (never its key)."""

    certificate: str
    """Name of the cert-manager Certificate (the DatabaseUser's name)."""

    secret_name: str
    """Name of the Secret cert-manager writes it to."""

    issuer: str | None = None
    """The certificate's issuer in OpenSSL's one-line form, as MySQL compares REQUIRE ISSUER with it: the
    value to give spec.tls.issuer to pin the account to this CA."""

    serial_number: str | None = None
    """The serial number of the certificate in use (hex)."""

    not_after: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the certificate in use expires (RFC 3339); cert-manager renews it before."""


class CertificatePolicy(Model):
    """What client certificates (spec.tls.certificate) the DatabaseUsers of these namespaces may request."""

    cluster_issuers: list[_IssuerName] = Field(
        default_factory=list, max_length=MAX_CLUSTER_ISSUERS, json_schema_extra=_SET
    )
    """ClusterIssuers they may name (a ClusterIssuer signs whatever subject it is asked for: one whose CA
    the server trusts would let a tenant obtain another account's certificate). Defaults to none: Issuers of
    their own namespace only."""

    subjects: list[_SubjectPattern] | None = Field(
        default=None, max_length=MAX_SUBJECT_PATTERNS, json_schema_extra=_SET
    )
    """Patterns of the subjects (spec.tls.subject, OpenSSL's one-line form) they may request, from any
    issuer: '*' matches any run of characters, {namespace} is the namespace's name (e.g.
    "/O=clients/OU={namespace}/CN=*"). Unset: any subject."""


def certificate_secret_cel() -> list[dict[str, Any]]:
    """The DatabaseUser's CEL rules on the certificate's Secret name: room for the default suffix, and apart
    from the password's Secret and the connection Secret."""
    certificate = "self.spec.tls.certificate"
    wanted = f"!has(self.spec.tls) || !has({certificate})"
    secret = (
        f"(has({certificate}.secretName) ? {certificate}.secretName : self.metadata.name + '{SECRET_SUFFIX}')"
    )
    password = (
        "(has(self.spec.password) ? self.spec.password.name : has(self.spec.generatedPassword)"  # noqa: S105
        " ? (has(self.spec.generatedPassword.secretName) ? self.spec.generatedPassword.secretName"
        " : self.metadata.name + '-password') : '')"
    )
    connection = "(has(self.spec.connectionSecret) ? self.spec.connectionSecret.name : '')"
    return [
        {
            "rule": f"{wanted} || has({certificate}.secretName)"
            f" || size(self.metadata.name) <= {SECRET_NAME_ROOM}",
            "message": CERTIFICATE_SECRET_LENGTH_MESSAGE,
            "fieldPath": ".spec.tls.certificate.secretName",
            "reason": "FieldValueRequired",
        },
        {
            "rule": f"{wanted} || ({secret} != {password} && {secret} != {connection})",
            "message": CERTIFICATE_SECRET_APART_MESSAGE,
            "fieldPath": ".spec.tls.certificate",
        },
    ]


CERTIFICATE_SECRET_LENGTH_MESSAGE: Final = (
    f"metadata.name is longer than {SECRET_NAME_ROOM} characters: set spec.tls.certificate.secretName"
)
CERTIFICATE_SECRET_APART_MESSAGE: Final = (
    "the certificate's Secret must differ from the password's Secret and from spec.connectionSecret.name"  # noqa: S105
)


def certificate_secret_problem(
    name: str, certificate: ClientCertificate | None, password_secret: str | None, connection: str | None
) -> str | None:
    """The message of the CEL rule the certificate's Secret name breaks, if any (the models' check)."""
    if certificate is None:
        return None
    if certificate.secret_name is None and len(name) > SECRET_NAME_ROOM:
        return CERTIFICATE_SECRET_LENGTH_MESSAGE
    if certificate.secret_name_for(name) in (password_secret, connection):
        return CERTIFICATE_SECRET_APART_MESSAGE
    return None
