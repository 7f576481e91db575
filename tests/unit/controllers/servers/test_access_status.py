"""Publishing the access report: into the cached server resource's status, access alone, only when it
changed, and a failure to write never raised."""

from __future__ import annotations

import json
from typing import Any, cast

from dbuser_operator.api.v1alpha1.access_report import AccessEntry, AccessSummary
from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, DEFAULT_SERVER, MYSQL_SERVERS
from dbuser_operator.controllers.servers.access_status import AccessStatus
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import Forbidden
from dbuser_operator.runtime.informer import Informer

REPORT = AccessSummary(
    accounts=1, unmanaged=1, entries=[AccessEntry(user="dba", host="%", state="Unmanaged")]
)


class Kube:
    """Records the status patches; answers with the object patched, or raises ``failure``."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.patches: list[dict[str, Any]] = []
        self.failure = failure

    async def patch(
        self, resource: Any, name: str, patch: dict[str, Any], *_: Any, **__: Any
    ) -> dict[str, Any]:
        self.patches.append(patch)
        if self.failure is not None:
            raise self.failure
        return {"metadata": {"name": name}, "status": patch["status"]}


def publisher(kube: Kube, status: dict[str, Any] | None = None) -> AccessStatus:
    servers = Informer(cast(KubeClient, None), MYSQL_SERVERS)
    metadata = {"name": "main", "namespace": "shop", "resourceVersion": "7"}
    servers.store.put({"metadata": metadata, "spec": {}, "status": status or {"version": "9.7.4"}})
    resolver = ServerResolver(
        cast(ServerRegistry, None), servers, Informer(cast(KubeClient, None), CLUSTER_MYSQL_SERVERS)
    )
    return AccessStatus(cast(KubeClient, kube), resolver)


async def test_a_new_report_is_written_next_to_the_rest_of_the_status() -> None:
    kube = Kube()
    access = publisher(kube)
    assert access.serves("MySQLServer/shop/main")
    assert not access.serves(DEFAULT_SERVER)
    assert await access.publish("MySQLServer/shop/main", REPORT)
    (patch,) = kube.patches
    assert patch["status"]["access"]["entries"] == [
        {"user": "dba", "host": "%", "role": False, "state": "Unmanaged"}
    ]
    assert list(patch) == ["status"]  # not guarded: the server's controller may write the rest meanwhile
    assert list(patch["status"]) == ["access"]  # a merge patch of access alone: the rest is left as it is


async def test_the_same_report_is_not_written_again() -> None:
    stored = json.loads(json.dumps(REPORT.model_dump(by_alias=True, exclude_none=True, mode="json")))
    kube = Kube()
    assert not await publisher(kube, {"version": "9.7.4", "access": stored}).publish(
        "MySQLServer/shop/main", REPORT
    )
    assert kube.patches == []


async def test_an_api_error_is_left_to_the_next_period() -> None:
    kube = Kube(Forbidden(status=403, reason="Forbidden"))
    assert not await publisher(kube).publish("MySQLServer/shop/main", REPORT)
    assert len(kube.patches) == 1


async def test_a_server_not_in_the_cache_gets_nothing() -> None:
    kube = Kube()
    assert not await publisher(kube).publish("MySQLServer/shop/other", REPORT)
    assert not await publisher(kube).publish("ClusterMySQLServer/shared", REPORT)
    assert kube.patches == []
