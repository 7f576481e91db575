"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's ``tools/leaderelection`` semantics.

- A candidate takes the Lease when it does not exist, when it has no holder, or when its record has not
  changed for ``leaseDurationSeconds`` *as seen by this process's own clock*: expiry is judged from when the
  candidate last observed a change, never from the remote timestamps, so clock skew between nodes does not
  matter (client-go's ``observedTime``).
- Every write is a replace conditioned on ``metadata.resourceVersion``: of two candidates, one gets 409.
- The leader renews every ``retry_period``; each attempt is cut at the renew deadline, and once it has not
  renewed for ``renew_deadline`` (counted from the start of its last successful attempt, a little stricter
  than client-go's renew rounds) or it finds another holder, it has lost: the caller stops all work at once.
- On graceful shutdown the leader releases the Lease (client-go ``ReleaseOnCancel``): no holder, a
  1-second duration, so a standby takes over within one retry period.
- Fencing (:mod:`.fence`): each successful attempt refreshes the elector's :class:`~.fence.Fence` from the
  attempt's start; a lost Lease revokes it. Every acquisition by a process that was not leading starts a
  new term (``leaseTransitions`` + 1, unlike client-go, which keeps the count when the Lease already names
  the same identity) and takes the next *epoch*, the fencing token: the annotation
  ``dbuser-operator.dev/leader-epoch`` holds the highest epoch any term of this Lease took (a Lease
  without it, written by an older version, counts its ``leaseTransitions``), and an acquisition writes
  it plus one. Two terms never share an epoch, and a later term always has a higher one.
- A new Lease (deleted, or its namespace recreated) starts again at epoch 0, below what MySQL may hold
  from the old one: :meth:`LeaderElector.reserve_epoch` raises the Lease's epoch above a number the data
  layer found, in a write conditional on this term still holding the Lease (a stale term's write
  conflicts, and its fence closes). Every epoch a term uses is thus recorded on the Lease before it is
  used, and every later term starts above it.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import structlog

from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import ApiError, Conflict, NotFound
from dbuser_operator.runtime.fence import Fence, FenceLost
from dbuser_operator.runtime.lease import (
    LeaderElectionRecord,
    LeaseObservation,
    format_micro_time,
)
from dbuser_operator.runtime.metrics import LEADER_ELECTION_STATUS
from dbuser_operator.runtime.resources import LEASES

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2  # client-go's: a candidate waits retry_period * [1, 2.2) between attempts

Clock = Callable[[], float]


class LeadershipLost(Exception):
    """This process no longer holds the Lease: stop all work at once."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease to hold, as whom, and the timings (seconds; client-go's defaults)."""

    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    fence_margin: float | None = None  # seconds; None: a tenth of the lease duration

    def __post_init__(self) -> None:
        for field in ("lease_name", "lease_namespace", "identity"):
            if not getattr(self, field):
                raise ValueError(f"{field} must not be empty")
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            raise ValueError("lease_duration, renew_deadline and retry_period must be positive")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew_deadline must be greater than retry_period * {JITTER_FACTOR}")
        if not 0 <= self.margin < self.lease_duration:
            raise ValueError("fence_margin must be at least 0 and less than lease_duration")

    @property
    def margin(self) -> float:
        """How much shorter than the lease this process trusts its own proof (clock-rate skew)."""
        return self.lease_duration / 10 if self.fence_margin is None else self.fence_margin

    def fence(self, clock: Clock = time.monotonic) -> Fence:
        """A fence for this lease: open for ``lease_duration - margin`` after each renewal's start."""
        return Fence(self.lease_duration, self.margin, clock=clock)

    @property
    def lease_duration_seconds(self) -> int:
        """The whole seconds written to the Lease, rounded up so that others never wait less than asked."""
        return math.ceil(self.lease_duration)


class LeaderElector:
    """Acquire, hold and release one Lease (see the module docstring).

    ``clock`` (seconds, monotonic) judges expiry and the renew deadline; inject one in tests.
    Wall-clock time is only written into the Lease for humans and other tools.
    """

    def __init__(
        self,
        kube: KubeClient,
        config: LeaderElectionConfig,
        *,
        clock: Clock = time.monotonic,
        fence: Fence | None = None,
    ) -> None:
        self.kube = kube
        self.config = config
        self._clock = clock
        self.fence = fence or config.fence(clock)
        self.fence.reserve_with(self.reserve_epoch)
        self._observation = LeaseObservation()
        self._writing = asyncio.Lock()  # a renewal and an epoch reservation never interleave
        self._lease: dict[str, Any] | None = None  # the last Lease object read or written
        self._is_leader = False
        self._renewed_at = 0.0  # start of the last successful acquire or renew attempt
        self._log = log.bind(lease=f"{config.lease_namespace}/{config.lease_name}", identity=config.identity)

    @property
    def is_leader(self) -> bool:
        """True from a successful ``acquire()`` until ``hold()`` finds the lease lost, or ``release()``.

        Cancelling ``hold()`` does not change it: see ``holds_valid_lease()``.
        """
        return self._is_leader

    def holds_valid_lease(self) -> bool:
        """Leader, and renewed within the renew deadline, by the local clock: safe to act on as leader now.

        A gate for each unit of work: it turns False at the deadline even when the event loop was
        stalled and ``hold()`` has not run yet, and always before another candidate can take over.
        """
        return self._is_leader and self._clock() < self._deadline()

    @property
    def renewed_at(self) -> float:
        """When the last successful acquire or renew attempt started, on ``clock``: the lease is this
        process's until ``renewed_at + renew_deadline``, and nobody else's before ``renewed_at +
        lease_duration``."""
        return self._renewed_at

    @property
    def observed_record(self) -> LeaderElectionRecord | None:
        """The last election record read or written."""
        return self._observation.record

    async def acquire(self) -> None:
        """Return once this identity holds the Lease, trying every retry period (jittered)."""
        if self._is_leader:
            return
        self._log.info("attempting to acquire leader lease")
        while True:
            started = self._clock()
            try:
                async with asyncio.timeout(self.config.renew_deadline):
                    acquired = await self._try_acquire_or_renew()
            except Exception as error:
                self._log.warning("leader lease acquire attempt failed", error=repr(error))
                acquired = False
            if acquired:
                self._renewed_at = started
                self.fence.acquired(started, self._epoch())
                self._set_leader(True)
                self._log.info("acquired leader lease", transitions=self._transitions(), epoch=self._epoch())
                return
            await asyncio.sleep(self.config.retry_period * (1 + JITTER_FACTOR * random.random()))  # noqa: S311

    async def hold(self) -> None:
        """Renew the Lease until it is lost, then return with ``is_leader`` False.

        Lost: no renewal succeeded for ``renew_deadline``, or another holder was found. Cancelling
        ``hold()`` stops the renewals and leaves the Lease as it is (call ``release()`` after it).
        """
        while True:
            await asyncio.sleep(max(0.0, min(self.config.retry_period, self._deadline() - self._clock())))
            if not self._is_leader:
                return  # never acquired, or released meanwhile
            if not await self._renew():
                self._set_leader(False)
                self.fence.revoke("the leader lease was not renewed in time, or another holder took it")
                self._log.warning("lost leader lease", last_seen_holder=self._holder())
                return

    async def release(self) -> None:
        """Give the Lease up if this process holds it, so that a standby takes over at once.

        Best effort, bounded by the renew deadline; the write is conditional, so it never clears a Lease
        someone else has taken meanwhile.
        """
        if not self._is_leader:
            return
        self._set_leader(False)
        self.fence.revoke("released the leader lease")  # a standby may take over within a retry period
        record = LeaderElectionRecord(
            lease_duration_seconds=1,
            acquire_time=_now(),
            renew_time=_now(),
            lease_transitions=self._transitions(),
            epoch=self._epoch(),
        )
        try:
            async with asyncio.timeout(self.config.renew_deadline):
                if self._lease is not None:
                    try:
                        await self._write(record, self._lease)
                    except Conflict:
                        pass
                    else:
                        self._log.info("released leader lease")
                        return
                # Our copy is stale: release only if the server still names us as holder.
                lease = await self.kube.get(LEASES, self.config.lease_name, self.config.lease_namespace)
                self._observation.observe(LeaderElectionRecord.from_lease(lease), self._clock())
                if self._observation.held_by(self.config.identity):
                    await self._write(record, lease)
                    self._log.info("released leader lease")
        except Exception as error:
            self._log.warning("failed to release leader lease", error=repr(error))

    async def run(self, on_started_leading: Callable[[], Awaitable[None]]) -> None:
        """Acquire, then run ``on_started_leading()`` while holding the Lease.

        When the Lease is lost or the fence is revoked (a side effect found the proof stale, or the data
        layer saw a newer leader), the callback's task is cancelled at once and ``LeadershipLost`` is raised
        (the operator then exits and lets Kubernetes restart it). When the callback returns, ``run``
        returns; when it raises, its exception propagates. On every way out, cancellation included, the
        Lease is released if still held.
        """

        async def lead() -> None:
            await on_started_leading()

        try:
            await self.acquire()
            leading = asyncio.create_task(lead(), name=f"leading:{self.config.lease_name}")
            holding = asyncio.create_task(self.hold(), name=f"holding:{self.config.lease_name}")
            fenced = asyncio.create_task(self.fence.lost.wait(), name=f"fence:{self.config.lease_name}")
            try:
                await asyncio.wait({leading, holding, fenced}, return_when=asyncio.FIRST_COMPLETED)
                if fenced.done():
                    self._set_leader(False)  # before the cancellation: the work is aborted, not drained
            finally:
                for task in (leading, holding, fenced):
                    task.cancel()
                await asyncio.gather(leading, holding, fenced, return_exceptions=True)
            lost = holding.done() and not holding.cancelled() and not self._is_leader
            if lost or self.fence.lost.is_set():
                raise LeadershipLost(
                    f"lost lease {self.config.lease_namespace}/{self.config.lease_name}: {self.fence.reason}"
                )
            leading.result()
        finally:
            await self.release()

    async def _renew(self) -> bool:
        """Retry renewing until success or the renew deadline; False when the Lease is lost."""
        while True:
            remaining = self._deadline() - self._clock()
            if remaining <= 0:
                self._log.warning("leader lease not renewed within the renew deadline")
                return False
            started = self._clock()
            try:
                async with asyncio.timeout(remaining), self._writing:
                    renewed = await self._try_acquire_or_renew(renewing=True)
            except Exception as error:
                self._log.warning("leader lease renew attempt failed", error=repr(error))
                renewed = False
            if renewed:
                self._renewed_at = started
                self.fence.renewed(started)
                self._log.debug("renewed leader lease")
                return True
            if not self._observation.held_by(self.config.identity):
                return False  # someone else holds it now
            await asyncio.sleep(max(0.0, min(self.config.retry_period, self._deadline() - self._clock())))

    async def _try_acquire_or_renew(self, *, renewing: bool = False) -> bool:
        """One attempt, as client-go's ``tryAcquireOrRenew``: True when this identity holds the Lease.

        A renewal writes nothing once ``release()`` has begun.
        """
        if self._released(renewing):
            return False
        now = _now()
        if renewing and await self._renew_optimistically(now):
            return True

        try:
            lease = await self.kube.get(LEASES, self.config.lease_name, self.config.lease_namespace)
        except NotFound:
            return not self._released(renewing) and await self._create(now, renewing=renewing)

        current = LeaderElectionRecord.from_lease(lease)
        self._lease = lease
        self._observation.observe(current, self._clock())
        held_by_me = current.holder_identity == self.config.identity
        held_by_other = bool(current.holder_identity) and not held_by_me
        if (held_by_other and self._observation.valid(self._clock())) or self._released(renewing):
            return False

        same_term = held_by_me and renewing  # a new process under the same identity starts a new term
        record = LeaderElectionRecord(
            holder_identity=self.config.identity,
            lease_duration_seconds=self.config.lease_duration_seconds,
            acquire_time=current.acquire_time if same_term else now,
            renew_time=now,
            lease_transitions=current.lease_transitions + (0 if same_term else 1),
            epoch=current.epoch + (0 if same_term else 1),
        )
        try:
            await self._write(record, lease)
        except Conflict:
            return False  # another candidate wrote first
        return True

    async def reserve_epoch(self, above: int) -> int:
        """An epoch above ``above`` and above every epoch of this Lease so far, recorded on the Lease.

        The write is conditional on the Lease this term last wrote: when another term took the Lease
        meanwhile (or this one is over), the fence is revoked and :class:`~.fence.FenceLost` raised. The
        caller uses the epoch only after it returns, so that any later term starts above it.
        """
        async with asyncio.timeout(self.config.renew_deadline), self._writing:
            for _ in range(3):
                self.fence.check()  # FenceLost unless this term still proves its lease
                record, lease = self._observation.record, self._lease
                if not self._is_leader or record is None or lease is None:
                    break
                epoch = max(record.epoch, above) + 1
                try:
                    await self._write(replace(record, epoch=epoch), lease)
                except Conflict:
                    # Someone wrote the Lease since: go on only if it still names this very term.
                    fresh = await self.kube.get(LEASES, self.config.lease_name, self.config.lease_namespace)
                    current = LeaderElectionRecord.from_lease(fresh)
                    if (current.holder_identity, current.acquire_time) != (
                        record.holder_identity,
                        record.acquire_time,
                    ):
                        break
                    self._lease = fresh
                    self._observation.observe(current, self._clock())
                    continue
                self._log.info("raised the leader epoch on the Lease", epoch=epoch, above=above)
                return epoch
        reason = "another leader holds the Lease: no new leader epoch for this term"
        self.fence.revoke(reason)
        raise FenceLost(reason)

    async def _renew_optimistically(self, now: str) -> bool:
        """client-go's fast path: renew from our own last write, one request when nobody interfered."""
        cached, record = self._lease, self._observation.record
        if cached is None or record is None or not self._observation.held_by(self.config.identity):
            return False
        if not self._observation.valid(self._clock()):
            return False
        renewed = replace(record, lease_duration_seconds=self.config.lease_duration_seconds, renew_time=now)
        try:
            await self._write(renewed, cached)
        except ApiError as error:
            self._log.info("optimistic leader lease update failed, reading it", status=error.status)
            return False
        return True

    def _released(self, renewing: bool) -> bool:
        return renewing and not self._is_leader

    async def _create(self, now: str, *, renewing: bool) -> bool:
        """Create the Lease (it was deleted, or never existed), keeping the epochs seen on it so far: the
        leader's own when it renews (the same term), one more than the last seen when it acquires."""
        seen = self._observation.record
        epoch = 0 if seen is None else seen.epoch + (0 if renewing else 1)
        record = LeaderElectionRecord(
            holder_identity=self.config.identity,
            lease_duration_seconds=self.config.lease_duration_seconds,
            acquire_time=seen.acquire_time if renewing and seen is not None else now,
            renew_time=now,
            epoch=epoch,
        )
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {
                "name": self.config.lease_name,
                "namespace": self.config.lease_namespace,
                "annotations": record.annotations(),
            },
            "spec": record.to_spec(),
        }
        try:
            self._lease = await self.kube.create(LEASES, body, self.config.lease_namespace)
        except Conflict:
            return False  # another candidate created it first
        self._observation.wrote(record, self._clock())
        return True

    async def _write(self, record: LeaderElectionRecord, lease: Mapping[str, Any]) -> None:
        """Replace the Lease with ``record``, conditional on the resourceVersion of ``lease``."""
        metadata = lease["metadata"]
        body = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {
                "name": metadata["name"],
                "namespace": metadata["namespace"],
                "resourceVersion": metadata["resourceVersion"],
                **({"labels": metadata["labels"]} if "labels" in metadata else {}),
                "annotations": {**(metadata.get("annotations") or {}), **record.annotations()},
            },
            "spec": record.to_spec(),
        }
        self._lease = await self.kube.replace(
            LEASES, self.config.lease_name, body, self.config.lease_namespace
        )
        self._observation.wrote(record, self._clock())

    def _deadline(self) -> float:
        return self._renewed_at + self.config.renew_deadline

    def _set_leader(self, leader: bool) -> None:
        self._is_leader = leader
        LEADER_ELECTION_STATUS.labels(name=self.config.lease_name).set(1 if leader else 0)

    def _holder(self) -> str:
        record = self._observation.record
        return record.holder_identity if record is not None else ""

    def _transitions(self) -> int:
        record = self._observation.record
        return record.lease_transitions if record is not None else 0

    def _epoch(self) -> int:
        record = self._observation.record
        return record.epoch if record is not None else 0


def _now() -> str:
    return format_micro_time(datetime.now(UTC))
