"""Which pods hold a retained password: the Secrets a DatabaseUser publishes, how pods use them, when they
started (pure logic of controllers/consumers.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from dbuser_operator.controllers.databaseuser.consumers import (
    consumed_secrets,
    holding_pods,
    started_after,
    uses_secret,
)
from dbuser_operator.controllers.databaseuser.steps.rotation import retained_at

ROTATED = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
BEFORE, SAME, AFTER = "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T12:00:01Z"


def pod(name: str, spec: dict[str, Any], started: str = BEFORE, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec, "status": {"startTime": started, **status}}


def container(**fields: Any) -> dict[str, Any]:
    return {"containers": [{"name": "app", **fields}]}


def test_consumed_secrets() -> None:
    user = {"metadata": {"name": "app"}, "spec": {"password": {"name": "pw", "key": "k"}}}
    assert consumed_secrets(user) == {"pw"}
    generated = {
        "metadata": {"name": "app"},
        "spec": {"generatedPassword": {}, "connectionSecret": {"name": "c"}},
    }
    assert consumed_secrets(generated) == {"app-password", "c"}
    named = {"metadata": {"name": "app"}, "spec": {"generatedPassword": {"secretName": "mine"}}}
    assert consumed_secrets(named) == {"mine"}


@pytest.mark.parametrize(
    "spec",
    [
        container(env=[{"name": "P", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "k"}}}]),
        container(envFrom=[{"secretRef": {"name": "pw"}}]),
        {
            "containers": [{"name": "a"}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "pw"}}]}],
        },
        {"containers": [{"name": "a"}], "volumes": [{"name": "v", "secret": {"secretName": "pw"}}]},
        {
            "containers": [{"name": "a"}],
            "volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "pw"}}]}}],
        },
    ],
)
def test_every_way_a_pod_uses_a_secret(spec: dict[str, Any]) -> None:
    assert uses_secret(pod("p", spec), frozenset({"pw"}))
    assert not uses_secret(pod("p", spec), frozenset({"other"}))


def test_unrelated_pods_use_nothing() -> None:
    spec = container(
        env=[{"name": "X", "value": "1"}, {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "pw"}}}]
    )
    assert not uses_secret(pod("p", spec), frozenset({"pw"}))


def test_started_after_is_strict_and_counts_restarted_containers() -> None:
    spec = container()
    assert not started_after(pod("p", spec, BEFORE), ROTATED)
    assert not started_after(pod("p", spec, SAME), ROTATED)  # the same second may have read the old one
    assert started_after(pod("p", spec, AFTER), ROTATED)
    restarted = {"containerStatuses": [{"state": {"running": {"startedAt": AFTER}}}]}
    assert started_after(pod("p", spec, BEFORE, **restarted), ROTATED)
    one_old = {
        "containerStatuses": [
            {"state": {"running": {"startedAt": AFTER}}},
            {"state": {"running": {"startedAt": BEFORE}}},
        ]
    }
    assert not started_after(pod("p", spec, BEFORE, **one_old), ROTATED)
    assert not started_after({"metadata": {"name": "p"}}, ROTATED)  # no status yet: counted as holding


def test_holding_pods() -> None:
    uses = container(envFrom=[{"secretRef": {"name": "pw"}}])
    pods = [
        pod("old", uses),
        pod("new", uses, AFTER),
        pod("done", uses, phase="Succeeded"),
        pod("other", container()),
        pod("also-old", uses, phase="Running"),
    ]
    assert holding_pods(pods, frozenset({"pw"}), ROTATED) == ["also-old", "old"]


def test_the_grace_period_counts_from_the_end_of_the_retained_second() -> None:
    """retainedSince is truncated to the second: measuring from it would discard up to a second early."""
    assert retained_at("2026-11-26T10:00:04Z") == datetime(2026, 11, 26, 10, 0, 5, tzinfo=UTC)
    assert retained_at("2026-11-26T10:00:04.25Z") == datetime(2026, 11, 26, 10, 0, 4, 250000, tzinfo=UTC)
    assert retained_at(None) is None
    assert retained_at("yesterday") is None
