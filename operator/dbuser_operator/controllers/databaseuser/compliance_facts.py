"""The compliance facts of DatabaseUsers, counted over all of them at once (:func:`tally`): the reference
that the per-event counts of :mod:`~dbuser_operator.controllers.databaseuser.compliance_counts` equal at
any moment, and what both read (the retained passwords' holders, the policies' lifetime cap).

Password facts count resources (one password each, whatever its hosts); TLS and privilege facts count
accounts (``user@host``, the hosts of ``status.hosts``). A workload's account (certificate-only: its
client certificate is its one credential) is counted as such, never as one without TLS nor among the
passwords. Resources under managementPolicy Observe, being deleted, or without an account yet (no
``status.hosts``) are not counted.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final

from dbuser_operator.api.duration import parse_duration
from dbuser_operator.api.v1alpha1.account import password_lifetime_days
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.controllers.servers.liveness import server_label

RETAINED_REASONS: Final = ("pods", "sessions", "pods_and_sessions", "unknown")
"""Why an old password outlives its grace period: pods started before the rotation, sessions opened before
it, both, or not known (no discard pass has looked since this process started, consumers are not awaited,
or the discard itself fails)."""
DEFAULT_GRACE_PERIOD: Final = "5m"  # spec.rotation.gracePeriod's default
DAY: Final = 86400.0

Key = tuple[str, str]  # (server label, namespace)
HolderListener = Callable[[str], None]
"""Told the uid of a resource whose retained password's holders (its reason) changed."""


class RetainedHolders:
    """What the discard step last found holding on to each retained password (pods, sessions), by the
    resource's uid: the one fact the status does not keep. Forgotten when the password is discarded.
    Listeners (:meth:`listen`) are told each uid whose reason changed, while the change is held."""

    def __init__(self) -> None:
        self._reasons: dict[str, str] = {}
        self._listeners: list[HolderListener] = []
        self._lock = threading.Lock()  # the scrape runs in another thread than the discard step

    def record(self, uid: str, *, pods: bool, sessions: bool) -> None:
        """The discard step waits on ``pods`` and/or ``sessions`` of the resource ``uid``."""
        reason = (
            "pods_and_sessions" if pods and sessions else "pods" if pods else "sessions" if sessions else ""
        )
        with self._lock:
            before = self._reasons.get(uid)
            if reason:
                self._reasons[uid] = reason
            else:
                self._reasons.pop(uid, None)
            if before != (reason or None):
                self._tell(uid)

    def forget(self, uid: str) -> None:
        """The old password of ``uid`` is gone."""
        with self._lock:
            if self._reasons.pop(uid, None) is not None:
                self._tell(uid)

    def reason(self, uid: str) -> str:
        """One of :data:`RETAINED_REASONS`."""
        return self._reasons.get(uid, "unknown")

    def prune(self, uids: set[str]) -> None:
        """Forget every resource but ``uids`` (those deleted while their old password was retained)."""
        self.prune_unless(uids.__contains__)

    def prune_unless(self, known: Callable[[str], bool]) -> None:
        """Forget every resource ``known`` says no cache holds."""
        with self._lock:
            for uid in [uid for uid in self._reasons if not known(uid)]:
                del self._reasons[uid]
                self._tell(uid)

    def listen(self, listener: HolderListener) -> Callable[[], None]:
        """Tell ``listener`` each uid whose reason changes; returns what stops it."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def _tell(self, uid: str) -> None:
        for listener in self._listeners:
            listener(uid)


RETAINED_HOLDERS = RetainedHolders()


LifetimeCap = Callable[[str, str], float | None]
"""The longest a password may live, in seconds, on a server (by its key) for a namespace; None: no bound."""


def no_cap(server: str, namespace: str) -> float | None:
    """No server has a policy."""
    return None


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
