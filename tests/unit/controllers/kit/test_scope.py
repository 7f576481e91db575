"""An instance's scope: the label selector it watches with and the finalizer it marks resources with."""

from __future__ import annotations

import re
from typing import Any

from dbuser_operator.api.v1alpha1.meta import LEGACY_FINALIZER, MAX_TARGET_LENGTH
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.settings import LABEL_KEY_PATTERN

SCOPE = Scope("dbuser-operator.dev/target", "main")


def resource(labels: dict[str, str] | None = None, finalizers: list[str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "app", "labels": labels, "finalizers": finalizers}}


def test_selector_and_finalizer_name_the_target() -> None:
    assert SCOPE.selector == "dbuser-operator.dev/target=main"
    assert SCOPE.finalizer == "mysql.dbuser-operator.dev/account-main"
    assert Scope("dbuser-operator.dev/target", "other").finalizer != SCOPE.finalizer


def test_the_longest_target_still_makes_a_valid_finalizer_name() -> None:
    finalizer = Scope("dbuser-operator.dev/target", "t" * MAX_TARGET_LENGTH).finalizer
    assert len(finalizer.split("/")[1]) == 63  # a qualified name's limit; the API server refuses longer ones
    assert re.fullmatch(LABEL_KEY_PATTERN, finalizer)  # finalizers and label keys are both qualified names
    assert not re.fullmatch(LABEL_KEY_PATTERN, f"{finalizer}t")


def test_serves_only_its_own_label_value() -> None:
    assert SCOPE.serves(resource({"dbuser-operator.dev/target": "main"}))
    assert not SCOPE.serves(resource({"dbuser-operator.dev/target": "other"}))
    assert not SCOPE.serves(resource({"app": "main"}))
    assert not SCOPE.serves(resource())


def test_holds_its_own_or_the_legacy_finalizer_not_another_targets() -> None:
    assert SCOPE.holds(resource(finalizers=["example.com/keep", SCOPE.finalizer]))
    assert SCOPE.holds(resource(finalizers=[LEGACY_FINALIZER]))
    assert not SCOPE.holds(resource(finalizers=["mysql.dbuser-operator.dev/account-other"]))
    assert not SCOPE.holds(resource())
