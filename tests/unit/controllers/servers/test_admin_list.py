"""The admins of the server resources, resolved once and again after any change of what they are built from:
a server resource added, changed or deleted, a Secret one names changed (before the server controller
rebuilds its handle), a handle rebuilt or forgotten, a change during a build. A Secret no server names
rebuilds nothing; a server whose Secret is missing is tried again at every check."""

from __future__ import annotations

import base64
from typing import Any, cast

import pytest
from pydantic import SecretStr

from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    MYSQL_SERVERS,
    SERVER_SECRET_INDEX,
)
from dbuser_operator.controllers.servers.admin_list import FLAGS_SERVER, AdminIndex, AdminList
from dbuser_operator.controllers.servers.connection import referenced_secrets
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import SECRETS, ObjectKey
from tests.unit.controllers.servers.test_server_registry import DEFAULTS, made


def secret(name: str, version: str, namespace: str = "team-a", **data: str) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
    meta = {"name": name, "namespace": namespace, "resourceVersion": version}
    return {"metadata": meta, "data": encoded}


def server(name: str, version: str, *, admin: str = "admin", schema: str | None = None) -> dict[str, Any]:
    credentials = {"user": {"name": admin, "key": "user"}, "password": {"name": admin, "key": "password"}}
    spec: dict[str, Any] = {"host": "db", "credentials": credentials}
    if schema is not None:
        spec["bookkeepingSchema"] = schema
    meta = {"name": name, "namespace": "team-a", "resourceVersion": version, "generation": int(version)}
    return {"metadata": meta, "spec": spec}


class Caches:
    """The server and Secret caches, a registry reading its Secrets from the latter, and the list."""

    def __init__(self, default: ServerHandle | None = None) -> None:
        made.calls = []  # type: ignore[attr-defined]
        self.secrets = Informer(cast(KubeClient, None), SECRETS)
        self.servers = Informer(cast(KubeClient, None), MYSQL_SERVERS)
        cluster = Informer(cast(KubeClient, None), CLUSTER_MYSQL_SERVERS)
        for informer in (self.servers, cluster):
            informer.add_index(SERVER_SECRET_INDEX, referenced_secrets("ops"))
        self.reads = 0
        self.registry = ServerRegistry(default, DEFAULTS, self.read, made)
        self.resolver = ServerResolver(self.registry, self.servers, cluster)
        self.list = AdminList(self.resolver, self.secrets)

    async def read(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads += 1
        return self.secrets.get(ObjectKey(namespace, name))

    async def users(self) -> dict[str, tuple[str, str]]:
        return {admin.server: (admin.user, admin.schema) for admin in await self.list.admins()}


@pytest.fixture
def caches() -> Caches:
    found = Caches()
    found.secrets._put(secret("admin", "1", user="dba", password="pw"))
    found.servers._put(server("main", "1"))
    return found


async def test_the_list_is_built_once_while_nothing_changes(caches: Caches) -> None:
    assert await caches.users() == {"MySQLServer team-a/main": ("dba", "dbuser_operator")}
    assert caches.list.builds == 1
    await caches.users()  # the first build made the registry's handle: a change, built again once
    reads, builds = caches.reads, caches.list.builds
    for _ in range(5):
        assert await caches.users() == {"MySQLServer team-a/main": ("dba", "dbuser_operator")}
    assert caches.list.builds == builds == 2
    assert caches.reads == reads  # no Secret read again


async def test_a_server_added_changed_or_deleted_is_seen_at_the_next_check(caches: Caches) -> None:
    await caches.users()
    caches.secrets._put(secret("other", "1", user="other_dba", password="pw"))
    caches.servers._put(server("second", "1", admin="other"))
    assert (await caches.users())["MySQLServer team-a/second"] == ("other_dba", "dbuser_operator")
    caches.servers._put(server("second", "2", admin="other", schema="books"))
    assert (await caches.users())["MySQLServer team-a/second"] == ("other_dba", "books")
    gone = caches.servers.store.remove(ObjectKey("team-a", "second"))
    assert gone is not None
    caches.servers._dispatch_delete(gone)
    assert await caches.users() == {"MySQLServer team-a/main": ("dba", "dbuser_operator")}


async def test_a_changed_admin_secret_is_seen_before_the_server_controller_rebuilds_the_handle(
    caches: Caches,
) -> None:
    """The admin account's name is in a Secret: a new name is reserved as soon as the Secret cache has it
    (no reconcile of the server resource in between)."""
    first = await caches.list.admins()
    caches.secrets._put(secret("admin", "2", user="new_dba", password="pw"))
    second = await caches.list.admins()
    assert [admin.user for admin in second] == ["new_dba"]
    assert second[0].handle is not first[0].handle  # rebuilt from the new Secret, as the registry holds it
    assert caches.registry.cached("MySQLServer/team-a/main") is second[0].handle


async def test_a_secret_no_server_names_rebuilds_nothing(caches: Caches) -> None:
    await caches.users()
    await caches.users()
    builds = caches.list.builds
    caches.secrets._put(secret("app-password", "1", password="x"))
    caches.secrets._put(secret("admin", "1", namespace="team-b", user="x", password="x"))
    await caches.users()
    assert caches.list.builds == builds
    caches.secrets._put(secret("admin", "2", user="dba", password="pw"))  # named, even unchanged
    await caches.users()
    assert caches.list.builds == builds + 1


async def test_a_server_whose_secret_is_missing_is_tried_at_every_check(caches: Caches) -> None:
    caches.servers._put(server("second", "1", admin="later"))
    assert await caches.users() == {"MySQLServer team-a/main": ("dba", "dbuser_operator")}
    reads = caches.reads
    await caches.users()
    assert caches.reads > reads  # tried again
    caches.secrets.store.put(secret("later", "1", user="late_dba", password="pw"))  # no event: tried anyway
    assert (await caches.users())["MySQLServer team-a/second"] == ("late_dba", "dbuser_operator")


async def test_a_change_during_a_build_makes_the_next_check_build_again(caches: Caches) -> None:
    read = caches.read

    async def read_and_change(namespace: str, name: str) -> dict[str, Any] | None:
        found = await read(namespace, name)
        if caches.servers.get(ObjectKey("team-a", "late")) is None:
            caches.servers._put(server("late", "1"))  # while the list is being built
        return found

    caches.registry.read_secret = read_and_change
    await caches.users()
    assert "MySQLServer team-a/late" in await caches.users()


async def test_the_flags_server_comes_first_and_a_forgotten_handle_rebuilds(caches: Caches) -> None:
    settings = ConnectionSettings(host="db", user="flags_dba", password=SecretStr("pw"))
    default = ServerHandle(Database(settings), "flags_books")
    with_default = Caches(default)
    with_default.secrets._put(secret("admin", "1", user="dba", password="pw"))
    with_default.servers._put(server("main", "1"))
    admins = await with_default.list.admins()
    assert (admins[0].server, admins[0].user, admins[0].handle) == (FLAGS_SERVER, "flags_dba", default)
    handle = admins[1].handle
    await with_default.registry.forget("MySQLServer/team-a/main")
    builds = with_default.list.builds
    assert (await with_default.list.admins())[1].handle is not handle
    assert with_default.list.builds == builds + 1


async def test_the_same_list_while_nothing_changes_indexed_in_its_order(caches: Caches) -> None:
    caches.secrets._put(secret("other", "1", user="dba", password="pw"))
    caches.servers._put(server("second", "1", admin="other", schema="Books"))
    await caches.list.admins()
    first = await caches.list.admins()
    assert await caches.list.admins() is first  # one index serves every check meanwhile
    index = AdminIndex.of(first)
    assert [admin.server for admin in index.named("dba")] == [admin.server for admin in first]
    assert [admin.server for admin in index.with_schemas({"books", "dbuser_operator"})] == [
        admin.server for admin in first
    ]
    assert [admin.server for admin in index.with_schemas({"books"})] == ["MySQLServer team-a/second"]
    assert index.named("nobody") == []
    assert index.with_schemas({"nothing"}) == []
    caches.servers._put(server("second", "2", admin="other"))
    assert await caches.list.admins() is not first
