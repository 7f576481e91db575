"""The Degraded count: what the Argo CD health checks read as Degraded, per kind and namespace."""

from __future__ import annotations

from typing import Any

from dbuser_operator.controllers.kit.degraded import NAME, DegradedCollector, is_degraded


def resource(namespace: str, reason: str, status: str = "False", **extra: Any) -> dict[str, Any]:
    condition = {"type": "Ready", "status": status, "reason": reason, "observedGeneration": 1}
    obj: dict[str, Any] = {
        "metadata": {"namespace": namespace, "generation": 1},
        "spec": {},
        "status": {"conditions": [condition]},
    }
    for key, value in extra.items():
        obj[key].update(value)
    return obj


def test_what_counts_as_degraded() -> None:
    assert is_degraded("DatabaseUser", resource("a", "SecretNotFound"))
    assert not is_degraded("DatabaseUser", resource("a", "DatabaseUnavailable"))  # retried: Progressing
    assert not is_degraded("DatabaseUser", resource("a", "AccountReady", "True"))
    assert not is_degraded(
        "DatabaseUser", resource("a", "SecretNotFound", spec={"managementPolicy": "Paused"})
    )
    assert not is_degraded("DatabaseUser", resource("a", "SecretNotFound", metadata={"generation": 2}))
    assert is_degraded("DatabaseRole", resource("a", "RoleExists"))
    assert not is_degraded("DatabaseUser", resource("a", "RoleExists"))  # a role's reason, not a user's


def test_the_collector_counts_per_kind_and_namespace_while_attached() -> None:
    collector = DegradedCollector()
    users = [
        resource("a", "SecretNotFound"),
        resource("a", "AccountReady", "True"),
        resource("b", "InvalidSpec"),
    ]
    detach = collector.attach({"DatabaseUser": users, "Database": [resource("a", "DatabaseExists")]})
    (family,) = collector.collect()
    assert family.name == NAME
    samples = {(s.labels["kind"], s.labels["namespace"]): s.value for s in family.samples}
    assert samples == {("DatabaseUser", "a"): 1.0, ("DatabaseUser", "b"): 1.0, ("Database", "a"): 1.0}
    detach()
    (family,) = collector.collect()
    assert family.samples == []
