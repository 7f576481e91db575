"""An informer that keeps only the objects other objects refer to (e.g. the Secrets a resource names).

Caching every Secret of the watched namespaces costs memory for each one, used or not. This informer
keeps an object only while its key (``namespace/name``, or ``name`` when cluster-scoped) is a value of
an index of some *source* informer (:meth:`ReferencedInformer.keep_referenced`, registered at wiring
time). It is one LIST+WATCH like any informer; objects nobody refers to are dropped as they arrive (not
stored, no handler called), also page by page when listing.

When a reference appears (a source object added or changed), the referenced object is taken from a small
set of recently dropped ones, or fetched by a targeted GET. :meth:`ReferencedInformer.settled` is a
predicate for the source's own watch that holds back a source event while one of its references is being
fetched: the fetch ends by delivering the object to this informer's handlers as an add (or, when it does
not exist, as the delete of a stub with only its name), so a controller that maps this informer's events
to the referring objects reconciles them once the object is there — a synchronous ``get`` then finds it.
A copy from a GET is never replaced by an older one from the watch (resourceVersions compared as the
numbers the API server makes them). An object that nobody refers to any more is evicted (no handler
called). The first LIST waits until the sources have synced, so that it knows what to keep.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import structlog

from dbuser_operator.runtime.backoff import Backoff
from dbuser_operator.runtime.cache import IndexFunc, strip_unread_compact
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import NotFound, describe
from dbuser_operator.runtime.informer import Informer, Transform
from dbuser_operator.runtime.predicates import Predicate
from dbuser_operator.runtime.resources import ObjectKey, Resource

log = structlog.get_logger(__name__)

PENDING_LIMIT = 256  # recently dropped objects kept for a reference that may follow (a Secret, then its user)
PENDING_SECONDS = 10.0


def key_of(value: str) -> ObjectKey:
    """The key an index value ``namespace/name`` (or ``name``) names."""
    namespace, _, name = value.rpartition("/")
    return ObjectKey(namespace, name)


class ReferencedInformer(Informer):
    """An informer of the objects that the indexes of other informers name (see the module)."""

    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        *,
        namespaces: Sequence[str] = (),
        referenced_by: Iterable[tuple[Informer, str]] = (),
        transform: Transform = strip_unread_compact,
        pending_limit: int = PENDING_LIMIT,
        pending_seconds: float = PENDING_SECONDS,
        **options: Any,
    ) -> None:
        super().__init__(kube, resource, namespaces=namespaces, transform=transform, **options)
        self.pending_limit = pending_limit
        self.pending_seconds = pending_seconds
        self._sources: list[tuple[Informer, str]] = []
        self._pending: OrderedDict[ObjectKey, tuple[float, dict[str, Any]]] = OrderedDict()
        self._fetching: dict[ObjectKey, asyncio.Task[None]] = {}
        self._fetched: dict[ObjectKey, int] = {}  # resourceVersion of a GET's copy, until the watch passes it
        self._deferred: set[ObjectKey] = set()  # referenced while the first list ran
        self._listing = False
        for source, index in referenced_by:
            self.keep_referenced(source, index)

    def keep_referenced(self, source: Informer, index: str) -> None:
        """Keep the objects whose key is a value of ``source``'s index ``index`` (``namespace/name``)."""
        self._sources.append((source, index))
        source.add_handler(_References(self, source.store.index_func(index)))

    def settled(self, source: Informer, index: str) -> Predicate:
        """A predicate for ``source``'s watch: hold back an event while an object it refers to (through
        ``index``) is being fetched; the fetch's outcome is delivered to this informer's handlers."""
        func = source.store.index_func(index)

        def ready(obj: dict[str, Any]) -> bool:
            keys = [key_of(value) for value in func(obj)]
            self.ensure(keys)
            return not any(key in self._fetching for key in keys)

        return Predicate(create=ready, update=lambda old, new: ready(new))

    def wanted(self, key: ObjectKey) -> bool:
        """Whether a source refers to ``key``."""
        value = str(key)
        return any(source.store.indexed(index, value) for source, index in self._sources)

    @property
    def fetching(self) -> int:
        """Targeted GETs under way."""
        return len(self._fetching)

    async def run(self) -> None:
        """Wait for the sources' first lists (to know what to keep), then list and watch."""
        for source, _ in self._sources:
            await source.wait_for_sync()
        self._listing = True
        try:
            await super().run()
        finally:
            self._listing = False
            self._deferred.update(self._fetching)  # fetched again after the next list (their referrers wait)
            fetches = list(self._fetching.values())
            for task in fetches:
                task.cancel()
            await asyncio.gather(*fetches, return_exceptions=True)

    def ensure(self, keys: Iterable[ObjectKey]) -> None:
        """Make referenced objects present: from the recently dropped ones, else by a GET (in the
        background). Before the first list has completed, the list (or a GET after it) takes care."""
        for key in keys:
            if key in self.store or key in self._fetching or not self._in_scope(key):
                continue
            if not self.has_synced:
                if self._listing:
                    self._deferred.add(key)
                continue
            pending = self._take_pending(key)
            if pending is not None:
                self._put(pending)
                continue
            self._fetching[key] = asyncio.get_running_loop().create_task(
                self._fetch(key), name=f"fetch {self.name} {key}"
            )

    def release(self, keys: Iterable[ObjectKey]) -> None:
        """Evict the objects of ``keys`` that nobody refers to any more (no handler is called)."""
        for key in keys:
            if not self.wanted(key):
                self.store.remove(key)
                self._fetched.pop(key, None)

    def _in_scope(self, key: ObjectKey) -> bool:
        return not self.namespaces or key.namespace in self.namespaces

    async def _fetch(self, key: ObjectKey) -> None:
        """GET one referenced object (retrying with backoff while it is still wanted and not cached)."""
        backoff = Backoff()
        obj: dict[str, Any] | None = None
        try:
            while self.wanted(key) and key not in self.store:
                try:
                    obj = await self.kube.get(self.resource, key.name, key.namespace or None)
                except NotFound:
                    obj = None
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    delay = backoff.next()
                    log.warning(
                        "fetching a referenced object failed; retrying",
                        resource=self.name,
                        key=str(key),
                        error=describe(error),
                        retry_in=round(delay, 2),
                    )
                    await asyncio.sleep(delay)
                    continue
                break
            else:
                return  # no longer wanted, or the watch brought it (and told the handlers)
        finally:
            self._fetching.pop(key, None)
        if obj is None:
            # Absent: those referring to it look again (and report it missing).
            stub = {"metadata": {"namespace": key.namespace, "name": key.name}}
            if key.namespace == "":
                del stub["metadata"]["namespace"]
            self._dispatch_delete(stub)
            return
        self._offer(obj)

    def _offer(self, obj: dict[str, Any]) -> None:
        """Cache a GET's copy unless the cache holds a newer one or nobody wants it any more."""
        obj.setdefault("kind", self.resource.kind)
        obj.setdefault("apiVersion", self.resource.api_version)
        obj = self._transform(obj)
        key = ObjectKey.of(obj)
        if not self.wanted(key):
            return
        version = _version(obj)
        cached = self.store.get(key)
        if cached is not None and (version is None or (_version(cached) or 0) >= version):
            return
        if version is not None:
            self._fetched[key] = version
        self._put(obj)

    # --- the informer's hooks ---------------------------------------------------------------------------

    def _keep(self, obj: dict[str, Any]) -> bool:
        return self.wanted(ObjectKey.of(obj))

    def _dropped(self, obj: dict[str, Any]) -> None:
        self._remember(obj)

    def _vanished(self, key: ObjectKey, resource_version: str) -> bool:
        """A GET's copy newer than the list is not gone (the watch from the list will tell)."""
        fetched, listed = self._fetched.get(key), _number(resource_version)
        return fetched is None or listed is None or fetched <= listed

    def _admit(self, kind: str, obj: dict[str, Any]) -> bool:
        key = ObjectKey.of(obj)
        fetched = self._fetched.get(key)
        if fetched is not None:
            version = _version(obj)
            if version is not None and version < fetched:
                return False  # older than the copy a GET brought
            del self._fetched[key]
        if kind == "DELETED":
            self._pending.pop(key, None)
            return key in self.store
        if key in self.store or self.wanted(key):
            return True
        self._remember(obj)
        return False

    def _mark_synced(self, namespace: str | None) -> None:
        super()._mark_synced(namespace)
        if self.has_synced and self._deferred:
            deferred, self._deferred = self._deferred, set()
            self.ensure(key for key in deferred if self.wanted(key))

    # --- recently dropped objects -----------------------------------------------------------------------

    def _remember(self, obj: dict[str, Any]) -> None:
        if self.pending_limit <= 0:
            return
        key = ObjectKey.of(obj)
        now = time.monotonic()
        self._pending[key] = (now, self._transform(obj))
        self._pending.move_to_end(key)
        self._expire(now)

    def _take_pending(self, key: ObjectKey) -> dict[str, Any] | None:
        self._expire(time.monotonic())
        entry = self._pending.pop(key, None)
        return entry[1] if entry is not None else None

    def _expire(self, now: float) -> None:
        while self._pending:
            oldest, _ = next(iter(self._pending.values()))
            if len(self._pending) <= self.pending_limit and now - oldest < self.pending_seconds:
                return
            self._pending.popitem(last=False)


class _References:
    """Follows a source informer: new references are made present, dropped ones evicted."""

    def __init__(self, cache: ReferencedInformer, func: IndexFunc) -> None:
        self._cache = cache
        self._func = func

    def on_add(self, obj: dict[str, Any]) -> None:
        self._cache.ensure(key_of(value) for value in self._func(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        before, after = set(self._func(old)), set(self._func(new))
        self._cache.ensure(key_of(value) for value in after - before)
        self._cache.release(key_of(value) for value in before - after)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._cache.release(key_of(value) for value in self._func(obj))


def _number(resource_version: str | None) -> int | None:
    """A resourceVersion as a number (the API server's are etcd revisions); None when it is not one."""
    try:
        return int(resource_version or "")
    except ValueError:
        return None


def _version(obj: dict[str, Any]) -> int | None:
    return _number(obj.get("metadata", {}).get("resourceVersion"))
