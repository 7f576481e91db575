"""Client certificates of workload subjects, as the operator's signer issues them and the kubelet writes them
(``podCertificate`` volume, ``credentialBundlePath``): the tests play the signer with the signing CA (the
local server's CA, its ``ssl_ca``), and forgers with other CAs."""

from __future__ import annotations

import secrets
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.workload.identity import SUBJECT_ORGANIZATION

REFUSED = frozenset({1045})  # a login's error: access denied
UNTRUSTED = frozenset(
    {2006, 2013}
)  # the server ends the TLS handshake: a certificate of a CA it does not trust


class PodCertificates:
    """Client certificates of a workload's subject (``/O=dbuser-operator/OU=<namespace>/CN=<name>``), as
    the signer issues them, each written the way the kubelet writes a ``podCertificate`` volume's
    ``credentialBundlePath``: the PKCS#8 private key, then the certificate chain, in one PEM file."""

    def __init__(self, ca: CertificateAuthority, directory: Path) -> None:
        self.ca = ca
        self.directory = directory

    def bundle(self, namespace: str, service_account: str, *, ca: CertificateAuthority | None = None) -> Path:
        """The credential bundle of a certificate for ``namespace``/``service_account`` (signed by ``ca``,
        by default the signing CA)."""
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, SUBJECT_ORGANIZATION),
                x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, namespace),
                x509.NameAttribute(NameOID.COMMON_NAME, service_account),
            ]
        )
        pair = (ca or self.ca).issue_client_subject(name)
        path = self.directory / f"{secrets.token_hex(4)}-credentialbundle.pem"
        path.write_bytes(pair.key_pem + pair.cert_pem)
        return path

    def forger(self) -> CertificateAuthority:
        """Another CA of the very same name as the signing CA: what it signs carries the right issuer and
        subject, and no server that trusts only the signing CA verifies it."""
        forged = CertificateAuthority(self.ca.subject_oneline.removeprefix("/CN="))
        assert forged.subject_oneline == self.ca.subject_oneline
        return forged
