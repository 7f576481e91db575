"""The CRD generator: the committed YAML is current, and the schema it produces is structural."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from dbuser_operator.api import crd, v1alpha1
from dbuser_operator.api.v1alpha1 import meta
from dbuser_operator.api.v1alpha1.client_certificate import (
    CERTIFICATE_SECRET_APART_MESSAGE,
    CERTIFICATE_SECRET_LENGTH_MESSAGE,
)
from tests.conftest import REPO

# Keywords the API server forbids in a structural schema, or that only pydantic's JSON schema has.
FORBIDDEN = {"$ref", "$defs", "anyOf", "allOf", "oneOf", "not", "title", "const", "uniqueItems"}


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node under ``schema``, with its path."""
    yield path or ".", schema
    for name, sub in schema.get("properties", {}).items():
        yield from nodes(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}{{}}")


def committed_crd() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((REPO / "crds" / crd.RESOURCES[0].file_name).read_text())
    return document


def test_the_committed_crds_are_what_the_models_generate() -> None:
    for name, text in crd.generate().items():
        path = REPO / "crds" / name
        committed = path.read_text() if path.is_file() else "(missing)"
        assert committed == text, (
            f"{path.relative_to(REPO)} is stale: run `{crd.COMMAND}` and commit the result"
        )


def test_the_generated_crd_starts_with_the_do_not_edit_header() -> None:
    for text in crd.generate().values():
        assert text.startswith(crd.HEADER)
        assert yaml.safe_load(text)["kind"] == "CustomResourceDefinition"


def test_the_schema_is_structural() -> None:
    schema = committed_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in nodes(schema):
        assert "type" in node, f"{path} has no type"
        assert not FORBIDDEN & node.keys(), f"{path} has {FORBIDDEN & node.keys()}"
        assert not ("properties" in node and "additionalProperties" in node), path
        for name in node.get("required", []):
            assert name in node["properties"], f"{path}: required {name} is not a property"
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["properties"]["kind"]["type"] == "string"


def test_names_scope_subresources_and_printer_columns() -> None:
    document = committed_crd()
    spec = document["spec"]
    assert document["metadata"]["name"] == "databaseusers.mysql.dbuser-operator.dev" == v1alpha1.CRD_NAME
    assert spec["group"] == v1alpha1.GROUP
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "DatabaseUser",
        "listKind": "DatabaseUserList",
        "plural": "databaseusers",
        "singular": "databaseuser",
        "shortNames": ["dbu"],
        "categories": ["dbuser", "dbuser-operator", "dbuser-namespaced"],
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {
        column["name"]: (column["type"], column["jsonPath"]) for column in version["additionalPrinterColumns"]
    }
    assert columns == {
        "User": ("string", ".status.user"),
        "Host": ("string", ".spec.host"),
        "Ready": ("string", '.status.conditions[?(@.type=="Ready")].status'),
        "Reason": ("string", '.status.conditions[?(@.type=="Ready")].reason'),
        "Service Account": ("string", ".spec.authentication.workload.serviceAccountName"),
        "Server": ("string", ".spec.serverRef.name"),
        "Server Kind": ("string", ".spec.serverRef.kind"),
        "Age": ("date", ".metadata.creationTimestamp"),
    }


def test_spec_validation_defaults_and_rules() -> None:
    schema = committed_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["required"] == ["spec"]
    root_rule, connection_rule, certificate_length, certificate_apart = schema["x-kubernetes-validations"]
    assert "size(self.metadata.name) <= 32" in root_rule["rule"]
    assert connection_rule["message"] == v1alpha1.CONNECTION_SECRET_NAME_MESSAGE
    assert certificate_length["message"] == CERTIFICATE_SECRET_LENGTH_MESSAGE
    assert certificate_apart["message"] == CERTIFICATE_SECRET_APART_MESSAGE
    spec = schema["properties"]["spec"]
    assert "required" not in spec  # password, generatedPassword or a plugin without one: CEL rules
    user, host = spec["properties"]["user"], spec["properties"]["host"]
    assert (user["type"], user["maxLength"], user["pattern"]) == ("string", 32, v1alpha1.USER_PATTERN)
    assert "default" not in user
    assert (host["default"], host["maxLength"], host["pattern"]) == ("%", 255, v1alpha1.HOST_PATTERN)
    assert spec["properties"]["password"]["required"] == ["key", "name"]
    messages = {rule["message"] for rule in spec["x-kubernetes-validations"]}
    assert messages == {
        "spec.user is immutable",
        "spec.host is immutable",
        v1alpha1.PASSWORD_REQUIRED_MESSAGE,
        v1alpha1.PASSWORD_SOURCE_MESSAGE,
        "a plugin that takes no password: leave spec.password and spec.generatedPassword out",
        "every default role must be listed in roles",
        v1alpha1.HOSTS_REPEAT_MESSAGE,
        v1alpha1.SERVER_REF_IMMUTABLE_MESSAGE,
        v1alpha1.WORKLOAD_NO_PASSWORD_MESSAGE,
        v1alpha1.WORKLOAD_TLS_MESSAGE,
        v1alpha1.WORKLOAD_IMMUTABLE_MESSAGE,
        v1alpha1.WORKLOAD_ROTATION_MESSAGE,
    }


def test_status_conditions_are_a_map_list_of_metav1_conditions() -> None:
    status = committed_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert "default" not in conditions
    item = conditions["items"]
    assert item["required"] == ["lastTransitionTime", "message", "reason", "status", "type"]
    assert item["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert item["properties"]["observedGeneration"] == {
        "description": item["properties"]["observedGeneration"]["description"],
        "format": "int64",
        "minimum": 0,
        "type": "integer",
    }
    assert item["properties"]["lastTransitionTime"]["format"] == "date-time"
    assert set(status["properties"]["appliedSecret"]["properties"]) == {"name", "uid", "resourceVersion"}


def test_field_docstrings_become_single_line_descriptions() -> None:
    spec = committed_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    password = spec["properties"]["password"]["description"]
    assert password.startswith("The Secret key that holds the account's password")
    assert "\n" not in password
    assert spec["properties"]["password"]["properties"]["name"]["description"] == "Name of the Secret."


def test_check_mode_reports_stale_files_and_writing_fixes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert crd.main(["--check", "--output", str(tmp_path)]) == 1
    assert "(missing)" in capsys.readouterr().out

    assert crd.main(["--output", str(tmp_path)]) == 0
    assert crd.main(["--check", "--output", str(tmp_path)]) == 0

    path = tmp_path / crd.RESOURCES[0].file_name
    path.write_text(path.read_text().replace("maxLength: 32\n", "maxLength: 64\n"))
    assert crd.main(["--check", "--output", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    changed = [line.replace(" ", "") for line in captured.out.splitlines() if line[:1] in "+-"]
    assert "-maxLength:64" in changed
    assert "+maxLength:32" in changed
    assert crd.COMMAND in captured.err


def test_the_source_tree_is_found_from_the_package() -> None:
    assert crd.source_tree() == REPO


# The converter on models of its own: it is generic, and refuses what it cannot express.


class Inner(BaseModel):
    """Inner doc."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    size: int = Field(gt=0)
    """How big."""


class Outer(BaseModel):
    """Outer doc."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    inner: Inner | None = None
    """Field doc wins over the class doc."""

    tags: dict[str, str] = Field(default_factory=dict)
    mode: str = Field(default="a", json_schema_extra={"x-kubernetes-validations": [{"rule": "self != 'b'"}]})


def test_optional_models_are_inlined_with_their_field_description() -> None:
    schema = crd.structural_schema(Outer)
    assert schema == {
        "description": "Outer doc.",
        "type": "object",
        "properties": {
            "inner": {
                "description": "Field doc wins over the class doc.",
                "type": "object",
                "properties": {
                    "size": {
                        "description": "How big.",
                        "type": "integer",
                        "minimum": 0,
                        "exclusiveMinimum": True,
                    }
                },
                "required": ["size"],
            },
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "mode": {"type": "string", "default": "a", "x-kubernetes-validations": [{"rule": "self != 'b'"}]},
        },
    }


class WithUnion(BaseModel):
    value: int | str


class WithAny(BaseModel):
    value: Any


class WithSet(BaseModel):
    value: set[str]


class Recursive(BaseModel):
    children: list[Recursive] = Field(default_factory=list)


@pytest.mark.parametrize(
    ("model", "complaint"),
    [
        (WithUnion, "anyOf of several types"),
        (WithAny, "needs a type"),
        (WithSet, "uniqueItems"),
        (Recursive, "recursive"),
    ],
)
def test_what_has_no_structural_equivalent_is_refused(model: type[BaseModel], complaint: str) -> None:
    with pytest.raises(crd.SchemaError, match=complaint):
        crd.structural_schema(model)


def spec_schema() -> dict[str, Any]:
    schema: dict[str, Any] = committed_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return dict(schema["properties"]["spec"])


def test_grants_limits_tls_and_deletion_policy_in_the_schema() -> None:
    properties = spec_schema()["properties"]
    grants = properties["privileges"]
    assert (grants["type"], grants["maxItems"]) == ("array", 64)
    assert "default" not in grants  # no empty "Privileges:" in kubectl describe
    assert "x-kubernetes-list-type" not in grants  # atomic: the CEL rule below forbids duplicates
    [unique] = grants["x-kubernetes-validations"]
    assert unique == {
        "rule": "self.all(a, has(a.columns) || self.exists_one(b, !has(b.columns)"
        " && (has(a.database) ? a.database : '@' + a.databaseRef.name)"
        " == (has(b.database) ? b.database : '@' + b.databaseRef.name)"
        " && a.table == b.table && has(a.routine) == has(b.routine)"
        " && (!has(a.routine) || a.routine == b.routine)))",
        "message": "one entry per database and table (and routine; column grants excepted)",
    }
    grant = grants["items"]
    assert grant["required"] == ["privileges"]  # database, or databaseRef (a CEL rule: exactly one)
    assert grant["properties"]["databaseRef"]["required"] == ["name"]
    names = grant["properties"]["privileges"]
    assert (names["minItems"], names["maxItems"], names["x-kubernetes-list-type"]) == (1, 32, "set")
    assert "enum" not in names["items"]  # the server judges the names; the schema their shape
    assert (names["items"]["pattern"], names["items"]["maxLength"]) == (v1alpha1.PRIVILEGE_PATTERN, 32)
    columns = grant["properties"]["columns"]
    assert (columns["minItems"], columns["maxItems"], columns["x-kubernetes-list-type"]) == (1, 64, "set")
    assert (columns["items"]["pattern"], columns["items"]["maxLength"]) == (v1alpha1.COLUMN_NAME_PATTERN, 64)
    routine = grant["properties"]["routine"]
    assert routine["required"] == ["name", "type"]
    assert routine["properties"]["type"]["enum"] == ["PROCEDURE", "FUNCTION"]
    for level in ("database", "table"):
        node = grant["properties"][level]
        assert (node["pattern"], node["maxLength"]) == (v1alpha1.OBJECT_NAME_PATTERN, 64)
    assert "default" not in grant["properties"]["database"]
    assert grant["properties"]["table"]["default"] == "*"
    assert grant["properties"]["grantOption"] == {
        "type": "boolean",
        "default": False,
        "description": grant["properties"]["grantOption"]["description"],
    }
    for limit, maximum in [
        ("maxUserConnections", 2147483647),
        ("maxQueriesPerHour", 4294967295),
        ("maxUpdatesPerHour", 4294967295),
        ("maxConnectionsPerHour", 4294967295),
    ]:
        node = properties[limit]
        assert (node["type"], node["format"], node["minimum"], node["maximum"]) == (
            "integer",
            "int64",
            0,
            maximum,
        ), limit
    assert properties["requireTLS"]["type"] == "boolean"
    policy = properties["deletionPolicy"]
    assert (policy["enum"], policy["default"]) == (["Delete", "Retain"], "Delete")
    assert "Retain leaves the account in MySQL" in policy["description"]
    assert "required" not in spec_schema()  # every new field is optional (password: see the CEL rule)


def test_the_grant_rules_name_their_field_and_build_the_models_messages() -> None:
    grant = spec_schema()["properties"]["privileges"]["items"]
    rules = grant["x-kubernetes-validations"]
    for rule in rules:
        assert rule["fieldPath"].removeprefix(".") in grant["properties"], rule
        assert rule["message"], rule
    by_message = {rule["message"]: rule for rule in rules}
    assert (
        by_message[v1alpha1.TABLE_NEEDS_DATABASE_MESSAGE]["rule"]
        == "!has(self.database) || self.database != '*' || self.table == '*'"
    )
    assert v1alpha1.ALL_ALONE_MESSAGE in by_message
    assert (
        by_message[v1alpha1.ESCAPED_DATABASE_MESSAGE]["rule"]
        == "!has(self.database) || self.table != '*' || has(self.routine)"
        " || size(self.database.replace('_', '__')) <= 64"
    )
    global_only, table_only, not_listed, columns, routine = (
        rule for rule in rules if "messageExpression" in rule
    )
    assert not_listed["messageExpression"].endswith(
        "' is not a privilege to list: write ALL for ALL PRIVILEGES, grantOption for GRANT OPTION; "
        "USAGE and PROXY are not granted here'"
    )
    assert (
        "' cannot be granted on columns: a column grant allows only SELECT, INSERT, UPDATE and REFERENCES'"
        in columns["messageExpression"]
    )
    assert (
        "' cannot be granted on a routine: a routine grant allows only ALL, EXECUTE and ALTER ROUTINE'"
        in routine["messageExpression"]
    )
    for privilege in v1alpha1.GLOBAL_ONLY_PRIVILEGES:
        assert f"'{privilege}'" in global_only["rule"]
        assert privilege in global_only["message"]
    assert global_only["messageExpression"].endswith(
        """[0] + ' can only be granted on *.* (database "*"), not on '"""
        " + (has(self.database) ? self.database : self.databaseRef.name) + '.' + self.table"
    )
    for privilege in v1alpha1.TABLE_PRIVILEGES:
        assert f"'{privilege}'" in table_only["rule"]
    assert (
        "' cannot be granted on a table ('"
        " + (has(self.database) ? self.database : self.databaseRef.name) + '.' + self.table + '): "
        in (table_only["messageExpression"])
    )


def test_cel_format_quotes_literals() -> None:
    assert meta.cel_format("{a} isn't {b}\\", a="x", b="self.y") == "x + ' isn\\'t ' + self.y + '\\\\'"
    assert meta.cel_format("plain") == "'plain'"


def test_fields_whose_default_is_empty_have_no_schema_default() -> None:
    """The API server writes a schema default into every object: ``kubectl describe`` would show empty
    lists and zero limits that nobody set. The model defaults them instead (absent == empty)."""
    properties = spec_schema()["properties"]
    unset = (
        "hosts",
        "roles",
        "defaultRoles",
        "privileges",
        "maxUserConnections",
        "maxQueriesPerHour",
        "maxUpdatesPerHour",
        "maxConnectionsPerHour",
        "requireTLS",
    )
    assert [name for name in unset if "default" in properties[name]] == []
    spec = v1alpha1.DatabaseUserSpec.model_validate({"password": {"name": "s", "key": "k"}})
    assert (spec.hosts, spec.roles, spec.default_roles, spec.privileges) == ([], [], [], [])
    assert (spec.max_user_connections, spec.max_queries_per_hour, spec.require_tls) == (0, 0, False)
    role = next(r for r in crd.RESOURCES if r.kind == "DatabaseRole")
    document = yaml.safe_load((REPO / "crds" / role.file_name).read_text())
    schema = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "default" not in schema["properties"]["spec"]["properties"]["privileges"]


def test_the_hosts_rule_guards_an_absent_hosts() -> None:
    """Without a schema default, spec.hosts may be absent: CEL errors on a missing field unless guarded."""
    rules = [
        rule["rule"] for rule in spec_schema()["x-kubernetes-validations"] if "self.hosts" in rule["rule"]
    ]
    assert rules
    assert all(rule.startswith("!has(self.hosts) || ") for rule in rules)


def test_every_kind_shares_a_category_and_the_namespaced_ones_another() -> None:
    """`kubectl get dbuser-operator`: every kind; `kubectl get dbuser-namespaced`: a namespace's share."""
    documents = crd.generate()
    assert len(documents) == 5
    for name, text in documents.items():
        spec = yaml.safe_load(text)["spec"]
        categories = spec["names"]["categories"]
        assert "dbuser-operator" in categories, name
        assert ("dbuser-namespaced" in categories) == (spec["scope"] == "Namespaced"), name
