"""A generated password's Secret is never read older than the operator's own last write of it: a cached copy
that one of its patches replaced (the watch event is on its way) is fetched from the API server instead."""

from __future__ import annotations

from typing import Any, cast

from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets


class Cache:
    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def get(self, key: object) -> dict[str, Any]:
        return self.obj


class Api:
    def __init__(self) -> None:
        self.live = secret("1")
        self.gets = 0

    async def patch(self, resource: object, name: str, patch: dict[str, Any], *args: Any, **kw: Any) -> Any:
        self.live = secret(str(int(self.live["metadata"]["resourceVersion"]) + 1))
        return self.live

    async def get(self, resource: object, name: str, namespace: str) -> dict[str, Any]:
        self.gets += 1
        return self.live


def secret(version: str) -> dict[str, Any]:
    return {"metadata": {"name": "app-password", "namespace": "ns", "resourceVersion": version}}


def context() -> Context:
    obj = {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {"generatedPassword": {}},
    }
    return Context(obj=obj, user=DatabaseUser.model_validate(obj), status=DatabaseUserStatus())


async def test_a_cached_secret_our_own_patch_replaced_is_read_from_the_api_server() -> None:
    api, cache = Api(), Cache(secret("1"))
    owned = OwnedSecrets(cast(Any, api), cast(Any, cache))
    ctx = context()
    assert await owned.current(ctx, "app-password") is cache.obj  # nothing written yet: the cache
    written = await owned.patch(cache.obj, {"data": {}})
    assert written["metadata"]["resourceVersion"] == "2"
    fresh = await owned.current(ctx, "app-password")  # the cache still has version 1
    assert fresh is not None
    assert fresh["metadata"]["resourceVersion"] == "2"
    assert api.gets == 1
    cache.obj = secret("2")  # the watch event arrived
    assert await owned.current(ctx, "app-password") is cache.obj
    assert api.gets == 1
