"""A throwaway certificate authority: serving and client certificates for the local API server."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=7)


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM private key."""

    cert_pem: bytes
    key_pem: bytes


def new_private_key() -> ec.EllipticCurvePrivateKey:
    """A fresh P-256 key: quick to make, accepted for TLS, client auth and service-account tokens."""
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The key in unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The key's public half in PEM."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


class CertificateAuthority:
    """A self-signed CA that issues short-lived serving and client certificates."""

    def __init__(self, common_name: str = "dbuser-operator-envtest-ca") -> None:
        self._key = new_private_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate, to trust."""
        return self._cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        """The CA's private key (for a test that signs with this CA itself, e.g. as a workload signing CA)."""
        return private_key_pem(self._key)

    def write_tls(self, directory: Path) -> Path:
        """The CA as a ``kubernetes.io/tls`` Secret's files in ``directory``: ``tls.crt`` and ``tls.key``."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "tls.crt").write_bytes(self.cert_pem)
        (directory / "tls.key").write_bytes(self.key_pem)
        (directory / "tls.key").chmod(0o600)
        return directory

    @property
    def subject_oneline(self) -> str:
        """The CA's name in OpenSSL's one-line form (``/CN=...``), as MySQL compares an ISSUER with it."""
        return oneline(self._cert.subject)

    def issue_client(self, user: str, groups: Sequence[str] = ()) -> KeyPair:
        """A client certificate: Kubernetes reads the user from CN and the groups from O."""
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, user)]
        attributes += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        return self._issue(x509.Name(attributes), ExtendedKeyUsageOID.CLIENT_AUTH, sans=[])

    def issue_client_named(self, organization: str, common_name: str) -> KeyPair:
        """A client certificate of subject ``/O=organization/CN=common_name`` (for MySQL's REQUIRE
        SUBJECT; see :func:`oneline`)."""
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )
        return self._issue(name, ExtendedKeyUsageOID.CLIENT_AUTH, sans=[])

    def issue_client_subject(self, subject: x509.Name) -> KeyPair:
        """A client certificate of any ``subject`` (a workload's: ``/O=…/OU=<namespace>/CN=<name>``)."""
        return self._issue(subject, ExtendedKeyUsageOID.CLIENT_AUTH, sans=[])

    def issue_server(self, dns_names: Sequence[str], ip_addresses: Sequence[str]) -> KeyPair:
        """A serving certificate for the given names and addresses."""
        sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(address)) for address in ip_addresses]
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])])
        return self._issue(name, ExtendedKeyUsageOID.SERVER_AUTH, sans=sans)

    def _issue(
        self, subject: x509.Name, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]
    ) -> KeyPair:
        key = new_private_key()
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), private_key_pem(key))


_ONELINE_KEYS = {
    NameOID.COUNTRY_NAME: "C",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.COMMON_NAME: "CN",
}


def oneline(name: x509.Name) -> str:
    """``name`` as OpenSSL's ``X509_NAME_oneline`` writes it (``/O=Example/CN=app``), which MySQL and MariaDB
    compare REQUIRE ISSUER and SUBJECT with: each byte of a value outside printable ASCII as ``\\xHH``.
    Only C, O, OU and CN, the attributes this module issues."""
    parts = []
    for attribute in name:
        value = "".join(
            chr(byte) if 0x20 <= byte <= 0x7E else f"\\x{byte:02X}"
            for byte in str(attribute.value).encode("utf-8")
        )
        parts.append(f"/{_ONELINE_KEYS[attribute.oid]}={value}")
    return "".join(parts)
