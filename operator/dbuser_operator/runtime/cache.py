"""The informer's local copy of objects, with secondary indexes (client-go's ``cache.Indexer``)."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import orjson

from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.shared_containers import SHARED_CONTAINERS, compact_shared
from dbuser_operator.runtime.shared_keys import SHAPES_SEEN

IndexFunc = Callable[[dict[str, Any]], Iterable[str]]

_CHANGES = itertools.count(1)  # every store's changes numbered in one sequence: no two states share one


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields``: often half an object's size, and never read by a controller."""
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def strip_unread(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what no controller reads: ``managedFields`` and kubectl's last-applied annotation (a copy of
    the whole object as it was applied: for a Secret, its data again)."""
    metadata = obj.get("metadata", {})
    metadata.pop("managedFields", None)
    annotations = metadata.get("annotations")
    if annotations and annotations.pop(LAST_APPLIED, None) is not None and not annotations:
        del metadata["annotations"]
    return obj


def compact(value: Any) -> Any:
    """The same JSON value, its dictionary keys and short strings interned: equal strings of different
    objects become one (a parsed object has its own copy of every key: "metadata", "resourceVersion", …);
    and its small containers of short values made one with an equal container of another object
    (:mod:`~dbuser_operator.runtime.shared_containers`: the same labels, finalizers, grants, server
    reference, … of thousands of objects). Cached objects are read-only (copy before changing): a shared
    container changed in place would change every object that holds it."""
    return compact_shared(value, SHARED_CONTAINERS)[0]


def thaw(value: Any) -> Any:
    """A private copy of a cached JSON value that its holder may change: every dict and list new, the
    scalars (immutable) shared. A third of ``copy.deepcopy``'s time: no memo, no dispatch by type."""
    if type(value) is dict:
        return {key: thaw(item) for key, item in value.items()}
    if type(value) is list:
        return [thaw(item) for item in value]
    return value


def strip_unread_compact(obj: dict[str, Any]) -> dict[str, Any]:
    """:func:`strip_unread`, then :func:`compact`: the informers' default transform."""
    result: dict[str, Any] = compact(strip_unread(obj))
    return result


def strip_unread_compact_over(obj: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    """:func:`strip_unread_compact` of a new version of ``previous`` (the cached one, compacted): a top-level
    value other than ``metadata`` that is the same JSON as ``previous``'s is ``previous``'s, not compacted
    again (a status write leaves the spec as it was; a finalizer's patch, the spec and the status). The
    same JSON: the same bytes as orjson writes them (``1`` is neither ``true`` nor ``1.0``; key order counts).
    """
    strip_unread(obj)
    items: dict[str, Any] = {}
    for name, value in obj.items():
        key = sys.intern(name)
        before = previous.get(key, _ABSENT) if key != "metadata" else _ABSENT
        items[key] = before if before is not _ABSENT and _same_json(before, value) else compact(value)
    return SHAPES_SEEN.share_keys(items)


_ABSENT: Final = object()


def _same_json(one: Any, other: Any) -> bool:
    try:
        return orjson.dumps(one) == orjson.dumps(other)
    except orjson.JSONEncodeError:  # not JSON orjson writes (an integer beyond 64 bits): compacted anew
        return False


class _Index:
    """Index values to keys: a value that lists one key holds the key itself (a set costs ~200 bytes)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, ObjectKey | set[ObjectKey]] = {}

    def __contains__(self, value: object) -> bool:
        return value in self._entries

    def keys(self, value: str) -> Iterable[ObjectKey]:
        entry = self._entries.get(value)
        if entry is None:
            return ()
        return (entry,) if isinstance(entry, ObjectKey) else list(entry)

    def add(self, value: str, key: ObjectKey) -> None:
        entry = self._entries.get(value)
        if entry is None:
            self._entries[value] = key
        elif isinstance(entry, ObjectKey):
            if entry != key:
                self._entries[value] = {entry, key}
        else:
            entry.add(key)

    def discard(self, value: str, key: ObjectKey) -> None:
        entry = self._entries.get(value)
        if entry is None:
            return
        if isinstance(entry, ObjectKey):
            if entry == key:
                del self._entries[value]
            return
        entry.discard(key)
        if len(entry) == 1:
            self._entries[value] = next(iter(entry))
        elif not entry:
            del self._entries[value]


class Store:
    """Objects by :class:`ObjectKey`, plus named indexes from a computed value to keys. ``version`` changes
    with every put and removal (numbered across all stores: a new store never repeats another's), so what
    is computed from a store's objects can be kept until it changes."""

    def __init__(self) -> None:
        self.version = next(_CHANGES)
        self._objects: dict[ObjectKey, dict[str, Any]] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, _Index] = {}

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Maintain index ``name``: each object is listed under every value ``func`` returns for it."""
        self._index_funcs[name] = func
        index = _Index()
        for key, obj in self._objects.items():
            for value in func(obj):
                index.add(value, key)
        self._indexes[name] = index

    def index_func(self, name: str) -> IndexFunc:
        """The function of index ``name``."""
        return self._index_funcs[name]

    def indexed(self, name: str, value: str) -> bool:
        """Whether index ``name`` lists any object under ``value``."""
        return value in self._indexes[name]

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The cached object, or None. Callers must not modify it: copy before changing."""
        return self._objects.get(key)

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        """The objects that index ``name`` lists under ``value``."""
        return [self._objects[key] for key in self._indexes[name].keys(value)]

    def object_keys(self) -> list[ObjectKey]:
        """Every key, in no particular order."""
        return list(self._objects)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._objects.values()))

    def __len__(self) -> int:
        return len(self._objects)

    def put(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Insert or replace an object; returns the object it replaced."""
        key = ObjectKey.of(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        self.version = next(_CHANGES)
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            for value in func(obj):
                index.add(value, key)
        return old

    def remove(self, key: ObjectKey) -> dict[str, Any] | None:
        """Remove an object; returns it, or None when it was not there."""
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            self.version = next(_CHANGES)
        return old

    def _unindex(self, key: ObjectKey, obj: dict[str, Any]) -> None:
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            for value in func(obj):
                index.discard(value, key)
