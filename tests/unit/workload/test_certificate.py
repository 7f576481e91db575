"""The certificate the signer issues: the fixed subject, client authentication only, the lifetime within
the request's and the platform's bounds, a refresh time the API accepts, and the status that carries it."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dbuser_operator.workload.ca import SigningCA, one_line
from dbuser_operator.workload.certificate import begin_refresh, denied_status, issue, lifetime
from dbuser_operator.workload.identity import client_subject

HOUR = datetime.timedelta(hours=1)
NOW = datetime.datetime(2026, 11, 29, 4, 0, 0, 123456, tzinfo=datetime.UTC)


def authority(name: str, parent: SigningCA | None = None) -> SigningCA:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(parent.certificate.subject if parent else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - HOUR)
        .not_valid_after(NOW + 1000 * HOUR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(parent.key if parent else key, hashes.SHA256())
    )
    return SigningCA(certificate, key)


@pytest.mark.parametrize(
    ("requested", "bound", "expected"),
    [(86400, 86400, 24), (3600, 86400, 1), (86400, 7200, 2), (7862400, 9e9, 2184), (60, 60, 1)],
)
def test_the_lifetime_is_the_least_of_the_request_and_the_bound_never_under_an_hour(
    requested: int, bound: float, expected: int
) -> None:
    assert lifetime(requested, bound) == expected * HOUR


@pytest.mark.parametrize("hours", [1, 2, 24, 2184])
def test_refresh_starts_30_minutes_or_a_third_of_the_lifetime_before_expiry_within_the_apis_bounds(
    hours: int,
) -> None:
    not_after = NOW + hours * HOUR
    refresh = begin_refresh(NOW, not_after)
    assert not_after - refresh == max(datetime.timedelta(minutes=30), hours * HOUR / 3)
    assert refresh >= NOW + datetime.timedelta(minutes=10)
    assert refresh <= not_after - datetime.timedelta(minutes=10)


def test_the_certificate_has_the_fixed_subject_client_authentication_only_and_whole_second_times() -> None:
    ca = authority("Workload CA")
    key = ec.generate_private_key(ec.SECP256R1())
    issued = issue(ca, key.public_key(), "shop", "app", 2 * HOUR, now=NOW)
    [leaf] = x509.load_pem_x509_certificates(issued.chain_pem.encode())
    leaf.verify_directly_issued_by(ca.certificate)
    assert one_line(leaf.subject) == client_subject("shop", "app") == "/O=dbuser-operator/OU=shop/CN=app"
    assert leaf.issuer == ca.certificate.subject
    assert list(leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    assert leaf.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    with pytest.raises(x509.ExtensionNotFound):
        leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert leaf.not_valid_before_utc == NOW.replace(microsecond=0) - datetime.timedelta(minutes=2)
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == 2 * HOUR
    status = issued.status("issued", 1)
    assert status["notBefore"] == leaf.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert status["notAfter"] == leaf.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert status["beginRefreshAt"] == issued.begin_refresh_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["observedGeneration"]) == ("Issued", "True", 1)


def test_an_intermediate_signing_ca_goes_into_the_chain() -> None:
    root = authority("Root")
    intermediate = authority("Workload intermediate", parent=root)
    issued = issue(intermediate, ec.generate_private_key(ec.SECP256R1()).public_key(), "shop", "app", HOUR)
    leaf, middle = x509.load_pem_x509_certificates(issued.chain_pem.encode())
    leaf.verify_directly_issued_by(middle)
    assert middle == intermediate.certificate


def test_a_denial_carries_only_its_condition() -> None:
    status = denied_status("PodNotFound", "pod shop/app-0 does not exist", None)
    assert list(status) == ["conditions"]
    [condition] = status["conditions"]
    assert (condition["type"], condition["reason"]) == ("Denied", "PodNotFound")
    assert "observedGeneration" not in condition
