"""The v1alpha1 models: parsing API objects, dumping status, the effective user name."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import (
    API_VERSION,
    KIND,
    AppliedSecret,
    Condition,
    DatabaseUser,
    DatabaseUserSpec,
    DatabaseUserStatus,
    ObjectMeta,
    SecretKeySelector,
)
from tests.conftest import REPO

FULL: dict[str, Any] = {
    "apiVersion": API_VERSION,
    "kind": KIND,
    "metadata": {
        "name": "app",
        "namespace": "team-a",
        "uid": "4f1c8a0e-0000-4000-8000-000000000001",
        "generation": 3,
        "resourceVersion": "1234",
        "labels": {"dbuser-operator.dev/target": "default"},
        "annotations": {"note": "x"},
        "finalizers": ["dbuser-operator.dev/cleanup"],
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "deletionTimestamp": "2025-01-02T00:00:00Z",
    },
    "spec": {"user": "app_rw", "host": "10.0.%", "password": {"name": "app-db", "key": "password"}},
    "status": {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "observedGeneration": 3,
                "lastTransitionTime": "2025-01-01T00:00:05Z",
                "reason": "AccountReady",
                "message": "",
            }
        ],
        "observedGeneration": 3,
        "user": "app_rw",
        "host": "10.0.%",
        "appliedSecret": {
            "name": "app-db",
            "uid": "4f1c8a0e-0000-4000-8000-000000000002",
            "resourceVersion": "77",
        },
    },
}


def sample() -> dict[str, Any]:
    """The DatabaseUser of config/samples/."""
    documents = [
        doc
        for path in sorted((REPO / "config" / "samples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
    ]
    [user] = [doc for doc in documents if doc and doc.get("kind") == KIND]
    result: dict[str, Any] = user
    return result


def test_a_full_object_round_trips() -> None:
    parsed = DatabaseUser.model_validate(FULL)
    assert parsed.metadata.resource_version == "1234"
    assert parsed.status is not None
    assert parsed.status.applied_secret == AppliedSecret(
        name="app-db", uid=FULL["status"]["appliedSecret"]["uid"], resource_version="77"
    )
    assert parsed.model_dump(by_alias=True, exclude_none=True, mode="json") == FULL


def test_the_sample_round_trips_and_gets_its_defaults() -> None:
    obj = sample()
    parsed = DatabaseUser.model_validate(obj)
    assert parsed.model_dump(by_alias=True, exclude_unset=True, mode="json") == obj
    assert parsed.spec.host == "%"
    assert parsed.spec.user is None
    assert parsed.effective_user() == obj["metadata"]["name"]


def test_unknown_fields_are_ignored() -> None:
    obj = copy.deepcopy(FULL)
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["spec"]["requireTLS"] = True  # a field of a newer schema
    obj["status"]["somethingNew"] = {"a": 1}
    assert DatabaseUser.model_validate(obj).model_dump(by_alias=True, exclude_none=True, mode="json") == FULL


def test_effective_user() -> None:
    password = SecretKeySelector(name="s", key="k")
    named = ObjectMeta(name="from-name")
    assert (
        DatabaseUser(metadata=named, spec=DatabaseUserSpec(password=password)).effective_user() == "from-name"
    )
    spec = DatabaseUserSpec(user="explicit", password=password)
    assert DatabaseUser(metadata=named, spec=spec).effective_user() == "explicit"
    with pytest.raises(ValueError, match=r"metadata\.name"):
        DatabaseUser(spec=DatabaseUserSpec(password=password)).effective_user()


def test_status_dumps_in_camel_case_without_none() -> None:
    status = DatabaseUserStatus(
        conditions=[
            Condition(
                type="Ready",
                status="False",
                last_transition_time="2025-01-01T00:00:00Z",
                reason="SecretNotFound",
                message="Secret app-db not found",
            )
        ],
        observed_generation=2,
        user="app",
        applied_secret=AppliedSecret(name="app-db", uid="u", resource_version="5"),
    )
    assert status.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
                "reason": "SecretNotFound",
                "message": "Secret app-db not found",
            }
        ],
        "observedGeneration": 2,
        "user": "app",
        "appliedSecret": {"name": "app-db", "uid": "u", "resourceVersion": "5"},
    }
    assert DatabaseUserStatus().model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "conditions": []
    }


def test_a_new_object_carries_api_version_and_kind() -> None:
    obj = DatabaseUser(
        metadata=ObjectMeta(name="a"), spec=DatabaseUserSpec(password=SecretKeySelector(name="s", key="k"))
    )
    assert obj.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": "a"},
        "spec": {"host": "%", "password": {"name": "s", "key": "k"}},
    }


@pytest.mark.parametrize(
    "spec",
    [
        {"user": "x" * 33},
        {"user": ""},
        {"user": "a'b"},
        {"user": "a;b"},
        {"user": "a b"},
        {"user": "-lead"},
        {"user": "\u0430dmin"},  # Cyrillic a
        {"user": "admin\n"},
        {"host": ""},
        {"host": "a'b"},
        {"host": "h" * 256},
        {"password": {"name": "s"}},
        {"password": {"name": "Bad_Name", "key": "k"}},
        {"password": {"name": "s", "key": "a/b"}},
    ],
)
def test_the_models_validate_like_the_crd(spec: dict[str, Any]) -> None:
    body = {"password": {"name": "s", "key": "k"}} | spec
    with pytest.raises(ValidationError):
        DatabaseUserSpec.model_validate(body)


@pytest.mark.parametrize("user", ["a", "_", "app_rw", "svc.reader-1", "x" * 32])
def test_valid_user_names(user: str) -> None:
    assert DatabaseUserSpec.model_validate({"user": user, "password": {"name": "s", "key": "k"}}).user == user
