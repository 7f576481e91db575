"""Distinguished names: OpenSSL 3's one-line form (what MySQL compares) and cert-manager's literalSubject.

The expected values were obtained from the real tools when this was written: each literal subject parsed by
cert-manager v1.21.2's own ``pki.UnmarshalSubjectStringToRDNSequence`` into a certificate whose subject
``X509_NAME_oneline`` of OpenSSL 3.0 and 3.6 printed back as the one-line subject on the left; each
certificate below printed by both as on the right. The integration test logs in with the hardest of them
on MySQL 9.7 and MariaDB 11.8 and 10.11."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID

from dbuser_operator.certificates.issued import CertificateUnreadable, IssuedCertificate, oneline
from dbuser_operator.certificates.names import NameFormError, literal_subject, parse, render

LITERAL: list[tuple[str, str]] = [
    ("/O=shop/CN=app", "CN=app,O=shop"),
    ('/O=a\\/b\\+c,d=e\\f"g/CN= x \\xC3\\xA9 ', 'CN=\\ x \\c3\\a9\\ ,O=a/b\\+c\\,d=e\\\\f\\"g'),
    ("/CN=x\\x41", "CN=x\\\\x41"),  # a printable byte is never written \xHH: these are four characters
    ("/CN=a\\\\/b", "CN=a\\\\/b"),
    ("/CN=a\\", "CN=a\\\\"),
    ("/emailAddress=a@b/1.2.3=x", "1.2.3=x,1.2.840.113549.1.9.1=a@b"),
    ("/CN=#x;y<z> ", "CN=\\#x\\;y\\<z\\>\\ "),
    (
        "/C=SE/ST=st/L=l/O=o/OU=ou/CN=cn/serialNumber=9/street=s/DC=com/UID=u/title=t",
        "2.5.4.12=t,UID=u,DC=com,STREET=s,SERIALNUMBER=9,CN=cn,OU=ou,O=o,L=l,ST=st,C=SE",
    ),
    ("/CN=  two  spaces  ", "CN=\\  two  spaces \\ "),
    ("/CN==eq=/O=#", "O=\\#,CN==eq="),
    ("/CN=tab\\x09nl\\x0A", "CN=tab\\09nl\\0a"),
    ("/CN=caf\\xC3\\xA9 \\xE2\\x82\\xAC", "CN=caf\\c3\\a9 \\e2\\82\\ac"),
    ("/O=dbuser-operator/OU=shop/CN=app", "CN=app,OU=shop,O=dbuser-operator"),
    ("/CN=*&'()!?%$~^[]{}|`:@", "CN=*&'()!?%$~^[]{}|`:@"),
]


@pytest.mark.parametrize(("subject", "literal"), LITERAL, ids=[subject for subject, _ in LITERAL])
def test_the_literal_subject_cert_manager_prints_back_as_the_subject(subject: str, literal: str) -> None:
    attributes = parse(subject)
    assert literal_subject(attributes) == literal
    assert render([[attribute] for attribute in attributes]) == subject


REFUSED: list[tuple[str, str]] = [
    ("CN=app", "does not start with '/'"),
    ("/CN=a+b", "multi-valued RDN"),
    ("/O=x/CN=", "CN has an empty value"),
    ("/O=x/", "is no attribute"),
    ("/XX=y", "unknown attribute 'XX'"),
    ("/2.5.4.3=app", "is written '/CN=app' by OpenSSL"),  # a known OID is printed by its short name
    ("/CN=caf\u00e9", "only printable ASCII"),
    ("/CN=\\xFF", "not UTF-8 text"),
]


@pytest.mark.parametrize(("subject", "complaint"), REFUSED, ids=[subject for subject, _ in REFUSED])
def test_subjects_no_certificate_prints_as_are_refused(subject: str, complaint: str) -> None:
    with pytest.raises(NameFormError) as error:
        literal_subject(parse(subject))
    assert complaint in str(error.value)


A = x509.NameAttribute
ONELINE: list[tuple[list[Any], str]] = [
    (
        [A(NameOID.ORGANIZATION_NAME, 'a/b+c,d=e\\f"g'), A(NameOID.COMMON_NAME, " x é \t\x7f")],
        '/O=a\\/b\\+c,d=e\\f"g/CN= x \\xC3\\xA9 \\x09\\x7F',
    ),
    (
        [
            A(NameOID.ORGANIZATION_NAME, "t", _ASN1Type.PrintableString),
            A(NameOID.COMMON_NAME, "é", _ASN1Type.BMPString),
            A(NameOID.LOCALITY_NAME, "ab", _ASN1Type.UniversalString),
            A(NameOID.DOMAIN_COMPONENT, "com", _ASN1Type.IA5String),
            A(NameOID.EMAIL_ADDRESS, "a@b"),
            A(x509.ObjectIdentifier("2.999.5"), "big arc"),
        ],
        "/O=t/CN=\\x00\\xE9/L=\\x00\\x00\\x00a\\x00\\x00\\x00b/DC=com/emailAddress=a@b/2.999.5=big arc",
    ),
    (
        [
            x509.RelativeDistinguishedName([A(NameOID.ORGANIZATION_NAME, "o"), A(NameOID.COMMON_NAME, "cn")]),
            x509.RelativeDistinguishedName([A(NameOID.COUNTRY_NAME, "SE")]),
        ],
        "/O=o+CN=cn/C=SE",
    ),
]


def certificate(name: x509.Name, days: int = 1) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    built = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(x509.Name([A(NameOID.COMMON_NAME, "Test CA")]))
        .public_key(key.public_key())
        .serial_number(0x5E3A)
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .sign(key, hashes.SHA256())
    )
    return built.public_bytes(Encoding.PEM)


@pytest.mark.parametrize(("parts", "printed"), ONELINE, ids=[printed for _, printed in ONELINE])
def test_an_issued_name_is_read_as_openssl_prints_it(parts: list[Any], printed: str) -> None:
    issued = IssuedCertificate.from_pem(certificate(x509.Name(parts)))
    assert issued.subject == printed
    assert issued.issuer == "/CN=Test CA"
    assert issued.serial_number == "5E3A"
    assert issued.valid_at(datetime.datetime.now(datetime.UTC))
    assert not issued.valid_at(issued.not_after)


def test_unreadable_certificates_and_names_are_refused() -> None:
    with pytest.raises(CertificateUnreadable):
        IssuedCertificate.from_pem(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(CertificateUnreadable):
        oneline(b"\x30\x05\x31\x03\x30\x01\x06")  # an attribute cut short
    with pytest.raises(CertificateUnreadable):
        oneline(b"\x31\x00")  # a SET where the Name's SEQUENCE belongs
