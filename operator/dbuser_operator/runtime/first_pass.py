"""When a controller's first pass ends: every key queued when its workers started has been reconciled once.

A leader that starts (or restarts) over existing objects lists them all and queues every key; until each
has been looked at once, what the cache says about them is unchecked. The first pass is over when the
last of those keys has been reconciled (whatever the result: an error is a look too, and is retried as
usual): then ``dbuser_operator_first_pass_seconds{controller}`` is set to the seconds it took from the
workers' start, and one log line says so with the count. ``dbuser_operator_first_pass_remaining`` counts
the keys still unchecked meanwhile. Keys added later (new objects, requeues) are not part of it. The C
allocator's free memory is then given back (:mod:`.malloc_trim`): the line says the RSS and how much.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable

import structlog

from dbuser_operator.runtime import metrics
from dbuser_operator.runtime.malloc_trim import trim

log = structlog.get_logger(__name__)


class FirstPass:
    """The keys of one controller's first pass still to be reconciled once."""

    def __init__(self, controller: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.controller = controller
        self._clock = clock
        self._pending: set[Hashable] = set()
        self._total = 0
        self._started = 0.0
        self.seconds: float | None = None  # set once the first pass is over

    def start(self, keys: Iterable[Hashable]) -> None:
        """The workers start with ``keys`` queued: the first pass is over once each was reconciled."""
        self._pending = set(keys)
        self._total = len(self._pending)
        self._started = self._clock()
        self.seconds = None
        metrics.FIRST_PASS_REMAINING.labels(self.controller).set(self._total)
        if not self._pending:
            self._finish()

    def reconciled(self, key: Hashable) -> None:
        """``key`` was reconciled (with any result)."""
        if self.seconds is not None or key not in self._pending:
            return
        self._pending.discard(key)
        metrics.FIRST_PASS_REMAINING.labels(self.controller).set(len(self._pending))
        if not self._pending:
            self._finish()

    @property
    def done(self) -> bool:
        """Whether every key of the first pass has been reconciled once."""
        return self.seconds is not None

    def _finish(self) -> None:
        self.seconds = self._clock() - self._started
        self._pending = set()  # a set keeps its table's size when emptied: give it back
        metrics.FIRST_PASS_SECONDS.labels(self.controller).set(self.seconds)
        before, after = trim()  # what the pass freed, given back (malloc_trim)
        log.info(
            "first pass done: every resource checked once",
            controller=self.controller,
            resources=self._total,
            seconds=round(self.seconds, 3),
            **({"rss_mib": _mib(after), "trimmed_mib": _mib(before - after)} if before and after else {}),
        )


def _mib(size: int) -> float:
    return round(size / 2**20, 1)
