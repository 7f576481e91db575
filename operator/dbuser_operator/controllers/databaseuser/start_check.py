"""The leader's first look at its DatabaseUsers: one inventory per server instead of a reconcile each.

Every server in use is read once: its owned accounts
(:func:`~dbuser_operator.mysql.bookkeeping.inventory.inventory`, two queries) and the roles every account
holds (:func:`~dbuser_operator.mysql.accounts.roles.every_grant`, two queries), concurrently, whatever the
number of resources. The reads start early (:meth:`StartCheck.read_early`, a leader task started as soon as
this process leads, while the DatabaseUsers and Secrets are still listing): once the server resources'
caches have synced, every server a resource may name is read. The first turn awaits those reads, and reads
then only the servers the DatabaseUsers name that were not read early (all of them when there was no early
read). Then each key of the first pass, at its turn, is decided by
:mod:`.converged` from the caches as they are then and from that read: converged, it counts as reconciled
(no step, no statement, no write); otherwise, and for any key after its first turn, the reconcile runs
as always. The checks a reconcile makes before any SQL (the server's resolution, reserved names, databaseRefs,
the guard, policy, privilege, comment and lock-policy checks) run first, on the same code: one that refuses
leaves the resource to its reconcile.

A server that does not answer (or whose resource does not resolve) at the first turn is not read: its
resources are reconciled. One whose early read failed is read again then; one read early that no
DatabaseUser names is dropped. The departed sweep, the fence and
Degraded conditions are untouched: this only reads (and creates the bookkeeping schema where it is missing,
as any reconcile would), and only decides whether one reconcile is needed.
``dbuser_operator_converged_at_start_total`` counts the skipped reconciles.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pydantic
import structlog
from prometheus_client import Counter

from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.converged import (
    Found,
    why_reconcile,
    why_reconcile_roles,
    why_reconcile_secret,
    why_reconcile_spec,
)
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck
from dbuser_operator.controllers.databaseuser.steps.connection_secret import ConnectionSecretStep
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.controllers.kit.steps import Step
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql.accounts import roles
from dbuser_operator.mysql.bookkeeping.inventory import AccountState, inventory
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.cache import thaw
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey

log = structlog.get_logger(__name__)

CONVERGED_AT_START = Counter(
    "dbuser_operator_converged_at_start_total",
    "DatabaseUsers the leader's first pass found converged from one inventory per server (not reconciled)",
    registry=REGISTRY,
)
CHECKS: Final = ("guard", "policy", "privilege-check", "comment-check", "lock-policy-check", "password")
"""The steps a reconcile runs before any SQL statement of its own, run here as they are (the password step
reads the password Secret from the cache, which the connection Secret's comparison needs)."""

SERVER_READ_LIMIT: Final = 60.0
"""Seconds one server's read may take (every first turn waits for the reads): past it, its resources are
reconciled as any other (a stalled server then holds only its own, as it would without this check)."""

EARLY_READS_AT_ONCE: Final = 2
"""Servers read at once before the caches have synced: the reads share the one core with the listing, and
each statement must answer within its read timeout (10 s), which ten concurrent inventories and the
listing on one event loop could exceed at 10 000 accounts a server."""

YIELD_EVERY: Final = 200  # resources looked at between two yields to the event loop
_Roles = tuple[set[Any], set[Any]]  # the roles an account holds, and its default roles
_NO_ROLES: Final[_Roles] = (set(), set())


@dataclass(frozen=True)
class _Read:
    """What one server holds: its owned accounts and the roles each account holds, by (user, host) with
    the host in lower case."""

    server: ServerInfo
    accounts: Mapping[tuple[str, str], AccountState]
    roles: Mapping[Any, _Roles]


class StartCheck:
    """Skips the first-pass reconcile of every DatabaseUser found converged at the leader's start."""

    def __init__(
        self,
        reconciler: DatabaseUserReconciler,
        users: Informer,
        secrets: Informer,
        role_drift: RoleDriftCheck,
        *,
        servers: ServerResolver | None = None,
    ) -> None:
        """``servers``: the server resources, for :meth:`read_early` (None: the servers are read at the
        first turn only)."""
        self.reconciler = reconciler
        self.users = users
        self.secrets = secrets
        self.role_drift = role_drift
        self.servers = servers
        self._early: asyncio.Future[dict[str, _Read | None]] | None = None  # the early reads, until taken
        self._early_started = False
        self._lock = asyncio.Lock()
        self._pending: set[ObjectKey] | None = None  # keys yet to take their first turn (None: not read)
        self._reads: dict[str, _Read | None] = {}  # by server key (None: not read); kept while keys wait
        self._deciding = 0  # first turns being decided now (they read ``_reads``)
        self.skipped = 0
        self._checks: tuple[list[Step], ConnectionSecretStep | None] | None = None  # _steps()

    async def converged(self, key: ObjectKey) -> bool:
        """Whether ``key``'s turn is its first and it is converged (then it counts as reconciled)."""
        if self._pending is None:
            async with self._lock:
                if self._pending is None:
                    self._pending, self._reads = await self._read_once()
        if key not in self._pending:
            return False
        self._pending.discard(key)
        self._deciding += 1
        try:
            # A turn decided from memory never suspends, nor does the work queue's get while keys wait:
            # without this, one worker runs through every converged key while the lease's renewals, the
            # probes, the watches and the other controllers' logins wait (15 s at N=10 000, past a
            # login's 5 s).
            await asyncio.sleep(0)
            cached = self.users.get(key)
            reason = "gone" if cached is None else await self._why(cached)
        finally:
            self._deciding -= 1
        if not self._pending and not self._deciding:
            self._reads = {}  # every first turn taken and decided: the servers' reads go
        if reason is not None:
            log.debug("first pass: reconciled", namespace=key.namespace, name=key.name, reason=reason)
            return False
        self.skipped += 1
        CONVERGED_AT_START.inc()
        return True

    async def read_early(self) -> None:
        """Read every server a resource may name (:meth:`.ServerResolver.keys`) once the server resources'
        caches have synced, before the DatabaseUsers' has: a leader task started as soon as this process
        leads (the reads may write: :meth:`.ServerHandle.ensure_schema`). Once per process; nothing when
        the first turn came first."""
        if self.servers is None or self._early_started or self._pending is not None or self._lock.locked():
            return
        self._early_started = True
        servers = self.servers
        self._early = early = asyncio.get_running_loop().create_future()
        reads: dict[str, _Read | None] = {}
        try:
            await asyncio.gather(*(informer.wait_for_sync() for informer in servers.informers.values()))
            keys = servers.keys()
            log.info("first pass: reading the servers early", servers=len(keys), users=len(self.users.store))
            at_once = asyncio.Semaphore(EARLY_READS_AT_ONCE)

            async def read(key: str) -> None:
                async with at_once:
                    found = await self._read(key)
                if found is not None:  # one that failed is read again at the first turn, as without this
                    reads[key] = found

            await asyncio.gather(*(read(key) for key in keys))
        finally:  # the first turn never waits for a read that ended (cancelled: it reads the rest itself)
            early.set_result(reads)

    async def _read_once(self) -> tuple[set[ObjectKey], dict[str, _Read | None]]:
        """:meth:`_read_all`; on an unexpected failure, nothing found: every resource is reconciled."""
        try:
            return await self._read_all()
        except Exception:  # never worse than before: the first pass reconciles everything
            log.exception("first pass: the servers could not be read; every resource is reconciled")
            return set(), {}

    async def _why(self, cached: dict[str, Any]) -> str | None:
        """Why this resource must be reconciled now, or None (the decision of :mod:`.converged`)."""
        obj = thaw(cached)
        try:
            ctx = self.reconciler.parse(obj, read_only=True)
        except pydantic.ValidationError:
            return "invalid"
        reason = self._why_cached(obj, ctx)
        if reason is not None:
            return reason
        read = self._reads.get(server_key(obj))
        if read is None:
            return "server not read"
        checks, connection = self._steps()
        try:
            ctx.server_resource, ctx.server = await self.reconciler.bind(ctx)
            self.reconciler.resolve_refs(ctx)
            for step in checks:
                await step.ensure(ctx)
        except (ConditionError, MySQLError) as error:
            return f"refused: {error}"
        if connection is None:
            reason = "connection Secret" if ctx.user.spec.connection_secret is not None else None
        else:
            reason = connection.why_write(ctx)
        return reason or why_reconcile(obj, ctx.user, self._found_for(ctx, read))

    def _steps(self) -> tuple[list[Step], ConnectionSecretStep | None]:
        """The reconciler's steps of :data:`CHECKS`, in order, and its connection-Secret step (None: it has
        none): looked up once."""
        if self._checks is None:
            steps = self.reconciler.steps
            connection = (step for step in steps if isinstance(step, ConnectionSecretStep))
            self._checks = ([step for step in steps if step.name in CHECKS], next(connection, None))
        return self._checks

    def _why_cached(self, obj: dict[str, Any], ctx: Context) -> str | None:
        """The reasons the caches alone give (the resource, its Secret, its roles)."""
        user = ctx.user
        holds = self.reconciler.scope.holds(obj)
        reason = why_reconcile_spec(obj, user, ctx.status, holds)
        if reason is None and user.spec.password is not None:
            secret = self.secrets.get(ObjectKey(user.metadata.namespace or "", user.spec.password.name))
            reason = why_reconcile_secret(ctx.status, secret)
        return reason or why_reconcile_roles(obj, user, self.role_drift.roles.get)

    async def _read_all(self) -> tuple[set[ObjectKey], dict[str, _Read | None]]:
        """The keys of the first pass, and a read, at once, of every server one of them names. Nothing is
        parsed here: each resource is parsed and decided at its turn, against its server's read (parsing
        every resource here too cost as much as the turns; holding the parsed models of every resource at
        once was the restart's peak memory)."""
        pending: set[ObjectKey] = set()
        first: dict[str, dict[str, Any]] = {}  # a resource of each server: how its server resolves
        for count, obj in enumerate(list(self.users.store)):
            if count % YIELD_EVERY == 0:
                await asyncio.sleep(0)  # the lease's renewals, the probes and the watches go on meanwhile
            pending.add(ObjectKey.of(obj))
            first.setdefault(server_key(obj), obj)
        early, self._early = (await self._early if self._early is not None else {}), None
        found = {key: early[key] for key in first if key in early}  # the others' reads go
        keys = [key for key in first if key not in found]
        reads = await asyncio.gather(*(self._read(key, first.pop(key)) for key in keys))
        found.update(zip(keys, reads, strict=True))
        log.info(
            "first pass: servers read",
            servers=len(found),
            early=len(found) - len(keys),
            not_read=sum(read is None for read in found.values()),
            resources=len(pending),
        )
        return pending, found

    async def _read(self, key: str, obj: dict[str, Any] | None = None) -> _Read | None:
        """One server's owned accounts and held roles (None: it did not answer, or does not resolve):
        the server of the resource ``obj``, or without it the server of ``key``."""
        try:
            async with asyncio.timeout(SERVER_READ_LIMIT):  # a stalled server holds no other's users
                if obj is None and self.servers is not None:
                    handle: ServerHandle = (await self.servers.resolve_key(key))[1]
                elif obj is not None and self.reconciler.servers is not None:
                    handle = (await self.reconciler.servers.resolve(obj))[1]
                else:
                    return None
                await handle.ensure_schema()
                server = await handle.server()
                states = await inventory(handle.db, handle.schema, server)
                held = await roles.every_grant(handle.db, server)
        except (ConditionError, MySQLError, TimeoutError) as error:
            log.warning(
                "first pass: a server not read; its resources are reconciled",
                server=key,
                error=str(error) or f"no answer within {SERVER_READ_LIMIT:g} s",
            )
            return None
        accounts = {(user, host.lower()): state for (user, host), state in states.items()}
        return _Read(server, accounts, held)

    def _found_for(self, ctx: Context, read: _Read) -> Found:
        """What the server holds for the resource ``ctx`` parsed at its turn, its roles compared now (a
        host the server does not hold holds no role: its account is not there either)."""
        name = ctx.user.mysql_name()
        hosts = _lower(ctx.user.spec.account_hosts())
        differ = any(
            self.role_drift.drifted(ctx.user, *read.roles.get((name, host), _NO_ROLES), read.server)
            for host in hosts
        )
        return Found(read.server, {host: read.accounts.get((name, host)) for host in hosts}, differ)


def _lower(hosts: Iterable[str]) -> list[str]:
    return [host.lower() for host in hosts]
