"""What an issued certificate says that the operator compares: its subject and issuer as MySQL reads them
(OpenSSL's one-line form, rendered from the DER bytes of the names, so that every string type is written as
OpenSSL writes it), its validity and its serial number. Never its key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cryptography import x509

from dbuser_operator.certificates.names import Attribute, render

_SEQUENCE, _SET, _OID, _GENERAL_STRING = 0x30, 0x31, 0x06, 0x1B


class CertificateUnreadable(ValueError):
    """A PEM text that holds no certificate this module can read."""


@dataclass(frozen=True)
class IssuedCertificate:
    """The facts of one certificate (the first of a PEM chain: the leaf)."""

    subject: str
    issuer: str
    not_before: datetime
    not_after: datetime
    serial_number: str  # upper-case hex, as openssl x509 -serial prints it

    @classmethod
    def from_pem(cls, pem: bytes) -> IssuedCertificate:
        """The leaf of ``pem`` (CertificateUnreadable when there is none, or it is malformed)."""
        try:
            certificate = x509.load_pem_x509_certificate(pem)
        except ValueError as error:
            raise CertificateUnreadable(f"no readable PEM certificate: {str(error)[:120]}") from None
        return cls(
            subject=oneline(certificate.subject.public_bytes()),
            issuer=oneline(certificate.issuer.public_bytes()),
            not_before=certificate.not_valid_before_utc,
            not_after=certificate.not_valid_after_utc,
            serial_number=f"{certificate.serial_number:X}",
        )

    def valid_at(self, moment: datetime) -> bool:
        """Whether the certificate is valid at ``moment`` (an aware time)."""
        return self.not_before <= moment < self.not_after


def oneline(der: bytes) -> str:
    """The DER encoding of a Name as ``X509_NAME_oneline`` writes it."""
    rdns: list[list[Attribute]] = []
    for tag, rdn in _elements(_content(der, _SEQUENCE)):
        _expect(tag, _SET)
        rdns.append([_attribute(inner, pair) for inner, pair in _elements(rdn)])
    return render(rdns)


def _attribute(tag: int, pair: bytes) -> Attribute:
    _expect(tag, _SEQUENCE)
    elements = _elements(pair)
    if len(elements) != 2:
        raise CertificateUnreadable("a name's attribute is not a type and a value")
    (oid_tag, oid), (value_tag, value) = elements
    _expect(oid_tag, _OID)
    if value_tag == _GENERAL_STRING and len(value) % 4 == 0:
        value = _general_string(value)
    return Attribute(_dotted(oid), value)


def _general_string(value: bytes) -> bytes:
    """OpenSSL's reading of a GeneralString of a length divisible by four: when only each fourth byte is
    non-zero (UCS-4 of ASCII), those bytes alone."""
    if any(value[i] for i in range(len(value)) if i % 4 != 3):
        return value
    return bytes(value[i] for i in range(3, len(value), 4))


def _dotted(oid: bytes) -> str:
    if not oid:
        raise CertificateUnreadable("an empty OID")
    arcs: list[int] = []
    number = 0
    for byte in oid:
        number = (number << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(number)
            number = 0
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(arc) for arc in [*head, *arcs[1:]])


def _content(data: bytes, tag: int) -> bytes:
    """The content of the one element of ``data``, which must have ``tag``."""
    elements = _elements(data)
    if len(elements) != 1:
        raise CertificateUnreadable("a name is not one DER element")
    found, content = elements[0]
    _expect(found, tag)
    return content


def _expect(found: int, tag: int) -> None:
    if found != tag:
        raise CertificateUnreadable(f"expected DER tag {tag:#x} in a name, found {found:#x}")


def _elements(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, content) of each DER element of ``data``, in order."""
    elements = []
    offset = 0
    while offset < len(data):
        if offset + 2 > len(data):
            raise CertificateUnreadable("a truncated DER element")
        tag, size = data[offset], data[offset + 1]
        offset += 2
        if size & 0x80:
            count = size & 0x7F
            size = int.from_bytes(data[offset : offset + count], "big")
            offset += count
        if offset + size > len(data):
            raise CertificateUnreadable("a truncated DER element")
        elements.append((tag, data[offset : offset + size]))
        offset += size
    return elements
