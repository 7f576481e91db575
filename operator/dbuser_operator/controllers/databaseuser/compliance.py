"""Compliance metrics, computed at scrape time from the DatabaseUsers in the cache and the drift check's last
inventory: no bookkeeping per event, and series per server and namespace only (never per user), so their
number does not grow with the users.

Password facts count resources (one password each, whatever its hosts); TLS and privilege facts count
accounts (``user@host``, the hosts of ``status.hosts``). A workload's account (certificate-only: its
client certificate is its one credential) is counted as such, never as one without TLS nor among the
passwords. Resources under managementPolicy Observe, being
deleted, or without an account yet (no ``status.hosts``) are not counted.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dbuser_operator.api.duration import parse_days, parse_duration
from dbuser_operator.api.v1alpha1.account import PASSWORD_LIFETIME_MAX, password_lifetime_days
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.controllers.policy.namespaces import NamespaceLabels
from dbuser_operator.controllers.policy.rules import entry_for
from dbuser_operator.controllers.servers.liveness import server_label
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.metrics import REGISTRY

PREFIX: Final = "dbuser_operator_"
LABELS: Final = ("server", "namespace")
RETAINED_REASONS: Final = ("pods", "sessions", "pods_and_sessions", "unknown")
"""Why an old password outlives its grace period: pods started before the rotation, sessions opened before
it, both, or not known (no discard pass has looked since this process started, consumers are not awaited,
or the discard itself fails)."""
DEFAULT_GRACE_PERIOD: Final = "5m"  # spec.rotation.gracePeriod's default
DAY: Final = 86400.0

Key = tuple[str, str]  # (server label, namespace)


class RetainedHolders:
    """What the discard step last found holding on to each retained password (pods, sessions), by the
    resource's uid: the one fact the status does not keep. Forgotten when the password is discarded."""

    def __init__(self) -> None:
        self._reasons: dict[str, str] = {}
        self._lock = threading.Lock()  # the scrape runs in another thread than the discard step

    def record(self, uid: str, *, pods: bool, sessions: bool) -> None:
        """The discard step waits on ``pods`` and/or ``sessions`` of the resource ``uid``."""
        reason = (
            "pods_and_sessions" if pods and sessions else "pods" if pods else "sessions" if sessions else ""
        )
        with self._lock:
            if reason:
                self._reasons[uid] = reason
            else:
                self._reasons.pop(uid, None)

    def forget(self, uid: str) -> None:
        """The old password of ``uid`` is gone."""
        with self._lock:
            self._reasons.pop(uid, None)

    def reason(self, uid: str) -> str:
        """One of :data:`RETAINED_REASONS`."""
        return self._reasons.get(uid, "unknown")

    def prune(self, uids: set[str]) -> None:
        """Forget every resource but ``uids`` (those deleted while their old password was retained)."""
        with self._lock:
            for uid in set(self._reasons) - uids:
                del self._reasons[uid]


RETAINED_HOLDERS = RetainedHolders()


LifetimeCap = Callable[[str, str], float | None]
"""The longest a password may live, in seconds, on a server (by its key) for a namespace; None: no bound."""


def no_cap(server: str, namespace: str) -> float | None:
    """No server has a policy."""
    return None


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


@dataclass
class Tally:
    """The compliance facts of one server and namespace."""

    users: int = 0  # resources counted
    accounts: int = 0  # their accounts (user@host)
    oldest_password_age: float = 0.0  # seconds
    passwords_over_max_lifetime: int = 0
    rotations_overdue: int = 0
    accounts_without_tls: int = 0
    accounts_certificate_only: int = 0
    accounts_with_global_privileges: int = 0
    accounts_with_grant_option: int = 0
    accounts_locked: int = 0
    accounts_expiring: int = 0
    passwords_expired: int = 0
    retained_past_grace: Counter[str] = field(default_factory=Counter)


def tally(
    objects: Iterable[dict[str, Any]],
    now: datetime,
    holders: RetainedHolders = RETAINED_HOLDERS,
    cap: LifetimeCap = no_cap,
) -> dict[Key, Tally]:
    """The compliance facts of ``objects`` (DatabaseUsers as the API returns them) at ``now``; ``cap``
    gives the namespace policies' maximum password lifetime."""
    tallies: dict[Key, Tally] = {}
    caps: dict[tuple[str, str], float | None] = {}
    stamp = now.timestamp()
    for obj in objects:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        hosts = status.get("hosts") or []
        if not hosts or metadata.get("deletionTimestamp") or spec.get("managementPolicy") == "Observe":
            continue
        server, namespace = server_key(obj), str(metadata.get("namespace") or "")
        key = (server_label(server), namespace)
        if (server, namespace) not in caps:
            caps[(server, namespace)] = cap(server, namespace)
        counts = tallies.get(key)
        if counts is None:
            counts = tallies[key] = Tally()
        counts.users += 1
        _account_facts(spec, len(hosts), stamp, counts)
        rotation = status.get("rotation") or {}
        if "password" in spec or "generatedPassword" in spec:
            _password_facts(obj, rotation, stamp, counts, caps[(server, namespace)])
        if rotation.get("phase") == "Retained":
            since = _timestamp(rotation.get("retainedSince"))
            grace = _seconds((spec.get("rotation") or {}).get("gracePeriod") or DEFAULT_GRACE_PERIOD)
            if since is not None and grace is not None and stamp - since > grace:
                counts.retained_past_grace[holders.reason(str(metadata.get("uid") or ""))] += 1
    return tallies


def _account_facts(spec: Mapping[str, Any], accounts: int, stamp: float, counts: Tally) -> None:
    """The facts of a resource's ``accounts`` (its hosts), as its spec makes them."""
    counts.accounts += accounts
    if (spec.get("authentication") or {}).get("workload"):  # REQUIRE ISSUER and SUBJECT: TLS too
        counts.accounts_certificate_only += accounts
    elif not (spec.get("requireTLS") or spec.get("tls")):
        counts.accounts_without_tls += accounts
    grants = spec.get("privileges") or []
    if any(grant.get("database") == "*" for grant in grants):
        counts.accounts_with_global_privileges += accounts
    if any(grant.get("grantOption") for grant in grants):
        counts.accounts_with_grant_option += accounts
    account = spec.get("account") or {}
    expires = _timestamp(account.get("expiresAt"))
    if account.get("locked") or (expires is not None and stamp >= expires):
        counts.accounts_locked += accounts
    elif expires is not None:
        counts.accounts_expiring += accounts


def _password_facts(
    obj: Mapping[str, Any], rotation: Mapping[str, Any], stamp: float, counts: Tally, cap: float | None
) -> None:
    born = _timestamp(rotation.get("lastRotationTime")) or _timestamp(
        obj["metadata"].get("creationTimestamp")
    )
    if born is not None:
        age = max(stamp - born, 0.0)
        counts.oldest_password_age = max(counts.oldest_password_age, age)
        if cap is not None and age > cap:
            counts.passwords_over_max_lifetime += 1
        lifetime = _lifetime(((obj.get("spec") or {}).get("account") or {}).get("passwordExpire"))
        if lifetime is not None and age > lifetime:
            counts.passwords_expired += 1
    due = _timestamp(rotation.get("nextRotationTime"))
    if due is not None and stamp > due:
        counts.rotations_overdue += 1


@lru_cache(maxsize=4096)
def _timestamp(value: object) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (times repeat across resources: cached); None when absent
    or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


@lru_cache(maxsize=256)
def _lifetime(value: object) -> float | None:
    """Seconds of a passwordExpire interval; None for Never, Default (the server's), unset or malformed."""
    if not isinstance(value, str):
        return None
    try:
        days = password_lifetime_days(value)
    except ValueError:
        return None
    return days * DAY if days is not None else None


@lru_cache(maxsize=256)
def _seconds(value: str) -> float | None:
    try:
        return parse_duration(value)
    except ValueError:
        return None


OrphanSource = Callable[[], Mapping[Key, int]]
"""The drift check's last count of orphaned accounts (or databases), by (server label, owner's namespace)."""


@dataclass(frozen=True)
class Source:
    """One attached cache and what the drift check found beside it."""

    users: Iterable[dict[str, Any]]
    orphans: OrphanSource | None
    cap: LifetimeCap
    orphaned_databases: OrphanSource | None


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

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.clock = clock
        self._sources: list[Source] = []

    def attach(
        self,
        users: Iterable[dict[str, Any]],
        orphans: OrphanSource | None = None,
        cap: LifetimeCap = no_cap,
        orphaned_databases: OrphanSource | None = None,
    ) -> Callable[[], None]:
        """Count ``users`` (an informer's store), with ``orphans`` (accounts), ``orphaned_databases`` and the
        policies' ``cap``; returns what detaches them."""
        source = Source(users, orphans, cap, orphaned_databases)
        self._sources.append(source)
        return lambda: self._sources.remove(source) if source in self._sources else None

    def describe(self) -> Iterator[Metric]:
        """The families, without samples (registering does not compute them)."""
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        """Every family, computed now."""
        now = self.clock()
        tallies: dict[Key, Tally] = {}
        orphans: Counter[Key] = Counter()
        orphaned_databases: Counter[Key] = Counter()
        uids: set[str] = set()
        for source in list(self._sources):
            objects = list(source.users)
            uids.update(str((obj.get("metadata") or {}).get("uid")) for obj in objects)
            for key, found in tally(objects, now, cap=source.cap).items():
                tallies[key] = _merge(tallies[key], found) if key in tallies else found
            if source.orphans is not None:
                orphans.update(source.orphans())
            if source.orphaned_databases is not None:
                orphaned_databases.update(source.orphaned_databases())
        if self._sources:
            RETAINED_HOLDERS.prune(uids)
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
    users: Iterable[dict[str, Any]],
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
