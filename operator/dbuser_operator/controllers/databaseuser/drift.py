"""Periodic drift check: every owned account against its DatabaseUser, in a constant number of queries.

An account dropped or changed by hand (password, limits, TLS, lock and password policy, grants, owner
metadata) is found here and its resource is queued for repair (so is an account still unlocked after its
expiresAt); a pass that finds nothing drifted writes nothing. Every host of a resource is an account of its
own; an owned account whose host left the spec counts as drifted (its drop or release is retried).
Resources under managementPolicy Observe or Paused are not repaired. Owned accounts whose resource no
longer exists, or no longer carries the target label, are orphans: counted in a metric and logged once
(when first found), never dropped. A resource that is not Ready at its generation is left to the controller,
which retries it with back-off: the check never adds a reconcile per period to a failing resource.

Given the Databases' cache, the check also reads the bookkeeping table of databases (one SELECT per server
per period): a recorded database whose Database resource (by UID) is no longer in the cache is an orphaned
database, counted by server and owner's namespace and logged once, never dropped.

Given an :class:`~dbuser_operator.controllers.servers.access_status.AccessStatus`, the check also reads every
account and role of each server resource (one query per server per period) and builds the server's access
report (:mod:`dbuser_operator.controllers.servers.access`) from that and from the inventory's privilege rows
of every account; once the drifted resources of every server are queued, it publishes the reports. A failure
there is logged and left to the next period: it never holds up a repair.

Memory: one server at a time. What a server's check reads (its inventory, its accounts) is released before
the next server is read: the report of a server is built as soon as its check is done, and only the bounded
reports (:data:`~dbuser_operator.api.v1alpha1.access_report.MAX_ENTRIES` entries each) wait for the others.
Held until the end of the pass, every server's inventory made the high-water mark of the process (4.4 KB
per account by tracemalloc, +16 to +40 MiB of RSS at 10 000 accounts over 10 servers), which the allocator
keeps.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter as Tally
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic
import structlog
from prometheus_client import Counter, Gauge, Histogram

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.api.v1alpha1.access_report import AccessSummary
from dbuser_operator.controllers.databaseuser.account_differs import account_differs
from dbuser_operator.controllers.databaseuser.database_refs import has_refs, resolve
from dbuser_operator.controllers.databaseuser.workload import SigningCASource
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.controllers.servers.access import DriftFound, build, extra_grants
from dbuser_operator.controllers.servers.access_status import AccessStatus
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.liveness import server_label
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.access import ServerAccounts, read_accounts
from dbuser_operator.mysql.bookkeeping.inventory import AccountState, Inventory, inventory, read_inventory
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.conditions import find_condition
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.malloc_trim import trim
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue

log = structlog.get_logger(__name__)

ORPHANS = Gauge(
    "dbuser_operator_orphaned_accounts",
    "Accounts the operator owns whose DatabaseUser no longer exists",
    registry=REGISTRY,
)
DRIFTED = Counter(
    "dbuser_operator_drifted_accounts_total",
    "Owned accounts found changed outside the operator by the periodic check",
    registry=REGISTRY,
)
CHECK_SECONDS = Histogram(
    "dbuser_operator_periodic_check_seconds",
    "Seconds each pass of a periodic check over every server took (check: drift, role_drift)",
    ["check"],
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)


@dataclass
class DriftReport:
    """What one check found."""

    drifted: list[ObjectKey] = field(default_factory=list)
    orphans: list[tuple[str, str]] = field(default_factory=list)
    orphaned_databases: list[str] = field(default_factory=list)
    access: list[tuple[str, AccessSummary]] = field(default_factory=list)
    """Each server resource's access report, built when its server was checked (published after the
    repairs of every server are queued)."""


def _note_default_lifetime(handle: ServerHandle, states: Iterable[AccountState]) -> None:
    """Tell the handle the server's ``default_password_lifetime`` as the inventory read it: what the next
    new account's first pass takes from :meth:`ServerHandle.server`."""
    for state in states:
        if state.policy is not None:  # an account read with its server
            handle.saw_default_lifetime(state.default_lifetime)
            return


async def check_periodically(period: float, check: Callable[[], Awaitable[object]], what: str) -> None:
    """Run ``check`` every ``period`` seconds until cancelled (never when the period is 0); a MySQL error is
    logged, and the next period tries again. What a check freed (every account of every server read) is
    given back to the system after it (:func:`~dbuser_operator.runtime.malloc_trim.trim`). Each pass that
    ends, failed or not, is observed in :data:`CHECK_SECONDS` under ``what`` without its `` check``."""
    if period <= 0:
        return
    seconds = CHECK_SECONDS.labels(what.removesuffix(" check").replace(" ", "_"))
    while True:
        await asyncio.sleep(period)
        started = time.monotonic()
        try:
            await check()
        except MySQLError as error:
            log.warning(f"{what} failed; trying again next period", error=str(error))
        seconds.observe(time.monotonic() - started)  # not when cancelled: that pass did not end
        trim()


class DriftCheck:
    """Compares every owned account with its resource and queues the ones that drifted."""

    def __init__(
        self,
        handles: Callable[[], Mapping[str, ServerHandle]],
        users: Informer,
        queue: RateLimitingQueue[ObjectKey],
        period: float,
        databases: Informer | None = None,
        *,
        access: AccessStatus | None = None,
        signing_ca: SigningCASource | None = None,
    ) -> None:
        self.handles = handles  # the servers in use, by server key
        self.access = access  # where the access reports of server resources go (none: not built)
        self.signing_ca = signing_ca or SigningCASource(None)  # the issuer workload accounts require
        self.users = users
        # The Databases' cache: orphaned databases are looked for, and grants' databaseRefs resolved, only
        # with it (without it, users whose grants name a Database are skipped).
        self.databases = databases
        self.queue = queue
        self.period = period
        self._orphans_logged: set[tuple[str, str, str]] = set()  # (server, user, host) already logged
        self.orphans_by_server: Mapping[tuple[str, str], int] = {}
        """The last check's orphaned accounts by (server label, owner's namespace); a server whose check
        failed keeps its previous count."""
        self._databases_logged: set[tuple[str, str]] = set()  # (server, database) already logged
        self.orphaned_databases_by_server: Mapping[tuple[str, str], int] = {}
        """The last check's orphaned databases by (server label, owner's namespace), kept as the accounts'."""

    async def run(self) -> None:
        """Check every ``period`` seconds until cancelled (never when the period is 0)."""
        await check_periodically(self.period, self.check, "drift check")

    async def check(self) -> DriftReport:
        """One pass over every server in use: queue drifted resources, report orphans. A server that
        fails is logged and checked again next period; the others are checked all the same."""
        report = DriftReport()
        failed: MySQLError | None = None
        counts: Tally[tuple[str, str]] = Tally()
        database_counts: Tally[tuple[str, str]] = Tally()
        for server, handle in self.handles().items():
            try:
                await self._check_server(server, handle, report, counts)
                await self._check_databases(server, handle, report, database_counts)
            except MySQLError as error:
                log.warning(
                    "drift check of a server failed", server=handle.name or "default", error=str(error)
                )
                failed = error
                label = server_label(server)
                counts.update({key: n for key, n in self.orphans_by_server.items() if key[0] == label})
                previous = self.orphaned_databases_by_server
                database_counts.update({key: n for key, n in previous.items() if key[0] == label})
        self.orphans_by_server = dict(counts)
        self.orphaned_databases_by_server = dict(database_counts)
        ORPHANS.set(len(report.orphans))
        for key in report.drifted:
            DRIFTED.inc()
            log.info("account drifted; repairing", namespace=key.namespace, name=key.name)
            self.queue.add(key)
        await self._publish(report)
        if failed is not None and len(self.handles()) == 1:
            raise failed  # one server, as before servers were resources: the caller logs it
        return report

    async def _check_server(
        self, key: str, handle: ServerHandle, report: DriftReport, counts: Tally[tuple[str, str]]
    ) -> None:
        await handle.ensure_schema()
        server = await handle.server()
        reporting = self.access is not None and self.access.serves(key)
        # Every account first: one created meanwhile is then owned in the inventory and left out of this
        # report, never shown as Unmanaged.
        accounts = await self._read_accounts(key, handle, server) if reporting else None
        full = await read_inventory(handle.db, handle.schema, server) if reporting else None
        states = full.owned if full is not None else await inventory(handle.db, handle.schema, server)
        _note_default_lifetime(handle, states.values())
        extra: dict[tuple[str, str], list[grants.Change]] = {}
        by_uid = {obj["metadata"].get("uid"): obj for obj in self.users.store}
        orphans: list[tuple[str, str]] = []
        for (user, host), state in sorted(states.items()):
            obj = by_uid.get(state.owner.uid)
            if obj is None:
                if self._in_scope(state):
                    orphans.append((user, host))
                    counts[(server_label(key), state.owner.namespace)] += 1
                continue
            if server_key(obj) != key:
                continue  # another server resource with the same server and schema: checked there
            try:
                resource = DatabaseUser.model_validate(obj)
            except pydantic.ValidationError:
                continue
            if resource.spec.management_policy != "Manage" or obj["metadata"].get("deletionTimestamp"):
                continue
            if not _settled(obj):
                continue  # failing or in progress: the controller retries it, with back-off
            try:
                resource = self._resolved(resource, obj)
                workload = self.signing_ca.workload_of(resource)
            except ConditionError:
                continue  # a Database (or the signing CA) not usable: the controller retries the user
            changes = grants.changes(state.grants, desired_grants(resource.spec.privileges), server)
            revoking = extra_grants(changes)
            if revoking:  # the report's look-up defaults to none
                extra[(user, host.lower())] = revoking
            drifted = account_differs(
                state, resource, server, grants_differ=bool(changes), strict=False, workload=workload
            )
            if drifted or not _wants(resource, host):
                report.drifted.append(ObjectKey.of(obj))
        report.orphans += orphans
        if full is not None and accounts is not None:  # built now: what it is built from is released
            found = DriftFound(extra, frozenset((user, host.lower()) for user, host in orphans))
            summary = _summary(key, accounts, full, found)
            if summary is not None:
                report.access.append((key, summary))
        self._log_orphans(key, handle, states, orphans)

    def _log_orphans(
        self,
        key: str,
        handle: ServerHandle,
        states: Mapping[tuple[str, str], AccountState],
        orphans: list[tuple[str, str]],
    ) -> None:
        """Log the orphans of server ``key`` not logged by the last check (those gone are forgotten)."""
        logged = {(user, host) for server, user, host in self._orphans_logged if server == key}
        self._orphans_logged -= {(key, user, host) for user, host in logged - set(orphans)}
        for user, host in orphans:
            if (user, host) in logged:
                continue
            self._orphans_logged.add((key, user, host))
            owner = states[(user, host)].owner
            log.warning(
                "orphaned account: owned, but its DatabaseUser is gone or no longer carries the target label",
                account=f"'{user}'@'{host}'",
                owner=f"{owner.namespace}/{owner.name}",
                server=handle.name or None,
            )

    async def _check_databases(
        self, key: str, handle: ServerHandle, report: DriftReport, counts: Tally[tuple[str, str]]
    ) -> None:
        """Count and log (once) the recorded databases whose Database is no longer in the cache."""
        if self.databases is None:
            return
        if not self.databases.has_synced:  # a cache still listing would make every database an orphan
            label = server_label(key)
            counts.update({k: n for k, n in self.orphaned_databases_by_server.items() if k[0] == label})
            return
        rows = await ownership.owned(handle.db, handle.schema, ownership.DATABASES)
        owned = {name: owner for (name,), owner in rows.items()}
        uids = {obj["metadata"].get("uid") for obj in self.databases.store}
        orphans = sorted(
            name
            for name, owner in owned.items()
            if owner.uid not in uids and _in_namespaces(self.databases, owner.namespace)
        )
        report.orphaned_databases += orphans
        logged = {name for server, name in self._databases_logged if server == key}
        self._databases_logged -= {(key, name) for name in logged - set(orphans)}
        for name in orphans:
            owner = owned[name]
            counts[(server_label(key), owner.namespace)] += 1
            if name in logged:
                continue
            self._databases_logged.add((key, name))
            log.warning(
                "orphaned database: recorded as owned, but its Database is gone or no longer carries the "
                "target label",
                database=name,
                owner=f"{owner.namespace}/{owner.name}",
                server=handle.name or None,
            )

    def _in_scope(self, state: AccountState) -> bool:
        """Whether the owner would be in this instance's cache (its namespaces) had it not been deleted."""
        return _in_namespaces(self.users, state.owner.namespace)

    def _resolved(self, resource: DatabaseUser, obj: dict[str, Any]) -> DatabaseUser:
        """``resource`` with its databaseRefs resolved, as a reconcile resolves them."""
        if self.databases is None:
            if has_refs(resource):
                raise ConditionError("DatabaseNotFound", "no Database informer", retry=False)
            return resource
        return resolve(self.databases, resource, obj)

    @staticmethod
    async def _read_accounts(key: str, handle: ServerHandle, server: ServerInfo) -> ServerAccounts | None:
        """Every account of a server resource, for its access report (None on failure: no report)."""
        try:
            await handle.ensure_book(ownership.ROLES)
            return await read_accounts(handle.db, server, handle.schema)
        except MySQLError as error:
            log.warning("access report: reading the accounts failed", server=key, error=str(error))
            return None

    async def _publish(self, report: DriftReport) -> None:
        """Build and publish each server resource's access report (after the repairs are queued)."""
        if self.access is None:
            return
        for server, summary in report.access:
            try:
                await self.access.publish(server, summary)
            except Exception:  # a report's failure never ends the drift check
                log.exception("access report failed; next period tries again", server=server)


def _summary(
    server: str, accounts: ServerAccounts, full: Inventory, found: DriftFound
) -> AccessSummary | None:
    """The access report of ``server``; None when building it failed (logged: next period tries again)."""
    try:
        return build(accounts, full, found)
    except Exception:  # a report's failure never ends the drift check
        log.exception("access report failed; next period tries again", server=server)
        return None


def _in_namespaces(cache: Informer, namespace: str) -> bool:
    """Whether ``namespace`` is watched by ``cache`` (all are when it names none)."""
    return not cache.namespaces or namespace in cache.namespaces


def _settled(obj: Mapping[str, Any]) -> bool:
    """Whether the resource's status says Ready for its current generation (what a repair restores)."""
    ready = find_condition((obj.get("status") or {}).get("conditions"), "Ready")
    if ready is None or ready.get("status") != "True":
        return False
    observed = ready.get("observedGeneration")
    return observed is None or observed == obj["metadata"].get("generation")


def _wants(resource: DatabaseUser, host: str) -> bool:
    """Whether ``host`` is one of the resource's hosts (compared as MySQL does, without regard to case)."""
    return host.lower() in {wanted.lower() for wanted in resource.spec.account_hosts()}
