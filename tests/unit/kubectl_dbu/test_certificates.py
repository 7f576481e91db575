"""`kubectl dbu certificates` and the `Certificates:` of `why`: the table of a bound ServiceAccount's
PodCertificateRequests (state, validity, newest first, how many valid now), cert-manager's Certificate,
and the one line a tenant without the permission gets."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu import certificates, why
from dbuser_operator.kubectl_dbu.certificates import (
    KEPT,
    REQUEST_HEADERS,
    Found,
    certificate_record,
    certificate_text,
    request_state,
    requests_of,
    requests_text,
    when,
)
from dbuser_operator.kubectl_dbu.errors import Forbidden, NotFound
from dbuser_operator.kubectl_dbu.names import SIGNER_NAME
from dbuser_operator.kubectl_dbu.output import document
from dbuser_operator.runtime.resources import Resource

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
UID = "5f0c-user"


def request(
    name: str,
    created: str,
    *,
    account: str = "app",
    signer: str = SIGNER_NAME,
    condition: dict[str, str] | None = None,
    valid: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A PodCertificateRequest as the API returns it, decided by ``condition`` (None: pending)."""
    status: dict[str, Any] = {}
    if condition is not None:
        status["conditions"] = [{"status": "True", **condition}]
    if valid is not None:
        status.update(notBefore=valid[0], beginRefreshAt="2026-11-30T04:00:00Z", notAfter=valid[1])
    return {
        "metadata": {"name": name, "namespace": "shop", "creationTimestamp": created},
        "spec": {"signerName": signer, "podName": f"{name}-pod", "nodeName": "node-1",
                 "serviceAccountName": account, "maxExpirationSeconds": 86400},
        "status": status,
    }  # fmt: skip


ISSUED = {"type": "Issued", "reason": "Issued", "message": "issued for DatabaseUser shop/app-db"}
DENIED = {"type": "Denied", "reason": "RequestNotEmpty", "message": "the request asks for a subject"}
TODAY = ("2026-11-29T11:55:00Z", "2026-11-30T11:55:00Z")
EXPIRED = ("2026-11-27T10:00:00Z", "2026-11-28T10:00:00Z")
LISTED = [
    request("req-old", "2026-11-27T10:00:00Z", condition=ISSUED, valid=EXPIRED),
    request("req-new", "2026-11-29T11:55:00Z", condition=ISSUED, valid=TODAY),
    request("req-denied", "2026-11-29T11:56:00Z", condition=DENIED),
    request("req-pending", "2026-11-29T11:59:00Z"),
    request("req-other", "2026-11-29T11:58:00Z", account="other", condition=ISSUED, valid=TODAY),
    request("req-kube", "2026-11-29T11:57:00Z", signer="kubernetes.io/kube-apiserver-client-pod"),
]


def bound_user() -> dict[str, Any]:
    return {
        "metadata": {"name": "app-db", "namespace": "shop", "uid": UID},
        "spec": {"authentication": {"workload": {"serviceAccountName": "app"}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "AccountReady"}]},
    }


def cert_manager_user() -> dict[str, Any]:
    obj = bound_user()
    obj["spec"] = {"tls": {"subject": "/CN=app", "certificate": {"issuerRef": {"name": "ca"}}}}
    obj["status"]["clientCertificate"] = {"certificate": "app-db", "secretName": "app-db-client-tls"}
    return obj


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("   ") if cell.strip()]


def test_the_state_of_a_request_is_its_final_condition_else_pending() -> None:
    assert request_state(LISTED[1]) == ("Issued", "Issued", "issued for DatabaseUser shop/app-db")
    assert request_state(LISTED[2]) == ("Denied", "RequestNotEmpty", "the request asks for a subject")
    assert request_state(LISTED[3]) == ("Pending", "", "")
    failed = request("req-f", "2026-11-29T11:00:00Z", condition={"type": "Failed", "reason": "SignerDown"})
    assert request_state(failed)[:2] == ("Failed", "SignerDown")
    not_true = request("req-n", "2026-11-29T11:00:00Z", condition={"type": "Issued", "status": "False"})
    assert request_state(not_true)[0] == "Pending"


def test_only_this_signers_requests_of_the_bound_service_account_newest_first() -> None:
    records = requests_of(LISTED, "app", NOW)
    assert [r["name"] for r in records] == ["req-pending", "req-denied", "req-new", "req-old"]
    assert [r["validNow"] for r in records] == [False, False, True, False]  # req-old expired yesterday
    assert records[2]["pod"] == "req-new-pod"
    assert records[2]["notAfter"] == "2026-11-30T11:55:00Z"
    not_yet = request(
        "req-soon", "2026-11-29T11:00:00Z", condition=ISSUED, valid=("2026-11-29T13:00:00Z", TODAY[1])
    )
    assert requests_of([not_yet], "app", NOW)[0]["validNow"] is False


def test_the_table_says_how_many_are_valid_the_denial_and_how_long_requests_are_kept() -> None:
    text = requests_text(requests_of(LISTED, "app", NOW), "shop", "app", NOW)
    lines = text.splitlines()
    assert lines[0] == (
        f"PodCertificateRequests of ServiceAccount shop/app (signer {SIGNER_NAME}): 4, newest first; "
        "1 certificate(s) valid now"
    )
    assert cells(lines[1]) == list(REQUEST_HEADERS)
    assert cells(lines[2]) == ["req-pending", "req-pending-pod", "node-1", "Pending", "60s", "-", "-", "-"]
    denied = ["req-denied", "req-denied-pod", "node-1", "Denied (RequestNotEmpty)", "4m", "-", "-", "-"]
    assert cells(lines[3]) == [*denied, "the request asks for a subject"]
    assert cells(lines[4]) == [
        "req-new",
        "req-new-pod",
        "node-1",
        "Issued",
        "5m",
        "5m ago",
        "in 16h",
        "in 23h",
        "-",
    ]
    assert cells(lines[5])[5:8] == ["2d2h ago", "in 16h", "26h ago"]
    assert lines[-1] == KEPT
    assert "req-other" not in text
    assert "req-kube" not in text
    newest = requests_text(requests_of(LISTED, "app", NOW), "shop", "app", NOW, limit=2)
    assert ": newest 2 of 4, newest first; 1 certificate(s) valid now" in newest.splitlines()[0]
    assert len(newest.splitlines()) == 1 + 1 + 2 + 1
    assert requests_text([], "shop", "app", NOW) == (
        f"No PodCertificateRequests of ServiceAccount shop/app (signer {SIGNER_NAME}).\n{KEPT}"
    )


def test_a_hostile_message_is_escaped() -> None:
    hostile = request("req-x", "2026-11-29T11:00:00Z", condition={**DENIED, "message": "a\x1b[2J\u202eb\nc"})
    text = requests_text(requests_of([hostile], "app", NOW), "shop", "app", NOW)
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "a\\x1b[2J\\u202eb\\x0ac" in text


def test_times_relative_to_now() -> None:
    assert when("2026-11-29T13:30:00Z", NOW) == "in 90m"
    assert when("2026-11-29T11:59:30Z", NOW) == "30s ago"
    assert when("", NOW) == "-"
    assert when("not a time", NOW) == "-"


def certificate(**status: Any) -> dict[str, Any]:
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date"}
    return {
        "metadata": {"name": "app-db", "namespace": "shop", "ownerReferences": [{"uid": UID}]},
        "spec": {"secretName": "app-db-client-tls"},
        "status": {"conditions": [ready], "notBefore": "2026-11-29T10:00:00Z",
                   "notAfter": "2027-02-27T10:00:00Z", "renewalTime": "2027-01-28T10:00:00Z", **status},
    }  # fmt: skip


def test_cert_managers_certificate_ready_expiry_renewal_and_owner() -> None:
    record = certificate_record(certificate(), UID)
    assert record["ready"] == "True"
    assert record["renewalTime"] == "2027-01-28T10:00:00Z"
    assert record["ownedByUser"] is True
    lines = certificate_text(record, NOW).splitlines()
    assert lines[0] == "cert-manager Certificate shop/app-db"
    assert cells(lines[2]) == ["app-db", "True", "Ready", "in 89d", "in 59d", "app-db-client-tls",
                               "Certificate is up to date"]  # fmt: skip
    pending = certificate_record(certificate(conditions=[]), "another-uid")
    assert (pending["ready"], pending["reason"], pending["ownedByUser"]) == ("Unknown", "-", False)
    assert "not this DatabaseUser's" in certificate_text(pending, NOW).splitlines()[0]


def test_a_user_without_certificates_and_a_certificate_not_made_yet() -> None:
    plain = {"metadata": {"name": "plain", "namespace": "shop"}, "spec": {}}
    assert certificates.text(Found(), plain, NOW).startswith("DatabaseUser shop/plain has no certificates")
    missing = certificates.text(Found(certificate_name="app-db"), cert_manager_user(), NOW)
    assert missing.startswith("cert-manager Certificate shop/app-db: not found")


class FakeApi:
    """The two reads the command makes, from fixed answers (an exception is raised)."""

    def __init__(self, requests: Any, certificate: Any = None) -> None:
        self.requests, self.certificate, self.queries = requests, certificate, []  # type: ignore[var-annotated]

    async def request(self, method: str, path: str, *, query: Any = (), **_: Any) -> dict[str, Any]:
        self.queries.append((method, path, list(query)))
        if isinstance(self.requests, Exception):
            raise self.requests
        return {"items": self.requests}

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if isinstance(self.certificate, Exception):
            raise self.certificate
        return dict(self.certificate)


def test_the_requests_are_selected_by_signer_and_the_records_are_json() -> None:
    kube = FakeApi(LISTED)
    found = asyncio.run(certificates.look(kube, bound_user(), NOW))  # type: ignore[arg-type]
    assert kube.queries == [("GET", "/apis/certificates.k8s.io/v1/namespaces/shop/podcertificaterequests",
                             [("fieldSelector", f"spec.signerName={SIGNER_NAME}")])]  # fmt: skip
    items = json.loads(document(found.records(), "json"))["items"]
    assert [item["name"] for item in items] == ["req-pending", "req-denied", "req-new", "req-old"]
    assert items[2]["kind"] == "PodCertificateRequest"
    assert items[2]["validNow"] is True
    found = asyncio.run(certificates.look(FakeApi([], certificate()), cert_manager_user(), NOW))  # type: ignore[arg-type]
    assert [(r["kind"], r["name"], r["ready"]) for r in found.records()] == [
        ("Certificate", "app-db", "True")
    ]
    gone = asyncio.run(certificates.look(FakeApi([], NotFound(404, "no")), cert_manager_user(), NOW))  # type: ignore[arg-type]
    assert (gone.certificate_name, gone.certificate) == ("app-db", None)


def test_why_shows_the_certificates_or_one_line_when_rbac_forbids_them() -> None:
    obj = bound_user()
    issued = asyncio.run(why._issued(FakeApi(LISTED), obj, NOW))  # type: ignore[arg-type]
    assert issued is not None
    screen = why.render(obj, [], NOW, issued).splitlines()
    start = screen.index("Certificates:")
    assert screen[start + 1].startswith("  PodCertificateRequests of ServiceAccount shop/app")
    assert cells(screen[start + 5])[:4] == ["req-new", "req-new-pod", "node-1", "Issued"]
    message = 'podcertificaterequests.certificates.k8s.io is forbidden: User "tenant" cannot list resource'
    forbidden = asyncio.run(why._issued(FakeApi(Forbidden(403, message)), obj, NOW))  # type: ignore[arg-type]
    assert forbidden == f"? (Forbidden: {message})"
    assert f"Certificates: ? (Forbidden: {message})" in why.render(obj, [], NOW, forbidden).splitlines()
    plain = {"metadata": {"name": "plain", "namespace": "shop"}, "spec": {}, "status": {}}
    assert asyncio.run(why._issued(FakeApi(AssertionError("not read")), plain, NOW)) is None  # type: ignore[arg-type]
    assert "Certificates" not in why.render(plain, [], NOW)
