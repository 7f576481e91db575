"""The signing CA: loaded from a mounted Secret's files, refused when it cannot sign, and its subject in the
one-line form the servers compare."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dbuser_operator.workload.ca import SigningCAError, load, one_line


def write_ca(directory: Path, *, ca: bool = True, subject: x509.Name | None = None) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = subject or x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "SE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example"),
            x509.NameAttribute(NameOID.COMMON_NAME, "Workload CA"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    (directory / "tls.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def test_the_issuer_is_the_subject_in_openssl_one_line_form(tmp_path: Path) -> None:
    write_ca(tmp_path)
    assert load(tmp_path).issuer == "/C=SE/O=Example/CN=Workload CA"


def test_a_certificate_that_is_no_ca_is_refused(tmp_path: Path) -> None:
    write_ca(tmp_path, ca=False)
    with pytest.raises(SigningCAError, match="is not a CA certificate"):
        load(tmp_path)


def test_missing_files_are_refused_without_their_contents(tmp_path: Path) -> None:
    with pytest.raises(SigningCAError, match="cannot be read: FileNotFoundError"):
        load(tmp_path)


def test_a_subject_the_servers_could_not_compare_is_refused() -> None:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "caf\u00e9 CA")])
    with pytest.raises(SigningCAError, match="cannot be pinned"):
        one_line(name)
