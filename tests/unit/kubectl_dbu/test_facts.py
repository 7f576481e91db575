"""What `kubectl dbu status` shows of a DatabaseUser: its row, read off the object and its pods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu import facts, status
from dbuser_operator.kubectl_dbu.status import HEADERS, render, row
from dbuser_operator.kubectl_dbu.why import render as why_render

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


def user(name: str = "app", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"generatedPassword": {}, "connectionSecret": {"name": f"{name}-conn"}},
        "status": {
            "user": name,
            "host": "10.%",
            "conditions": [{"type": "Ready", "status": "True", "reason": "AccountReady"}],
            **status,
        },
    }


def pod(name: str, secret: str, started: str, namespace: str = "team-a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": secret}}]}]},
        "status": {"phase": "Running", "startTime": started},
    }


def test_a_ready_user_without_rotation_shows_its_secret_age() -> None:
    secret = {
        "metadata": {
            "creationTimestamp": "2026-11-20T12:00:00Z",
            "managedFields": [{"time": "2026-11-25T12:00:00Z"}, {"time": "2026-11-21T12:00:00Z"}],
        }
    }
    assert row(user(), secret, [], NOW) == [
        "app", "True", "AccountReady", "-", "(default)", "app@10.%", "24h", "-", "-",
    ]  # fmt: skip


def test_a_retained_rotation_counts_the_pods_that_started_before_it() -> None:
    obj = user(
        rotation={
            "phase": "Retained",
            "lastRotationTime": "2026-11-26T11:00:00Z",
            "retainedSince": "2026-11-26T11:00:00Z",
        }
    )
    obj["spec"]["serverRef"] = {"kind": "ClusterMySQLServer", "name": "shared"}
    pods = [
        pod("old", "app-conn", "2026-11-26T10:00:00Z"),
        pod("within-the-second", "app-password", "2026-11-26T11:00:00Z"),  # status truncates to seconds
        pod("new", "app-conn", "2026-11-26T11:00:02Z"),
        pod("other-secret", "unrelated", "2026-11-26T10:00:00Z"),
        pod("other-namespace", "app-conn", "2026-11-26T10:00:00Z", namespace="team-b"),
    ]
    line = row(obj, None, pods, NOW)
    assert line[4:] == ["ClusterMySQLServer/shared", "app@10.%", "60m", "Retained", "2"]
    assert facts.old_password_pods(obj, pods) == ["old", "within-the-second"]
    assert row(obj, None, None, NOW)[-1] == "?"  # pods not listable: unknown, not zero


def test_a_user_the_operator_has_not_seen_yet() -> None:
    obj = {"metadata": {"name": "fresh", "namespace": "team-a"}, "spec": {"user": "u1"}}
    assert row(obj, None, [], NOW) == ["fresh", "Unknown", "-", "-", "(default)", "u1@%", "-", "-", "-"]


def test_work_underway_shows_beside_ready() -> None:
    """A Ready user whose render is queued: Ready stays True, PROGRESSING names the work; why says both."""
    obj = user()
    obj["status"]["conditions"].append(
        {"type": "Progressing", "status": "True", "reason": "TemplatesPending", "message": "queued"}
    )
    assert row(obj, None, [], NOW)[1:4] == ["True", "AccountReady", "TemplatesPending"]
    first = why_render(obj, [], NOW).splitlines()[0]
    assert first == "DatabaseUser team-a/app: Ready=True (AccountReady), Progressing=True (TemplatesPending)"
    obj["status"]["conditions"][-1].update(status="False", reason="Settled")
    assert row(obj, None, [], NOW)[3] == "-"
    assert why_render(obj, [], NOW).splitlines()[0] == "DatabaseUser team-a/app: Ready=True (AccountReady)"


def test_one_table_per_namespace_in_order() -> None:
    text = render({"b": [["x", *["-"] * 8]], "a": [["y", *["-"] * 8]]}, "NAMESPACE")
    blocks = text.split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == ["NAMESPACE: a", "NAMESPACE: b"]
    assert blocks[0].splitlines()[1].split("   ")[0] == HEADERS[0]


def test_a_workload_user_shows_its_serviceaccount_and_what_its_account_requires() -> None:
    obj = user(
        "bound",
        workload={
            "serviceAccountName": "app",
            "subject": "/O=dbuser-operator/OU=team-a/CN=app",
            "issuer": "/CN=Workload CA",
        },
    )
    obj["spec"] = {"authentication": {"workload": {"serviceAccountName": "app"}}}
    line = status.record(obj, None, [], NOW)
    assert line["serviceAccount"] == "app"
    assert line["passwordAge"] == "-"  # no password to age
    assert facts.workload(obj) == (
        "ServiceAccount app, certificate subject /O=dbuser-operator/OU=team-a/CN=app, issuer /CN=Workload CA"
    )
    assert "Workload:   ServiceAccount app, certificate subject" in why_render(obj, [], NOW)
    del obj["status"]["workload"]
    assert facts.workload(obj) == "ServiceAccount app (not in force yet)"
    assert facts.workload(user()) == "-"
    assert status.record(user(), None, [], NOW)["serviceAccount"] == "-"
