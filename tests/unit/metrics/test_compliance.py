"""The compliance collector over synthetic DatabaseUsers: each fact counted, series per server and
namespace only."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

from prometheus_client import CollectorRegistry, generate_latest

from dbuser_operator.api.v1alpha1.server_policy import ServerPolicy
from dbuser_operator.controllers.databaseuser.compliance import (
    ComplianceCollector,
    RetainedHolders,
    export_while_leading,
    no_cap,
    policy_lifetime_cap,
    tally,
)

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def at(delta: timedelta) -> str:
    return (NOW + delta).isoformat().replace("+00:00", "Z")


def user(
    name: str,
    namespace: str = "team-a",
    *,
    hosts: tuple[str, ...] = ("%",),
    server: str | None = None,
    created: timedelta = timedelta(days=-1),
    spec: dict[str, Any] | None = None,
    rotation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": at(created),
        },
        "spec": {"generatedPassword": {}, **(spec or {})},
        "status": {"hosts": list(hosts)},
    }
    if server:
        obj["spec"]["serverRef"] = {"kind": "MySQLServer", "name": server}
    if rotation:
        obj["status"]["rotation"] = rotation
    return obj


def test_each_fact_is_counted_per_server_and_namespace() -> None:
    objects = [
        user("plain", hosts=("%", "10.0.%")),
        user("tls", spec={"requireTLS": True}),
        user("x509", spec={"tls": {"x509": True}}),
        user(
            "admin",
            spec={"privileges": [{"database": "*", "privileges": ["SELECT"]}]},
            rotation={"lastRotationTime": at(timedelta(days=-40))},
        ),
        user(
            "granter",
            spec={"privileges": [{"database": "app", "privileges": ["SELECT"], "grantOption": True}]},
        ),
        user(
            "scheduled",
            spec={"rotation": {"period": "720h"}},
            rotation={
                "lastRotationTime": at(timedelta(days=-31)),
                "nextRotationTime": at(timedelta(days=-1)),
            },
        ),
        user("elsewhere", namespace="team-b", server="main"),
    ]
    tallies = tally(objects, NOW)
    assert set(tallies) == {("default", "team-a"), ("MySQLServer/team-b/main", "team-b")}
    a = tallies[("default", "team-a")]
    assert (a.users, a.accounts) == (6, 7)
    assert a.accounts_without_tls == 5  # plain (2 hosts), admin, granter, scheduled
    assert (a.accounts_with_global_privileges, a.accounts_with_grant_option) == (1, 1)
    assert a.oldest_password_age == timedelta(days=40).total_seconds()
    assert (a.rotations_overdue, a.passwords_over_max_lifetime) == (1, 0)  # no policy: no maximum
    assert tallies[("MySQLServer/team-b/main", "team-b")].accounts_without_tls == 1


def test_what_is_not_counted() -> None:
    objects = [
        user("observed", spec={"managementPolicy": "Observe"}),
        {**user("pending"), "status": {}},  # no account yet
        {
            **user("leaving"),
            "metadata": {**user("leaving")["metadata"], "deletionTimestamp": at(timedelta())},
        },
    ]
    assert tally(objects, NOW) == {}
    socket = user("socket", spec={"authentication": {"plugin": "auth_socket"}})
    del socket["spec"]["generatedPassword"]
    assert tally([socket], NOW)[("default", "team-a")].oldest_password_age == 0  # no password to age


def test_retained_past_grace_by_reason() -> None:
    holders = RetainedHolders()
    holders.record("uid-pods", pods=True, sessions=False)
    holders.record("uid-both", pods=True, sessions=True)
    holders.record("uid-sessions", pods=False, sessions=True)
    retained = {"phase": "Retained", "retainedSince": at(timedelta(minutes=-10))}
    objects = [
        user("pods", rotation=retained),
        user("both", rotation=retained),
        user("sessions", rotation=retained),
        user("unknown", rotation=retained),
        user("in-grace", rotation=retained, spec={"rotation": {"gracePeriod": "1h"}}),
        user("discarded", rotation={**retained, "phase": "Discarded"}),
    ]
    counts = tally(objects, NOW, holders)[("default", "team-a")].retained_past_grace
    assert counts == {"pods": 1, "pods_and_sessions": 1, "sessions": 1, "unknown": 1}
    holders.forget("uid-pods")
    holders.record("uid-both", pods=False, sessions=False)
    assert (holders.reason("uid-pods"), holders.reason("uid-both")) == ("unknown", "unknown")


def test_passwords_over_the_policy_maximum_and_expired() -> None:
    month_old = {"lastRotationTime": at(-timedelta(days=31))}
    objects = [
        user("old", server="main", rotation=month_old),
        user("young", server="main", rotation={"lastRotationTime": at(-timedelta(days=1))}),
        user("expired", server="main", rotation=month_old, spec={"account": {"passwordExpire": "30d"}}),
        user("within", server="main", rotation=month_old, spec={"account": {"passwordExpire": "Default"}}),
        user("elsewhere", namespace="team-b", rotation=month_old),
    ]
    asked: list[tuple[str, str]] = []

    def cap(server: str, namespace: str) -> float | None:
        asked.append((server, namespace))
        return timedelta(days=30).total_seconds() if namespace == "team-a" else None

    tallies = tally(objects, NOW, cap=cap)
    a = tallies[("MySQLServer/team-a/main", "team-a")]
    assert (a.passwords_over_max_lifetime, a.passwords_expired) == (3, 1)
    assert tallies[("default", "team-b")].passwords_over_max_lifetime == 0
    assert sorted(asked) == [("", "team-b"), ("MySQLServer/team-a/main", "team-a")]  # once per pair


def test_locked_and_expiring_accounts() -> None:
    objects = [
        user("locked", hosts=("%", "10.%"), spec={"account": {"locked": True}}),
        user("ended", spec={"account": {"expiresAt": at(-timedelta(minutes=1))}}),
        user("ending", spec={"account": {"expiresAt": at(timedelta(days=2))}}),
        user("open"),
    ]
    a = tally(objects, NOW)[("default", "team-a")]
    assert (a.accounts_locked, a.accounts_expiring) == (3, 1)


class _Resolver:
    def __init__(self, policy: dict[str, Any]) -> None:
        self.policy = ServerPolicy.model_validate(policy)

    def server_object(self, key: str) -> dict[str, Any] | None:
        return {"metadata": {"name": "main"}} if key == "ClusterMySQLServer/main" else None

    def resource(self, key: str, obj: dict[str, Any]) -> Any:
        return SimpleNamespace(spec=SimpleNamespace(policy=self.policy))


class _Namespaces:
    def labels(self, namespace: str) -> dict[str, str] | None:
        return {"team-a": {"tier": "prod"}, "team-b": {}}.get(namespace)


def test_the_cap_is_the_namespace_policy_entrys() -> None:
    policy = {
        "namespaces": [
            {"namespaceSelector": {"matchLabels": {"tier": "prod"}}, "maxPasswordLifetime": "90d"},
            {"namespaceSelector": {}},
        ]
    }
    cap = policy_lifetime_cap(cast(Any, _Resolver(policy)), cast(Any, _Namespaces()))
    assert cap("ClusterMySQLServer/main", "team-a") == timedelta(days=90).total_seconds()
    assert cap("ClusterMySQLServer/main", "team-b") is None  # its entry sets no maximum
    assert cap("ClusterMySQLServer/main", "unknown") is None  # labels not known yet
    assert cap("ClusterMySQLServer/other", "team-a") is None  # not in the cache
    assert cap("", "team-a") is None  # the settings' server has no policy


def exposition(objects: list[dict[str, Any]], orphans: dict[tuple[str, str], int] | None = None) -> str:
    registry = CollectorRegistry()
    collector = ComplianceCollector(clock=lambda: NOW)
    collector.attach(objects, (lambda: orphans) if orphans is not None else None)
    registry.register(collector)
    return generate_latest(registry).decode()


def series(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_exposition_names_and_orphans() -> None:
    text = exposition([user("plain")], {("default", "team-z"): 2})
    assert 'dbuser_operator_accounts_without_tls{namespace="team-a",server="default"} 1.0' in text
    assert 'dbuser_operator_server_orphaned_accounts{namespace="team-z",server="default"} 2.0' in text
    retained = "dbuser_operator_retained_passwords_past_grace"
    assert f'{retained}{{namespace="team-a",reason="unknown",server="default"}} 0.0' in text
    assert "plain" not in text  # never a user's name


def test_orphaned_databases_are_exported_per_server_and_namespace() -> None:
    registry = CollectorRegistry()
    collector = ComplianceCollector(clock=lambda: NOW)
    collector.attach([user("plain")], None, orphaned_databases=lambda: {("MySQLServer/main", "team-z"): 3})
    registry.register(collector)
    text = generate_latest(registry).decode()
    name = "dbuser_operator_server_orphaned_databases"
    assert f'{name}{{namespace="team-z",server="MySQLServer/main"}} 3.0' in text
    assert exposition([user("plain")]).count(name + "{") == 0  # without the source: the family, no series


def test_detached_caches_are_no_longer_counted() -> None:
    collector = ComplianceCollector(clock=lambda: NOW)
    detach = collector.attach([user("plain")])
    assert any(sample.value for family in collector.collect() for sample in family.samples)
    detach()
    assert all(not family.samples for family in collector.collect())


def test_series_do_not_grow_with_users() -> None:
    """10 000 users across 20 namespaces and 2 servers: as many series as 40 users there."""

    def population(count: int) -> list[dict[str, Any]]:
        return [
            user(
                f"u{i}",
                namespace=f"ns-{i % 20}",
                server="main" if (i // 20) % 2 else None,
                spec={"requireTLS": bool(i % 3)},
                rotation={"phase": "Retained", "retainedSince": at(timedelta(hours=-1))},
            )
            for i in range(count)
        ]

    small, large = series(exposition(population(40))), series(exposition(population(10_000)))
    assert len(large) == len(small)
    assert len(large) == 20 * 2 * (12 + 4)  # 12 gauges, and retained by 4 reasons, per (server, namespace)


async def test_only_a_leader_task_exports() -> None:
    """The cache is counted while the leader task runs, and no longer once it is cancelled."""
    collector = ComplianceCollector(clock=lambda: NOW)
    task = asyncio.create_task(export_while_leading([user("plain")], dict, no_cap, collector))
    await asyncio.sleep(0)
    assert any(family.samples for family in collector.collect())
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert all(not family.samples for family in collector.collect())


def test_a_workload_account_counts_as_certificate_only_not_as_a_password_or_without_tls() -> None:
    workload = user("app", hosts=("%", "10.0.%"))
    workload["spec"] = {"authentication": {"workload": {"serviceAccountName": "app"}}}
    plain = user("plain", created=timedelta(days=-30))
    counts = tally([workload, plain], NOW)[("default", "team-a")]
    assert (counts.users, counts.accounts) == (2, 3)
    assert counts.accounts_certificate_only == 2  # one per host
    assert counts.accounts_without_tls == 1  # the password account only
    assert counts.oldest_password_age == timedelta(days=30).total_seconds()  # the workload has none
    text = exposition([workload])
    assert 'dbuser_operator_accounts_certificate_only{namespace="team-a",server="default"} 2.0' in text
    assert 'dbuser_operator_accounts_without_tls{namespace="team-a",server="default"} 0.0' in text
