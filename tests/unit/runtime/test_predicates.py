"""Predicates decide which informer events enqueue a reconcile."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from dbuser_operator.runtime.cache import Store
from dbuser_operator.runtime.controller import objects_naming, owner_keys
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    DELETED,
    GENERATION_CHANGED,
    all_of,
    any_of,
    in_namespaces,
    label_equals,
)
from dbuser_operator.runtime.resources import ObjectKey


def obj(namespace: str = "a", generation: int = 1, **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "namespace": namespace, "generation": generation, **metadata}}


def test_label_equals_needs_the_exact_value() -> None:
    target = label_equals("dbuser-operator.dev/target", "prod")
    assert target.create(obj(labels={"dbuser-operator.dev/target": "prod"}))
    assert not target.create(obj(labels={"dbuser-operator.dev/target": "staging"}))
    assert not target.create(obj())
    # An update is judged on the new object.
    assert not target.update(obj(labels={"dbuser-operator.dev/target": "prod"}), obj(labels={}))


def test_in_namespaces_and_everything_when_empty() -> None:
    assert in_namespaces(["a", "b"]).create(obj("b"))
    assert not in_namespaces(["a", "b"]).delete(obj("c"))
    assert in_namespaces([]).create(obj("anything"))


def test_generation_and_annotation_changes() -> None:
    assert GENERATION_CHANGED.update(obj(generation=1), obj(generation=2))
    assert not GENERATION_CHANGED.update(obj(generation=1), obj(generation=1, labels={"l": "v"}))
    assert GENERATION_CHANGED.create(obj())  # creates and deletes always pass
    assert ANNOTATIONS_CHANGED.update(obj(annotations={}), obj(annotations={"k": "v"}))
    either = any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED)
    assert either.update(obj(), obj(annotations={"k": "v"}))
    assert not either.update(obj(), obj(labels={"only": "labels"}))
    both = all_of(label_equals("t", "v"), GENERATION_CHANGED)
    assert not both.update(obj(labels={"t": "v"}), obj(labels={"t": "v"}))
    assert both.update(obj(labels={"t": "v"}), obj(generation=2, labels={"t": "v"}))


def test_owner_keys_follow_controller_references_of_the_owner_kind() -> None:
    refs = [
        {"apiVersion": "v1", "kind": "Widget", "name": "w1", "controller": True},
        {"apiVersion": "v1", "kind": "Widget", "name": "w2"},  # not the controller
        {"apiVersion": "v1", "kind": "Other", "name": "o", "controller": True},
    ]
    assert owner_keys("v1", "Widget")(obj(ownerReferences=refs)) == [ObjectKey("a", "w1")]


def test_deleted_passes_deletions_only() -> None:
    assert DELETED.delete(obj())
    assert not DELETED.create(obj())
    assert not DELETED.update(obj(), obj(generation=2))


def indexed(index: str, *objects: dict[str, Any]) -> Informer:
    """An informer's stand-in: a real store of ``objects``, indexed by the Secrets they name."""
    store = Store()
    store.add_index(index, lambda o: [f"{o['metadata']['namespace']}/{s}" for s in o.get("secrets", [])])
    for one in objects:
        store.put(one)
    return cast(Informer, SimpleNamespace(store=store))


def user(name: str, namespace: str, *secrets: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "secrets": list(secrets)}


def test_objects_naming_maps_an_object_to_those_whose_index_names_it() -> None:
    users = indexed("secret", user("u1", "a", "s"), user("u2", "a", "s", "t"), user("u3", "b", "s"))
    others = indexed("secret", user("v1", "a", "t"))
    secret = {"metadata": {"name": "s", "namespace": "a"}}
    assert sorted(objects_naming("secret", users)(secret)) == [ObjectKey("a", "u1"), ObjectKey("a", "u2")]
    to_t = objects_naming("secret", users, others)({"metadata": {"name": "t", "namespace": "a"}})
    assert sorted(to_t) == [ObjectKey("a", "u2"), ObjectKey("a", "v1")]
    by_value = objects_naming("secret", users, values=lambda o: [f"b/{o['metadata']['name']}"])
    assert by_value(secret) == [ObjectKey("b", "u3")]  # the index value computed from the object
    assert objects_naming("secret", users)({"metadata": {"name": "none", "namespace": "a"}}) == []
