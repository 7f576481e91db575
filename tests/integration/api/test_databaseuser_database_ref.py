"""A grant's ``databaseRef`` on a real API server: exactly one of database and databaseRef, the rules
that read the database unchanged for entries that name one, one entry per Database resource, and a
DatabaseRole that names its database itself. The models agree on every case."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import GROUP, VERSION, DatabaseUser
from dbuser_operator.api.v1alpha1 import databaserole as role_api
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRoleSpec
from tests.integration.api.test_databaseuser_crd import body, create, refused_like_the_models, rejected

pytestmark = pytest.mark.integration

EXACTLY_ONE = "exactly one of database and databaseRef"


def ref(name: str, *privileges: str, **fields: Any) -> dict[str, Any]:
    return {"databaseRef": {"name": name}, "privileges": list(privileges), **fields}


ACCEPTED: list[tuple[str, list[dict[str, Any]]]] = [
    ("ref", [ref("app-db", "SELECT", "INSERT")]),
    ("ref-table", [ref("app-db", "SELECT", table="orders")]),
    ("ref-columns", [ref("app-db", "SELECT", table="orders", columns=["id"])]),
    ("ref-routine", [ref("app-db", "EXECUTE", routine={"type": "PROCEDURE", "name": "p"})]),
    (
        "ref-beside-databases",  # a Database resource and a database of the same name are two entries
        [ref("app", "SELECT"), {"database": "app", "privileges": ["SELECT"]}, ref("other", "SELECT")],
    ),
]

REJECTED: list[tuple[str, list[dict[str, Any]], str]] = [
    ("neither", [{"privileges": ["SELECT"]}], EXACTLY_ONE),
    ("both", [{"database": "app", **ref("app", "SELECT")}], EXACTLY_ONE),
    ("ref-not-a-name", [ref("App_db", "SELECT")], "databaseRef.name"),
    ("ref-global-privilege", [ref("app-db", "PROCESS")], "PROCESS can only be granted on *.*"),
    ("ref-table-privilege", [ref("app-db", "EXECUTE", table="t")], "cannot be granted on a table (app-db.t)"),
    ("ref-twice", [ref("app-db", "SELECT"), ref("app-db", "INSERT")], "one entry per database and table"),
]


@pytest.mark.parametrize(("name", "grants"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
async def test_accepted_and_read_back_by_the_model(
    crds: list[str], kube_api: client.ApiClient, namespace: str, name: str, grants: list[dict[str, Any]]
) -> None:
    created = await create(kube_api, namespace, body(name, privileges=grants))
    stored = created["spec"]["privileges"]
    assert [entry.get("databaseRef") for entry in stored] == [entry.get("databaseRef") for entry in grants]
    assert all("database" not in entry for entry in stored if "databaseRef" in entry)  # no default filled in
    parsed = DatabaseUser.model_validate(created)
    dumped = parsed.spec.model_dump(by_alias=True, exclude_none=True, mode="json")["privileges"]
    assert dumped == stored


@pytest.mark.parametrize(("name", "grants", "complaint"), REJECTED, ids=[name for name, _, _ in REJECTED])
async def test_rejected_like_the_models(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    grants: list[dict[str, Any]],
    complaint: str,
) -> None:
    await refused_like_the_models(kube_api, namespace, body(name, privileges=grants), complaint)


async def test_a_role_names_its_database(crds: list[str], kube_api: client.ApiClient, namespace: str) -> None:
    spec = {"privileges": [ref("app-db", "SELECT")]}
    obj = {"apiVersion": f"{GROUP}/{VERSION}", "kind": role_api.KIND, "metadata": {"name": "r"}, "spec": spec}
    api = client.CustomObjectsApi(kube_api)
    message = await rejected(
        api.create_namespaced_custom_object(
            GROUP, VERSION, namespace, role_api.PLURAL, obj, _request_timeout=30
        )
    )
    assert role_api.ROLE_DATABASE_REF_MESSAGE in message
    with pytest.raises(ValidationError, match="databaseRef is for DatabaseUser grants"):
        DatabaseRoleSpec.model_validate(spec)
    spec = {"privileges": [{"database": "app", "privileges": ["SELECT"]}]}  # as before
    obj["spec"] = spec
    created = await api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, role_api.PLURAL, obj, _request_timeout=30
    )
    assert created["spec"]["privileges"][0]["database"] == "app"
