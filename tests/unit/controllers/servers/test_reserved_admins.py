"""Another server resource's admin account and bookkeeping schema, on a server: refused when both handles say
they reach one physical server, refused and retried when one cannot say, admitted when they differ."""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.servers.admins import Refusal
from tests.unit.controllers.kit.test_reserved_names import Handle, Known


def grants(*databases: str) -> DatabaseUserSpec:
    privileges = [{"database": database, "privileges": ["SELECT"]} for database in databases]
    return DatabaseUserSpec.model_validate({"password": {"name": "s", "key": "k"}, "privileges": privileges})


TENANTS = Handle("tenants_admin", "books_t", "mysql:1111", "ClusterMySQLServer shared")
PLATFORM = Handle("platform_admin", "books_p", "mysql:1111", "MySQLServer platform/main")
ELSEWHERE = Handle("elsewhere_admin", "books_e", "mysql:2222", "MySQLServer team-b/own")
DOWN = Handle("down_admin", "books_d", None, "MySQLServer team-c/down")


async def test_the_admin_of_a_server_resource_on_the_same_server_is_reserved() -> None:
    reservations = Known(TENANTS, PLATFORM, ELSEWHERE, DOWN)
    assert await reservations.refusal(TENANTS, "platform_admin", []) == Refusal(
        "ReservedAccount",
        "the admin account of MySQLServer platform/main (which reaches the same server) is reserved: "
        "never managed",
    )
    refused = await reservations.refusal(TENANTS, "app", grants("app", "BOOKS_P").privileges)
    assert refused == Refusal(
        "PrivilegeNotAllowed",
        "grants on the bookkeeping schema of MySQLServer platform/main (which reaches the same server) are "
        "not allowed: never managed",
    )
    # Its own admin is the guard's own rule; another server's admin is an ordinary name there.
    assert await reservations.refusal(TENANTS, "tenants_admin", []) is None
    assert await reservations.refusal(TENANTS, "elsewhere_admin", grants("books_e").privileges) is None
    assert await reservations.refusal(TENANTS, "app", grants("app").privileges) is None


async def test_a_server_that_cannot_say_which_it_is_is_taken_for_the_same_and_retried() -> None:
    refused = await Known(TENANTS, DOWN).refusal(TENANTS, "down_admin", [])
    assert refused is not None
    assert (refused.reason, refused.retry) == ("ReservedAccount", True)
    assert "cannot be asked which server it reaches (it may be this one)" in refused.message
    # ... and the other way round: the resource's own server down.
    refused = await Known(DOWN, TENANTS).refusal(DOWN, "tenants_admin", [])
    assert refused is not None
    assert refused.retry


async def test_the_registry_reserves_the_admins_names_and_the_guard_their_schemas() -> None:
    reservations = Known(TENANTS, PLATFORM)
    assert await reservations.reserved(TENANTS, "account", "platform_admin") == Refusal(
        "ReservedAccount",
        "the admin account of MySQLServer platform/main (which reaches the same server) is reserved: "
        "never managed",
    )
    assert await reservations.reserved(TENANTS, "role", "tenants_admin") == Refusal(
        "ReservedAccount", "the admin account of ClusterMySQLServer shared is reserved: never managed"
    )
    guard = Guard([], "dbuser_operator", reservations)
    assert await guard.server_refusal(TENANTS, grants("books_p").privileges) == Refusal(
        "PrivilegeNotAllowed",
        "grants on the bookkeeping schema of MySQLServer platform/main (which reaches the same server) are "
        "not allowed: never managed",
    )
    assert await guard.server_refusal(None, grants("books_p").privileges) is None
