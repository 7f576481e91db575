"""The rate-limited work queue of the controllers, with client-go's ``util/workqueue`` semantics.

* A key is queued at most once (the *dirty* set) and is never handed to two workers at the same time (the
  *processing* set); a key added while it is processing is queued again when ``done`` is called for it.
* ``add_after`` keeps, per key, only the earliest ready time; one loop timer (``loop.call_at``), armed for the
  earliest entry, moves keys in when they are due: no task, no polling.
* Per-key exponential back-off for failures (5 ms x 2^failures, capped at 1000 s); ``forget`` resets it.
* Fair between groups (DESIGN.md §3c: one tenant's flood delays only itself): ready keys wait in one FIFO
  per group (``group_of``; by default a key's ``namespace``, when it has one), and ``get`` serves the groups
  in turn. A key added to a quiet group is handed out after at most one key of each other group with ready
  keys, however many those hold; with a single group this is client-go's FIFO.

Everything runs on one asyncio event loop and must be called from it; nothing here is thread-safe.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from dbuser_operator.runtime import metrics

K = TypeVar("K", bound=Hashable)


def namespace_of(item: Any) -> Hashable:
    """The default group of a key: its ``namespace`` (an ``ObjectKey``'s), or one group for keys without."""
    return getattr(item, "namespace", None)


class QueueShutDownError(Exception):
    """get() on a queue that is shut down and empty."""


class ExponentialFailureRateLimiter(Generic[K]):
    """Per-key exponential back-off: ``base_delay * 2**failures``, capped at ``max_delay`` (seconds)."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("delays must not be negative")
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._failures: dict[K, int] = {}

    def when(self, item: K) -> float:
        """The delay before the item's next try; counts one more failure for it."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        try:
            delay = self._base_delay * 2.0**failures
        except OverflowError:
            return self._max_delay
        return min(delay, self._max_delay)

    def forget(self, item: K) -> None:
        """Clear the item's failure count (on success, and when the object is gone)."""
        self._failures.pop(item, None)

    def num_requeues(self, item: K) -> int:
        """How many failures are counted for the item."""
        return self._failures.get(item, 0)


class RateLimitingQueue(Generic[K]):
    """A deduplicating queue of keys with delayed and rate-limited adds (client-go's rate-limiting queue),
    FIFO within a group and round-robin between groups (``group_of``).

    ``clock`` times the queue and work durations of the metrics; delays use the event loop's clock.
    """

    def __init__(
        self,
        name: str,
        rate_limiter: ExponentialFailureRateLimiter[K] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        group_of: Callable[[K], Hashable] = namespace_of,
    ) -> None:
        self.name = name
        self._rate_limiter: ExponentialFailureRateLimiter[K] = rate_limiter or ExponentialFailureRateLimiter()
        self._clock = clock
        self._shutting_down = False

        self._group_of = group_of
        self._ready: dict[Hashable, deque[K]] = {}  # per group, FIFO: the keys ready to be handed out
        self._turns: deque[Hashable] = deque()  # the groups with ready keys, in the order they are served
        self._ready_count = 0
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle = asyncio.Event()  # no key is processing
        self._idle.set()

        # Delayed adds: key -> (ready time on the loop's clock, entry number); the heap may hold stale
        # entries for keys whose ready time was brought forward, recognised by their entry number.
        self._waiting: dict[K, tuple[float, int]] = {}
        self._waiting_heap: list[tuple[float, int, K]] = []
        self._entry_numbers = itertools.count()
        self._timer: asyncio.TimerHandle | None = None

        # Metrics, as client-go's: depth counts dirty keys, so a key re-added while processing counts too.
        self._queued_at: dict[K, float] = {}
        self._processing_since: dict[K, float] = {}
        labels = {"name": name, "controller": name}
        self._depth_metric = metrics.WORKQUEUE_DEPTH.labels(**labels)
        self._adds_metric = metrics.WORKQUEUE_ADDS.labels(**labels)
        self._retries_metric = metrics.WORKQUEUE_RETRIES.labels(**labels)
        self._queue_duration_metric = metrics.WORKQUEUE_QUEUE_DURATION.labels(**labels)
        self._work_duration_metric = metrics.WORKQUEUE_WORK_DURATION.labels(**labels)
        self._depth_metric.set(0)

    # --- adding -------------------------------------------------------------------------------------------

    def add(self, item: K) -> None:
        """Queue the item, unless it is already queued; if it is processing, queue it again on done()."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        self._queued_at.setdefault(item, self._clock())
        self._adds_metric.inc()
        self._depth_metric.set(len(self._dirty))
        if item not in self._processing:
            self._enqueue(item)

    def add_after(self, item: K, delay: float) -> None:
        """Add the item once ``delay`` seconds have passed; a key already waiting keeps its earliest time."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = asyncio.get_running_loop().time() + delay
        waiting = self._waiting.get(item)
        if waiting is not None and waiting[0] <= ready_at:
            return
        entry_number = next(self._entry_numbers)
        self._waiting[item] = (ready_at, entry_number)
        heapq.heappush(self._waiting_heap, (ready_at, entry_number, item))
        self._arm_timer()

    def add_rate_limited(self, item: K) -> None:
        """Add the item after its back-off delay, counting one more failure for it."""
        if self._shutting_down:
            return
        self._retries_metric.inc()
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: K) -> None:
        """Reset the item's back-off (it does not remove the item from the queue)."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: K) -> int:
        """How many failures the rate limiter counts for the item."""
        return self._rate_limiter.num_requeues(item)

    # --- processing ---------------------------------------------------------------------------------------

    async def get(self) -> K:
        """Wait for a key and mark it processing; raises QueueShutDownError once shut down and empty."""
        while not len(self):
            if self._shutting_down:
                raise QueueShutDownError(f"work queue {self.name} is shut down")
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                getter.cancel()
                if getter in self._getters:
                    self._getters.remove(getter)
                elif len(self):
                    self._wake_one_getter()  # the wake-up this getter received goes to the next one
                raise
        item = self._dequeue()
        self._dirty.discard(item)
        self._processing.add(item)
        self._idle.clear()
        now = self._clock()
        queued_at = self._queued_at.pop(item, None)
        if queued_at is not None:
            self._queue_duration_metric.observe(now - queued_at)
        if not self._dirty and not self._queued_at:  # drained: an emptied set or dict keeps its table
            self._dirty, self._queued_at = set(), {}  # (a first pass's 10 000 keys: 0.7 MB) until replaced
        self._processing_since[item] = now
        self._depth_metric.set(len(self._dirty))
        if self._ready_count:
            self._wake_one_getter()
        return item

    def done(self, item: K) -> None:
        """Mark the item's processing finished; queue it again if it was added meanwhile.

        Calling it for an item that is not processing does nothing.
        """
        if item not in self._processing:
            return
        self._processing.discard(item)
        started = self._processing_since.pop(item, None)
        if started is not None:
            self._work_duration_metric.observe(self._clock() - started)
        if item in self._dirty:
            self._enqueue(item)
        if not self._processing and not (self._shutting_down and self._ready_count):
            self._idle.set()

    def __len__(self) -> int:
        """How many keys are queued and ready (neither delayed nor processing)."""
        return self._ready_count

    # --- shutting down ------------------------------------------------------------------------------------

    def queued(self) -> set[K]:
        """The keys queued and not yet handed out (ready or due later, but not only delayed)."""
        return set(self._dirty)

    @property
    def processing(self) -> tuple[K, ...]:
        """The keys handed out by ``get`` and not yet ``done``."""
        return tuple(self._processing)

    @property
    def shutting_down(self) -> bool:
        """Whether shutdown() was called."""
        return self._shutting_down

    def shutdown(self) -> None:
        """Refuse new adds and drop delayed ones; waiting getters get QueueShutDownError once it is empty."""
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self._waiting_heap.clear()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109
        """shutdown(), then wait until every key is handed out and done(); False if ``timeout`` expired first.

        Keys queued before the shutdown are still handed out (``get``), so the drain waits for them too;
        when it returns True, no key is processing and none can be handed out any more. After False,
        ``processing`` names the keys still in flight. The timeout is a parameter (not the caller's
        ``asyncio.timeout``) because expiry is a result, not an error: the caller reports it and goes on.
        """
        self.shutdown()
        if self._ready_count:
            self._idle.clear()  # set only once the queued keys were handed out and done too
        try:
            async with asyncio.timeout(timeout):  # not wait_for: on Python 3.11 it may swallow a cancellation
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    # --- internals ----------------------------------------------------------------------------------------

    def _enqueue(self, item: K) -> None:
        """Make the item ready: last of its group's FIFO (its group takes its turn last if it had none)."""
        group = self._group_of(item)
        ready = self._ready.get(group)
        if ready is None:
            ready = self._ready[group] = deque()
            self._turns.append(group)
        ready.append(item)
        self._ready_count += 1
        self._wake_one_getter()

    def _dequeue(self) -> K:
        """The first key of the group whose turn it is; that group's next turn comes after the others'."""
        group = self._turns.popleft()
        ready = self._ready[group]
        item = ready.popleft()
        if ready:
            self._turns.append(group)
        else:
            del self._ready[group]
        self._ready_count -= 1
        return item

    def _wake_one_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _arm_timer(self) -> None:
        """Have the loop timer fire at the earliest waiting entry (or cancel it when nothing waits)."""
        heap = self._waiting_heap
        while heap and self._waiting.get(heap[0][2]) != heap[0][:2]:
            heapq.heappop(heap)  # stale: its key was brought forward or already moved in
        if not heap:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        ready_at = heap[0][0]
        if self._timer is not None:
            if self._timer.when() <= ready_at:
                return
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(ready_at, self._move_ready_items)

    def _move_ready_items(self) -> None:
        """Timer callback: add every waiting key whose time has come, then re-arm for the next one."""
        fired_for = self._timer.when() if self._timer is not None else 0.0
        self._timer = None
        # The loop runs a timer up to its clock resolution early; whatever it was armed for is due.
        now = max(asyncio.get_running_loop().time(), fired_for)
        heap = self._waiting_heap
        try:
            while heap and heap[0][0] <= now:
                ready_at, entry_number, item = heapq.heappop(heap)
                if self._waiting.get(item) == (ready_at, entry_number):
                    del self._waiting[item]
                    self.add(item)
        finally:  # a callback's error is only logged by the loop: never leave later keys without a timer
            self._arm_timer()
