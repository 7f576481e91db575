"""Predicates: which informer events should enqueue a reconcile (controller-runtime's ``pkg/predicate``)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

ObjectTest = Callable[[dict[str, Any]], bool]
ChangeTest = Callable[[dict[str, Any], dict[str, Any]], bool]


@dataclass(frozen=True)
class Predicate:
    """Filters for created, updated and deleted objects; every filter passes by default."""

    create: ObjectTest = lambda obj: True
    update: ChangeTest = lambda old, new: True
    delete: ObjectTest = lambda obj: True


def matching(test: ObjectTest) -> Predicate:
    """Pass events whose object (the new one, for updates) satisfies ``test``."""
    return Predicate(create=test, update=lambda old, new: test(new), delete=test)


def label_equals(key: str, value: str) -> Predicate:
    """Objects whose label ``key`` is exactly ``value``."""
    return matching(lambda obj: (obj["metadata"].get("labels") or {}).get(key) == value)


def in_namespaces(namespaces: Collection[str]) -> Predicate:
    """Objects in one of ``namespaces``; every namespace when empty."""
    allowed = frozenset(namespaces)
    return matching(lambda obj: not allowed or obj["metadata"].get("namespace") in allowed)


def _generation(obj: dict[str, Any]) -> Any:
    return obj["metadata"].get("generation")


def _annotations(obj: dict[str, Any]) -> Any:
    return obj["metadata"].get("annotations") or {}


def _labels(obj: dict[str, Any]) -> Any:
    return obj["metadata"].get("labels") or {}


def _deletion(obj: dict[str, Any]) -> Any:
    return obj["metadata"].get("deletionTimestamp")


GENERATION_CHANGED = Predicate(update=lambda old, new: _generation(old) != _generation(new))
ANNOTATIONS_CHANGED = Predicate(update=lambda old, new: _annotations(old) != _annotations(new))
LABELS_CHANGED = Predicate(update=lambda old, new: _labels(old) != _labels(new))
DELETION_STARTED = Predicate(update=lambda old, new: _deletion(old) != _deletion(new))
DELETED = Predicate(create=lambda obj: False, update=lambda old, new: False)
"""Deletions only: the object is gone from the cache."""


def any_of(*predicates: Predicate) -> Predicate:
    """Pass an event that any of ``predicates`` passes."""
    return Predicate(
        create=lambda obj: any(p.create(obj) for p in predicates),
        update=lambda old, new: any(p.update(old, new) for p in predicates),
        delete=lambda obj: any(p.delete(obj) for p in predicates),
    )


SPEC_OR_METADATA_CHANGED = any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED)
"""Created, deleted, or changed in spec, annotations, labels or deletion: a controller's own status writes
change none of these, so they bring no echo reconcile."""


def all_of(*predicates: Predicate) -> Predicate:
    """Pass an event that every one of ``predicates`` passes."""
    return Predicate(
        create=lambda obj: all(p.create(obj) for p in predicates),
        update=lambda old, new: all(p.update(old, new) for p in predicates),
        delete=lambda obj: all(p.delete(obj) for p in predicates),
    )
