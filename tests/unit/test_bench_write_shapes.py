"""bench.write_shapes' pure parts: the CRD copies with some CEL rules left out, the paired ratios, the
shapes' writes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml
from bench import write_shapes
from bench.write_shapes import CEL_LEFT_OUT, Shape, cel_copies, paired_ratios, resource_of


def rule_paths(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The schema paths that carry CEL rules."""
    found = [path] if schema.get("x-kubernetes-validations") else []
    for name, child in (schema.get("properties") or {}).items():
        found += rule_paths(child, (*path, name))
    if isinstance(schema.get("items"), dict):
        found += rule_paths(schema["items"], path)
    return found


def copy_of(shape: str, tmp_path: Path) -> dict[str, Any]:
    (path,) = cel_copies(tmp_path, ["floor", shape])
    copy: dict[str, Any] = yaml.safe_load(path.read_text())
    return copy


def test_every_rule_is_left_out_of_the_no_cel_copy_and_only_the_group_changes(tmp_path: Path) -> None:
    original = yaml.safe_load((write_shapes.REPO / "crds" / write_shapes.CRD_FILE).read_text())
    copy = copy_of("no-cel", tmp_path)
    assert rule_paths(original["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert rule_paths(copy["spec"]["versions"][0]["schema"]["openAPIV3Schema"]) == []
    assert copy["spec"]["group"] == resource_of("no-cel").group
    assert copy["metadata"]["name"] == f"databaseusers.{resource_of('no-cel').group}"
    assert copy["spec"]["names"] == original["spec"]["names"]


@pytest.mark.parametrize(
    ("shape", "gone"),
    [
        ("no-cel-root", lambda path: path == ()),
        ("no-cel-spec", lambda path: path == ("spec",)),
        ("no-cel-privileges", lambda path: path[:2] == ("spec", "privileges")),
    ],
)
def test_a_partial_copy_leaves_out_only_its_rules(tmp_path: Path, shape: str, gone: Any) -> None:
    original = yaml.safe_load((write_shapes.REPO / "crds" / write_shapes.CRD_FILE).read_text())
    before = rule_paths(original["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    after = rule_paths(copy_of(shape, tmp_path)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert any(gone(path) for path in before)
    assert after == [path for path in before if not gone(path)]


def test_the_partial_copies_together_leave_out_every_rule() -> None:
    original = yaml.safe_load((write_shapes.REPO / "crds" / write_shapes.CRD_FILE).read_text())
    paths = rule_paths(original["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    parts = [shape for shape in CEL_LEFT_OUT if shape != "no-cel"]
    for path in paths:
        assert sum(CEL_LEFT_OUT[shape](path) for shape in parts) == 1, path


def test_ratios_are_taken_over_pairs_of_rounds() -> None:
    floor = [{"kube-apiserver": 10.0}, {"kube-apiserver": 30.0}, {"kube-apiserver": 20.0}]
    status = [{"kube-apiserver": 12.0}, {"kube-apiserver": 32.0}, {"kube-apiserver": 99.0}]
    assert paired_ratios({"floor": floor, "status": status}, "status") == [44.0 / 40.0]


def test_shapes_must_name_the_floor() -> None:
    assert write_shapes._shapes("floor, guard") == ("floor", "guard")
    with pytest.raises(argparse.ArgumentTypeError):
        write_shapes._shapes("guard,operator")
    with pytest.raises(argparse.ArgumentTypeError):
        write_shapes._shapes("floor,nonsense")


OBJECT: dict[str, Any] = {
    "metadata": {"name": "u1", "resourceVersion": "7", "generation": 1},
    "spec": {"user": "u1", "password": {"name": "s1", "key": "password"}},
}


class Recording:
    """A KubeClient that records its patches."""

    def __init__(self) -> None:
        self.patches: list[tuple[Any, ...]] = []

    async def patch(self, resource: Any, name: str, body: Any, kind: Any, **options: Any) -> dict[str, Any]:
        self.patches.append((resource, name, body, kind, options))
        return {**OBJECT, "metadata": {**OBJECT["metadata"], "resourceVersion": "8"}}


@pytest.mark.parametrize(
    ("shape", "guarded", "operator_status", "manager"),
    [
        ("floor", False, False, None),
        ("guard", True, False, None),
        ("status", False, True, None),
        ("manager", False, False, "dbuser-operator"),
        ("operator", True, True, "dbuser-operator"),
    ],
)
async def test_each_shape_differs_from_the_floor_in_its_own_way(
    shape: str, guarded: bool, operator_status: bool, manager: str | None
) -> None:
    kube = Recording()
    await Shape(kube, "ns", shape).new_user(dict(OBJECT))  # type: ignore[arg-type]
    (_, _, finalizer, _, finalizer_options), (_, _, status, _, status_options) = kube.patches
    assert (finalizer[0]["op"] == "test") is guarded
    assert ("metadata" in status) is guarded
    if guarded:
        assert finalizer[0]["value"] == "7"
        assert status["metadata"] == {"resourceVersion": "8"}  # the finalizer's answer's
    assert ("appliedSecret" in status["status"]) is operator_status
    assert finalizer_options["field_manager"] == status_options["field_manager"] == manager
    assert status_options["subresource"] == "status"
