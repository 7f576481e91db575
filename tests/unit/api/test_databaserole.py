"""The DatabaseRole API and a DatabaseUser's roles: models, and the CRD generated for a second kind."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
import yaml

from dbuser_operator.api import crd, v1alpha1
from dbuser_operator.api.v1alpha1 import DEFAULT_ROLES_MESSAGE, DatabaseUserSpec, databaserole
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRole
from tests.conftest import REPO


def role_crd() -> dict[str, Any]:
    [resource] = [r for r in crd.RESOURCES if r.kind == databaserole.KIND]
    document: dict[str, Any] = yaml.safe_load((REPO / "crds" / resource.file_name).read_text())
    return document


def test_the_role_crd_names_columns_and_rules() -> None:
    document = role_crd()
    assert document["metadata"]["name"] == databaserole.CRD_NAME == "databaseroles.mysql.dbuser-operator.dev"
    assert document["spec"]["names"] == {
        "kind": "DatabaseRole",
        "listKind": "DatabaseRoleList",
        "plural": "databaseroles",
        "singular": "databaserole",
        "shortNames": ["dbrole"],
        "categories": ["dbuser-operator", "dbuser-namespaced"],
    }
    [version] = document["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    assert [column["name"] for column in version["additionalPrinterColumns"]] == [
        "Role",
        "Ready",
        "Reason",
        "Server",
        "Server Kind",
        "Age",
    ]
    schema = version["schema"]["openAPIV3Schema"]
    assert schema["required"] == ["spec"]
    spec = schema["properties"]["spec"]
    role = spec["properties"]["role"]
    assert (role["maxLength"], role["pattern"]) == (32, v1alpha1.USER_PATTERN)
    assert spec["properties"]["deletionPolicy"]["default"] == "Delete"
    # The privileges are the DatabaseUser's Grant, rules included.
    user_grant = crd.structural_schema(v1alpha1.Grant)
    assert spec["properties"]["privileges"]["items"] == user_grant
    [root_rule] = schema["x-kubernetes-validations"]
    assert root_rule["message"] == "metadata.name is longer than 32 characters: set spec.role"


def test_a_role_defaults_to_its_object_name() -> None:
    role = DatabaseRole.model_validate({"metadata": {"name": "app-reader"}, "spec": {}})
    assert role.mysql_name() == "app-reader"
    assert role.spec.privileges == []
    assert role.spec.deletion_policy == "Delete"
    named = DatabaseRole.model_validate({"metadata": {"name": "x"}, "spec": {"role": "app_r"}})
    assert named.mysql_name() == "app_r"


@pytest.mark.parametrize("name", ["a'b", "a`b", "a%b", "", "-x", "x" * 33, "ｒ"])  # noqa: RUF001
def test_hostile_role_names_are_refused_by_the_model(name: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        DatabaseRole.model_validate({"metadata": {"name": "x"}, "spec": {"role": name}})


def spec(**fields: Any) -> DatabaseUserSpec:
    return DatabaseUserSpec.model_validate({"password": {"name": "s", "key": "k"}, **fields})


def test_user_roles_default_to_none_and_defaults_must_be_granted() -> None:
    assert (spec().roles, spec().default_roles) == ([], [])
    assert spec(roles=["a", "b"], defaultRoles=["b"]).default_roles == ["b"]
    with pytest.raises(pydantic.ValidationError, match=DEFAULT_ROLES_MESSAGE):
        spec(roles=["a"], defaultRoles=["b"])
    with pytest.raises(pydantic.ValidationError, match="duplicate roles: a"):
        spec(roles=["a", "a"])
    for hostile in ("a'b", "A", "a b", "x" * 254, "%"):
        with pytest.raises(pydantic.ValidationError):
            spec(roles=[hostile])
