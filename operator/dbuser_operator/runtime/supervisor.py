"""Supervision of the manager's long-running parts (controller-runtime's ``manager.Runnable``).

A :class:`Runnable` is a coroutine function that runs until cancelled (or, when ``finite``, may also
return when its work is done). The :class:`Supervisor` runs it and watches how it ends. An unexpected
end — an exception, or a return from a runnable that should run forever — is logged with its traceback,
counted (``dbuser_operator_runnable_failures_total{runnable}``) and makes ``/readyz`` fail naming the
runnable;
then the runnable's policy decides:

- ``RESTART``: run it again after a backoff (0.8 s doubling to 30 s, with jitter; back to 0.8 s once a run
  lasted ``stable_after`` seconds). ``/readyz`` names it until the new run is ready (its ``ready`` check
  passes, or it has run ``stable_after`` seconds); ``/healthz`` names it too after ``unhealthy_after``
  failures in a row, so that the kubelet restarts a process stuck in a crash loop.
- ``EXIT``: stop the manager. The exception propagates out of ``Manager.run`` (``RunnableFailed`` for an
  unexpected return), and the process exits non-zero.

Once ``stopping()`` was called, ends are expected: nothing is logged as a failure or restarted.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from prometheus_client import Counter

from dbuser_operator.runtime.backoff import Backoff
from dbuser_operator.runtime.errors import describe
from dbuser_operator.runtime.metrics import REGISTRY

log = structlog.get_logger(__name__)

RUNNABLE_FAILURES = Counter(
    "dbuser_operator_runnable_failures_total",
    "Unexpected ends of the manager's runnables (informers, controllers, leader tasks, …)",
    ["runnable"],
    registry=REGISTRY,
)
DEPRECATED_RUNNABLE_FAILURES = Counter(
    "runtime_runnable_failures_total",
    "Deprecated, use dbuser_operator_runnable_failures_total (the same count; removed after 0.2)",
    ["runnable"],
    registry=REGISTRY,
)


_REPORTED = "_supervisor_reported"  # set on an exception that stops the manager once it has been logged


class Policy(enum.StrEnum):
    """What an unexpected end of a runnable leads to."""

    RESTART = "restart"
    EXIT = "exit"


@dataclass(frozen=True)
class Runnable:
    """A long-running part of the manager: its name (for logs and probes), coroutine and policy.

    ``finite``: returning is a normal end (a one-shot task), not a failure. ``ready``: after a restart,
    the runnable is ready again once this returns True (otherwise once it has run ``stable_after``).
    """

    name: str
    run: Callable[[], Awaitable[None]]
    policy: Policy = Policy.RESTART
    finite: bool = False
    ready: Callable[[], bool] | None = None


class RunnableFailed(Exception):
    """A runnable whose policy is EXIT returned when it should have run until stopped."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


@dataclass
class _Status:
    """What the supervisor knows of one runnable."""

    failures: int = 0  # in a row: reset once a run lasted stable_after
    last_error: str = ""
    backing_off: bool = False
    restarted_at: float | None = None  # start of the run after the last failure


class Supervisor:
    """Runs runnables by their policies and answers the ``runnables`` health and readiness checks."""

    def __init__(
        self,
        *,
        initial_backoff: float = 0.8,
        max_backoff: float = 30.0,
        stable_after: float = 30.0,
        unhealthy_after: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self.unhealthy_after = unhealthy_after
        self._clock = clock
        self._statuses: dict[str, _Status] = {}
        self._ready: dict[str, Callable[[], bool] | None] = {}
        self._stopping = False

    def stopping(self) -> None:
        """From now on the runnables are being stopped: their ends are expected."""
        self._stopping = True

    def failures(self, name: str) -> int:
        """How many times in a row the runnable ``name`` ended unexpectedly."""
        status = self._statuses.get(name)
        return status.failures if status is not None else 0

    async def supervise(self, runnable: Runnable) -> None:
        """Run ``runnable`` until cancelled (or its normal end), restarting it or raising per its policy."""
        status = self._statuses.setdefault(runnable.name, _Status())
        self._ready[runnable.name] = runnable.ready
        backoff = Backoff(self.initial_backoff, self.max_backoff)
        logger = log.bind(runnable=runnable.name, policy=str(runnable.policy))
        while True:
            started = self._clock()
            error: Exception | None = None
            try:
                await runnable.run()
            except asyncio.CancelledError:
                raise
            except Exception as raised:
                if getattr(raised, _REPORTED, None) is not None and runnable.policy is Policy.EXIT:
                    raise  # a nested runnable's failure, already logged: stop without a second traceback
                error = raised
            if self._stopping:
                if error is not None:
                    logger.warning("runnable failed while stopping", error=describe(error, detail=False))
                return
            if error is None and runnable.finite:
                return
            if self._clock() - started >= self.stable_after:
                backoff.reset()
                status.failures = 0
            status.failures += 1
            status.last_error = "returned" if error is None else describe(error, detail=False)
            status.backing_off = True
            RUNNABLE_FAILURES.labels(runnable.name).inc()
            DEPRECATED_RUNNABLE_FAILURES.labels(runnable.name).inc()
            if error is None:
                logger.error("runnable returned unexpectedly", failures=status.failures)
            else:
                logger.error("runnable failed", failures=status.failures, exc_info=error)
            if runnable.policy is Policy.EXIT:
                logger.error("stopping the manager")
                stop = error if error is not None else RunnableFailed(runnable.name, "returned unexpectedly")
                setattr(stop, _REPORTED, runnable.name)
                raise stop
            delay = backoff.next()
            logger.warning("restarting runnable", retry_in=round(delay, 2))
            await asyncio.sleep(delay)
            status.backing_off = False
            status.restarted_at = self._clock()

    def not_ready(self) -> str | None:
        """The ``/readyz`` check: None, or the runnables that failed and are not ready again."""
        down = [
            f"{name} ({status.last_error}, {'restarting' if status.backing_off else 'recovering'})"
            for name, status in self._statuses.items()
            if self._recovering(name, status)
        ]
        return "; ".join(down) if down else None

    def not_healthy(self) -> str | None:
        """The ``/healthz`` check: None, or the runnables that keep failing (``unhealthy_after`` in a row)."""
        looping = [
            f"{name} ({status.failures} failures in a row, last {status.last_error})"
            for name, status in self._statuses.items()
            if status.failures >= self.unhealthy_after and self._recovering(name, status)
        ]
        return f"crash looping: {'; '.join(looping)}" if looping else None

    def _recovering(self, name: str, status: _Status) -> bool:
        if status.backing_off:
            return True
        if status.restarted_at is None:
            return False
        ready = self._ready.get(name)
        if ready is not None and ready():
            return False
        return self._clock() - status.restarted_at < self.stable_after
