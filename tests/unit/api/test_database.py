"""The Database API: models, the generated CRD, and the SQL the MySQL layer builds from its fields."""

from __future__ import annotations

import re
from typing import Any

import pydantic
import pytest
import yaml

from dbuser_operator.api import crd
from dbuser_operator.api.v1alpha1 import database
from dbuser_operator.api.v1alpha1.database import Database
from dbuser_operator.api.v1alpha1.server_policy import ServerPolicy
from dbuser_operator.controllers.policy.rules import database_violations
from dbuser_operator.mysql import databases
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import InvalidNameError
from tests.conftest import REPO

HOSTILE_NAMES = ["a`b", "a'b", "a b", "ｄｂ", "x" * 65, "*", "a.b", "a/b", "a\\b", "", "a;b", "a\nb"]  # noqa: RUF001
HOSTILE_OPTIONS = [
    "utf8mb4; DROP DATABASE x",
    "utf8mb4`",
    "latin1 COLLATE x",
    "ｌａｔｉｎ1",  # noqa: RUF001
    "a-b",
    "x" * 65,
    "",
]


def database_crd() -> dict[str, Any]:
    [resource] = [r for r in crd.RESOURCES if r.kind == database.KIND]
    document: dict[str, Any] = yaml.safe_load((REPO / "crds" / resource.file_name).read_text())
    return document


def test_the_crd_names_columns_defaults_and_rules() -> None:
    document = database_crd()
    assert document["metadata"]["name"] == database.CRD_NAME == "databases.mysql.dbuser-operator.dev"
    assert document["spec"]["scope"] == "Namespaced"
    assert document["spec"]["names"]["shortNames"] == ["dbdb"]
    [version] = document["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    schema = version["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    assert spec["properties"]["deletionPolicy"]["default"] == "Retain"
    assert spec["properties"]["managementPolicy"]["default"] == "Manage"
    name = spec["properties"]["name"]
    assert (name["maxLength"], name["pattern"]) == (64, database.DATABASE_NAME_PATTERN)
    assert spec["properties"]["characterSet"]["pattern"] == database.CHARACTER_SET_PATTERN
    assert spec["properties"]["collation"]["pattern"] == database.COLLATION_PATTERN
    messages = {rule["message"] for rule in spec["x-kubernetes-validations"]}
    assert messages == {"spec.name is immutable", "spec.serverRef is immutable"}
    [root_rule] = schema["x-kubernetes-validations"]
    assert root_rule["message"] == database.METADATA_NAME_MESSAGE


def test_no_other_crd_has_the_short_name() -> None:
    names = [short for resource in crd.RESOURCES for short in resource.short_names]
    assert names.count("dbdb") == 1


def test_defaults_retain_and_the_object_name() -> None:
    db = Database.model_validate({"metadata": {"name": "app-db"}, "spec": {}})
    assert db.mysql_name() == "app-db"
    assert db.spec.deletion_policy == "Retain"
    assert db.spec.management_policy == "Manage"
    assert db.spec.character_set is None
    assert db.spec.collation is None
    named = Database.model_validate({"metadata": {"name": "x.y"}, "spec": {"name": "app_db"}})
    assert named.mysql_name() == "app_db"


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_are_refused_by_model_and_sql_layer(name: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        Database.model_validate({"metadata": {"name": "ok"}, "spec": {"name": name}})
    with pytest.raises((InvalidNameError, ValueError)):
        ownership.valid_database(name)


def test_an_object_name_that_is_no_database_name_needs_spec_name() -> None:
    with pytest.raises(pydantic.ValidationError, match=r"set spec\.name"):
        Database.model_validate({"metadata": {"name": "a.b"}, "spec": {}})


@pytest.mark.parametrize("value", HOSTILE_OPTIONS)
@pytest.mark.parametrize("field", ["characterSet", "collation"])
def test_hostile_character_sets_and_collations_are_refused(field: str, value: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        Database.model_validate({"metadata": {"name": "ok"}, "spec": {field: value}})
    with pytest.raises(InvalidNameError):
        databases.options(value if field == "characterSet" else None, value if field == "collation" else None)


def test_options_are_quoted_identifiers() -> None:
    assert databases.options("utf8mb4", "utf8mb4_bin") == " CHARACTER SET `utf8mb4` COLLATE `utf8mb4_bin`"
    assert databases.options(None, None) == ""


def test_differs_reads_aliases_and_case() -> None:
    found = databases.Schema("utf8mb3", "utf8mb3_general_ci")
    assert not databases.differs(found, "utf8", None)
    assert not databases.differs(found, "UTF8MB3", "utf8mb3_general_ci")
    assert databases.differs(found, "utf8mb4", None)
    assert databases.differs(found, None, "utf8mb3_bin")
    assert not databases.differs(found, None, None)


def test_the_policy_decides_the_names_a_namespace_may_have() -> None:
    selector: dict[str, Any] = {"namespaceSelector": {}}
    bounded = ServerPolicy.model_validate({"namespaces": [{**selector, "databases": ["{namespace}_*"]}]})
    assert database_violations(bounded, "team-a", {}, "team-a_app") == []
    [violation] = database_violations(bounded, "team-a", {}, "team-b_app")
    assert re.search(r"database team-b_app is outside team-a_\*", violation.problem)
    anything = ServerPolicy.model_validate({"namespaces": [selector]})
    assert database_violations(anything, "team-a", {}, "whatever") == []
    nobody = ServerPolicy.model_validate({"namespaces": [{"namespaceSelector": {"matchLabels": {"a": "b"}}}]})
    assert "may not use it" in database_violations(nobody, "team-a", {}, "x")[0].problem
