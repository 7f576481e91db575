"""Writes the API server refuses, named by /readyz until a write like them goes through."""

from __future__ import annotations

import json

from dbuser_operator.runtime.errors import Forbidden
from dbuser_operator.runtime.permissions import WriteDenials, resource_of


def forbidden(message: str) -> Forbidden:
    return Forbidden(403, "Forbidden", json.dumps({"kind": "Status", "message": message}).encode())


def test_a_write_path_is_named_by_its_resource_without_namespace_or_name() -> None:
    group = "/apis/mysql.dbuser-operator.dev/v1alpha1"
    assert resource_of(f"{group}/namespaces/team-a/databaseusers/app/status") == "databaseusers/status"
    assert resource_of(f"{group}/namespaces/team-a/databaseusers/app") == "databaseusers"
    assert resource_of(f"{group}/clustermysqlservers/shared/status") == "clustermysqlservers/status"
    assert resource_of("/api/v1/namespaces/team-a/events") == "events"
    assert resource_of("/api/v1/namespaces/team-a/events/e1?fieldManager=x") == "events"
    assert resource_of("/apis/coordination.k8s.io/v1/namespaces/ops/leases/lock") == "leases"


def test_a_refused_kind_of_write_is_ready_again_once_one_goes_through() -> None:
    denials = WriteDenials()
    path = "/apis/g/v1/namespaces/a/databaseusers/x/status"
    assert denials.check() is None
    denials.refused("PATCH", path, forbidden('databaseusers.g "x" is forbidden: User "sa" cannot patch'))
    denials.succeeded("PATCH", "/apis/g/v1/namespaces/b/databaseusers/y")  # another kind of write
    message = denials.check()
    assert message is not None
    assert message.startswith("the API server refuses writes: PATCH databaseusers/status (403 Forbidden: ")
    denials.succeeded("PATCH", "/apis/g/v1/namespaces/b/databaseusers/y/status")
    assert denials.check() is None


def test_a_namespace_being_deleted_is_no_permission_problem() -> None:
    denials = WriteDenials()
    message = (
        'events "e" is forbidden: unable to create new content in namespace a because it is being terminated'
    )
    denials.refused("POST", "/api/v1/namespaces/a/events", forbidden(message))
    assert denials.check() is None
