"""Resolving a grant's databaseRef from the Database cache: the own namespace only, Ready for the current
generation, the same server, a database name (never "*"); the index that maps a Database to its users."""

from __future__ import annotations

from typing import Any, cast

import pytest

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.controllers.databaseuser.database_refs import resolve
from dbuser_operator.controllers.databaseuser.indexes import referenced_databases
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey


class Cache:
    """The informer's ``get``, over a dict."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {ObjectKey.of(obj): obj for obj in objects}

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        return self.objects.get(key)


def user_obj(namespace: str = "team-a", **spec: Any) -> dict[str, Any]:
    grants = [
        {"database": "plain", "privileges": ["SELECT"]},
        {"databaseRef": {"name": "app"}, "privileges": ["SELECT", "INSERT"], "table": "orders"},
    ]
    return {
        "metadata": {"name": "u", "namespace": namespace},
        "spec": {"password": {"name": "pw", "key": "password"}, "privileges": grants, **spec},
    }


def database(
    namespace: str = "team-a", name: str = "app_db", ready: str = "True", generation: int = 1, **extra: Any
) -> dict[str, Any]:
    condition = {"type": "Ready", "status": ready, "reason": "Why", "observedGeneration": 1}
    return {
        "metadata": {"name": "app", "namespace": namespace, "generation": generation, **extra},
        "spec": {},
        "status": {"conditions": [condition], "name": name},
    }


def resolved(cache: Cache, obj: dict[str, Any]) -> DatabaseUser:
    return resolve(cast("Informer", cache), DatabaseUser.model_validate(obj), obj)


def test_a_ready_database_of_the_namespace_resolves_into_its_name() -> None:
    obj = user_obj()
    user = resolved(Cache(database()), obj)
    assert [(g.database, g.database_ref, g.table) for g in user.spec.privileges] == [
        ("plain", None, "*"),
        ("app_db", None, "orders"),
    ]
    assert DatabaseUser.model_validate(obj).spec.privileges[1].database is None  # the spec is left alone


@pytest.mark.parametrize(
    ("cache", "reason"),
    [
        (Cache(), "DatabaseNotFound"),
        (Cache(database(namespace="team-b")), "DatabaseNotFound"),  # another namespace's: never reached
        (Cache(database(ready="False")), "DatabaseNotReady"),
        (Cache(database(generation=2)), "DatabaseNotReady"),  # Ready for an older generation
        (Cache(database(deletionTimestamp="2026-01-01T00:00:00Z")), "DatabaseNotReady"),
        (Cache(database(name="*")), "DatabaseNotReady"),  # a forged status never grants on *.*
        (Cache(database(name="")), "DatabaseNotReady"),
    ],
)
def test_refused_until_usable(cache: Cache, reason: str) -> None:
    with pytest.raises(ConditionError) as error:
        resolved(cache, user_obj())
    assert error.value.reason == reason
    assert "app" in error.value.message
    assert not error.value.retry  # the Database's change requeues the user


def test_another_server_is_refused() -> None:
    far = database()
    far["spec"]["serverRef"] = {"kind": "MySQLServer", "name": "other"}
    with pytest.raises(ConditionError) as error:
        resolved(Cache(far), user_obj())
    assert error.value.reason == "DatabaseOnAnotherServer"
    near = database()
    near["spec"]["serverRef"] = {"kind": "ClusterMySQLServer", "name": "shared"}
    user = resolved(Cache(near), user_obj(serverRef={"kind": "ClusterMySQLServer", "name": "shared"}))
    assert user.spec.privileges[1].database == "app_db"


def test_the_index_names_the_databases_of_the_own_namespace() -> None:
    assert referenced_databases(user_obj()) == ["team-a/app"]
    assert referenced_databases({"metadata": {"namespace": "x"}, "spec": {}}) == []
