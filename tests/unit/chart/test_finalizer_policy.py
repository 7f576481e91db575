"""The chart's finalizer policy (``templates/finalizer-policy.yaml``): the objects of
:mod:`dbuser_operator.api.finalizer_policy` for the release's target, label and namespaces, rendered only
where the cluster serves the API, and never with ``finalizerPolicy: false``. The API server's side (the CEL
runs, the finalizer lands, deletion is not held) is tested in tests/integration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.api.finalizer_policy import BINDING_KIND, POLICY_KIND, finalizer_policy
from dbuser_operator.envtest import Binaries
from tests.conftest import REPO
from tests.unit.chart.chart import COMBINATIONS, kustomize, of_kind, render

SERVED = ("admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",)


def without_labels(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {key: value for key, value in obj["metadata"].items() if key != "labels"}}


@pytest.mark.parametrize("combination", ["defaults", "watch-namespaces", "everything-else"])
def test_the_chart_renders_the_policy_of_the_release(helm: Path, tmp_path: Path, combination: str) -> None:
    values = COMBINATIONS[combination]
    objects = render(helm, tmp_path, values, release="dbu", api_versions=SERVED)
    rendered = [without_labels(obj) for obj in of_kind(objects, POLICY_KIND) + of_kind(objects, BINDING_KIND)]
    expected = finalizer_policy(
        "dbu-dbuser-operator-finalizer",
        values.get("targetLabel", "dbuser-operator.dev/target"),
        values.get("target", "default"),
        values.get("watchNamespaces", ()),
    )
    assert rendered == expected


def test_the_policy_is_left_out_where_the_api_is_not_served_or_when_turned_off(
    helm: Path, tmp_path: Path
) -> None:
    kinds = {POLICY_KIND, BINDING_KIND}
    assert not [obj for obj in render(helm, tmp_path) if obj["kind"] in kinds]  # offline: not served
    turned_off = render(helm, tmp_path, {"finalizerPolicy": False}, api_versions=SERVED)
    assert not [obj for obj in turned_off if obj["kind"] in kinds]


def test_the_policy_only_adds_on_creation_and_fails_open() -> None:
    policy, binding = finalizer_policy("p", "example.com/target", "t", ["a"])
    spec = policy["spec"]
    assert [rule["operations"] for rule in spec["matchConstraints"]["resourceRules"]] == [["CREATE"]]
    assert spec["failurePolicy"] == "Ignore"
    assert spec["reinvocationPolicy"] == "Never"
    assert binding["spec"] == {"policyName": "p"}


def test_config_has_the_policy_of_its_default_target_to_apply_on_its_own(binaries: Binaries) -> None:
    """`kubectl kustomize config/finalizer-policy` (pinned kubectl): the policy of config/default's target
    (``default``, every namespace), named as config/default names the other cluster-scoped objects, with no
    namespace (kustomize does not know these kinds are cluster-scoped: nothing in that directory sets one)."""
    built = kustomize(binaries.path("kubectl"), REPO / "config" / "finalizer-policy")
    objects = [without_labels(doc) for doc in built]
    expected = finalizer_policy(
        "dbuser-operator-controller-manager-finalizer", "dbuser-operator.dev/target", "default"
    )
    assert objects == expected
