"""Which client certificates a DatabaseUser may have the operator request from cert-manager.

A ClusterIssuer signs whatever subject it is asked for; if its CA is one the MySQL server trusts, a tenant
that could name it would obtain the certificate of an account that is not its own. So a ClusterIssuer is
refused unless admitted: by the ``certificates.clusterIssuers`` of the policy entry that selects the
namespace, on a server resource with a policy; by the operator's ``--cert-manager-cluster-issuers``
otherwise (the default server, a server resource without a policy). An Issuer is always of the DatabaseUser's
own namespace (cert-manager resolves it there, and the API has no field for another). The entry's
``certificates.subjects`` patterns bound the subjects requested from any issuer.
"""

from __future__ import annotations

from collections.abc import Sequence

from dbuser_operator.api.v1alpha1.client_certificate import ClientCertificate
from dbuser_operator.api.v1alpha1.server_policy import NamespacePolicy
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.policy.rules import entry_for, matches, patterns_text
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.workload.identity import SUBJECT_ORGANIZATION

CERTIFICATE_NOT_ALLOWED = "CertificateNotAllowed"
SETTINGS_FLAG = "--cert-manager-cluster-issuers"


def entry_problems(
    entry: NamespacePolicy, namespace: str, certificate: ClientCertificate, subject: str
) -> list[str]:
    """What the request does beyond a policy entry's ``certificates``."""
    bounds = entry.certificates
    problems = []
    issuer = certificate.issuer_ref
    if issuer.kind == "ClusterIssuer" and (bounds is None or issuer.name not in bounds.cluster_issuers):
        admitted = (
            ", ".join(bounds.cluster_issuers) if bounds is not None and bounds.cluster_issuers else "none"
        )
        problems.append(
            f"ClusterIssuer {issuer.name} is not admitted (certificates.clusterIssuers: {admitted})"
        )
    patterns = bounds.subjects if bounds is not None else None
    if patterns is not None and not any(matches(pattern, subject, namespace) for pattern in patterns):
        problems.append(
            f"subject {subject[:120]!a} is outside certificates.subjects {patterns_text(patterns, namespace)}"
        )
    return problems


def reserved_problems(subject: str) -> list[str]:
    """A subject of the workload signer's form (``/O=dbuser-operator/…``) is its alone, from any issuer:
    an issuer over the signing CA, by mistake, would otherwise hand out another namespace's workload
    certificate."""
    mark = f"/O={SUBJECT_ORGANIZATION}"
    if subject != mark and not subject.startswith(f"{mark}/"):
        return []
    return [f"subjects {mark}/… are the workload signer's (spec.authentication.workload), never requested"]


def settings_problems(cluster_issuers: Sequence[str], certificate: ClientCertificate) -> list[str]:
    """What the request does beyond the operator's own list, where no policy decides."""
    issuer = certificate.issuer_ref
    if issuer.kind != "ClusterIssuer" or issuer.name in cluster_issuers:
        return []
    admitted = ", ".join(cluster_issuers) or "none"
    return [f"ClusterIssuer {issuer.name} is not admitted ({SETTINGS_FLAG}: {admitted})"]


class CertificateRules:
    """Checks a DatabaseUser's spec.tls.certificate against its server's policy, or the operator's list."""

    def __init__(self, gate: PolicyGate, cluster_issuers: Sequence[str]) -> None:
        self.gate = gate
        self.cluster_issuers = tuple(cluster_issuers)

    def check(
        self, server: ServerResource | None, namespace: str, certificate: ClientCertificate, subject: str
    ) -> None:
        """Raise CertificateNotAllowed (not retried: a change of the spec, the policy or the namespace's
        labels brings the resource back) if the request is not admitted."""
        policy = server.spec.policy if server is not None else None
        if reserved := reserved_problems(subject):
            problems, where = reserved, "the operator"
        elif server is None or policy is None:
            problems = settings_problems(self.cluster_issuers, certificate)
            where = "the operator"
        else:
            found = entry_for(policy, self.gate.labels(server, namespace))
            if found is None:  # the policy step refused it already
                problems, where = [f"namespace {namespace} may not use it"], str(server)
            else:
                index, entry = found
                problems = entry_problems(entry, namespace, certificate, subject)
                where = f"{server} policy.namespaces[{index}]"
        if problems:
            message = f"spec.tls.certificate: {'; '.join(problems)} ({where})"
            raise ConditionError(CERTIFICATE_NOT_ALLOWED, message, retry=False)
