"""``kubectl dbu certificates NAME`` (and the ``Certificates:`` of ``why``): the certificates issued for a
DatabaseUser. For one bound to a ServiceAccount (workload identity), this signer's PodCertificateRequests of
that ServiceAccount in the namespace, newest first: pod, node, state, validity, read off their status (no
X.509 parsing). For one with ``spec.tls.certificate``, the state of the cert-manager Certificate the
operator made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu import facts
from dbuser_operator.kubectl_dbu.errors import NotFound
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import (
    CERTIFICATES,
    DATABASE_USERS,
    POD_CERTIFICATE_REQUESTS,
    SIGNER_NAME,
)
from dbuser_operator.kubectl_dbu.output import document
from dbuser_operator.kubectl_dbu.table import age, human_duration, parse_time, table

STATES = ("Issued", "Denied", "Failed")  # a request's final conditions; none yet: Pending
PENDING = "Pending"
REQUEST_HEADERS = (
    "REQUEST",
    "POD",
    "NODE",
    "STATE",
    "AGE",
    "NOT BEFORE",
    "REFRESH AT",
    "NOT AFTER",
    "MESSAGE",
)
CERTIFICATE_HEADERS = ("CERTIFICATE", "READY", "REASON", "NOT AFTER", "RENEWAL AT", "SECRET", "MESSAGE")
KEPT = (
    "Requests are deleted 15 minutes after they are made (kube-controller-manager's PodCertificateRequest "
    "cleaner, Kubernetes 1.37) and with their pod: a certificate issued before is still in its pod's "
    "volume, but no longer listed."
)


def when(value: object, now: datetime) -> str:
    """An RFC 3339 time relative to ``now``: ``in 23h``, ``5m ago``, or ``-`` when there is none."""
    moment = parse_time(value)
    if moment is None:
        return "-"
    return f"in {human_duration(moment - now)}" if moment > now else f"{human_duration(now - moment)} ago"


def request_state(request: dict[str, Any]) -> tuple[str, str, str]:
    """The request's decision (``Issued``, ``Denied``, ``Failed``, else ``Pending``), its reason and
    message."""
    for condition in (request.get("status") or {}).get("conditions") or []:
        if condition.get("type") in STATES and condition.get("status") == "True":
            return (
                str(condition["type"]),
                str(condition.get("reason") or ""),
                str(condition.get("message") or ""),
            )
    return PENDING, "", ""


def request_record(request: dict[str, Any], now: datetime) -> dict[str, Any]:
    """What is shown of one PodCertificateRequest (``-o json|yaml`` prints it as is)."""
    metadata, spec, status = request["metadata"], request.get("spec") or {}, request.get("status") or {}
    state, reason, message = request_state(request)
    not_before, not_after = parse_time(status.get("notBefore")), parse_time(status.get("notAfter"))
    valid = (
        state == "Issued"
        and not_before is not None
        and not_after is not None
        and not_before <= now < not_after
    )
    return {
        "kind": POD_CERTIFICATE_REQUESTS.kind,
        "name": metadata["name"],
        "namespace": metadata.get("namespace") or "",
        "pod": spec.get("podName") or "",
        "node": spec.get("nodeName") or "",
        "serviceAccount": spec.get("serviceAccountName") or "",
        "state": state,
        "reason": reason,
        "message": message,
        "created": metadata.get("creationTimestamp") or "",
        "notBefore": status.get("notBefore") or "",
        "beginRefreshAt": status.get("beginRefreshAt") or "",
        "notAfter": status.get("notAfter") or "",
        "validNow": valid,
    }


def requests_of(items: list[dict[str, Any]], service_account: str, now: datetime) -> list[dict[str, Any]]:
    """The records of this signer's requests for ``service_account``, newest first."""
    mine = [
        item
        for item in items
        if (item.get("spec") or {}).get("signerName") == SIGNER_NAME
        and (item.get("spec") or {}).get("serviceAccountName") == service_account
    ]
    mine.sort(key=lambda item: (item["metadata"].get("creationTimestamp") or "", item["metadata"]["name"]))
    return [request_record(item, now) for item in reversed(mine)]


def requests_text(
    records: list[dict[str, Any]],
    namespace: str,
    service_account: str,
    now: datetime,
    limit: int | None = None,
) -> str:
    """The title (how many, how many valid now), the table of the newest ``limit`` (all: None), and how long
    the API keeps requests."""
    shown = records if limit is None else records[:limit]
    valid = sum(1 for record in records if record["validNow"])
    whose = f"ServiceAccount {namespace}/{service_account} (signer {SIGNER_NAME})"
    if not records:
        return f"No PodCertificateRequests of {whose}.\n{KEPT}"
    count = f"{len(records)}" if len(shown) == len(records) else f"newest {len(shown)} of {len(records)}"
    rows = [
        [
            record["name"],
            record["pod"] or "-",
            record["node"] or "-",
            f"{record['state']} ({record['reason']})"
            if record["state"] in {"Denied", "Failed"}
            else record["state"],
            age(record["created"], now),
            when(record["notBefore"], now),
            when(record["beginRefreshAt"], now),
            when(record["notAfter"], now),
            record["message"] if record["state"] != "Issued" else "-",
        ]
        for record in shown
    ]
    title = f"PodCertificateRequests of {whose}: {count}, newest first; {valid} certificate(s) valid now"
    return f"{title}\n{table(REQUEST_HEADERS, rows)}\n{KEPT}"


def certificate_name(obj: dict[str, Any]) -> str | None:
    """The cert-manager Certificate of ``spec.tls.certificate`` (named as the DatabaseUser), else None."""
    if not ((obj.get("spec") or {}).get("tls") or {}).get("certificate"):
        return None
    recorded = ((obj.get("status") or {}).get("clientCertificate") or {}).get("certificate")
    return str(recorded or obj["metadata"]["name"])


def certificate_record(certificate: dict[str, Any], owner_uid: str | None) -> dict[str, Any]:
    """What is shown of a cert-manager Certificate: Ready, its validity and renewal, its Secret, and whether
    this DatabaseUser owns it."""
    metadata, spec, status = (
        certificate["metadata"],
        certificate.get("spec") or {},
        certificate.get("status") or {},
    )
    ready: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    owners = {ref.get("uid") for ref in metadata.get("ownerReferences") or []}
    return {
        "kind": CERTIFICATES.kind,
        "name": metadata["name"],
        "namespace": metadata.get("namespace") or "",
        "ready": str(ready.get("status") or "Unknown"),
        "reason": str(ready.get("reason") or "-"),
        "message": str(ready.get("message") or ""),
        "notBefore": status.get("notBefore") or "",
        "notAfter": status.get("notAfter") or "",
        "renewalTime": status.get("renewalTime") or "",
        "secretName": spec.get("secretName") or "",
        "ownedByUser": owner_uid is not None and owner_uid in owners,
    }


def certificate_text(record: dict[str, Any], now: datetime) -> str:
    """The Certificate's one-row table (a note first when it is not this DatabaseUser's)."""
    row = [
        record["name"],
        record["ready"],
        record["reason"],
        when(record["notAfter"], now),
        when(record["renewalTime"], now),
        record["secretName"] or "-",
        record["message"] or "-",
    ]
    title = f"cert-manager Certificate {record['namespace']}/{record['name']}"
    if not record["ownedByUser"]:
        title += " (not this DatabaseUser's: the operator does not use it, CertificateNotOwned)"
    return f"{title}\n{table(CERTIFICATE_HEADERS, [row])}"


@dataclass
class Found:
    """What a DatabaseUser's certificates are: its bound ServiceAccount's requests (None: it binds none),
    the name of its cert-manager Certificate (None: it asks for none) and that Certificate (None: not
    found)."""

    service_account: str | None = None
    requests: list[dict[str, Any]] | None = None
    certificate_name: str | None = None
    certificate: dict[str, Any] | None = None

    def records(self) -> list[dict[str, Any]]:
        """Every record (``-o json|yaml``)."""
        return [*(self.requests or []), *([self.certificate] if self.certificate else [])]


async def look(kube: Api, obj: dict[str, Any], now: datetime) -> Found:
    """Read ``obj``'s certificates: this signer's requests of its ServiceAccount (``list``: the API selects
    by signer, the ServiceAccount is matched here), its cert-manager Certificate (``get``)."""
    metadata = obj["metadata"]
    namespace = metadata["namespace"]
    found = Found(facts.service_account(obj), certificate_name=certificate_name(obj))
    if found.service_account is not None:
        selector = [("fieldSelector", f"spec.signerName={SIGNER_NAME}")]
        listed = await kube.request("GET", POD_CERTIFICATE_REQUESTS.path(namespace), query=selector)
        found.requests = requests_of(listed.get("items") or [], found.service_account, now)
    if found.certificate_name is not None:
        try:
            certificate = await kube.get(CERTIFICATES, found.certificate_name, namespace)
        except NotFound:
            return found
        found.certificate = certificate_record(certificate, metadata.get("uid"))
    return found


def text(found: Found, obj: dict[str, Any], now: datetime, limit: int | None = None) -> str:
    """The certificates of ``obj`` for people (the newest ``limit`` requests); a sentence when it has
    none."""
    namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    parts = []
    if found.service_account is not None:
        parts.append(requests_text(found.requests or [], namespace, found.service_account, now, limit))
    if found.certificate_name is not None:
        parts.append(
            certificate_text(found.certificate, now)
            if found.certificate is not None
            else f"cert-manager Certificate {namespace}/{found.certificate_name}: not found (not made yet, "
            "or cert-manager's CRDs are not installed)"
        )
    if not parts:
        return (
            f"DatabaseUser {namespace}/{name} has no certificates: it binds no ServiceAccount "
            "(spec.authentication.workload) and asks cert-manager for none (spec.tls.certificate)."
        )
    return "\n".join(parts)


async def run(kube: Api, namespace: str, name: str, output: str | None) -> str:
    """``kubectl dbu certificates NAME``: the text, or ``{"items": [...]}`` as JSON or YAML."""
    obj = await kube.get(DATABASE_USERS, name, namespace)
    now = datetime.now(UTC)
    found = await look(kube, obj, now)
    if output in {"json", "yaml"}:
        return document(found.records(), output)
    return text(found, obj, now)
