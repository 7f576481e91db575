"""Informers: a local cache of one resource kept current by LIST then WATCH, with event handlers.

Semantics of client-go's reflector: list, then watch from the list's resourceVersion with bookmarks and a
random server-side timeout; re-watch from the last seen resourceVersion when a watch ends; re-list when
the server answers 410 Gone (resourceVersion too old) — as an ERROR event in the watch stream, or as the
status of the watch request itself —, synthesising deletes for objects that vanished in between; back off
0.8 s → 30 s on errors, which are logged, never swallowed. A client-side inactivity timeout catches
half-open connections: the server sends a bookmark about once a minute, so a watch that is silent for
longer is dead and is reopened.

The list is streamed, as client-go's reflector does with WatchListClient: one watch that first sends every
current object (``sendInitialEvents``, a consistent read from the API server's watch cache), then a bookmark
that ends them; the watch from its resourceVersion follows. A paginated LIST's continue pages are served
from a snapshot of the watch cache, which etcd's compaction drops on a quiet cluster; then they go to etcd,
each object decoded again: 62 CPU s of the API server for 100 000 DatabaseUsers against 17 streamed
(bench/README.md, "The listing's growth"). A server that refuses the
stream (before Kubernetes 1.27, or with the WatchList feature off) is listed page by page, as is, once, a
scope whose stream ended before its initial events did.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

import aiohttp
import structlog
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.runtime.backoff import Backoff
from dbuser_operator.runtime.cache import IndexFunc, Store, strip_unread_compact, strip_unread_compact_over
from dbuser_operator.runtime.client import KubeClient, decode
from dbuser_operator.runtime.errors import Gone, Invalid, api_error, describe
from dbuser_operator.runtime.resources import ObjectKey, Resource

log = structlog.get_logger(__name__)

Transform = Callable[[dict[str, Any]], dict[str, Any]]

LIST_PAGE_SIZE = 500
WATCH_TIMEOUT_RANGE = (300, 600)  # seconds the server keeps one watch open, chosen at random per watch
INACTIVITY_TIMEOUT = 70.0  # kopf's figure: the API server sends a bookmark about once a minute
STREAM_LISTS = True  # list by a watch with initial events (WatchList) where the server serves it
INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # the annotation of the bookmark that ends a streamed list


class EventHandler(Protocol):
    """Receives the changes an informer sees, after its cache has been updated."""

    def on_add(self, obj: dict[str, Any]) -> None:
        """An object appeared."""

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """An object changed."""

    def on_delete(self, obj: dict[str, Any]) -> None:
        """An object is gone (``obj`` is its last known state)."""


class ResourceVersionExpiredError(Exception):
    """The server no longer has history back to our resourceVersion (410 Gone): re-list."""


class WatchStalledError(Exception):
    """No byte arrived on a watch within the inactivity timeout."""


class StreamRefusedError(Exception):
    """The API server refused a watch with initial events (no WatchList): list page by page."""


class Informer:
    """A cache of one resource in some namespaces (or all), optionally filtered by a label selector."""

    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        *,
        namespaces: Sequence[str] = (),
        label_selector: str | None = None,
        field_selector: str | None = None,
        transform: Transform = strip_unread_compact,
        inactivity_timeout: float = INACTIVITY_TIMEOUT,
        watch_timeout_range: tuple[int, int] = WATCH_TIMEOUT_RANGE,
        stream_lists: bool | None = None,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.namespaces = tuple(namespaces) if resource.namespaced else ()
        self.label_selector = label_selector
        self.field_selector = field_selector  # e.g. spec.signerName=…, where the API serves the field
        self.store = Store()
        self.inactivity_timeout = inactivity_timeout
        self.watch_timeout_range = watch_timeout_range
        # None: STREAM_LISTS; False once the server refused a streamed list
        self.stream_lists = STREAM_LISTS if stream_lists is None else stream_lists
        self._transform = transform
        self._handlers: list[EventHandler] = []
        self._scopes: tuple[str | None, ...] = self.namespaces or (None,)
        self._synced_scopes: set[str | None] = set()
        self._synced = asyncio.Event()

    @property
    def name(self) -> str:
        """``plural.group``, for logs."""
        return (
            f"{self.resource.plural}.{self.resource.group}" if self.resource.group else self.resource.plural
        )

    @property
    def has_synced(self) -> bool:
        """Whether every scope has been listed once."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Return once the cache holds a complete first list."""
        await self._synced.wait()

    def add_handler(self, handler: EventHandler) -> None:
        """Deliver future changes to ``handler`` (and, if already synced, the current objects as adds)."""
        self._handlers.append(handler)
        for obj in self.store:
            handler.on_add(obj)

    def remove_handler(self, handler: EventHandler) -> None:
        """Deliver no more changes to ``handler`` (one added before)."""
        self._handlers.remove(handler)

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Index the cache by ``func`` (for example, the Secrets an object references)."""
        self.store.add_index(name, func)

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The cached object (read-only: copy before changing it)."""
        return self.store.get(key)

    async def run(self) -> None:
        """Keep the cache current until cancelled: one reflector per namespace, or one cluster-wide.

        An unexpected exception in a reflector ends ``run`` with it (the manager restarts the informer).
        Each run lists again: until then ``has_synced`` is False, while the cache keeps what it holds.
        """
        self._synced_scopes.clear()
        self._synced.clear()
        async with asyncio.TaskGroup() as group:
            for scope in self._scopes:
                group.create_task(self._reflect(scope), name=f"informer {self.name} {scope or '*'}")

    async def _reflect(self, namespace: str | None) -> None:
        backoff = Backoff()
        logger = log.bind(resource=self.name, namespace=namespace or "*")
        resource_version: str | None = None
        stream = self.stream_lists
        while True:
            try:
                if resource_version is None and stream:
                    resource_version = await self._stream(namespace)
                    if resource_version is None:
                        logger.warning("a streamed list ended before its objects did; listing by pages")
                        stream = False
                        continue
                    self._mark_synced(namespace)
                elif resource_version is None:
                    resource_version = await self._list(namespace)
                    self._mark_synced(namespace)
                    stream = self.stream_lists
                resource_version = await self._watch(namespace, resource_version)
                backoff.reset()
            except StreamRefusedError as error:
                logger.info("the API server does not stream lists; listing by pages", error=describe(error))
                self.stream_lists = stream = False
            except ResourceVersionExpiredError:
                logger.info("resource version expired; listing again")
                resource_version = None
            except WatchStalledError:
                logger.warning("watch stalled; reconnecting", inactivity_timeout=self.inactivity_timeout)
            except asyncio.CancelledError:
                raise
            except (ApiException, aiohttp.ClientError, TimeoutError, ValueError) as error:
                delay = backoff.next()
                logger.warning(
                    "list/watch failed; retrying",
                    error=describe(error),
                    retry_in=round(delay, 2),
                    listing=resource_version is None,
                )
                await asyncio.sleep(delay)

    async def _list(self, namespace: str | None) -> str:
        """List page by page, replace this scope's objects in the cache, and return the resourceVersion.

        Each page is filtered (:meth:`_keep`) before the one after it is parsed, so that objects the cache
        does not keep are never all in memory at once; the next page is asked for as soon as a page's
        continue token is known, so the API server prepares it while this one is filtered (at 100 000
        objects, a page of 500 takes it about as long as the filtering does here).
        """
        listed: dict[ObjectKey, dict[str, Any]] = {}
        continue_token: str | None = None
        following: asyncio.Task[dict[str, Any]] | None = None
        try:
            while True:
                try:
                    page = await (following or self._page(namespace, continue_token))
                except Gone:
                    if not continue_token:
                        raise
                    listed, continue_token = {}, None  # the continue token expired: start over
                    following = None
                    continue
                continue_token = page["metadata"].get("continue") or None
                following = (
                    asyncio.ensure_future(self._page(namespace, continue_token)) if continue_token else None
                )
                if following is not None:
                    await asyncio.sleep(0)  # the next page's request goes out before this page is filtered
                for item in page.get("items") or []:
                    # List items omit kind and apiVersion; handlers expect whole objects.
                    item.setdefault("kind", self.resource.kind)
                    item.setdefault("apiVersion", self.resource.api_version)
                    if self._keep(item):
                        obj = self._transform(item)
                        listed[ObjectKey.of(obj)] = obj
                    else:
                        self._dropped(item)
                del page["items"]
                if following is None:
                    resource_version: str = page["metadata"]["resourceVersion"]
                    self._replace(namespace, listed, resource_version)
                    return resource_version
        finally:
            if following is not None:
                _abandon(following)

    async def _page(self, namespace: str | None, continue_token: str | None) -> dict[str, Any]:
        """One page of the list, from ``continue_token`` (None: the first)."""
        return await self.kube.list(
            self.resource,
            namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=LIST_PAGE_SIZE,
            continue_token=continue_token,
        )

    def _keep(self, obj: dict[str, Any]) -> bool:
        """Whether the cache keeps ``obj`` (a listed object, or one of a watch event): all, here."""
        return True

    def _dropped(self, obj: dict[str, Any]) -> None:
        """``obj`` was listed and not kept."""

    def _vanished(self, key: ObjectKey, resource_version: str) -> bool:
        """Whether a cached object a list at ``resource_version`` lacks is gone: yes, here."""
        return True

    def _replace(
        self, namespace: str | None, listed: dict[ObjectKey, dict[str, Any]], resource_version: str
    ) -> None:
        in_scope = [
            key for key in self.store.object_keys() if namespace is None or key.namespace == namespace
        ]
        for key in in_scope:
            if key not in listed and self._vanished(key, resource_version):
                gone = self.store.remove(key)
                if gone is not None:
                    self._dispatch_delete(gone)
        for obj in listed.values():
            self._put(obj)

    def _put(self, obj: dict[str, Any]) -> None:
        """Cache ``obj``; tell the handlers (nothing when its resourceVersion is the cached one's)."""
        old = self.store.put(obj)
        if old is None:
            self._dispatch_add(obj)
        elif _resource_version(old) != _resource_version(obj):
            self._dispatch_update(old, obj)

    async def _watch(self, namespace: str | None, resource_version: str) -> str:
        """Apply watch events until the server ends the watch; return the last resourceVersion seen."""
        async with await self._open(namespace, resource_version) as response:
            async for event in self._events(response):
                resource_version = self._apply(event, resource_version)
        return resource_version

    async def _stream(self, namespace: str | None) -> str | None:
        """List by a watch that sends the current objects first, and replace this scope's objects (as
        :meth:`_list` does) once the bookmark that ends them has come; return its resourceVersion, from
        which :meth:`_watch` goes on (None: the watch ended before the bookmark).

        Each object is filtered (:meth:`_keep`) as its event is parsed, so objects the cache does not keep
        are never all in memory at once.
        """
        listed: dict[ObjectKey, dict[str, Any]] = {}
        async with await self._open(namespace, None) as response:
            async for event in self._events(response):
                resource_version = self._initial(event, listed)
                if resource_version is not None:
                    self._replace(namespace, listed, resource_version)
                    return resource_version
        return None

    def _initial(self, event: dict[str, Any], listed: dict[ObjectKey, dict[str, Any]]) -> str | None:
        """Take one event of a streamed list into ``listed``; the list's resourceVersion once it is whole."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "BOOKMARK":
            annotations = obj.get("metadata", {}).get("annotations") or {}
            return _resource_version(obj) if annotations.get(INITIAL_EVENTS_END) == "true" else None
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            self._apply(event, "")  # an ERROR: raised (410 Gone: list again)
            return None
        if kind == "DELETED":
            listed.pop(ObjectKey.of(obj), None)
        elif self._keep(obj):
            obj = self._transform(obj)
            listed[ObjectKey.of(obj)] = obj
        else:
            self._dropped(obj)
        return None

    async def _open(self, namespace: str | None, resource_version: str | None) -> aiohttp.ClientResponse:
        """A watch from ``resource_version``; None: a streamed list (the current objects first)."""
        try:
            return await self.kube.watch(
                self.resource,
                namespace,
                resource_version=resource_version,
                timeout_seconds=random.randint(*self.watch_timeout_range),  # noqa: S311 - spreading
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                initial_events=resource_version is None,
            )
        except Gone as error:  # the request itself answered 410: the same resourceVersion would again
            raise ResourceVersionExpiredError from error
        except Invalid as error:
            if resource_version is None:
                raise StreamRefusedError(describe(error)) from error
            raise

    async def _events(self, response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
        buffer = bytearray()
        while True:
            try:
                async with asyncio.timeout(self.inactivity_timeout):
                    chunk = await response.content.readany()
            except TimeoutError:
                raise WatchStalledError from None
            if not chunk:
                return
            buffer += chunk
            *lines, rest = bytes(buffer).split(b"\n")
            buffer = bytearray(rest)
            for line in lines:
                if line.strip():
                    yield decode(line)

    def _apply(self, event: dict[str, Any], resource_version: str) -> str:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise ResourceVersionExpiredError
            raise api_error(obj.get("code"), obj.get("reason"), json.dumps(obj).encode())
        new_version = _resource_version(obj) or resource_version
        if kind == "BOOKMARK" or not self._admit(str(kind), obj):
            return new_version
        obj = self._cached_form(obj)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.put(obj)
            if old is None:
                self._dispatch_add(obj)
            else:
                self._dispatch_update(old, obj)
        elif kind == "DELETED":
            self.store.remove(ObjectKey.of(obj))
            self._dispatch_delete(obj)
        return new_version

    def _cached_form(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The transform of a watched object; with the default one, over the cached version of it, so that
        what did not change is not compacted again."""
        if self._transform is strip_unread_compact:
            previous = self.store.get(ObjectKey.of(obj))
            if previous is not None:
                return strip_unread_compact_over(obj, previous)
        return self._transform(obj)

    def _admit(self, kind: str, obj: dict[str, Any]) -> bool:
        """Whether a watch event (ADDED, MODIFIED, DELETED) of ``obj`` is applied: every one, here."""
        return True

    def _mark_synced(self, namespace: str | None) -> None:
        self._synced_scopes.add(namespace)
        if len(self._synced_scopes) == len(self._scopes) and not self._synced.is_set():
            log.debug("cache synced", resource=self.name, objects=len(self.store))
            self._synced.set()

    def _dispatch_add(self, obj: dict[str, Any]) -> None:
        for handler in self._handlers:
            _safely(handler.on_add, obj)

    def _dispatch_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for handler in self._handlers:
            _safely(handler.on_update, old, new)

    def _dispatch_delete(self, obj: dict[str, Any]) -> None:
        for handler in self._handlers:
            _safely(handler.on_delete, obj)


def _abandon(task: asyncio.Task[Any]) -> None:
    """Cancel ``task``; when it has ended already, read its outcome (its error is the list's to lose, not
    one to log as never retrieved)."""
    if not task.cancel() and not task.cancelled():
        task.exception()


def _safely(callback: Callable[..., None], *objects: dict[str, Any]) -> None:
    """A failing handler is logged and must not stop the informer."""
    try:
        callback(*objects)
    except Exception:
        log.exception("event handler failed", handler=getattr(callback, "__qualname__", repr(callback)))


def _resource_version(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion") or "")
