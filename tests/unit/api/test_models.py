"""The v1alpha1 models: parsing API objects, dumping status, the effective user name."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import (
    ADOPT_ANNOTATION,
    API_VERSION,
    GLOBAL_ONLY_PRIVILEGES,
    KIND,
    PRIVILEGES,
    RELEASE_ANNOTATION,
    ROTATE_ANNOTATION,
    TABLE_PRIVILEGES,
    AppliedSecret,
    Condition,
    DatabaseUser,
    DatabaseUserSpec,
    DatabaseUserStatus,
    Grant,
    ObjectMeta,
    SecretKeySelector,
)
from dbuser_operator.mysql.grants import FLAVOUR_ONLY_PRIVILEGES
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
    "spec": {
        "user": "app_rw",
        "host": "10.0.%",
        "password": {"name": "app-db", "key": "password"},
        "privileges": [
            {
                "privileges": ["SELECT", "INSERT", "UPDATE", "DELETE"],
                "database": "app",
                "table": "*",
                "grantOption": False,
            },
            {"privileges": ["SELECT", "UPDATE"], "database": "app", "table": "orders", "grantOption": True},
            {"privileges": ["PROCESS"], "database": "*", "table": "*", "grantOption": False},
        ],
        "maxUserConnections": 10,
        "maxQueriesPerHour": 4294967295,
        "maxUpdatesPerHour": 0,
        "maxConnectionsPerHour": 3600,
        "requireTLS": True,
        "deletionPolicy": "Retain",
        "roles": ["app-reader", "app-writer"],
        "defaultRoles": ["app-reader"],
        "hosts": ["localhost", "127.0.0.1"],
        "managementPolicy": "Observe",
    },
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
        "hosts": ["10.0.%", "localhost"],
        "observed": [
            {
                "host": "localhost",
                "exists": True,
                "plugin": "caching_sha2_password",
                "tls": "NONE",
                "maxUserConnections": 0,
                "maxQueriesPerHour": 0,
                "maxUpdatesPerHour": 0,
                "maxConnectionsPerHour": 0,
                "privileges": ["SELECT ON `app`.*"],
                "roles": [],
                "differences": ["maxUserConnections is 0 (spec 10)"],
            }
        ],
    },
}


# What the API server fills in when a spec leaves the new fields out; the models default alike.
SPEC_DEFAULTS: dict[str, Any] = {
    "privileges": [],
    "maxUserConnections": 0,
    "maxQueriesPerHour": 0,
    "maxUpdatesPerHour": 0,
    "maxConnectionsPerHour": 0,
    "requireTLS": False,
    "deletionPolicy": "Delete",
    "roles": [],
    "defaultRoles": [],
    "hosts": [],
    "managementPolicy": "Manage",
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
    assert parsed.mysql_name() == obj["metadata"]["name"]


def test_unknown_fields_are_ignored() -> None:
    obj = copy.deepcopy(FULL)
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["spec"]["passwordExpiry"] = "90d"  # a field of a newer schema
    obj["spec"]["privileges"][0]["columnMasks"] = ["a"]
    obj["status"]["somethingNew"] = {"a": 1}
    assert DatabaseUser.model_validate(obj).model_dump(by_alias=True, exclude_none=True, mode="json") == FULL


def test_mysql_name() -> None:
    password = SecretKeySelector(name="s", key="k")
    named = ObjectMeta(name="from-name")
    assert DatabaseUser(metadata=named, spec=DatabaseUserSpec(password=password)).mysql_name() == "from-name"
    spec = DatabaseUserSpec(user="explicit", password=password)
    assert DatabaseUser(metadata=named, spec=spec).mysql_name() == "explicit"
    with pytest.raises(ValueError, match=r"metadata\.name"):
        DatabaseUser(spec=DatabaseUserSpec(password=password)).mysql_name()


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


def test_status_to_api_keeps_fields_it_does_not_know() -> None:
    stored = {
        "user": "old",
        "host": "%",
        "replication": {"phase": "Pending"},  # written by a newer operator
        "observedGeneration": 1,
    }
    status = DatabaseUserStatus.model_validate(stored)
    assert status.user == "old"  # unknown fields are tolerated when parsing
    status.user, status.host, status.observed_generation = "app", None, 2
    assert status.to_api(stored) == {
        "replication": {"phase": "Pending"},
        "conditions": [],
        "observedGeneration": 2,
        "user": "app",
    }
    assert status.to_api() == {"conditions": [], "observedGeneration": 2, "user": "app"}


def test_a_new_object_carries_api_version_and_kind() -> None:
    obj = DatabaseUser(
        metadata=ObjectMeta(name="a"), spec=DatabaseUserSpec(password=SecretKeySelector(name="s", key="k"))
    )
    assert obj.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": "a"},
        "spec": {"host": "%", "password": {"name": "s", "key": "k"}} | SPEC_DEFAULTS,
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


# The new fields: grants, limits, TLS, deletion policy.

PASSWORD = {"password": {"name": "s", "key": "k"}}


def spec_with(**fields: Any) -> DatabaseUserSpec:
    return DatabaseUserSpec.model_validate(PASSWORD | fields)


def test_new_fields_default_like_the_crd() -> None:
    spec = DatabaseUserSpec(password=SecretKeySelector(name="s", key="k"))
    assert spec.privileges == []
    assert (spec.max_user_connections, spec.max_queries_per_hour) == (0, 0)
    assert (spec.max_updates_per_hour, spec.max_connections_per_hour) == (0, 0)
    assert spec.require_tls is False
    assert spec.deletion_policy == "Delete"
    dumped = spec.model_dump(
        by_alias=True, mode="json", exclude={"password", "host", "user"}, exclude_none=True
    )
    assert dumped == SPEC_DEFAULTS  # optional fields without a default (None) are left out
    # Each spec gets its own list.
    spec.privileges.append(Grant(privileges=["SELECT"], database="app"))
    assert DatabaseUserSpec(password=SecretKeySelector(name="s", key="k")).privileges == []


def test_a_grant_defaults_to_every_table_without_grant_option() -> None:
    grant = Grant.model_validate({"privileges": ["SELECT"], "database": "app"})
    assert (grant.table, grant.grant_option) == ("*", False)
    assert grant.model_dump(by_alias=True, exclude_none=True, mode="json") == {
        "privileges": ["SELECT"],
        "database": "app",
        "table": "*",
        "grantOption": False,
    }
    assert (grant.columns, grant.routine) == (None, None)


def test_require_tls_is_spelt_like_mysql_on_the_wire() -> None:
    spec = spec_with(requireTLS=True)
    assert spec.require_tls is True
    assert spec.model_dump(by_alias=True)["requireTLS"] is True
    assert DatabaseUserSpec(password=SecretKeySelector(name="s", key="k"), require_tls=True).require_tls


MARIADB_ONLY = {name for name, flavour in FLAVOUR_ONLY_PRIVILEGES.items() if flavour == "mariadb"}


def test_privilege_constants() -> None:
    assert len(PRIVILEGES) == len(set(PRIVILEGES)) == 34  # 29 on both flavours, 5 on one only
    assert set(GLOBAL_ONLY_PRIVILEGES) < set(PRIVILEGES)
    assert set(TABLE_PRIVILEGES) < set(PRIVILEGES)
    assert not set(GLOBAL_ONLY_PRIVILEGES) & set(TABLE_PRIVILEGES)
    assert PRIVILEGES[-len(GLOBAL_ONLY_PRIVILEGES) :] == GLOBAL_ONLY_PRIVILEGES
    for privilege in PRIVILEGES:
        assert re.fullmatch(r"[A-Z]+( [A-Z]+)*", privilege), privilege


def test_annotations() -> None:
    assert ADOPT_ANNOTATION == "mysql.dbuser-operator.dev/adopt"
    assert RELEASE_ANNOTATION == "mysql.dbuser-operator.dev/release"


@pytest.mark.parametrize(
    "grant",
    [
        {"database": "app", "privileges": ["SELECT", "INSERT", "UPDATE", "DELETE"]},
        {"database": "app", "table": "orders", "privileges": ["SELECT", "UPDATE"]},
        {"database": "*", "privileges": ["PROCESS"]},
        {"database": "*", "privileges": ["ALL"], "grantOption": True},
        {"database": "app", "privileges": ["ALL"]},
        {"database": "app", "table": "t", "privileges": ["ALL"]},
        # every privilege of one flavour at once, globally (each flavour has some the other lacks)
        {
            "database": "*",
            "privileges": [p for p in PRIVILEGES[1:] if FLAVOUR_ONLY_PRIVILEGES.get(p, "mysql") == "mysql"],
        },
        {"database": "app", "table": "t", "privileges": list(TABLE_PRIVILEGES[1:])},
        {"database": "d" * 64, "table": "t" * 64, "privileges": ["SELECT"]},
        {"database": "my-app_2$", "table": "T$_-", "privileges": ["SELECT"]},
        {"database": "d" * 62 + "_", "privileges": ["SELECT"]},  # escaped: 64 characters
        {"database": "d" * 63 + "_", "table": "t", "privileges": ["SELECT"]},  # a table grant escapes nothing
        # names the server judges: MySQL's dynamic privileges, MariaDB's administrative ones, typos
        {
            "database": "*",
            "privileges": ["BACKUP_ADMIN", "REPLICATION_SLAVE_ADMIN", "SYSTEM_VARIABLES_ADMIN"],
        },
        {"database": "*", "privileges": ["SLAVE MONITOR", "BINLOG MONITOR", "READ_ONLY ADMIN"]},
        {"database": "app", "privileges": ["SELEC"]},
        {"database": "*", "privileges": ["A" * 32]},
        {"database": "app", "table": "t", "privileges": ["SELECT", "UPDATE"], "columns": ["a", "b$-_"]},
        {"database": "app", "table": "t", "privileges": ["REFERENCES", "INSERT"], "columns": ["c" * 64]},
        {"database": "app", "privileges": ["EXECUTE"], "routine": {"type": "PROCEDURE", "name": "p"}},
        {
            "database": "d" * 63 + "_",  # a routine's database is not escaped
            "privileges": ["ALL"],
            "routine": {"type": "FUNCTION", "name": "f" * 64},
            "grantOption": True,
        },
        {"database": "app", "privileges": ["ALTER ROUTINE"], "routine": {"type": "FUNCTION", "name": "F"}},
    ],
)
def test_valid_grants(grant: dict[str, Any]) -> None:
    parsed = Grant.model_validate(grant)
    assert parsed.model_dump(by_alias=True, exclude_unset=True, mode="json") == grant


@pytest.mark.parametrize(
    ("grant", "complaint"),
    [
        ({"database": "app", "privileges": ["ALL; DROP"]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["select"]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SELECT "]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SELECT  INSERT"]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SELECT'"]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SELECT`"]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SÉLECT"]}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SELECT\n"]}, "string_pattern_mismatch"),
        ({"database": "*", "privileges": ["A" * 33]}, "string_too_long"),
        ({"database": "app", "privileges": ["ALL PRIVILEGES"]}, "ALL PRIVILEGES is not a privilege to list"),
        ({"database": "app", "privileges": ["USAGE"]}, "USAGE is not a privilege to list"),
        ({"database": "app", "privileges": ["GRANT OPTION"]}, "GRANT OPTION is not a privilege to list"),
        ({"database": "*", "privileges": ["PROXY"]}, "PROXY is not a privilege to list"),
        ({"database": "app", "table": "t", "privileges": ["SELECT"], "columns": []}, "too_short"),
        (
            {"database": "app", "table": "t", "privileges": ["SELECT"], "columns": ["a", "a"]},
            "duplicate columns",
        ),
        ({"database": "app", "table": "t", "privileges": ["SELECT"], "columns": ["a`b"]}, "pattern"),
        (
            {"database": "app", "table": "t", "privileges": ["SELECT"], "columns": ["c" * 65]},
            "string_too_long",
        ),
        ({"database": "app", "privileges": ["SELECT"], "columns": ["a"]}, "a column grant names a table"),
        (
            {"database": "app", "table": "t", "privileges": ["DELETE"], "columns": ["a"]},
            "DELETE cannot be granted on columns",
        ),
        (
            {
                "database": "app",
                "table": "t",
                "privileges": ["SELECT"],
                "columns": ["a"],
                "grantOption": True,
            },
            "a column grant has no grant option",
        ),
        (
            {"database": "*", "privileges": ["EXECUTE"], "routine": {"type": "PROCEDURE", "name": "p"}},
            "a routine grant names a database and nothing else",
        ),
        (
            {
                "database": "app",
                "table": "t",
                "privileges": ["ALL"],
                "routine": {"type": "FUNCTION", "name": "f"},
            },
            "a routine grant names a database and nothing else",
        ),
        (
            {"database": "app", "privileges": ["SELECT"], "routine": {"type": "PROCEDURE", "name": "p"}},
            "SELECT cannot be granted on a routine",
        ),
        (
            {"database": "app", "privileges": ["EXECUTE"], "routine": {"type": "EVENT", "name": "p"}},
            "literal_error",
        ),
        (
            {"database": "app", "privileges": ["EXECUTE"], "routine": {"type": "PROCEDURE", "name": "p;"}},
            "pattern",
        ),
        ({"database": "app", "privileges": ["EXECUTE"], "routine": {"type": "PROCEDURE"}}, "missing"),
        ({"database": "app", "privileges": []}, "too_short"),
        ({"database": "app"}, "missing"),
        ({"privileges": ["SELECT"]}, "exactly one of database and databaseRef"),
        (
            {"privileges": ["SELECT"], "database": "app", "databaseRef": {"name": "app"}},
            "exactly one of database and databaseRef",
        ),
        ({"privileges": ["SELECT"], "databaseRef": {"name": "App_1"}}, "string_pattern_mismatch"),
        ({"database": "app", "privileges": ["SELECT", "SELECT"]}, "duplicate privileges: SELECT"),
        ({"database": "app;", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "a`b", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "a.b", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "app%", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "d" * 65, "privileges": ["SELECT"]}, "string_too_long"),
        ({"database": "app\n", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "d" * 63 + "_", "privileges": ["SELECT"]}, "GRANT writes each '_' as '\\_'"),
        ({"database": "_" * 33, "table": "*", "privileges": ["SELECT"]}, "database name too long"),
        ({"database": "**", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "app", "table": "o'rders", "privileges": ["SELECT"]}, "string_pattern_mismatch"),
        ({"database": "*", "table": "x", "privileges": ["SELECT"]}, "a table grant needs a database"),
        ({"database": "app", "privileges": ["ALL", "SELECT"]}, "ALL stands for every privilege"),
        (
            {"database": "app", "privileges": ["SELECT", "PROCESS"]},
            'PROCESS can only be granted on *.* (database "*"), not on app.*',
        ),
        (
            {"database": "app", "table": "t", "privileges": ["CREATE USER"]},
            'CREATE USER can only be granted on *.* (database "*"), not on app.t',
        ),
        (
            {"database": "app", "table": "orders", "privileges": ["SELECT", "EXECUTE"]},
            "EXECUTE cannot be granted on a table (app.orders): a table grant allows only ALL, ALTER,",
        ),
        ({"database": "app", "privileges": ["SELECT"], "grantOption": "yes"}, "bool_type"),
    ],
)
def test_invalid_grants(grant: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValidationError) as error:
        Grant.model_validate(grant)
    assert complaint in str(error.value) or complaint in {e["type"] for e in error.value.errors()}, (
        error.value
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"maxUserConnections": -1},
        {"maxQueriesPerHour": -1},
        {"maxUpdatesPerHour": -1},
        {"maxConnectionsPerHour": -1},
        {"maxUserConnections": 2147483648},
        {"maxQueriesPerHour": 4294967296},
        {"maxUpdatesPerHour": 4294967296},
        {"maxConnectionsPerHour": 4294967296},
        {"requireTLS": "true"},
        {"deletionPolicy": "Orphan"},
        {"deletionPolicy": "delete"},
        {"privileges": [{"database": "app", "privileges": ["SELECT"]}] * 2},
        {
            "privileges": [
                {"database": "app", "privileges": ["SELECT"]},
                {"database": "app", "table": "*", "privileges": ["INSERT"]},
            ]
        },
        {"privileges": [{"database": f"d{i}", "privileges": ["SELECT"]} for i in range(65)]},
        {"hosts": ["%"]},
        {"hosts": ["localhost", "LocalHost"]},
        {"hosts": ["a'b"]},
        {"hosts": ["a`b"]},
        {"hosts": ["höst"]},
        {"hosts": ["x" * 256]},
        {"hosts": [""]},
        {"hosts": [f"h{i}" for i in range(17)]},
        {"managementPolicy": "observe"},
        {"managementPolicy": "Orphan"},
        {"privileges": [{"database": "app", "privileges": ["SELECT;"]}]},
        {
            "privileges": [
                {"database": "app", "privileges": ["EXECUTE"], "routine": {"type": "PROCEDURE", "name": "p"}},
                {"database": "app", "privileges": ["ALL"], "routine": {"type": "PROCEDURE", "name": "p"}},
            ]
        },
    ],
)
def test_new_fields_validate_like_the_crd(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec_with(**fields)


def test_limits_take_their_whole_range() -> None:
    spec = spec_with(
        maxUserConnections=2147483647,
        maxQueriesPerHour=4294967295,
        maxUpdatesPerHour=4294967295,
        maxConnectionsPerHour=4294967295,
    )
    assert spec.max_queries_per_hour == 4294967295
    assert spec.max_user_connections == 2147483647


def test_one_entry_per_database_and_table() -> None:
    spec = spec_with(
        privileges=[
            {"database": "app", "privileges": ["SELECT"]},
            {"database": "app", "table": "orders", "privileges": ["UPDATE"]},
            {"database": "other", "table": "orders", "privileges": ["UPDATE"]},
            {"database": "*", "privileges": ["PROCESS"]},
        ]
    )
    assert [(grant.database, grant.table) for grant in spec.privileges] == [
        ("app", "*"),
        ("app", "orders"),
        ("other", "orders"),
        ("*", "*"),
    ]
    with pytest.raises(ValidationError, match="one entry per database and table"):
        spec_with(privileges=[{"database": "*", "privileges": ["PROCESS"]}] * 2)


# The sample shows every optional field in comments: uncommented, they make a valid object.
_COMMENTED_FIELD = re.compile(r"^(\s*)# (\s*(?:- )?[A-Za-z][\w.\-/]*:(?:\s.*)?)$")


def test_the_sample_commented_fields_are_valid_and_complete() -> None:
    path = REPO / "config" / "samples" / "mysql_v1alpha1_databaseuser.yaml"
    lines = [_COMMENTED_FIELD.sub(r"\1\2", line) for line in path.read_text().splitlines()]
    obj = yaml.safe_load("\n".join(lines))
    spec_fields = {field.alias or name for name, field in DatabaseUserSpec.model_fields.items()}
    assert set(obj["spec"]) == spec_fields
    del obj["spec"]["password"]  # generatedPassword is the alternative to it
    parsed = DatabaseUser.model_validate(obj)
    assert set(obj["metadata"]["annotations"]) == {ADOPT_ANNOTATION, RELEASE_ANNOTATION, ROTATE_ANNOTATION}
    assert parsed.spec.privileges[1].table == "orders"
    assert parsed.spec.privileges[0].table == "*"
    assert parsed.model_dump(by_alias=True, exclude_unset=True, mode="json") == obj


def test_hosts_add_accounts_to_host_and_compare_without_case() -> None:
    spec = spec_with(host="10.0.%", hosts=["localhost", "127.0.0.1"])
    assert spec.account_hosts() == ["10.0.%", "localhost", "127.0.0.1"]
    assert spec_with().account_hosts() == ["%"]
    with pytest.raises(ValidationError, match=r"hosts must not repeat spec\.host"):
        spec_with(host="LOCALHOST", hosts=["localhost"])
    assert spec_with(hosts=[f"h{i}" for i in range(16)]).management_policy == "Manage"
