"""The compliance facts kept current by the cache's events, so that a scrape costs the number of (server,
namespace) pairs, not of DatabaseUsers.

Each added, changed or deleted DatabaseUser takes back what it last added (its :class:`Entry`) and adds what
it now brings. What does not depend on the time is a sum; what does is kept, per pair, as sorted times
(:class:`~dbuser_operator.runtime.sorted_bag.SortedBag`) that a scrape asks how many have passed: password
births (the oldest age, over the policy's cap — looked up at the scrape, so that a change of a server's
policy or of a namespace's labels needs no event here —, and by passwordExpire interval), next rotations,
expiresAt, and retained passwords by grace period and holders' reason (moved when the discard step's finding
changes: :meth:`RetainedHolders.listen`). Each count is asked with the expression
:func:`~dbuser_operator.controllers.databaseuser.compliance_facts.tally` evaluates per resource, so both
agree to the last float at any clock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from dbuser_operator.controllers.databaseuser.compliance_facts import (
    DEFAULT_GRACE_PERIOD,
    RETAINED_HOLDERS,
    Key,
    LifetimeCap,
    RetainedHolders,
    Tally,
    _lifetime,
    _seconds,
    _timestamp,
)
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.controllers.servers.liveness import server_label
from dbuser_operator.runtime.sorted_bag import SortedBag

K = TypeVar("K")
Pair = tuple[str, str]  # (server key, namespace): the policy's cap is looked up by the server's key


class Entry:
    """What one cached DatabaseUser adds to its pair's counts (nothing when ``pair`` is None): made when it
    is counted or taken back, never kept."""

    __slots__ = (
        "accounts",
        "born",
        "certificate_only",
        "due",
        "expires",
        "global_privileges",
        "grace",
        "grant_option",
        "known",
        "lifetime",
        "locked",
        "pair",
        "reason",
        "since",
        "uid",
        "without_tls",
    )

    def __init__(self, pair: Pair | None, uid: str, known: str, accounts: int) -> None:
        self.pair, self.uid, self.known, self.accounts = pair, uid, known, accounts
        self.certificate_only = self.without_tls = self.global_privileges = self.grant_option = False
        self.locked = False  # spec.account.locked: whatever the time
        self.expires: float | None = None  # else expiresAt: locked once passed, expiring until then
        self.born: float | None = None  # the password's last rotation, or the resource's creation
        self.lifetime: float | None = None  # spec.account.passwordExpire, of a password with a birth
        self.due: float | None = None  # status.rotation.nextRotationTime, of a password
        self.since: float | None = None  # a Retained old password's retainedSince, with its grace period
        self.grace = 0.0
        self.reason = ""


def entry_of(obj: dict[str, Any]) -> Entry:
    """What ``obj`` adds to the counts: nothing (no pair) under Observe, being deleted, or without hosts."""
    metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    hosts = status.get("hosts") or []
    uid, known = str(metadata.get("uid") or ""), str(metadata.get("uid"))  # known: as the pruning has it
    if not hosts or metadata.get("deletionTimestamp") or spec.get("managementPolicy") == "Observe":
        return Entry(None, uid, known, 0)
    entry = Entry((server_key(obj), str(metadata.get("namespace") or "")), uid, known, len(hosts))
    if (spec.get("authentication") or {}).get("workload"):
        entry.certificate_only = True
    elif not (spec.get("requireTLS") or spec.get("tls")):
        entry.without_tls = True
    grants = spec.get("privileges") or []
    entry.global_privileges = any(grant.get("database") == "*" for grant in grants)
    entry.grant_option = any(grant.get("grantOption") for grant in grants)
    account = spec.get("account") or {}
    entry.locked = bool(account.get("locked"))
    if not entry.locked:
        entry.expires = _timestamp(account.get("expiresAt"))
    rotation = status.get("rotation") or {}
    if "password" in spec or "generatedPassword" in spec:
        entry.born = _timestamp(rotation.get("lastRotationTime")) or _timestamp(
            metadata.get("creationTimestamp")
        )
        if entry.born is not None:
            entry.lifetime = _lifetime(account.get("passwordExpire"))
        entry.due = _timestamp(rotation.get("nextRotationTime"))
    if rotation.get("phase") == "Retained":
        since = _timestamp(rotation.get("retainedSince"))
        grace = _seconds((spec.get("rotation") or {}).get("gracePeriod") or DEFAULT_GRACE_PERIOD)
        if since is not None and grace is not None:
            entry.since, entry.grace = since, grace
    return entry


class Bucket:
    """The counts of one pair."""

    __slots__ = (
        "accounts",
        "born",
        "born_by_lifetime",
        "certificate_only",
        "due",
        "expires",
        "global_privileges",
        "grant_option",
        "locked",
        "pair",
        "retained",
        "users",
        "without_tls",
    )

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        self.users = self.accounts = self.certificate_only = self.without_tls = 0
        self.global_privileges = self.grant_option = self.locked = 0
        self.expires = SortedBag()  # one expiresAt per account
        self.born = SortedBag()
        self.born_by_lifetime: dict[float, SortedBag] = {}
        self.due = SortedBag()
        self.retained: dict[tuple[float, str], SortedBag] = {}  # (grace, reason) → retainedSince

    def add(self, entry: Entry, sign: int) -> None:
        """Count ``entry`` (``sign`` 1), or take it back (-1)."""
        accounts = entry.accounts
        self.users += sign
        self.accounts += sign * accounts
        self.certificate_only += sign * accounts * entry.certificate_only
        self.without_tls += sign * accounts * entry.without_tls
        self.global_privileges += sign * accounts * entry.global_privileges
        self.grant_option += sign * accounts * entry.grant_option
        self.locked += sign * accounts * entry.locked
        if entry.expires is not None:
            _change(self.expires, entry.expires, sign, accounts)
        if entry.born is not None:
            _change(self.born, entry.born, sign)
            if entry.lifetime is not None:
                _change_in(self.born_by_lifetime, entry.lifetime, entry.born, sign)
        if entry.due is not None:
            _change(self.due, entry.due, sign)
        if entry.since is not None:
            _change_in(self.retained, (entry.grace, entry.reason), entry.since, sign)

    def tally(self, stamp: float, cap: float | None) -> Tally:
        """The facts at ``stamp`` (seconds since the epoch), with the policy's ``cap``."""
        passed = self.expires.count_at_most(stamp)  # stamp >= expiresAt: locked
        oldest = self.born.first()
        counts = Tally(
            users=self.users,
            accounts=self.accounts,
            oldest_password_age=max(stamp - oldest, 0.0) if oldest is not None else 0.0,
            rotations_overdue=self.due.count_below(stamp),
            accounts_without_tls=self.without_tls,
            accounts_certificate_only=self.certificate_only,
            accounts_with_global_privileges=self.global_privileges,
            accounts_with_grant_option=self.grant_option,
            accounts_locked=self.locked + passed,
            accounts_expiring=len(self.expires) - passed,
        )
        if cap is not None:
            counts.passwords_over_max_lifetime = _older(self.born, stamp, cap)
        for lifetime, births in self.born_by_lifetime.items():
            counts.passwords_expired += _older(births, stamp, lifetime)
        for (grace, reason), retained in self.retained.items():
            past = retained.count_leading(partial(_past_grace, stamp, grace))
            if past:
                counts.retained_past_grace[reason] += past
        return counts


def _older(births: SortedBag, stamp: float, most: float) -> int:
    """How many passwords born at ``births`` are older than ``most`` seconds at ``stamp`` (as tally reads
    their age: never negative)."""
    return births.count_leading(lambda born: max(stamp - born, 0.0) > most)


def _past_grace(stamp: float, grace: float, since: float) -> bool:
    return stamp - since > grace


def _change(bag: SortedBag, value: float, sign: int, times: int = 1) -> None:
    if sign > 0:
        bag.add(value, times)
    else:
        bag.remove(value, times)


def _change_in(bags: dict[K, SortedBag], key: K, value: float, sign: int) -> None:
    bag = bags.get(key)
    if bag is None:
        bag = bags[key] = SortedBag()
    _change(bag, value, sign)
    if not bag:
        del bags[key]


class UserCounts:
    """The counts of one cache of DatabaseUsers, as an informer's event handler: current after each event,
    read by a scrape in another thread (one lock).

    Each key keeps the object it last counted (the cache's own, unchanged: a reference, not a copy), so that
    what it added is computed again to take it back; only a retained password's holders' reason, which the
    object does not hold, is kept beside it."""

    def __init__(self, holders: RetainedHolders = RETAINED_HOLDERS) -> None:
        self.holders = holders
        self._buckets: dict[Pair, Bucket] = {}
        self._objects: dict[str, dict[str, dict[str, Any]]] = {}  # namespace → name → the object counted
        self._uids: dict[str, int] = {}  # every cached resource's uid, counted or not (holders' pruning)
        self._retained: dict[str, list[tuple[dict[str, Any], str]]] = {}  # uid → (object, reason counted)
        self._lock = threading.Lock()

    @classmethod
    def of(cls, objects: Iterable[dict[str, Any]], holders: RetainedHolders = RETAINED_HOLDERS) -> UserCounts:
        """The counts of ``objects`` (a snapshot)."""
        counts = cls(holders)
        for obj in objects:
            counts.on_add(obj)
        return counts

    def on_add(self, obj: dict[str, Any]) -> None:
        """Count ``obj``."""
        self._put(obj, obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Count ``new`` instead of what its key added before."""
        self._put(new, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        """Take back what the key of ``obj`` added."""
        self._put(obj, None)

    def knows(self, uid: str) -> bool:
        """Whether a cached resource (counted or not) has ``uid``."""
        return uid in self._uids

    def tallies(self, now: datetime, cap: LifetimeCap) -> dict[Key, Tally]:
        """The facts of every pair at ``now``, by (server label, namespace)."""
        stamp = now.timestamp()
        with self._lock:
            return {
                (server_label(server), namespace): bucket.tally(stamp, cap(server, namespace))
                for (server, namespace), bucket in self._buckets.items()
            }

    def on_holders(self, uid: str) -> None:
        """The holders' reason of ``uid`` changed (a :class:`RetainedHolders` listener)."""
        with self._lock:
            for obj, _ in list(self._retained.get(uid, ())):
                self._take(obj)
                self._give(obj, entry_of(obj))

    def _put(self, keyed: dict[str, Any], obj: dict[str, Any] | None) -> None:
        """Count ``obj`` (None: nothing) as the key of ``keyed``."""
        metadata = keyed["metadata"]
        namespace, name = metadata.get("namespace") or "", metadata["name"]
        entry = entry_of(obj) if obj is not None else None  # outside the lock: the scrape waits less
        with self._lock:
            names = self._objects.get(namespace)
            gone = names.pop(name, None) if names is not None else None
            if gone is not None:
                self._take(gone)
            if obj is not None and entry is not None:
                if names is None:
                    names = self._objects[namespace] = {}
                names[name] = obj
                self._give(obj, entry)
            elif names is not None and not names:
                del self._objects[namespace]

    def _take(self, obj: dict[str, Any]) -> None:
        """Take back what ``obj`` added (the lock held): its entry computed again, with the reason it had."""
        entry = entry_of(obj)
        left = self._uids[entry.known] - 1
        if left:
            self._uids[entry.known] = left
        else:
            del self._uids[entry.known]
        if entry.pair is None:
            return
        if entry.since is not None:
            held = self._retained[entry.uid]
            at = next(index for index, (counted, _) in enumerate(held) if counted is obj)
            entry.reason = held.pop(at)[1]
            if not held:
                del self._retained[entry.uid]
        bucket = self._buckets[entry.pair]
        bucket.add(entry, -1)
        if not bucket.users:
            del self._buckets[entry.pair]

    def _give(self, obj: dict[str, Any], entry: Entry) -> None:
        """Count ``entry`` of ``obj`` (the lock held), with its holders' reason as it is now."""
        self._uids[entry.known] = self._uids.get(entry.known, 0) + 1
        if entry.pair is None:
            return
        if entry.since is not None:
            entry.reason = self.holders.reason(entry.uid)
            self._retained.setdefault(entry.uid, []).append((obj, entry.reason))
        bucket = self._buckets.get(entry.pair)
        if bucket is None:
            bucket = self._buckets[entry.pair] = Bucket(entry.pair)
        bucket.add(entry, 1)
