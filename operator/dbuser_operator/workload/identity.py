"""The fixed names of workload identity: the signer the operator is, and the certificate subject of a
ServiceAccount — the one string the signer writes into a certificate and the account requires (REQUIRE
SUBJECT), so the two can never disagree."""

from __future__ import annotations

from typing import Final

SIGNER_NAME: Final = "mysql.dbuser-operator.dev/client"
"""The signer name pods ask for in a podCertificate projected volume (``signerName``); the operator signs
the PodCertificateRequests of this signer, and only those."""

SUBJECT_ORGANIZATION: Final = "dbuser-operator"
"""The subject's O: marks every certificate of this signer, whatever the namespace."""


def client_subject(namespace: str, service_account: str) -> str:
    """The subject of ``namespace``/``service_account``'s client certificate in OpenSSL's one-line form, as
    MySQL and MariaDB compare it in REQUIRE SUBJECT: ``/O=dbuser-operator/OU=<namespace>/CN=<name>``.

    Both names are Kubernetes object names (lowercase letters, digits, '-' and '.'), so nothing needs
    escaping; anything else is a caller's bug and refused."""
    for what, value in (("namespace", namespace), ("service account", service_account)):
        if not value or not all(c.isascii() and (c.islower() or c.isdigit() or c in "-.") for c in value):
            raise ValueError(f"{what} {value!r} is not a Kubernetes object name")
    return f"/O={SUBJECT_ORGANIZATION}/OU={namespace}/CN={service_account}"
