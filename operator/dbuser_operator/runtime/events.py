"""An event recorder like client-go's: core/v1 Events, identical ones aggregated into a count.

Recording is best effort: an API failure is logged (by reason, never by message, which may carry details
of the object) and never raised. An event seen before (same object, type, reason, message and source) bumps
the ``count`` and ``lastTimestamp`` of the Event written for it, found through a bounded LRU cache; if that
Event has expired meanwhile, a new one is created.

``emit`` queues an event for a few background writers: each object's events go to one writer, in order, so
they aggregate exactly as if written one by one, while different objects' events are written concurrently.
A queued event holds an ``ObjectReference`` (a handful of strings), not the object, so the bound is large.
Under a manager, ``run`` owns the writers (a supervised runnable: a writer that dies ends ``run`` with its
error, and the manager restarts it); without one, ``emit`` starts them itself and logs a writer that dies.

Normal events yield to the work they describe: given ``yield_to`` (a predicate, e.g. "reconciles are
queued"), a writer holds its next Normal event while the predicate is true, up to ``max_delay`` seconds
after the event was emitted, so that under a backlog the API server serves status writes (what users wait
for) before Events. Warnings (what somebody debugging looks for) never wait. Nothing is dropped for it, and
an Event's timestamps are those of its emission, not of its write. Closing stops the yielding.

An event that is never written is logged and counted (``dbuser_operator_events_dropped_total{type, reason}``):
``queue_full`` past ``pending_limit`` waiting events of its type (client-go drops too, its buffer full; the
limit is per type, so Normal events held under a backlog never crowd out a Warning), ``lease_lost`` when the
leader lease is lost with events waiting, ``write_failed`` when the API refused or did not answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, NamedTuple

import aiohttp
import structlog
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.conditions import format_time
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.metrics import EVENTS_DROPPED
from dbuser_operator.runtime.resources import EVENTS

EventType = Literal["Normal", "Warning"]
EVENT_TYPES: Final = frozenset({"Normal", "Warning"})

MAX_MESSAGE_LENGTH: Final = 1024
DEFAULT_CACHE_SIZE: Final = 4096
# A queued event is ~0.8 KiB (a reference and its message), a DatabaseUser ~12 KiB: 16384 waiting events
# cost about what the 1024 whole objects once queued did, and hold a burst of thousands of objects' events.
# The bound is per type: a backlog of held Normal events leaves room for Warnings.
PENDING_LIMIT: Final = 16384
DEFAULT_WRITERS: Final = 4  # concurrent Event writes (one request each), beside the reconcile workers'
DEFAULT_MAX_DELAY: Final = 60.0  # the longest an event yields to queued work (``yield_to``), in seconds
_YIELD_POLL_SECONDS: Final = 0.1
_MAX_NAME_LENGTH: Final = 253
_NAME_SUFFIX_LENGTH: Final = 17  # "." and 16 hex digits

_log = structlog.get_logger(__name__)


class ObjectReference(NamedTuple):
    """What an Event's ``involvedObject`` says of an object: who it is, not what it holds."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str

    @classmethod
    def of(cls, obj: dict[str, Any] | ObjectReference) -> ObjectReference:
        """The reference to ``obj`` (a Kubernetes object as a dict, or already a reference)."""
        if isinstance(obj, ObjectReference):
            return obj
        metadata = obj.get("metadata") or {}
        return cls(
            api_version=obj.get("apiVersion", ""),
            kind=obj.get("kind", ""),
            namespace=metadata.get("namespace") or "",
            name=metadata.get("name", ""),
            uid=metadata.get("uid", ""),
            resource_version=metadata.get("resourceVersion", ""),
        )


class _Pending(NamedTuple):
    """An emitted event waiting for its writer."""

    involved: ObjectReference
    type: EventType
    reason: str
    message: str
    emitted: float  # time.monotonic() at emit: how long it has yielded
    at: str  # when it happened (format_time): its timestamps


class _Identity(NamedTuple):
    """What makes two events identical (client-go's ``getEventKey``)."""

    component: str
    host: str
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str

    def key(self) -> bytes:
        """A 16-byte digest of the identity: what the LRU cache keeps (a fraction of the strings' size)."""
        return hashlib.blake2b("\0".join(self).encode(), digest_size=16).digest()


@dataclass(slots=True)
class _Recorded:
    """The Event last written for an identity."""

    name: str
    count: int


@dataclass(slots=True)
class _Held:
    """The lock of an identity being written, and how many hold or await it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class EventRecorder:
    """Records core/v1 Events about objects on behalf of ``component`` (running on ``host``).

    ``writers`` background tasks write emitted events; at most ``pending_limit`` of each type may wait for
    them. While ``yield_to()`` is true, a writer holds its next Normal event, at most ``max_delay`` seconds
    after its emission.
    """

    def __init__(
        self,
        kube: KubeClient,
        component: str,
        host: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        *,
        writers: int = DEFAULT_WRITERS,
        pending_limit: int = PENDING_LIMIT,
        yield_to: Callable[[], bool] | None = None,
        max_delay: float = DEFAULT_MAX_DELAY,
    ) -> None:
        if writers < 1:
            raise ValueError(f"writers must be at least 1, not {writers}")
        self.kube = kube
        self.component = component
        self.host = host
        self.cache_size = cache_size
        self.pending_limit = pending_limit
        self.yield_to = yield_to
        self.max_delay = max_delay
        self._recorded: OrderedDict[bytes, _Recorded] = OrderedDict()  # by identity key
        self._locks: dict[_Identity, _Held] = {}
        # One queue per writer, ``writers`` for Normal events and as many for Warnings (which never wait
        # behind a held Normal): an object's events of one type all go to the same one, so they stay in order.
        self._queues: list[asyncio.Queue[_Pending]] = [asyncio.Queue() for _ in range(2 * writers)]
        self._writers: list[asyncio.Task[None] | None] = [None] * (2 * writers)
        self._supervised = False  # run() owns the writers
        self._closed = False

    @property
    def pending(self) -> int:
        """How many emitted events wait for a writer."""
        return sum(queue.qsize() for queue in self._queues)

    def _waiting(self, type_: EventType) -> int:
        """How many emitted events of ``type_`` wait for a writer."""
        half = len(self._queues) // 2
        queues = self._queues[half:] if type_ == "Warning" else self._queues[:half]
        return sum(queue.qsize() for queue in queues)

    def emit(
        self, obj: dict[str, Any] | ObjectReference, type_: EventType, reason: str, message: str
    ) -> None:
        """Record an event in the background, like client-go's recorder: the caller never waits for it.

        Events of one type about one object are written in order, by the one writer its kind, namespace,
        name and the type pick (Warnings never queue behind a held Normal);
        past ``pending_limit`` waiting events of its type, new ones are dropped (logged and counted), as
        client-go drops them when its buffer is full.
        """
        if type_ not in EVENT_TYPES:
            raise ValueError(f"invalid event type {type_!r}: must be Normal or Warning")
        if self._waiting(type_) >= self.pending_limit:
            _log.warning("event dropped: too many waiting", type=type_, reason=reason)
            EVENTS_DROPPED.labels(type_, "queue_full").inc()
            return
        involved = ObjectReference.of(obj)
        shard = self._shard(involved, type_)
        self._queues[shard].put_nowait(
            _Pending(
                involved,
                type_,
                reason,
                message[:MAX_MESSAGE_LENGTH],
                emitted=time.monotonic(),
                at=format_time(),
            )
        )
        if not self._supervised:
            writer = self._writers[shard]
            if writer is None or writer.done():
                writer = self._writers[shard] = self._start_writer(shard)
                writer.add_done_callback(_log_unexpected_end)

    async def run(self) -> None:
        """Run the writers until cancelled or closed; raise if one dies (a runnable for the manager)."""
        self._supervised = True
        for shard, writer in enumerate(self._writers):
            if writer is None or writer.done():
                self._writers[shard] = self._start_writer(shard)
        writers = [writer for writer in self._writers if writer is not None]
        try:
            done, _ = await asyncio.wait(writers, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            for writer in writers:
                writer.cancel()
            await asyncio.gather(*writers, return_exceptions=True)
            raise
        if self._closed:
            return
        for writer in done:
            writer.result()  # a writer's error ends run()
        raise RuntimeError(f"event writer {next(iter(done)).get_name()} ended")

    def _start_writer(self, shard: int) -> asyncio.Task[None]:
        return asyncio.create_task(self._write_pending(self._queues[shard]), name=f"event recorder {shard}")

    async def flush(self) -> None:
        """Wait until every emitted event has been written (or given up on)."""
        await asyncio.gather(*(queue.join() for queue in self._queues))

    async def close(self, timeout: float = 5.0, *, flush: bool = True) -> None:  # noqa: ASYNC109 - a shutdown bound
        """Write what is pending (within ``timeout`` seconds), then stop the background writers.

        ``flush=False`` drops what is pending instead and cancels the writes under way (the leader lease
        is lost: no more writes).
        """
        self._closed = True  # no more yielding: what is written is written now
        if not flush:
            dropped = self.pending
            for queue in self._queues:
                while not queue.empty():
                    EVENTS_DROPPED.labels(queue.get_nowait().type, "lease_lost").inc()
                    queue.task_done()
            if dropped:
                _log.warning("events dropped: the leader lease is lost", dropped=dropped)
        else:
            try:
                async with asyncio.timeout(timeout):
                    await self.flush()
            except TimeoutError:
                _log.warning("events not recorded at shutdown", pending=self.pending)
        writers = [writer for writer in self._writers if writer is not None]
        for writer in writers:
            writer.cancel()
        await asyncio.gather(*writers, return_exceptions=True)
        self._writers = [None] * len(self._queues)

    def _shard(self, involved: ObjectReference, type_: EventType) -> int:
        """The writer for events of ``type_`` about ``involved``: always the same for one object and type,
        so never two at once; Warnings have writers of their own, which never hold an event."""
        key = (involved.api_version, involved.kind, involved.namespace, involved.name)
        normal_writers = len(self._queues) // 2
        return hash(key) % normal_writers + (normal_writers if type_ == "Warning" else 0)

    async def _write_pending(self, queue: asyncio.Queue[_Pending]) -> None:
        while True:
            pending = await queue.get()
            try:
                if pending.type == "Normal":
                    await self._wait_turn(pending.emitted)
                await self._record(
                    pending.involved, pending.type, pending.reason, pending.message, pending.at
                )
            except Exception as error:  # the writer must outlive any one event
                _log.warning("event not recorded", reason=pending.reason, error=type(error).__name__)
                EVENTS_DROPPED.labels(pending.type, "write_failed").inc()
            finally:
                queue.task_done()

    async def _wait_turn(self, emitted: float) -> None:
        """Hold while ``yield_to()`` says work is waiting, until ``max_delay`` after ``emitted``."""
        if self.yield_to is None:
            return
        while not self._closed and self.yield_to() and time.monotonic() - emitted < self.max_delay:  # noqa: ASYNC110 - a predicate, polled
            await asyncio.sleep(_YIELD_POLL_SECONDS)

    async def event(
        self,
        obj: dict[str, Any] | ObjectReference,
        type_: EventType,
        reason: str,
        message: str,
        *,
        at: datetime | None = None,
    ) -> None:
        """Record an event about ``obj`` (or a reference to it) that happened ``at`` (default: now); never
        raises for an API failure."""
        if type_ not in EVENT_TYPES:
            raise ValueError(f"invalid event type {type_!r}: must be Normal or Warning")
        await self._record(ObjectReference.of(obj), type_, reason, message, format_time(at))

    async def _record(
        self, involved: ObjectReference, type_: EventType, reason: str, message: str, now: str
    ) -> None:
        """Write the event (stamped ``now``, ``format_time``'s text); log and count an API failure."""
        identity = _Identity(
            component=self.component,
            host=self.host or "",
            api_version=involved.api_version,
            kind=involved.kind,
            namespace=involved.namespace,
            name=involved.name,
            uid=involved.uid,
            type=type_,
            reason=reason,
            message=message[:MAX_MESSAGE_LENGTH],
        )
        # One write at a time per identity, so that concurrent identical events aggregate too: a lock per
        # identity, dropped once nobody holds or awaits it.
        held = self._locks.get(identity)
        if held is None:
            held = self._locks[identity] = _Held()
        held.users += 1
        try:
            async with held.lock:
                await self._write(identity, involved, now)
        except (ApiException, aiohttp.ClientError, OSError, TimeoutError, json.JSONDecodeError) as error:
            _log.warning(
                "event not recorded",
                type=type_,
                reason=reason,
                kind=identity.kind,
                object=f"{identity.namespace}/{identity.name}" if identity.namespace else identity.name,
                error=f"HTTP {error.status}" if isinstance(error, ApiException) else type(error).__name__,
            )
            EVENTS_DROPPED.labels(type_, "write_failed").inc()
        finally:
            held.users -= 1
            if not held.users:
                del self._locks[identity]

    async def _write(self, identity: _Identity, involved: ObjectReference, now: str) -> None:
        key = identity.key()
        recorded = self._recorded.get(key)
        namespace = identity.namespace or "default"
        if recorded is not None:
            self._recorded.move_to_end(key)
            patch = {"count": recorded.count + 1, "lastTimestamp": now}
            try:
                await self.kube.patch(EVENTS, recorded.name, patch, PatchType.MERGE, namespace=namespace)
            except NotFound:
                self._forget(key)  # expired (events live an hour by default): start a new one
            else:
                recorded.count += 1
                return
        name = _event_name(identity.name)
        await self.kube.create(EVENTS, self._new_event(name, namespace, identity, involved, now), namespace)
        self._remember(key, _Recorded(name, 1))

    def _new_event(
        self, name: str, namespace: str, identity: _Identity, involved: ObjectReference, now: str
    ) -> dict[str, Any]:
        fields = {
            "apiVersion": identity.api_version,
            "kind": identity.kind,
            "name": identity.name,
            "namespace": identity.namespace,
            "uid": identity.uid,
            "resourceVersion": involved.resource_version,
        }
        source = {"component": self.component}
        if self.host:
            source["host"] = self.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {key: value for key, value in fields.items() if value},
            "type": identity.type,
            "reason": identity.reason,
            "message": identity.message,
            "source": source,
            "reportingComponent": self.component,
            "reportingInstance": self.host or "",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

    def _remember(self, key: bytes, recorded: _Recorded) -> None:
        self._recorded[key] = recorded
        self._recorded.move_to_end(key)
        while len(self._recorded) > self.cache_size:
            self._recorded.popitem(last=False)

    def _forget(self, key: bytes) -> None:
        self._recorded.pop(key, None)


def _log_unexpected_end(writer: asyncio.Task[None]) -> None:
    """Done callback of a writer that ``emit`` started: a writer ends only by cancellation."""
    if not writer.cancelled() and writer.exception() is not None:
        _log.error("event writer failed", writer=writer.get_name(), exc_info=writer.exception())


def _event_name(involved_name: str) -> str:
    """``<involved name>.<16 hex digits>``, unique, within the 253 characters of a name."""
    prefix = involved_name[: _MAX_NAME_LENGTH - _NAME_SUFFIX_LENGTH] or "event"
    return f"{prefix}.{secrets.token_hex(8)}"
