"""The compliance counts kept by the cache's events equal the full recount (:func:`tally`) after any sequence
of adds, updates and deletes, at any clock, with any policy cap and any holders' findings."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from dbuser_operator.controllers.databaseuser import compliance, compliance_counts
from dbuser_operator.controllers.databaseuser.compliance import ComplianceCollector, RetainedHolders, tally
from dbuser_operator.controllers.databaseuser.compliance_counts import UserCounts
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.runtime.informer import Informer

BASE = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
NAMES = [f"u{i}" for i in range(8)]
NAMESPACES = ["team-a", "team-b"]
DAYS = (30, 90)


def moment(rng: random.Random) -> datetime:
    """A time on a coarse grid (so that the clock often falls exactly on a deadline), sometimes with
    microseconds."""
    when = BASE + timedelta(
        days=rng.choice([0, -1, -30, -31, -60, -90, -91, 1, 30]), minutes=5 * rng.randrange(-3, 4)
    )
    return when + timedelta(microseconds=rng.choice([0, 0, 123456, 999999]))


def stamp(rng: random.Random) -> Any:
    """An RFC 3339 time, or what is not one."""
    return rng.choice(
        [
            moment(rng).isoformat().replace("+00:00", "Z"),
            moment(rng).isoformat(),
            moment(rng).replace(tzinfo=None).isoformat(),
            "1970-01-01T00:00:00Z",
            "not a time",
            None,
            "",
        ]
    )


def maybe(rng: random.Random, value: Any) -> Any:
    return value if rng.random() < 0.5 else None


def random_user(rng: random.Random) -> dict[str, Any]:
    """A DatabaseUser of every shape the counts read."""
    spec: dict[str, Any] = {}
    if rng.random() < 0.8:
        spec[rng.choice(["generatedPassword", "password"])] = {}
    if rng.random() < 0.1:
        spec["authentication"] = {"workload": {"serviceAccountName": "app"}}
    if rng.random() < 0.3:
        spec["requireTLS"] = rng.random() < 0.5
    if rng.random() < 0.2:
        spec["tls"] = {"x509": True}
    spec["privileges"] = [
        {"database": rng.choice(["*", "app"]), "privileges": ["SELECT"], "grantOption": rng.random() < 0.2}
        for _ in range(rng.randrange(3))
    ]
    if rng.random() < 0.6:
        spec["account"] = {
            key: value
            for key, value in {
                "locked": maybe(rng, rng.random() < 0.5),
                "expiresAt": maybe(rng, stamp(rng)),
                "passwordExpire": maybe(rng, rng.choice(["30d", "90d", "Never", "Default", "bad"])),
            }.items()
            if value is not None
        }
    if rng.random() < 0.3:
        spec["rotation"] = {"gracePeriod": rng.choice(["5m", "1h", "24h", "bad", ""])}
    if rng.random() < 0.1:
        spec["managementPolicy"] = rng.choice(["Observe", "Paused"])
    server = rng.choice([None, ("MySQLServer", "main"), ("ClusterMySQLServer", "shared")])
    if server is not None:
        spec["serverRef"] = {"kind": server[0], "name": server[1]}
    rotation = {
        key: value
        for key, value in {
            "phase": maybe(rng, rng.choice(["Retained", "Discarded"])),
            "lastRotationTime": maybe(rng, stamp(rng)),
            "nextRotationTime": maybe(rng, stamp(rng)),
            "retainedSince": maybe(rng, stamp(rng)),
        }.items()
        if value is not None
    }
    metadata: dict[str, Any] = {
        "name": rng.choice(NAMES),
        "namespace": rng.choice(NAMESPACES),
        "uid": rng.choice(["uid-1", "uid-2", "uid-3", "uid-4", "", None]),
        "creationTimestamp": stamp(rng),
        "resourceVersion": str(rng.randrange(10**9)),
    }
    if rng.random() < 0.1:
        metadata["deletionTimestamp"] = stamp(rng)
    status: dict[str, Any] = {"hosts": ["%", "10.%", "db.example"][: rng.randrange(4)]}
    if rotation:
        status["rotation"] = rotation
    return {"metadata": metadata, "spec": spec, "status": status}


def random_cap(rng: random.Random) -> dict[tuple[str, str], float | None]:
    """A policy cap per (server key, namespace): changes between scrapes without any DatabaseUser event."""
    servers = ["", "MySQLServer/team-a/main", "MySQLServer/team-b/main", "ClusterMySQLServer/shared"]
    return {
        (server, namespace): rng.choice([None, 0.0, 30 * 86400.0, 31 * 86400.0, 90 * 86400.0])
        for server in servers
        for namespace in NAMESPACES
    }


def event(rng: random.Random, informer: Informer) -> dict[str, Any]:
    """A watch event: an add or change of a random key, or the delete of a cached one (or of one never
    seen)."""
    obj = random_user(rng)
    cached = informer.store.object_keys()
    if cached and rng.random() < 0.3:
        key = rng.choice(cached)
        obj["metadata"].update(namespace=key.namespace, name=key.name)
        return {"type": "DELETED", "object": obj}
    return {"type": rng.choice(["ADDED", "MODIFIED"]), "object": obj}


def holders_change(rng: random.Random, holders: RetainedHolders) -> None:
    uid = rng.choice(["uid-1", "uid-2", "uid-3", "uid-4", "", "gone"])
    choice = rng.randrange(3)
    if choice == 0:
        holders.record(uid, pods=rng.random() < 0.5, sessions=rng.random() < 0.5)
    elif choice == 1:
        holders.forget(uid)
    else:
        holders.prune({"uid-1", "uid-3"})


def samples(collector: ComplianceCollector) -> list[tuple[str, list[tuple[str, float]]]]:
    return [
        (family.name, [(str(sorted(s.labels.items())), s.value) for s in family.samples])
        for family in collector.collect()
    ]


@pytest.mark.parametrize("seed", range(60))
def test_the_counts_equal_the_recount_after_any_events_at_any_clock(seed: int) -> None:
    rng = random.Random(seed)
    holders = RetainedHolders()
    informer = Informer(cast(Any, None), DATABASE_USERS)
    early = [event(rng, informer) for _ in range(rng.randrange(10))]
    for change in early:  # cached before the collector attaches: handed over as adds
        informer._apply(change, "1")
    caps = random_cap(rng)

    def cap(server: str, namespace: str) -> float | None:
        return caps[(server, namespace)]

    clock = [BASE]
    incremental = ComplianceCollector(clock=lambda: clock[0], holders=holders)
    incremental.attach(informer, cap=cap)
    snapshot: list[dict[str, Any]] = []
    recount = ComplianceCollector(clock=lambda: clock[0], holders=holders)
    recount.attach(snapshot, cap=cap)
    (counts,) = (source.counts for source in incremental._sources)
    assert counts is not None
    for _ in range(120):
        roll = rng.random()
        if roll < 0.7:
            informer._apply(event(rng, informer), "1")
        elif roll < 0.85:
            holders_change(rng, holders)
        else:
            caps.update(random_cap(rng))  # a server's policy or a namespace's labels changed
        clock[0] = moment(rng)
        snapshot[:] = list(informer.store)
        assert counts.tallies(clock[0], cap) == tally(snapshot, clock[0], holders, cap)
        if rng.random() < 0.2:
            assert samples(incremental) == samples(recount)


def test_detached_counts_hear_no_more_events() -> None:
    holders = RetainedHolders()
    informer = Informer(cast(Any, None), DATABASE_USERS)
    collector = ComplianceCollector(clock=lambda: BASE, holders=holders)
    detach = collector.attach(informer)
    user = {"metadata": {"name": "u", "namespace": "a", "uid": "x"}, "spec": {}, "status": {"hosts": ["%"]}}
    informer._apply({"type": "ADDED", "object": user}, "1")
    assert any(family.samples for family in collector.collect())
    detach()
    assert informer._handlers == []
    assert holders._listeners == []
    assert all(not family.samples for family in collector.collect())


def test_a_holders_change_moves_a_retained_password_to_its_reason() -> None:
    holders = RetainedHolders()
    retained = {"phase": "Retained", "retainedSince": "2026-11-26T11:00:00Z"}
    user = {
        "metadata": {"name": "u", "namespace": "a", "uid": "x"},
        "spec": {"generatedPassword": {}},
        "status": {"hosts": ["%"], "rotation": retained},
    }
    counts = UserCounts(holders)
    holders.listen(counts.on_holders)
    counts.on_add(user)

    def reasons() -> dict[str, int]:
        return dict(counts.tallies(BASE, lambda s, n: None)[("default", "a")].retained_past_grace)

    assert reasons() == {"unknown": 1}
    holders.record("x", pods=True, sessions=True)
    assert reasons() == {"pods_and_sessions": 1}
    holders.prune(set())
    assert reasons() == {"unknown": 1}


def test_a_scrape_reads_no_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once attached, a scrape asks the counts only: no resource's facts are computed again, however many."""
    informer = Informer(cast(Any, None), DATABASE_USERS)
    rng = random.Random(7)
    for _ in range(50):
        informer._apply({"type": "ADDED", "object": random_user(rng)}, "1")
    collector = ComplianceCollector(clock=lambda: BASE, holders=RetainedHolders())
    collector.attach(informer)
    read: list[object] = []
    monkeypatch.setattr(compliance_counts, "entry_of", read.append)
    monkeypatch.setattr(compliance, "tally", lambda *args, **kwargs: read.append(args))
    assert any(family.samples for family in collector.collect())
    assert read == []
