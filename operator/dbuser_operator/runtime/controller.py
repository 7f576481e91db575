"""Controllers: a work queue of object keys, fed by informers, drained by reconcile workers.

The contract of controller-runtime: ``reconcile(key) -> Result``. An exception means "try again later"
with the key's exponential backoff; ``Result(requeue_after=s)`` means "look again in s seconds" (the
backoff is forgotten); a plain ``Result()`` is done. An unexpected exception never kills a worker: it is
logged with its traceback and counted as a panic, then retried like any error. :class:`~.fence.FenceLost`
(a side effect refused because the lease is no longer proven) is neither: the key is left alone, since
the fence has been revoked and the manager is stopping every reconcile at once.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog
from kubernetes_asyncio.client.exceptions import ApiException
from prometheus_client import Counter

from dbuser_operator.runtime import metrics
from dbuser_operator.runtime.errors import describe
from dbuser_operator.runtime.fence import FenceLost
from dbuser_operator.runtime.first_pass import FirstPass
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.predicates import Predicate
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import QueueShutDownError, RateLimitingQueue

log = structlog.get_logger(__name__)

DEFAULT_MAX_CONCURRENT_RECONCILES = 4


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next: nothing, or another look after ``requeue_after`` seconds."""

    requeue_after: float = 0.0


@dataclass(frozen=True)
class Drain:
    """How a controller's stop went: ``drained`` (nothing was cancelled), else which reconciles were."""

    drained: bool
    cancelled: tuple[ObjectKey, ...] = ()  # keys whose reconcile was in flight and was cancelled
    not_started: int = 0  # keys still queued, never handed to a worker


class ReconcileError(Exception):
    """An expected failure (database down, Secret missing): retried, and logged without a traceback."""


Reconciler = Callable[[ObjectKey], Awaitable[Result]]
Gate = Callable[[], bool]
KeyMapper = Callable[[dict[str, Any]], Iterable[ObjectKey]]


class _Enqueue:
    """An informer event handler that maps objects to keys and queues those that pass the predicates."""

    def __init__(
        self, queue: RateLimitingQueue[ObjectKey], to_keys: KeyMapper, predicates: Iterable[Predicate]
    ):
        self._queue = queue
        self._to_keys = to_keys
        self._predicates = tuple(predicates)

    def on_add(self, obj: dict[str, Any]) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._add(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if all(p.update(old, new) for p in self._predicates):
            self._add(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        if all(p.delete(obj) for p in self._predicates):
            self._add(obj)

    def _add(self, obj: dict[str, Any]) -> None:
        for key in self._to_keys(obj):
            self._queue.add(key)


def owner_keys(owner_api_version: str, owner_kind: str) -> KeyMapper:
    """Map an owned object to its controlling owner of the given kind (EnqueueRequestForOwner)."""

    def to_keys(obj: dict[str, Any]) -> list[ObjectKey]:
        namespace = obj["metadata"].get("namespace") or ""
        return [
            ObjectKey(namespace, ref["name"])
            for ref in obj["metadata"].get("ownerReferences") or []
            if ref.get("kind") == owner_kind
            and ref.get("apiVersion") == owner_api_version
            and ref.get("controller")
        ]

    return to_keys


def namespaced_name(obj: dict[str, Any]) -> list[str]:
    """``namespace/name`` of ``obj``: how an index names an object it refers to."""
    return [f"{obj['metadata'].get('namespace') or ''}/{obj['metadata']['name']}"]


def objects_naming(
    index: str, *informers: Informer, values: Callable[[dict[str, Any]], Iterable[str]] = namespaced_name
) -> KeyMapper:
    """Map an object to the objects of ``informers`` whose ``index`` names it (``values`` of the object:
    its ``namespace/name`` by default): controller-runtime's ``EnqueueRequestsFromMapFunc`` over a field
    index, for a watch of the object's kind."""

    def to_keys(obj: dict[str, Any]) -> list[ObjectKey]:
        return [
            ObjectKey.of(found)
            for value in values(obj)
            for informer in informers
            for found in informer.store.by_index(index, value)
        ]

    return to_keys


class Controller:
    """Reconciles the keys its watches enqueue, with at most ``max_concurrent_reconciles`` at once."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = DEFAULT_MAX_CONCURRENT_RECONCILES,
        queue: RateLimitingQueue[ObjectKey] | None = None,
        gate: Gate | None = None,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        self.name = name
        self.reconciler = reconciler
        self.max_concurrent_reconciles = max_concurrent_reconciles
        # An empty queue is falsy (it has a length): "queue or ..." would drop the one given.
        self.queue: RateLimitingQueue[ObjectKey] = queue if queue is not None else RateLimitingQueue(name)
        self.informers: list[Informer] = []
        self.gate = gate
        self._started = asyncio.Event()
        self._aborted = False
        self.first_pass = FirstPass(name)
        self.last_drain: Drain | None = None  # set when run() stops
        # This controller's series, looked up once (``labels`` takes a lock and validates, per call).
        self._active = metrics.ACTIVE_WORKERS.labels(name)
        self._reconcile_time = metrics.RECONCILE_TIME.labels(name)
        self._results: dict[str, Counter] = {}

    @property
    def started(self) -> bool:
        """Whether the workers are running."""
        return self._started.is_set()

    def watch(self, informer: Informer, *predicates: Predicate) -> None:
        """Reconcile the informer's objects themselves (the primary resource)."""
        self.watch_mapped(informer, lambda obj: [ObjectKey.of(obj)], *predicates)

    def watch_mapped(self, informer: Informer, to_keys: KeyMapper, *predicates: Predicate) -> None:
        """Reconcile the keys ``to_keys`` finds for each changed object (a secondary resource)."""
        informer.add_handler(_Enqueue(self.queue, to_keys, predicates))
        if informer not in self.informers:
            self.informers.append(informer)

    def watch_owned(self, informer: Informer, owner_api_version: str, owner_kind: str) -> None:
        """Reconcile the controlling owner of each changed object."""
        self.watch_mapped(informer, owner_keys(owner_api_version, owner_kind))

    def abort(self) -> None:
        """Make the coming cancellation stop at once: in-flight reconciles are cancelled, not drained."""
        self._aborted = True

    async def run(self, drain_timeout: float = 30.0) -> None:
        """Run the workers until cancelled; then let in-flight reconciles finish (bounded) and stop.

        Reconciles still running after ``drain_timeout`` are cancelled: the log names their keys and
        ``last_drain`` records them. After :meth:`abort`, cancellation stops everything at once instead
        (leadership was lost). A worker that dies (never a failing reconcile) ends ``run`` with its error.
        """
        metrics.MAX_CONCURRENT_RECONCILES.labels(self.name).set(self.max_concurrent_reconciles)
        self.first_pass.start(self.queue.queued())
        workers = [
            asyncio.create_task(self._work(), name=f"{self.name} worker {n}")
            for n in range(self.max_concurrent_reconciles)
        ]
        self._started.set()
        log.info("controller started", controller=self.name, workers=len(workers))
        try:
            # wait(), not gather(): cancelling gather() would cancel the workers mid-reconcile.
            done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for worker in done:
                worker.result()  # a worker that died (not a reconcile: those are contained) ends run()
        except asyncio.CancelledError:
            await self._drain(workers, 0 if self._aborted else drain_timeout)
            raise
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            self._started.clear()

    async def _drain(self, workers: list[asyncio.Task[None]], timeout: float) -> None:  # noqa: ASYNC109
        """Let in-flight reconciles finish within ``timeout``; cancel the rest, and record which."""
        drained = await self.queue.shutdown_with_drain(timeout)
        cancelled = self.queue.processing  # read and cancelled with no await between: exactly these
        undelivered = len(self.queue)
        for worker in workers:
            worker.cancel()
        self.last_drain = Drain(drained, tuple(sorted(cancelled, key=str)), undelivered)
        if cancelled:
            log.warning(
                "controller stopped; in-flight reconciles cancelled",
                controller=self.name,
                cancelled=len(cancelled),
                keys=[str(key) for key in self.last_drain.cancelled],
                aborted=self._aborted,
                drain_timeout=timeout,
            )
        log.info(
            "controller stopped",
            controller=self.name,
            drained=drained,
            cancelled=len(cancelled),
            not_started=undelivered,
        )

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDownError:
                return
            try:
                if self.gate is None or self.gate():
                    await self._reconcile(key)
                else:  # e.g. the leader lease is no longer certainly ours: touch nothing
                    self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: ObjectKey) -> None:
        structlog.contextvars.bind_contextvars(
            controller=self.name, namespace=key.namespace, name=key.name, reconcile_id=secrets.token_hex(6)
        )
        active = self._active
        active.inc()
        started = time.monotonic()
        try:
            result = await self.reconciler(key)
        except asyncio.CancelledError:
            raise
        except FenceLost as error:  # the manager is stopping everything: no retry, no panic
            self._result("error").inc()
            log.warning("reconcile stopped: this replica no longer holds the lease", error=str(error))
        except Exception as error:  # no exception may kill a worker
            self._failed(key, error)
        else:
            self._succeeded(key, result)
        finally:
            self._reconcile_time.observe(time.monotonic() - started)
            active.dec()
            structlog.contextvars.unbind_contextvars("controller", "namespace", "name", "reconcile_id")

    def _succeeded(self, key: ObjectKey, result: Result) -> None:
        self.first_pass.reconciled(key)
        self.queue.forget(key)
        if result.requeue_after > 0:
            self.queue.add_after(key, result.requeue_after)
            self._result("requeue_after").inc()
        else:
            self._result("success").inc()

    def _result(self, result: str) -> Counter:
        """``controller_runtime_reconcile_total``'s series for this controller and ``result``."""
        counter = self._results.get(result)
        if counter is None:
            counter = self._results[result] = metrics.RECONCILE_TOTAL.labels(self.name, result)
        return counter

    def _failed(self, key: ObjectKey, error: Exception) -> None:
        self.first_pass.reconciled(key)  # looked at: the retry is not part of the first pass
        self._result("error").inc()
        metrics.RECONCILE_ERRORS.labels(self.name).inc()
        self.queue.add_rate_limited(key)
        retries = self.queue.num_requeues(key)
        if isinstance(error, ReconcileError | ApiException):
            log.warning("reconcile failed; retrying", error=describe(error), retries=retries)
        else:
            metrics.RECONCILE_PANICS.labels(self.name).inc()
            log.error("reconcile raised an unexpected exception; retrying", retries=retries, exc_info=error)
