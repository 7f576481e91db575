"""Which ClusterIssuers and subjects a namespace may have the operator request certificates with."""

from __future__ import annotations

from typing import Any

from dbuser_operator.api.v1alpha1.client_certificate import ClientCertificate
from dbuser_operator.api.v1alpha1.server_policy import NamespacePolicy
from dbuser_operator.controllers.policy.issuers import entry_problems, reserved_problems, settings_problems


def certificate(name: str, kind: str = "ClusterIssuer") -> ClientCertificate:
    return ClientCertificate.model_validate({"issuerRef": {"name": name, "kind": kind}})


def entry(**certificates: Any) -> NamespacePolicy:
    spec: dict[str, Any] = {"namespaceSelector": {}}
    if certificates:
        spec["certificates"] = certificates
    return NamespacePolicy.model_validate(spec)


def test_an_issuer_of_the_namespace_needs_no_admission() -> None:
    assert entry_problems(entry(), "shop", certificate("mine", "Issuer"), "/CN=app") == []
    assert settings_problems([], certificate("mine", "Issuer")) == []


def test_a_cluster_issuer_needs_the_entry_or_the_operators_list() -> None:
    assert entry_problems(entry(), "shop", certificate("corp"), "/CN=app") == [
        "ClusterIssuer corp is not admitted (certificates.clusterIssuers: none)"
    ]
    assert entry_problems(entry(clusterIssuers=["corp"]), "shop", certificate("corp"), "/CN=app") == []
    assert entry_problems(entry(clusterIssuers=["a", "b"]), "shop", certificate("corp"), "/CN=app") == [
        "ClusterIssuer corp is not admitted (certificates.clusterIssuers: a, b)"
    ]
    assert settings_problems(["corp"], certificate("corp")) == []
    assert settings_problems([], certificate("corp")) == [
        "ClusterIssuer corp is not admitted (--cert-manager-cluster-issuers: none)"
    ]


def test_subjects_are_bounded_by_the_entrys_patterns_for_every_issuer() -> None:
    bounded = entry(subjects=["/O=clients/OU={namespace}/CN=*"])
    mine = certificate("mine", "Issuer")
    assert entry_problems(bounded, "shop", mine, "/O=clients/OU=shop/CN=app") == []
    assert entry_problems(bounded, "shop", mine, "/O=clients/OU=bank/CN=app") == [
        "subject '/O=clients/OU=bank/CN=app' is outside certificates.subjects /O=clients/OU=shop/CN=* "
        "(pattern /O=clients/OU={namespace}/CN=*)"
    ]
    # '*' is a run of characters, nothing more: no regular expression, no escape
    assert entry_problems(bounded, "shop", mine, "/O=clients/OU=shop.x/CN=app") != []


def test_the_workload_signers_subjects_are_never_requested() -> None:
    assert reserved_problems("/O=dbuser-operator/OU=shop/CN=app") == [
        "subjects /O=dbuser-operator/… are the workload signer's (spec.authentication.workload), "
        "never requested"
    ]
    assert reserved_problems("/O=dbuser-operator") != []
    assert reserved_problems("/O=dbuser-operator-tests/CN=app") == []
    assert reserved_problems("/CN=x/O=dbuser-operator") == []
