"""The Certificate the operator asks cert-manager for, what it patches, and how it reads cert-manager's
progress."""

from __future__ import annotations

from typing import Any

from dbuser_operator.certificates.certificate import Progress, Request, pending_request_message

REQUEST = Request(
    name="app",
    secret_name="app-client-tls",
    literal_subject="CN=app,O=shop",
    issuer_name="clients",
    issuer_kind="Issuer",
    duration="2160h",
)
LABELS = {"app.kubernetes.io/managed-by": "dbuser-operator", "dbuser-operator.dev/target": "default"}
OWNER = {
    "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
    "kind": "DatabaseUser",
    "name": "app",
    "uid": "u",
}


def test_the_body_asks_for_a_client_certificate_of_the_subject_and_nothing_more() -> None:
    body = REQUEST.body(LABELS, {**OWNER, "controller": True})
    assert body["metadata"] == {
        "name": "app",
        "labels": LABELS,
        "ownerReferences": [{**OWNER, "controller": True}],
    }
    assert body["spec"] == {
        "secretName": "app-client-tls",
        "literalSubject": "CN=app,O=shop",
        "usages": ["digital signature", "client auth"],
        "privateKey": {"algorithm": "ECDSA", "size": 256, "encoding": "PKCS8", "rotationPolicy": "Always"},
        "issuerRef": {"name": "clients", "kind": "Issuer", "group": "cert-manager.io"},
        "revisionHistoryLimit": 1,
        "duration": "2160h",
    }


def current(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": dict(LABELS)}, "spec": {**REQUEST.spec(), **spec}}


def test_a_certificate_in_line_is_not_patched() -> None:
    assert REQUEST.patch(current(), LABELS) == {}
    # cert-manager's own fields (and what a CRD default might add) are not the operator's
    assert REQUEST.patch(current(subject={"organizations": ["x"]}), LABELS) == {}


def test_the_operators_fields_changed_by_hand_are_put_back() -> None:
    changed = current(usages=["server auth"], literalSubject="CN=root", renewBefore="1h")
    assert REQUEST.patch(changed, LABELS) == {
        "spec": {
            "usages": ["digital signature", "client auth"],
            "literalSubject": "CN=app,O=shop",
            "renewBefore": None,
        }
    }
    assert REQUEST.patch({"metadata": {}, "spec": REQUEST.spec()}, LABELS) == {"metadata": {"labels": LABELS}}


def condition(
    type_: str, status: str, reason: str = "", message: str = "", generation: int = 2
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
    }


def test_progress_reads_the_conditions_of_the_current_generation() -> None:
    ready = {
        "metadata": {"generation": 2},
        "status": {"conditions": [condition("Ready", "True", message="up to date")]},
    }
    assert Progress.of(ready) == Progress(ready=True, failed=False, message="up to date")
    failed = {
        "metadata": {"generation": 2},
        "status": {
            "conditions": [
                condition("Ready", "False", message="Issuing certificate as Secret does not exist"),
                condition("Issuing", "False", "Failed", "The certificate request has failed to complete"),
            ]
        },
    }
    assert Progress.of(failed) == Progress(
        ready=False, failed=True, message="The certificate request has failed to complete"
    )
    stale = {"metadata": {"generation": 3}, "status": {"conditions": [condition("Ready", "True")]}}
    assert Progress.of(stale) == Progress(ready=False, failed=False, message="")
    assert Progress.of({"metadata": {}}) == Progress(ready=False, failed=False, message="")


def request(name: str, uid: str, revision: str, status: str, message: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "ownerReferences": [{"uid": uid}],
            "annotations": {"cert-manager.io/certificate-revision": revision},
        },
        "status": {"conditions": [{"type": "Ready", "status": status, "message": message}]},
    }


def test_the_newest_pending_request_of_the_certificate_is_quoted() -> None:
    requests = [
        request("app-1", "c", "1", "True", "issued"),
        request("app-2", "c", "2", "False", 'Referenced "Issuer" not found'),
        request("other-1", "x", "9", "False", "another Certificate's"),
    ]
    assert pending_request_message(requests, "c") == 'CertificateRequest app-2: Referenced "Issuer" not found'
    assert pending_request_message(requests[:1], "c") == ""
    assert pending_request_message(requests[2:], "c") == ""
