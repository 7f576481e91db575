"""Predicates decide which informer events enqueue a reconcile."""

from __future__ import annotations

from typing import Any

from dbuser_operator.runtime.controller import owner_keys
from dbuser_operator.runtime.predicates import (
    ANNOTATIONS_CHANGED,
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
