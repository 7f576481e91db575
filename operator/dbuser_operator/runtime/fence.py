"""The fence: proof, at the moment of each side effect, that this replica still holds the leader Lease.

Leader election alone is not a lock: a leader paused (GC, SIGSTOP, a frozen VM, a cut network) resumes
believing it leads. So every side effect — a MySQL write, an API write, an Event — first calls
:meth:`Fence.check`, which passes only while the proof is fresh:

    proof = start of the last successful acquire/renew attempt (monotonic clock)
            + lease_duration - margin

Another candidate can take the Lease only once it has seen the record unchanged for ``lease_duration``
*on its own clock*, and it saw our record no earlier than the start of our attempt. ``margin`` covers the
two clocks running at different rates (and the Lease's duration being written in whole seconds, rounded
up, never down). A check that fails, a renewal that fails, or the data layer reporting a newer leader
(:meth:`Fence.revoke`) closes the fence for good: every later check raises :class:`FenceLost`, and
:attr:`Fence.lost` wakes whoever must stop the process (the manager: cancel in-flight reconciles, drop
unsent Events, exit non-zero).

A check cannot close the window between itself and the write it guards (the process may pause in between);
the fencing token — :attr:`Fence.epoch`, the epoch the Lease gave this term when this process acquired it,
with :attr:`Fence.term`, a random name of the term — closes that window where the data lives (see
:mod:`dbuser_operator.mysql.bookkeeping.fencing`; :meth:`Fence.reserve_epoch` asks the Lease for a higher
epoch when the data holds one from a Lease that was deleted), and ``resourceVersion`` preconditions close it
on the API server.

Without leader election the fence is :func:`open_fence`: always open, epoch None.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger(__name__)

Clock = Callable[[], float]
EpochReserver = Callable[[int], Awaitable[int]]


class FenceLost(Exception):
    """This replica can no longer prove that it holds the leader Lease: it must not write anything."""


class Fence:
    """Proof of a fresh lease (see the module docstring); ``lease_duration=None`` is always open."""

    def __init__(
        self, lease_duration: float | None, margin: float = 0.0, *, clock: Clock = time.monotonic
    ) -> None:
        if lease_duration is not None and not 0 <= margin < lease_duration:
            raise ValueError("the fence margin must be at least 0 and less than the lease duration")
        self._validity = None if lease_duration is None else lease_duration - margin
        self._clock = clock
        self._valid_until = float("-inf")
        self._epoch: int | None = None
        self._term = ""
        self._reserver: EpochReserver | None = None
        self._lost = asyncio.Event()
        self._reason = ""

    @property
    def fenced(self) -> bool:
        """Whether writes depend on a lease at all (False without leader election)."""
        return self._validity is not None

    @property
    def epoch(self) -> int | None:
        """The fencing token of this leadership (the epoch the Lease gave it at acquisition), None before."""
        return self._epoch

    @property
    def term(self) -> str:
        """A random name of this leadership, new at each acquisition ("" before the first)."""
        return self._term

    def reserve_with(self, reserver: EpochReserver) -> None:
        """Where :meth:`reserve_epoch` asks for a higher epoch (the leader elector, on its Lease)."""
        self._reserver = reserver

    async def reserve_epoch(self, above: int) -> int:
        """An epoch for this term above ``above``, recorded on the Lease first; :class:`FenceLost` when
        this term no longer holds the Lease (or there is none)."""
        if self._reserver is None:
            raise FenceLost("no leader election: no Lease to record a leader epoch on")
        return await self._reserver(above)

    @property
    def lost(self) -> asyncio.Event:
        """Set once the fence is revoked: leadership is over for this process."""
        return self._lost

    @property
    def reason(self) -> str:
        """Why the fence was revoked ("" while it is not)."""
        return self._reason

    def acquired(self, started: float, epoch: int) -> None:
        """The Lease was acquired by an attempt that began at ``started`` (monotonic), as term ``epoch``."""
        self._epoch = epoch
        self._term = secrets.token_hex(6)
        self.renewed(started)

    def renewed(self, started: float) -> None:
        """A renewal that began at ``started`` (monotonic) succeeded: the proof runs from there."""
        if self._validity is not None and not self._lost.is_set():
            self._valid_until = max(self._valid_until, started + self._validity)

    def is_open(self) -> bool:
        """Whether a side effect may be issued now (no exception, nothing revoked)."""
        if self._validity is None:
            return True
        return not self._lost.is_set() and self._epoch is not None and self._clock() < self._valid_until

    def check(self) -> None:
        """Raise :class:`FenceLost` (and revoke the fence) unless a side effect may be issued now."""
        if self.is_open():
            return
        if self._epoch is None:
            raise FenceLost("not the leader: no lease acquired")
        self.revoke("the lease is no longer proven fresh")
        raise FenceLost(f"leadership lost: {self._reason}")

    def revoke(self, reason: str) -> None:
        """Close the fence for good (renewal failed, lease expired, or a newer leader was seen)."""
        if self._validity is None or self._lost.is_set():
            return
        self._reason = reason
        self._valid_until = float("-inf")
        self._lost.set()
        log.warning("fence closed: no more writes from this replica", reason=reason, epoch=self._epoch)


def open_fence() -> Fence:
    """A fence for a process without leader election: always open."""
    return Fence(None)
