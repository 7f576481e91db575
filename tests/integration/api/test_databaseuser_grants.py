"""Grants, limits, TLS and the deletion policy of the DatabaseUser CRD on a real API server: what admission
accepts (with the defaults it fills in), what it rejects and with which message, and that the pydantic models
agree on every case."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserSpec
from tests.conftest import Runner
from tests.integration.api.test_databaseuser_crd import (
    MODEL_DEFAULTS,
    SPEC_DEFAULTS,
    body,
    create,
    explain,
    patch,
    refused_like_the_models,
    rejected,
)

pytestmark = pytest.mark.integration

PASSWORD = {"password": {"name": "app-db", "key": "password"}}


def grant(database: str, *privileges: str, **fields: Any) -> dict[str, Any]:
    return {"database": database, "privileges": list(privileges), **fields}


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("database", {"privileges": [grant("app", "SELECT", "INSERT", "UPDATE", "DELETE")]}),
    ("table", {"privileges": [grant("app", "SELECT", "UPDATE", table="orders")]}),
    ("global", {"privileges": [grant("*", "PROCESS")]}),
    ("all-with-grant-option", {"privileges": [grant("*", "ALL", grantOption=True)]}),
    (
        "several-levels",
        {
            "privileges": [
                grant("app", "SELECT", "EXECUTE", "CREATE TEMPORARY TABLES", "LOCK TABLES"),
                grant("app", "ALL", table="orders"),
                grant("other", "SELECT", table="orders"),
                grant("*", "PROCESS", "REPLICATION CLIENT", "SHOW DATABASES"),
                grant("my-app_2$", "SELECT", table="T$_-"),
                grant("d" * 64, "SELECT", table="t" * 64),
                grant("d" * 62 + "_", "SELECT"),  # 64 characters once escaped
                grant("_" * 32, "SELECT"),
            ]
        },
    ),
    (
        "limits",
        {
            "maxUserConnections": 2147483647,
            "maxQueriesPerHour": 4294967295,
            "maxUpdatesPerHour": 100,
            "maxConnectionsPerHour": 0,
        },
    ),
    ("tls", {"requireTLS": True}),
    ("retain", {"deletionPolicy": "Retain"}),
    ("delete", {"deletionPolicy": "Delete", "requireTLS": False}),
    ("no-grants", {"privileges": []}),
    (
        "server-privileges",
        {
            "privileges": [
                grant("*", "BACKUP_ADMIN", "REPLICATION_SLAVE_ADMIN", "SLAVE MONITOR", "READ_ONLY ADMIN"),
                grant("app", "SELEC"),  # the shape of a privilege: the server judges the name
                grant("other", "A" * 32),
            ]
        },
    ),
    (
        "columns-and-routines",
        {
            "privileges": [
                grant("app", "SELECT", table="t"),
                grant("app", "SELECT", "UPDATE", table="t", columns=["a", "b"]),
                grant("app", "INSERT", table="t", columns=["b"]),  # column entries may share a table
                grant("app", "EXECUTE", routine={"type": "PROCEDURE", "name": "p"}),
                grant("app", "ALL", routine={"type": "FUNCTION", "name": "p"}, grantOption=True),
                grant("d" * 63 + "_", "ALTER ROUTINE", routine={"type": "PROCEDURE", "name": "r" * 64}),
            ]
        },
    ),
]


@pytest.mark.parametrize(("name", "spec"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
async def test_accepted_with_their_defaults(
    crds: list[str], kube_api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any]
) -> None:
    created = await create(kube_api, namespace, body(name, **spec))
    expected = SPEC_DEFAULTS | {"host": "%"} | PASSWORD | spec
    if "privileges" in expected:
        expected["privileges"] = [{"table": "*", "grantOption": False} | g for g in expected["privileges"]]
    assert created["spec"] == expected
    # The model reads what the server stored and writes it back unchanged.
    parsed = DatabaseUser.model_validate(created)
    dumped = parsed.spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    for key, value in MODEL_DEFAULTS.items():
        if key not in created["spec"]:  # no schema default: none stored, the model's is empty
            assert dumped.pop(key) == value, key
    assert dumped == created["spec"]


async def test_a_minimal_spec_gets_every_default(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    created = await create(kube_api, namespace, body("minimal"))
    assert created["spec"] == {"host": "%"} | PASSWORD | SPEC_DEFAULTS  # no empty list nor zero limit
    spec = DatabaseUser.model_validate(created).spec
    assert spec == DatabaseUserSpec.model_validate(PASSWORD)
    assert spec == DatabaseUserSpec.model_validate(
        PASSWORD | SPEC_DEFAULTS | MODEL_DEFAULTS
    )  # absent == empty
    assert spec.deletion_policy == "Delete"


def grants(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"privileges": list(entries)}


TABLE_ONLY = (
    "a table grant allows only ALL, ALTER, CREATE, CREATE VIEW, DELETE, DROP, INDEX, INSERT, REFERENCES,"
)
REJECTED: list[tuple[str, dict[str, Any], str]] = [
    (
        "injection",
        grants(grant("app", "ALL; DROP")),
        'privileges[0]: Invalid value: "ALL; DROP": spec.privileges[0].privileges[0] in body should match',
    ),
    ("sql-words", grants(grant("app", "SELECT ON *.* TO ROOT")), "privileges[0]: Invalid value"),
    ("comma", grants(grant("app", "SELECT, INSERT")), "privileges[0]: Invalid value"),
    ("quote", grants(grant("app", "SELECT'")), "privileges[0]: Invalid value"),
    ("backquote-privilege", grants(grant("app", "SELECT`")), "privileges[0]: Invalid value"),
    ("unicode-privilege", grants(grant("app", "SÉLECT")), "privileges[0]: Invalid value"),
    ("newline-privilege", grants(grant("app", "SELECT\nINSERT")), "privileges[0]: Invalid value"),
    ("two-spaces", grants(grant("app", "SELECT  INSERT")), "privileges[0]: Invalid value"),
    ("long-privilege", grants(grant("*", "A" * 33)), "privileges[0]: Too long"),
    (
        "lower-case",
        grants(grant("app", "select")),
        'spec.privileges[0].privileges[0]: Invalid value: "select": spec.privileges[0].privileges[0] in body',
    ),
    (
        "usage",
        grants(grant("app", "USAGE")),
        "USAGE is not a privilege to list: write ALL for ALL PRIVILEGES, grantOption for GRANT OPTION",
    ),
    ("all-privileges", grants(grant("app", "ALL PRIVILEGES")), "ALL PRIVILEGES is not a privilege to list"),
    ("grant-option", grants(grant("app", "GRANT OPTION")), "GRANT OPTION is not a privilege to list"),
    ("proxy", grants(grant("*", "PROXY")), "PROXY is not a privilege to list"),
    (
        "columns-on-database",
        grants(grant("app", "SELECT", columns=["a"])),
        'spec.privileges[0].columns: Invalid value: a column grant names a table: table must not be "*"',
    ),
    (
        "columns-delete",
        grants(grant("app", "DELETE", table="t", columns=["a"])),
        "DELETE cannot be granted on columns: a column grant allows only SELECT, INSERT, UPDATE and REF",
    ),
    (
        "columns-grant-option",
        grants(grant("app", "SELECT", table="t", columns=["a"], grantOption=True)),
        "a column grant has no grant option",
    ),
    ("columns-empty", grants(grant("app", "SELECT", table="t", columns=[])), "columns: Invalid value"),
    (
        "column-backquote",
        grants(grant("app", "SELECT", table="t", columns=["a`b"])),
        "columns[0]: Invalid value",
    ),
    ("column-quote", grants(grant("app", "SELECT", table="t", columns=["a'b"])), "columns[0]: Invalid value"),
    (
        "column-percent",
        grants(grant("app", "SELECT", table="t", columns=["a%"])),
        "columns[0]: Invalid value",
    ),
    ("column-unicode", grants(grant("app", "SELECT", table="t", columns=["ä"])), "columns[0]: Invalid value"),
    ("column-long", grants(grant("app", "SELECT", table="t", columns=["c" * 65])), "columns[0]: Too long"),
    (
        "column-duplicate",
        grants(grant("app", "SELECT", table="t", columns=["a", "a"])),
        'columns[1]: Duplicate value: "a"',
    ),
    (
        "routine-global",
        grants(grant("*", "EXECUTE", routine={"type": "PROCEDURE", "name": "p"})),
        "a routine grant names a database and nothing else",
    ),
    (
        "routine-select",
        grants(grant("app", "SELECT", routine={"type": "FUNCTION", "name": "f"})),
        "SELECT cannot be granted on a routine: a routine grant allows only ALL, EXECUTE and ALTER ROUTINE",
    ),
    (
        "routine-type",
        grants(grant("app", "EXECUTE", routine={"type": "EVENT", "name": "e"})),
        'routine.type: Unsupported value: "EVENT"',
    ),
    (
        "routine-name",
        grants(grant("app", "EXECUTE", routine={"type": "PROCEDURE", "name": "p`; DROP"})),
        "routine.name: Invalid value",
    ),
    (
        "routine-twice",
        grants(
            grant("app", "EXECUTE", routine={"type": "PROCEDURE", "name": "p"}),
            grant("app", "ALTER ROUTINE", routine={"type": "PROCEDURE", "name": "p"}),
        ),
        "one entry per database and table (and routine; column grants excepted)",
    ),
    ("no-privileges", grants(grant("app")), "spec.privileges[0].privileges: Invalid value"),
    ("duplicate-privilege", grants(grant("app", "SELECT", "SELECT")), 'Duplicate value: "SELECT"'),
    ("semicolon", grants(grant("app;", "SELECT")), 'spec.privileges[0].database: Invalid value: "app;"'),
    ("backquote", grants(grant("a`b", "SELECT")), 'spec.privileges[0].database: Invalid value: "a`b"'),
    ("dot", grants(grant("a.b", "SELECT")), "spec.privileges[0].database: Invalid value"),
    ("empty-database", grants(grant("", "SELECT")), "spec.privileges[0].database: Invalid value"),
    ("long-database", grants(grant("d" * 65, "SELECT")), "spec.privileges[0].database: Too long"),
    (
        "long-once-escaped",  # 64 characters, but GRANT writes the '_' as '\_': 65
        grants(grant("d" * 63 + "_", "SELECT")),
        "spec.privileges[0].database: Invalid value: database name too long for a database grant",
    ),
    ("all-underscores", grants(grant("_" * 33, "SELECT")), "database name too long for a database grant"),
    ("bad-table", grants(grant("app", "SELECT", table="o'rders")), "spec.privileges[0].table: Invalid value"),
    (
        "table-without-database",
        grants(grant("*", "SELECT", table="x")),
        "spec.privileges[0].table: Invalid value: a table grant needs a database",
    ),
    (
        "all-and-more",
        grants(grant("app", "ALL", "SELECT")),
        "ALL stands for every privilege of its level: list it alone",
    ),
    (
        "global-on-database",
        grants(grant("app", "PROCESS")),
        "spec.privileges[0].privileges: Invalid value: "
        'PROCESS can only be granted on *.* (database "*"), not on app.*',
    ),
    (
        "global-on-table",
        grants(grant("app", "SELECT", "SUPER", table="t")),
        'SUPER can only be granted on *.* (database "*"), not on app.t',
    ),
    (
        "execute-on-table",
        grants(grant("app", "EXECUTE", table="orders")),
        f"EXECUTE cannot be granted on a table (app.orders): {TABLE_ONLY}",
    ),
    (
        "duplicate-entries",
        grants(grant("app", "SELECT"), grant("app", "INSERT", table="*")),
        "spec.privileges: Invalid value: one entry per database and table",
    ),
    (
        "duplicate-table-entries",
        grants(grant("app", "SELECT", table="t"), grant("*", "PROCESS"), grant("app", "UPDATE", table="t")),
        "one entry per database and table",
    ),
    (
        "too-many-entries",
        grants(*(grant(f"d{i}", "SELECT") for i in range(65))),
        "spec.privileges: Too many: 65: must have at most 64 items",
    ),
    ("negative-connections", {"maxUserConnections": -1}, "spec.maxUserConnections: Invalid value: -1"),
    ("negative-queries", {"maxQueriesPerHour": -1}, "spec.maxQueriesPerHour: Invalid value: -1"),
    ("negative-updates", {"maxUpdatesPerHour": -1}, "spec.maxUpdatesPerHour: Invalid value: -1"),
    ("negative-logins", {"maxConnectionsPerHour": -1}, "spec.maxConnectionsPerHour: Invalid value: -1"),
    ("huge-connections", {"maxUserConnections": 2147483648}, "spec.maxUserConnections: Invalid value"),
    ("huge-queries", {"maxQueriesPerHour": 4294967296}, "spec.maxQueriesPerHour: Invalid value"),
    ("tls-string", {"requireTLS": "true"}, "spec.requireTLS: Invalid value"),
    ("orphan", {"deletionPolicy": "Orphan"}, 'spec.deletionPolicy: Unsupported value: "Orphan"'),
    ("lower-case-policy", {"deletionPolicy": "retain"}, 'spec.deletionPolicy: Unsupported value: "retain"'),
]


@pytest.mark.parametrize(("name", "spec", "complaint"), REJECTED, ids=[name for name, _, _ in REJECTED])
async def test_rejected_with_the_rules_message(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    complaint: str,
) -> None:
    await refused_like_the_models(kube_api, namespace, body(name, **spec), complaint)


async def test_updates_are_validated_too(crds: list[str], kube_api: client.ApiClient, namespace: str) -> None:
    await create(kube_api, namespace, body("changing", privileges=[grant("app", "SELECT")]))
    message = await rejected(
        patch(kube_api, namespace, "changing", {"spec": {"privileges": [grant("app", "SELECT", "PROCESS")]}})
    )
    assert "PROCESS can only be granted on *.*" in message

    changed = await patch(
        kube_api,
        namespace,
        "changing",
        {"spec": {"privileges": [grant("app", "ALL")], "deletionPolicy": "Retain", "maxUserConnections": 5}},
    )
    assert changed["spec"]["privileges"] == [grant("app", "ALL", table="*", grantOption=False)]
    assert (changed["spec"]["deletionPolicy"], changed["spec"]["maxUserConnections"]) == ("Retain", 5)
    assert changed["metadata"]["generation"] == 2


async def test_kubectl_explain_documents_grants_and_policy(crds: list[str], kubectl: Runner) -> None:
    # the API server publishes a new CRD's OpenAPI a moment after it is Established
    explained = await explain(kubectl, "dbu.spec.privileges")
    text = " ".join(explained.stdout.split())
    assert "FIELD: privileges <[]Object>" in text
    assert "one entry per database and table" in text
    # database or databaseRef, exactly one (a CEL rule): neither is required by itself.
    assert "database <string>" in text
    assert "databaseRef <Object>" in text
    assert "privileges <[]string> -required-" in text
    assert "table <string>" in text
    assert "grantOption <boolean>" in text
    assert 'or "*" for every table of the database. Defaults to "*".' in text

    names = " ".join(kubectl("explain", "dbu.spec.privileges.privileges").stdout.split())
    assert "CREATE TEMPORARY TABLES" in names
    assert "BACKUP_ADMIN" in names
    assert "PrivilegeUnknown" in names
    routine = " ".join(kubectl("explain", "dbu.spec.privileges.routine").stdout.split())
    assert "ENUM: PROCEDURE FUNCTION" in routine or "PROCEDURE or FUNCTION" in routine
    columns = " ".join(kubectl("explain", "dbu.spec.privileges.columns").stdout.split())
    assert "GRANT SELECT (a, b) ON db.table" in columns
    assert "ALL means every privilege of the grant's level" in names

    policy = " ".join(kubectl("explain", "dbu.spec.deletionPolicy").stdout.split())
    assert "Retain leaves the account in MySQL" in policy
    assert "ENUM: Delete Retain" in policy
    spec = " ".join(kubectl("explain", "dbu.spec").stdout.split())
    for field in ("maxUserConnections <integer>", "requireTLS <boolean>", "deletionPolicy <string>"):
        assert field in spec
