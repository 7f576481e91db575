"""The Degraded count kept by an informer's events equals the count over its cache after any events."""

from __future__ import annotations

import random
from typing import Any, cast

import pytest

from dbuser_operator.controllers.kit.degraded import DegradedCollector
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, DATABASES
from dbuser_operator.runtime.informer import Informer

REASONS = ["SecretNotFound", "InvalidSpec", "DatabaseUnavailable", "DatabaseExists", "AccountReady"]


def random_resource(rng: random.Random) -> dict[str, Any]:
    ready = {
        "type": "Ready",
        "status": rng.choice(["True", "False"]),
        "reason": rng.choice(REASONS),
        "observedGeneration": rng.choice([1, 2]),
    }
    metadata: dict[str, Any] = {
        "name": rng.choice(["a", "b", "c", "d"]),
        "namespace": rng.choice(["ns-1", "ns-2"]),
        "generation": rng.choice([1, 2]),
        "resourceVersion": str(rng.randrange(10**9)),
    }
    if rng.random() < 0.1:
        metadata["deletionTimestamp"] = "2026-11-26T12:00:00Z"
    spec = {"managementPolicy": "Paused"} if rng.random() < 0.1 else {}
    return {
        "metadata": metadata,
        "spec": spec,
        "status": {"conditions": [ready] if rng.random() < 0.9 else []},
    }


def samples(collector: DegradedCollector) -> dict[tuple[str, str], float]:
    (family,) = collector.collect()
    return {(s.labels["kind"], s.labels["namespace"]): s.value for s in family.samples}


@pytest.mark.parametrize("seed", range(30))
def test_the_counts_equal_the_recount_after_any_events(seed: int) -> None:
    rng = random.Random(seed)
    informers = {
        kind: Informer(cast(Any, None), resource)
        for kind, resource in [("DatabaseUser", DATABASE_USERS), ("Database", DATABASES)]
    }
    for informer in informers.values():
        informer._apply({"type": "ADDED", "object": random_resource(rng)}, "1")
    incremental, recount = DegradedCollector(), DegradedCollector()
    detach = incremental.attach(dict(informers))
    for _ in range(80):
        informer = rng.choice(list(informers.values()))
        kind = rng.choice(["ADDED", "MODIFIED", "DELETED"])
        informer._apply({"type": kind, "object": random_resource(rng)}, "1")
        snapshot = {kind: list(informer.store) for kind, informer in informers.items()}
        undo = recount.attach(snapshot)
        assert samples(incremental) == samples(recount)
        undo()
    detach()
    assert samples(incremental) == {}
    assert all(informer._handlers == [] for informer in informers.values())
