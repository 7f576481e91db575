"""The signing CA of workload identity: a certificate and key the platform provides (a mounted
``kubernetes.io/tls`` Secret: ``tls.crt``, ``tls.key``), read from ``--workload-signing-ca``.

The CA's subject, in OpenSSL's one-line form, is what every workload account requires as its issuer
(``REQUIRE ISSUER``): the server compares it byte for byte with the issuer of the certificate shown, after
verifying the chain against its ``ssl_ca``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import NameOID

CERTIFICATE_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"

# OpenSSL's short names of the attributes a CA's subject carries (X509_NAME_oneline writes these).
_SHORT_NAMES: Final = {
    NameOID.COUNTRY_NAME: "C",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.LOCALITY_NAME: "L",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.COMMON_NAME: "CN",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.SERIAL_NUMBER: "serialNumber",
    NameOID.EMAIL_ADDRESS: "emailAddress",
}


class SigningCAError(ValueError):
    """The signing CA cannot be used (missing files, not a CA, a subject the servers cannot compare)."""


def one_line(name: x509.Name) -> str:
    """``name`` in OpenSSL's one-line form (``/C=SE/O=Example/CN=Example CA``), as MySQL and MariaDB write
    a certificate's issuer and subject; only printable ASCII values and the attributes above are taken."""
    parts = []
    for attribute in name:
        short = _SHORT_NAMES.get(attribute.oid)
        value = attribute.value if isinstance(attribute.value, str) else None
        if short is None or value is None or not all(" " <= c <= "~" for c in value):
            raise SigningCAError(f"the subject attribute {attribute.rfc4514_string()} cannot be pinned")
        parts.append(f"/{short}={value}")
    return "".join(parts)


@dataclass(frozen=True)
class SigningCA:
    """The CA certificate and its key."""

    certificate: x509.Certificate
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

    @property
    def issuer(self) -> str:
        """What a workload account requires as its issuer: the CA's subject, one-line form."""
        return one_line(self.certificate.subject)


def load(directory: Path) -> SigningCA:
    """The CA in ``directory`` (``tls.crt`` and ``tls.key``); SigningCAError when it cannot sign."""
    try:
        certificate = x509.load_pem_x509_certificate((directory / CERTIFICATE_FILE).read_bytes())
        key = load_pem_private_key((directory / KEY_FILE).read_bytes(), password=None)
    except (OSError, ValueError) as error:
        raise SigningCAError(
            f"the signing CA in {directory} cannot be read: {type(error).__name__}"
        ) from None
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if constraints is None or not constraints.ca:
        raise SigningCAError(f"{directory / CERTIFICATE_FILE} is not a CA certificate (basicConstraints CA)")
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise SigningCAError(f"{directory / KEY_FILE} is not an RSA or EC key (what MySQL clients verify)")
    if key.public_key() != certificate.public_key():
        raise SigningCAError(f"{directory / KEY_FILE} is not the key of {directory / CERTIFICATE_FILE}")
    one_line(certificate.subject)  # refuses a subject the servers could not compare
    return SigningCA(certificate, key)
