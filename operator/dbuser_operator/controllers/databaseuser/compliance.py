"""Compliance metrics: series per server and namespace only (never per user), so their number does not grow
with the users, from the DatabaseUsers in the cache and the drift check's last inventory.

An informer's cache is counted as its events come (:class:`~dbuser_operator.controllers.databaseuser.
compliance_counts.UserCounts`): a scrape costs the (server, namespace) pairs, not the users. Any other
iterable of objects (a snapshot: tests, benches) is counted whole at each scrape by
:func:`~dbuser_operator.controllers.databaseuser.compliance_facts.tally`, which the per-event counts equal.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Final, cast

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dbuser_operator.api.duration import parse_days
from dbuser_operator.api.v1alpha1.account import PASSWORD_LIFETIME_MAX
from dbuser_operator.controllers.databaseuser.compliance_counts import UserCounts
from dbuser_operator.controllers.databaseuser.compliance_facts import (
    DAY,
    RETAINED_HOLDERS,
    RETAINED_REASONS,
    Key,
    LifetimeCap,
    RetainedHolders,
    Tally,
    no_cap,
    tally,
)
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.policy.namespaces import NamespaceLabels
from dbuser_operator.controllers.policy.rules import entry_for
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.metrics import REGISTRY

__all__ = [
    "COMPLIANCE",
    "RETAINED_HOLDERS",
    "ComplianceCollector",
    "RetainedHolders",
    "Tally",
    "export_while_leading",
    "no_cap",
    "policy_lifetime_cap",
    "tally",
]

PREFIX: Final = "dbuser_operator_"
LABELS: Final = ("server", "namespace")


def policy_lifetime_cap(servers: ServerResolver, namespaces: NamespaceLabels) -> LifetimeCap:
    """The namespace policy's ``maxPasswordLifetime``: of the entry of the server's ``spec.policy`` that
    selects the namespace (by its labels, from the cache), as the policy gate reads it."""

    def cap(server: str, namespace: str) -> float | None:
        obj = servers.server_object(server) if server else None
        labels = namespaces.labels(namespace)
        if obj is None or labels is None:
            return None
        try:
            policy = servers.resource(server, obj).spec.policy
        except ConditionError:  # an invalid server spec: its resources are refused anyway
            return None
        found = entry_for(policy, labels) if policy is not None else None
        if found is None or found[1].max_password_lifetime is None:
            return None
        return parse_days(found[1].max_password_lifetime, most=PASSWORD_LIFETIME_MAX) * DAY

    return cap


OrphanSource = Callable[[], Mapping[Key, int]]
"""The drift check's last count of orphaned accounts (or databases), by (server label, owner's namespace)."""


@dataclass(frozen=True, eq=False)
class Source:
    """One attached cache (``counts`` kept by its events), or snapshot (no ``counts``: counted per scrape),
    and what the drift check found beside it."""

    users: Iterable[dict[str, Any]] | Informer
    orphans: OrphanSource | None
    cap: LifetimeCap
    orphaned_databases: OrphanSource | None
    counts: UserCounts | None


# name, help, Tally attribute
_GAUGES: Final = (
    ("compliance_users", "DatabaseUsers counted by the compliance metrics", "users"),
    ("compliance_accounts", "Accounts (user@host) of the DatabaseUsers counted", "accounts"),
    (
        "oldest_password_age_seconds",
        "Age of the oldest password: seconds since its last rotation, or since the resource was created",
        "oldest_password_age",
    ),
    (
        "passwords_over_max_lifetime",
        "Passwords older than the maxPasswordLifetime of the server's namespace policy",
        "passwords_over_max_lifetime",
    ),
    (
        "passwords_expired",
        "Passwords older than their spec.account.passwordExpire interval: expired on the server",
        "passwords_expired",
    ),
    ("rotations_overdue", "Scheduled rotations whose time (status.rotation.nextRotationTime) has passed",
     "rotations_overdue"),
    ("accounts_without_tls", "Accounts that may connect without TLS", "accounts_without_tls"),
    (
        "accounts_with_global_privileges",
        "Accounts granted privileges on every database (*.*)",
        "accounts_with_global_privileges",
    ),
    ("accounts_with_grant_option", "Accounts granted GRANT OPTION", "accounts_with_grant_option"),
    ("accounts_locked", "Accounts locked (spec.account.locked, or expiresAt passed)", "accounts_locked"),
    ("accounts_expiring", "Accounts with an expiresAt still to come", "accounts_expiring"),
    (
        "accounts_certificate_only",
        "Accounts whose only credential is their workload's client certificate (no password)",
        "accounts_certificate_only",
    ),
)  # fmt: skip
RETAINED: Final = "retained_passwords_past_grace"
ORPHANED: Final = "server_orphaned_accounts"
ORPHANED_DATABASES: Final = "server_orphaned_databases"


class ComplianceCollector(Collector):
    """Collects the compliance metrics of every attached cache (one per manager in this process)."""

    def __init__(
        self,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        holders: RetainedHolders = RETAINED_HOLDERS,
    ) -> None:
        self.clock = clock
        self.holders = holders
        self._sources: list[Source] = []

    def attach(
        self,
        users: Iterable[dict[str, Any]] | Informer,
        orphans: OrphanSource | None = None,
        cap: LifetimeCap = no_cap,
        orphaned_databases: OrphanSource | None = None,
    ) -> Callable[[], None]:
        """Count ``users`` (an informer: by its events from now on; else a snapshot, whole at each scrape),
        with ``orphans`` (accounts), ``orphaned_databases`` and the policies' ``cap``; returns what detaches
        them."""
        counts = UserCounts(self.holders) if isinstance(users, Informer) else None
        source = Source(users, orphans, cap, orphaned_databases, counts)
        if isinstance(users, Informer) and counts is not None:
            stop = self.holders.listen(counts.on_holders)
            users.add_handler(counts)  # the cached objects as adds, then every change
        self._sources.append(source)

        def detach() -> None:
            if source in self._sources:
                self._sources.remove(source)
                if isinstance(users, Informer) and counts is not None:
                    users.remove_handler(counts)
                    stop()

        return detach

    def describe(self) -> Iterator[Metric]:
        """The families, without samples (registering does not compute them)."""
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        """Every family, computed now."""
        tallies = self._tallies(self.clock())
        orphans: Counter[Key] = Counter()
        orphaned_databases: Counter[Key] = Counter()
        for source in list(self._sources):
            if source.orphans is not None:
                orphans.update(source.orphans())
            if source.orphaned_databases is not None:
                orphaned_databases.update(source.orphaned_databases())
        families = self._families()
        for (_, _, attribute), family in zip(_GAUGES, families, strict=False):
            for key, counts in sorted(tallies.items()):
                family.add_metric(list(key), float(getattr(counts, attribute)))
        retained, orphaned, databases = families[len(_GAUGES) :]
        for key, counts in sorted(tallies.items()):
            for reason in RETAINED_REASONS:
                retained.add_metric([*key, reason], float(counts.retained_past_grace[reason]))
        for key, count in sorted(orphans.items()):
            orphaned.add_metric(list(key), float(count))
        for key, count in sorted(orphaned_databases.items()):
            databases.add_metric(list(key), float(count))
        yield from families

    def _tallies(self, now: datetime) -> dict[Key, Tally]:
        """The facts of every source at ``now``, merged by key; then the holders of resources no source
        holds any more are forgotten."""
        tallies: dict[Key, Tally] = {}
        uids: set[str] = set()  # of the snapshots
        counted: list[UserCounts] = []  # of the caches
        sources = list(self._sources)
        for source in sources:
            if source.counts is not None:
                found = source.counts.tallies(now, source.cap)
                counted.append(source.counts)
            else:
                objects = list(cast(Iterable[dict[str, Any]], source.users))
                uids.update(str((obj.get("metadata") or {}).get("uid")) for obj in objects)
                found = tally(objects, now, self.holders, source.cap)
            for key, counts in found.items():
                tallies[key] = _merge(tallies[key], counts) if key in tallies else counts
        if sources:
            self.holders.prune_unless(lambda uid: uid in uids or any(counts.knows(uid) for counts in counted))
        return tallies

    @staticmethod
    def _families() -> list[GaugeMetricFamily]:
        families = [GaugeMetricFamily(PREFIX + name, text, labels=LABELS) for name, text, _ in _GAUGES]
        families.append(
            GaugeMetricFamily(
                PREFIX + RETAINED,
                "Old passwords still valid after their grace period, by what holds them "
                "(pods, sessions, pods_and_sessions, unknown)",
                labels=[*LABELS, "reason"],
            )
        )
        families.append(
            GaugeMetricFamily(
                PREFIX + ORPHANED,
                "Accounts the operator owns whose DatabaseUser is gone, by server and the owner's namespace "
                "(as the last drift check found them)",
                labels=LABELS,
            )
        )
        families.append(
            GaugeMetricFamily(
                PREFIX + ORPHANED_DATABASES,
                "Databases the operator's bookkeeping records as owned whose Database is gone, by server and "
                "the owner's namespace (as the last drift check found them)",
                labels=LABELS,
            )
        )
        return families


async def export_while_leading(
    users: Iterable[dict[str, Any]] | Informer,
    orphans: OrphanSource,
    cap: LifetimeCap,
    collector: ComplianceCollector,
    orphaned_databases: OrphanSource | None = None,
) -> None:
    """A leader task: export the compliance metrics of ``users`` until cancelled (leadership lost, shutdown).
    Only the leader exports them, as only it knows the orphans and what holds a retained password, so that
    replicas never count a fact twice."""
    detach = collector.attach(users, orphans, cap, orphaned_databases)
    try:
        await asyncio.Event().wait()
    finally:
        detach()


def _merge(left: Tally, right: Tally) -> Tally:
    """Two tallies of one key (two caches in one process) as one: the counts added, the oldest age kept."""
    merged = Tally(
        **{item.name: getattr(left, item.name) + getattr(right, item.name) for item in fields(Tally)}
    )
    merged.oldest_password_age = max(left.oldest_password_age, right.oldest_password_age)
    return merged


COMPLIANCE = ComplianceCollector()
REGISTRY.register(COMPLIANCE)
