"""The referenced-objects informer: what it keeps, fetches, holds back, evicts and never lets go stale.

The API server is faked here (the logic under test is the cache's); tests/integration/runtime and the
operator's Secret tests run it against a real one.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.referenced import ReferencedInformer
from dbuser_operator.runtime.resources import SECRETS, ObjectKey, Resource
from tests.support.kube import RecordingHandler, eventually

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")
INDEX = "secret"


def secret(name: str, version: int, namespace: str = "ns", **data: str) -> dict[str, Any]:
    return {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {
            "namespace": namespace,
            "name": name,
            "resourceVersion": str(version),
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        },
        "data": data,
    }


def widget(name: str, *secrets: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": "1"},
        "spec": {"secrets": secrets},
    }


def referenced(obj: dict[str, Any]) -> list[str]:
    return [f"{obj['metadata']['namespace']}/{name}" for name in obj["spec"]["secrets"]]


class FakeKube:
    """Serves GET from ``objects`` and LIST pages of ``page`` items; counts GETs."""

    def __init__(self, *objects: dict[str, Any], page: int = 2) -> None:
        self.objects = {ObjectKey.of(obj): obj for obj in objects}
        self.page = page
        self.gets: list[ObjectKey] = []
        self.release = asyncio.Event()
        self.release.set()

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        key = ObjectKey(namespace or "", name)
        self.gets.append(key)
        await self.release.wait()
        if key not in self.objects:
            raise NotFound(404, "NotFound")
        return _copy(self.objects[key])

    async def list(self, resource: Resource, namespace: str | None = None, **query: Any) -> dict[str, Any]:
        start = int(query.get("continue_token") or 0)
        items = [_copy(obj) for obj in self.objects.values()][start : start + self.page]
        for item in items:
            del item["kind"], item["apiVersion"]
        more = start + self.page < len(self.objects)
        return {
            "metadata": {"resourceVersion": "100", "continue": str(start + self.page) if more else ""},
            "items": items,
        }

    async def watch(self, resource: Resource, namespace: str | None, **query: Any) -> Any:
        await asyncio.Event().wait()  # no events: the test drives them


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "annotations": dict(obj["metadata"]["annotations"])}}


async def setup(
    kube: FakeKube, *widgets: dict[str, Any], **options: Any
) -> tuple[Informer, ReferencedInformer, RecordingHandler]:
    """A widget informer (synced with ``widgets``) and the Secret cache that follows it, listed once."""
    source = Informer(kube, WIDGETS)  # type: ignore[arg-type]
    source.add_index(INDEX, referenced)
    cache = ReferencedInformer(kube, SECRETS, **options)  # type: ignore[arg-type]
    cache.keep_referenced(source, INDEX)
    recorder = RecordingHandler()
    cache.add_handler(recorder)
    for obj in widgets:
        add(source, obj)
    source._mark_synced(None)
    cache._listing = True
    await cache._list(None)
    cache._mark_synced(None)
    return source, cache, recorder


def add(source: Informer, obj: dict[str, Any]) -> None:
    source.store.put(obj)
    source._dispatch_add(obj)


def update(source: Informer, obj: dict[str, Any]) -> None:
    old = source.store.put(obj)
    assert old is not None
    source._dispatch_update(old, obj)


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": _copy(obj)}


async def test_a_list_keeps_only_the_referenced_objects_stripped() -> None:
    kube = FakeKube(*(secret(f"s{n}", n) for n in range(5)))
    _, cache, recorder = await setup(kube, widget("w", "s1", "s3"))
    assert sorted(key.name for key in cache.store.object_keys()) == ["s1", "s3"]
    assert recorder.events == [("add", "s1"), ("add", "s3")]
    kept = cache.get(ObjectKey("ns", "s1"))
    assert kept is not None
    assert "managedFields" not in kept["metadata"]
    assert "annotations" not in kept["metadata"]  # the last-applied copy was its only annotation
    assert kube.gets == []


async def test_unreferenced_watch_events_are_dropped_without_a_handler_call() -> None:
    kube = FakeKube()
    _, cache, recorder = await setup(kube, widget("w", "wanted"))
    cache._apply(event("ADDED", secret("other", 7)), "1")
    cache._apply(event("MODIFIED", secret("other", 8)), "1")
    cache._apply(event("DELETED", secret("other", 9)), "1")
    cache._apply(event("ADDED", secret("wanted", 10)), "1")
    assert cache.store.object_keys() == [ObjectKey("ns", "wanted")]
    assert recorder.events == [("add", "wanted")]


async def test_a_reference_to_a_recently_dropped_object_is_served_without_a_request() -> None:
    kube = FakeKube()
    source, cache, recorder = await setup(kube)
    cache._apply(event("ADDED", secret("s", 5, password="cHc=")), "1")
    assert len(cache.store) == 0
    add(source, widget("w", "s"))
    held = cache.settled(source, INDEX)
    assert held.create(widget("w", "s"))  # present at once: nothing to wait for
    assert cache.get(ObjectKey("ns", "s")) is not None
    assert recorder.events == [("add", "s")]
    assert kube.gets == []


async def test_the_recently_dropped_set_is_bounded() -> None:
    kube = FakeKube(secret("s0", 1))
    source, cache, _ = await setup(kube, pending_limit=3)
    for n in range(10):
        cache._apply(event("ADDED", secret(f"s{n}", 10 + n)), "1")
    assert len(cache._pending) == 3
    add(source, widget("w", "s0"))  # long dropped from the set: fetched
    await eventually(lambda: ObjectKey("ns", "s0") in cache.store)
    assert kube.gets == [ObjectKey("ns", "s0")]


async def test_a_new_reference_is_fetched_and_its_referrer_held_back_until_it_is_cached() -> None:
    kube = FakeKube()
    source, cache, recorder = await setup(kube)
    kube.objects[ObjectKey("ns", "s")] = secret("s", 40)
    kube.release.clear()  # the GET stays in flight
    user = widget("w", "s")
    add(source, user)
    held = cache.settled(source, INDEX)
    assert not held.create(user)  # its Secret is on its way: the event is held back
    assert not held.update(user, user)
    kube.release.set()
    await eventually(lambda: recorder.events == [("add", "s")])  # … and delivered through the cache
    assert held.create(user)
    assert cache.get(ObjectKey("ns", "s")) is not None
    assert kube.gets == [ObjectKey("ns", "s")]  # one GET, however often it was asked for


async def test_a_reference_to_a_missing_object_ends_in_a_delete_of_its_name() -> None:
    kube = FakeKube()
    source, cache, recorder = await setup(kube)
    add(source, widget("w", "missing"))
    await eventually(lambda: recorder.events == [("delete", "missing")])
    assert len(cache.store) == 0
    cache._apply(event("ADDED", secret("missing", 50)), "1")  # created later: the watch brings it
    assert recorder.events[-1] == ("add", "missing")


async def test_an_older_watch_copy_never_replaces_a_fetched_one() -> None:
    kube = FakeKube(secret("s", 60, password="bmV3"))
    source, cache, recorder = await setup(kube, pending_limit=0)
    add(source, widget("w", "s"))
    await eventually(lambda: ObjectKey("ns", "s") in cache.store)
    cache._apply(event("ADDED", secret("s", 55, password="b2xk")), "1")  # the watch, behind the GET
    cache._apply(event("DELETED", secret("s", 58)), "1")  # an earlier incarnation's deletion
    assert cache.get(ObjectKey("ns", "s"))["data"] == {"password": "bmV3"}  # type: ignore[index]
    cache._apply(event("MODIFIED", secret("s", 61, password="bmV3ZXI=")), "1")
    assert cache.get(ObjectKey("ns", "s"))["data"] == {"password": "bmV3ZXI="}  # type: ignore[index]
    assert recorder.events == [("add", "s"), ("update", "s")]


async def test_an_object_nobody_refers_to_any_more_is_evicted_quietly() -> None:
    kube = FakeKube(secret("a", 1), secret("b", 2))
    source, cache, recorder = await setup(kube, widget("w", "a", "b"), widget("v", "b"))
    update(source, widget("w", "b"))
    assert cache.store.object_keys() == [ObjectKey("ns", "b")]
    source.store.remove(ObjectKey("ns", "w"))
    source._dispatch_delete(widget("w", "b"))
    assert cache.store.object_keys() == [ObjectKey("ns", "b")]  # v still refers to it
    assert recorder.events == [("add", "a"), ("add", "b")]  # no delete for an eviction


async def test_a_relist_keeps_a_fetched_copy_newer_than_the_list() -> None:
    kube = FakeKube(secret("old", 1))
    source, cache, recorder = await setup(kube, widget("w", "old"))
    kube.objects[ObjectKey("ns", "new")] = secret("new", 150)  # newer than the list's version 100
    add(source, widget("v", "new"))
    await eventually(lambda: ObjectKey("ns", "new") in cache.store)
    del kube.objects[ObjectKey("ns", "new")]  # a list at version 100 does not have it yet
    del kube.objects[ObjectKey("ns", "old")]  # … and "old" is gone
    await cache._list(None)
    assert cache.store.object_keys() == [ObjectKey("ns", "new")]
    assert recorder.events == [("add", "old"), ("add", "new"), ("delete", "old")]


async def test_references_made_while_the_first_list_runs_are_fetched_after_it() -> None:
    kube = FakeKube(*(secret(f"s{n}", n) for n in range(6)), page=2)
    source = Informer(kube, WIDGETS)  # type: ignore[arg-type]
    source.add_index(INDEX, referenced)
    cache = ReferencedInformer(kube, SECRETS, pending_limit=0)  # type: ignore[arg-type]
    cache.keep_referenced(source, INDEX)
    source._mark_synced(None)
    original = kube.list

    async def list_then_refer(
        resource: Resource, namespace: str | None = None, **query: Any
    ) -> dict[str, Any]:
        page = await original(resource, namespace, **query)
        # The third page is asked for while the second is filtered: s0 and s1, on the first, were dropped.
        if query.get("continue_token") == "4":
            add(source, widget("late", "s0"))
        return page

    kube.list = list_then_refer  # type: ignore[method-assign]
    cache._listing = True
    await cache._list(None)
    assert len(cache.store) == 0
    cache._mark_synced(None)
    await eventually(lambda: ObjectKey("ns", "s0") in cache.store)
    assert kube.gets == [ObjectKey("ns", "s0")]


async def test_a_cache_scoped_to_namespaces_fetches_nothing_outside_them() -> None:
    kube = FakeKube(secret("s", 1, namespace="elsewhere"))
    source, cache, _ = await setup(kube, namespaces=["ns"])
    obj = {"metadata": {"namespace": "elsewhere", "name": "w"}, "spec": {"secrets": ["s"]}}
    add(source, obj)
    await asyncio.sleep(0.05)
    assert kube.gets == []
    assert len(cache.store) == 0


async def test_a_fetch_cut_short_by_a_restart_is_made_again_after_the_next_list() -> None:
    kube = FakeKube()
    source = Informer(kube, WIDGETS)  # type: ignore[arg-type]
    source.add_index(INDEX, referenced)
    cache = ReferencedInformer(kube, SECRETS, stream_lists=False)  # type: ignore[arg-type]  # the fake pages
    cache.keep_referenced(source, INDEX)
    recorder = RecordingHandler()
    cache.add_handler(recorder)
    source._mark_synced(None)
    running = asyncio.create_task(cache.run())
    await eventually(lambda: cache.has_synced)
    kube.release.clear()
    add(source, widget("w", "missing"))
    await eventually(lambda: cache.fetching == 1)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    kube.release.set()
    running = asyncio.create_task(cache.run())
    try:
        await eventually(lambda: recorder.events == [("delete", "missing")])  # the waiting referrer is told
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_objects_named_by_any_of_several_sources_are_kept() -> None:
    kube = FakeKube(secret("user-pw", 1), secret("admin", 2), secret("other", 3))
    users = Informer(kube, WIDGETS)  # type: ignore[arg-type]
    users.add_index(INDEX, referenced)
    servers = Informer(kube, Resource("example.com", "v1", "servers", "Server"))  # type: ignore[arg-type]
    servers.add_index("server-secret", referenced)
    cache = ReferencedInformer(kube, SECRETS, referenced_by=[(users, INDEX)])  # type: ignore[arg-type]
    cache.keep_referenced(servers, "server-secret")
    add(users, widget("u", "user-pw"))
    add(servers, widget("s", "admin"))
    for source in (users, servers):
        source._mark_synced(None)
    cache._listing = True
    await cache._list(None)
    cache._mark_synced(None)
    assert sorted(key.name for key in cache.store.object_keys()) == ["admin", "user-pw"]
    servers.store.remove(ObjectKey("ns", "s"))
    servers._dispatch_delete(widget("s", "admin"))
    assert sorted(key.name for key in cache.store.object_keys()) == ["user-pw"]


async def test_a_list_cut_short_leaves_no_page_asked_ahead_unread() -> None:
    """The next page is asked for before a page is filtered: when the filtering fails, that request is
    abandoned and its error read (asyncio would otherwise log it as never retrieved)."""
    kube = FakeKube(*(secret(f"s{n}", n) for n in range(4)), page=2)
    original = kube.list

    async def second_page_fails(resource: Resource, namespace: str | None = None, **query: Any) -> Any:
        if query.get("continue_token"):
            raise NotFound(404, "NotFound")
        return await original(resource, namespace, **query)

    class Refusing(Informer):
        def _keep(self, obj: dict[str, Any]) -> bool:
            raise ValueError("a filter that fails")

    unretrieved: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unretrieved.append(context))
    kube.list = second_page_fails  # type: ignore[method-assign]
    informer = Refusing(kube, SECRETS)  # type: ignore[arg-type]
    try:
        with pytest.raises(ValueError, match="a filter that fails"):
            await informer._list(None)
        await asyncio.sleep(0)
        gc.collect()  # a task's unread error is logged when the task is collected
    finally:
        loop.set_exception_handler(None)
    assert unretrieved == []
