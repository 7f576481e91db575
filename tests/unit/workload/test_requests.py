"""What the signer reads of a PodCertificateRequest: the key of an empty stub request, and a denial for
anything else (another key type, a subject, names, usages, attributes, annotations)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import AttributeOID, ExtendedKeyUsageOID, NameOID

from dbuser_operator.workload.requests import (
    INVALID_USER_ANNOTATIONS,
    REQUEST_NOT_EMPTY,
    UNSUPPORTED_KEY_TYPE,
    PodCertificateRequest,
    Refused,
    compact_request,
    decision,
)

Key = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey


def stub(key: Key, builder: x509.CertificateSigningRequestBuilder | None = None) -> str:
    builder = builder or x509.CertificateSigningRequestBuilder().subject_name(x509.Name([]))
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return base64.b64encode(builder.sign(key, algorithm).public_bytes(serialization.Encoding.DER)).decode()


def request(stub_request: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "req-abcde", "namespace": "shop"},
        "spec": {
            "signerName": "mysql.dbuser-operator.dev/client",
            "podName": "app-0",
            "podUID": "pod-uid",
            "serviceAccountName": "app",
            "serviceAccountUID": "sa-uid",
            "nodeName": "node-a",
            "nodeUID": "node-uid",
            "maxExpirationSeconds": 7200,
            "stubPKCS10Request": stub_request,
            **spec,
        },
    }


@pytest.mark.parametrize(
    "key",
    [
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP384R1()),
        ec.generate_private_key(ec.SECP521R1()),
        rsa.generate_private_key(65537, 3072),
    ],
    ids=["ECDSAP256", "ECDSAP384", "ECDSAP521", "RSA3072"],
)
def test_the_key_of_an_empty_request_is_taken(key: Key) -> None:
    parsed = PodCertificateRequest.of(request(stub(key)))
    assert parsed.public_key() == key.public_key()
    assert (parsed.namespace, parsed.service_account_name, parsed.max_expiration_seconds) == (
        "shop",
        "app",
        7200,
    )


def refusal(obj: dict[str, Any]) -> Refused:
    with pytest.raises(Refused) as refused:
        PodCertificateRequest.of(obj).public_key()
    return refused.value


def test_ed25519_and_small_rsa_keys_are_unsupported_key_types_with_a_suggestion() -> None:
    ed = refusal(request(stub(ed25519.Ed25519PrivateKey.generate())))
    assert ed.reason == UNSUPPORTED_KEY_TYPE
    assert "ECDSAP256" in ed.message
    assert refusal(request(stub(rsa.generate_private_key(65537, 2048)))).reason == UNSUPPORTED_KEY_TYPE


def test_a_request_that_asks_for_a_subject_names_usages_or_attributes_is_not_empty() -> None:
    builder = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "root")]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("db.example")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_attribute(AttributeOID.CHALLENGE_PASSWORD, b"let-me-in")
    )
    refused = refusal(request(stub(ec.generate_private_key(ec.SECP256R1()), builder)))
    assert refused.reason == REQUEST_NOT_EMPTY
    assert "the subject CN=root" in refused.message
    assert "subjectAltName" in refused.message
    assert "extendedKeyUsage" in refused.message
    assert "a challenge password" in refused.message
    assert "let-me-in" not in refused.message


def test_unreadable_requests_and_annotations_are_refused() -> None:
    assert refusal(request("bm90IGEgcmVxdWVzdA==")).reason == REQUEST_NOT_EMPTY
    assert refusal(request("%%%")).reason == REQUEST_NOT_EMPTY
    annotated = request(
        stub(ec.generate_private_key(ec.SECP256R1())), unverifiedUserAnnotations={"a.b/c": "d"}
    )
    refused = refusal(annotated)
    assert (refused.reason, "a.b/c" in refused.message) == (INVALID_USER_ANNOTATIONS, True)


def test_a_decided_request_is_cached_without_its_request_and_chain() -> None:
    obj = request(stub(ec.generate_private_key(ec.SECP256R1())))
    assert decision(obj) is None
    assert compact_request(obj)["spec"]["stubPKCS10Request"]
    obj["status"] = {
        "conditions": [{"type": "Issued", "status": "True"}],
        "certificateChain": "-----BEGIN CERTIFICATE-----",
    }
    assert decision(obj) == "Issued"
    cached = compact_request(obj)
    assert "stubPKCS10Request" not in cached["spec"]
    assert "certificateChain" not in cached["status"]
    assert decision(cached) == "Issued"
