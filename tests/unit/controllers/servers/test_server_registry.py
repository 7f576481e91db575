"""The server registry and serverRef resolution: Targets built from a server's spec and Secrets, rebuilt
when they change, closed when unused or gone; conditions naming the server (no server needed)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import SecretStr

from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.api.v1alpha1.mysqlserver import MySQLServerSpec
from dbuser_operator.controllers.databaseuser.indexes import account_key, named_account
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.reserved import Refusal
from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, MYSQL_SERVERS
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.servers import connection
from dbuser_operator.controllers.servers import registry as servers
from dbuser_operator.controllers.servers.connection import (
    ServerConfigError,
    ServerDefaults,
    referenced_secrets,
)
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.health import failure_reason
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.servers.resolver import NO_DEFAULT_SERVER, ServerResolver
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.mysql.errors import AccessDeniedError, DatabaseUnavailableError, MySQLError, TLSError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer

DEFAULTS = ServerDefaults(
    pool_size=16, schema="dbuser_operator", connect_timeout=2.0, read_timeout=10.0, cluster_namespace="ops"
)
PASSWORD = "admin-password-never-shown"


class RecordingDatabase(Database):
    """A Database that records being closed (it never connects here)."""

    closed = 0

    async def close(self) -> None:
        self.closed += 1
        await super().close()


class Secrets:
    """A SecretReader over a dict; counts reads."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.reads = 0

    def put(self, namespace: str, name: str, **data: str | bytes) -> None:
        encoded = {
            key: base64.b64encode(value.encode() if isinstance(value, str) else value).decode()
            for key, value in data.items()
        }
        self.objects[namespace, name] = {"metadata": {"namespace": namespace, "name": name}, "data": encoded}

    async def __call__(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads += 1
        return self.objects.get((namespace, name))


def made(settings: ConnectionSettings, schema: str) -> Database:
    made.calls.append((settings, schema))  # type: ignore[attr-defined]
    return RecordingDatabase(settings)


def spec(**extra: Any) -> MySQLServerSpec:
    credentials = {"user": {"name": "admin", "key": "user"}, "password": {"name": "admin", "key": "password"}}
    return MySQLServerSpec.model_validate(
        {"host": "db.example", "port": 3307, "credentials": credentials, **extra}
    )


def server_resource(generation: int = 1, namespace: str = "team-a", **extra: Any) -> ServerResource:
    kind = "MySQLServer" if namespace else "ClusterMySQLServer"
    return ServerResource(kind, namespace, "main", spec(**extra), generation)


@pytest.fixture
def secrets() -> Secrets:
    made.calls = []  # type: ignore[attr-defined]
    store = Secrets()
    store.put("team-a", "admin", user="root", password=PASSWORD)
    return store


@pytest.fixture
def registry(secrets: Secrets) -> ServerRegistry:
    return ServerRegistry(None, DEFAULTS, secrets, made)


async def test_a_handle_is_built_once_per_generation(registry: ServerRegistry, secrets: Secrets) -> None:
    handle = await registry.handle(server_resource())
    assert handle.key == "MySQLServer/team-a/main"
    assert handle.name == "MySQLServer team-a/main"
    assert handle.schema == "dbuser_operator"
    settings, schema = made.calls[0]  # type: ignore[attr-defined]
    assert (settings.host, settings.port, settings.user, settings.pool_size) == (
        "db.example",
        3307,
        "root",
        16,
    )
    assert settings.password.get_secret_value() == PASSWORD
    assert schema == "dbuser_operator"
    reads = secrets.reads
    assert await registry.handle(server_resource()) is handle  # no Secret read: the cache of the generation
    assert secrets.reads == reads
    assert registry.handles() == {"MySQLServer/team-a/main": handle}


async def test_a_new_generation_with_the_same_connection_keeps_the_handle(registry: ServerRegistry) -> None:
    handle = await registry.handle(server_resource())
    policy: dict[str, Any] = {"namespaces": [{"namespaceSelector": {}}]}
    assert (
        await registry.handle(server_resource(2, policy=policy)) is handle
    )  # the policy is no connection matter
    assert len(made.calls) == 1  # type: ignore[attr-defined]


async def test_a_changed_secret_rebuilds_the_handle_and_retires_the_old_pool(
    registry: ServerRegistry, secrets: Secrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = await registry.handle(server_resource())
    secrets.put("team-a", "admin", user="root", password="rotated")
    new = await registry.refresh(server_resource())
    assert new is not old
    assert new.db.settings.password.get_secret_value() == "rotated"
    assert cast(RecordingDatabase, old.db).closed == 0  # calls in flight may finish
    monkeypatch.setattr(servers, "RETIRE_AFTER", 0.0)
    secrets.put("team-a", "admin", user="root", password="again")
    newest = await registry.refresh(server_resource())
    await registry.sweep()
    assert cast(RecordingDatabase, new.db).closed == 1
    assert cast(RecordingDatabase, newest.db).closed == 0


async def test_idle_pools_are_closed_and_gone_servers_forgotten(secrets: Secrets) -> None:
    registry = ServerRegistry(None, DEFAULTS, secrets, made, idle_timeout=0.0)
    handle = await registry.handle(server_resource())
    await registry.sweep()
    assert cast(RecordingDatabase, handle.db).closed == 1
    assert registry.cached(handle.key) is handle  # kept: the next statement reopens the pool
    await registry.forget(handle.key)
    assert registry.cached(handle.key) is None
    assert cast(RecordingDatabase, handle.db).closed == 2


@pytest.mark.parametrize(
    ("change", "reason", "words"),
    [
        (
            lambda s: s.objects.pop(("team-a", "admin")),
            "SecretNotFound",
            "Secret team-a/admin does not exist",
        ),
        (lambda s: s.put("team-a", "admin", user="root"), "SecretNotFound", "has no key 'password'"),
        (lambda s: s.put("team-a", "admin", user=b"\xff", password="x"), "InvalidCredentials", "not UTF-8"),
    ],
)
async def test_a_bad_secret_is_a_reason_without_a_secret(
    registry: ServerRegistry, secrets: Secrets, change: Any, reason: str, words: str
) -> None:
    change(secrets)
    with pytest.raises(ServerConfigError) as raised:
        await registry.handle(server_resource())
    assert raised.value.reason == reason
    assert words in raised.value.message
    assert PASSWORD not in raised.value.message


async def test_a_cluster_servers_secrets_are_in_the_cluster_resource_namespace(
    registry: ServerRegistry, secrets: Secrets
) -> None:
    secrets.put("ops", "admin", user="admin", password=PASSWORD)
    handle = await registry.handle(server_resource(namespace=""))
    assert handle.key == "ClusterMySQLServer/main"
    assert handle.db.settings.user == "admin"


async def test_tls_material_lives_only_while_the_context_is_built(
    registry: ServerRegistry, secrets: Secrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder_modes: list[int] = []
    write_private = connection._write_private

    def recording(path: Path, data: bytes) -> Path:
        folder_modes.append(os.stat(path.parent).st_mode & 0o777)
        return write_private(path, data)

    monkeypatch.setattr(connection, "_write_private", recording)
    ca = CertificateAuthority("registry-test-ca")
    secrets.put("team-a", "admin", user="root", password=PASSWORD, ca=ca.cert_pem)
    tls = {"mode": "VERIFY_CA", "ca": {"name": "admin", "key": "ca"}}
    handle = await registry.handle(server_resource(tls=tls))
    assert folder_modes == [0o700]  # written where only the operator's user can read
    assert handle.db.settings.ca_file is not None
    assert not handle.db.settings.ca_file.parent.exists()  # read into the TLS context, then removed


async def test_a_server_without_tls_files_makes_no_folder(
    registry: ServerRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("a folder was made for no file (a killed process would leave it behind)")

    monkeypatch.setattr("dbuser_operator.controllers.servers.connection.tempfile.mkdtemp", refuse)
    handle = await registry.handle(server_resource())
    assert handle.db.settings.ca_file is None


async def test_a_ca_that_is_no_certificate_is_a_tls_error(registry: ServerRegistry, secrets: Secrets) -> None:
    secrets.put("team-a", "admin", user="root", password=PASSWORD, ca="not a certificate")
    with pytest.raises(ServerConfigError) as raised:
        await registry.handle(
            server_resource(tls={"mode": "VERIFY_CA", "ca": {"name": "admin", "key": "ca"}})
        )
    assert raised.value.reason == "TLSError"


def test_the_secrets_a_server_names() -> None:
    index = referenced_secrets("ops")
    obj: dict[str, Any] = {
        "metadata": {"name": "shared"},
        "spec": {
            "credentials": {"user": {"name": "admin", "key": "u"}, "password": {"name": "admin", "key": "p"}},
            "tls": {"ca": {"name": "ca", "key": "ca.crt"}, "clientCertificateSecret": "client"},
        },
    }
    assert index(obj) == ["ops/admin", "ops/ca", "ops/client"]
    obj["metadata"]["namespace"] = "team-a"
    assert index(obj) == ["team-a/admin", "team-a/ca", "team-a/client"]


def test_the_same_account_on_two_servers_is_two_index_values() -> None:
    def user(ref: dict[str, str] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"user": "app", "hosts": ["LOCALHOST"]}
        if ref is not None:
            spec["serverRef"] = ref
        return {"metadata": {"name": "x", "namespace": "team-a"}, "spec": spec}

    assert named_account(user(None)) == ["app@%", "app@localhost"]  # as before server resources
    assert named_account(user({"name": "main"})) == [
        "MySQLServer/team-a/main:app@%",
        "MySQLServer/team-a/main:app@localhost",
    ]
    on_cluster = named_account(user({"kind": "ClusterMySQLServer", "name": "main"}))
    assert on_cluster == ["ClusterMySQLServer/main:app@%", "ClusterMySQLServer/main:app@localhost"]
    assert account_key("", "app", "LocalHost") == "app@localhost"


def server(name: str, namespace: str = "team-a", **extra: Any) -> dict[str, Any]:
    credentials = {"user": {"name": "admin", "key": "user"}, "password": {"name": "admin", "key": "password"}}
    metadata = {"name": name, "namespace": namespace, "resourceVersion": "1", "generation": 1}
    return {"metadata": {**metadata, **extra}, "spec": {"host": "db", "credentials": credentials}}


def resolver(registry: ServerRegistry, *objects: dict[str, Any]) -> ServerResolver:
    namespaced = Informer(cast(KubeClient, None), MYSQL_SERVERS)
    cluster = Informer(cast(KubeClient, None), CLUSTER_MYSQL_SERVERS)
    for obj in objects:
        namespaced.store.put(obj)
    return ServerResolver(registry, namespaced, cluster)


def user_on(ref: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"serverRef": {"name": ref}} if ref else {}
    return {"metadata": {"name": "app", "namespace": "team-a"}, "spec": spec}


async def test_resolution_conditions_name_the_server(registry: ServerRegistry, tmp_path: Path) -> None:
    with pytest.raises(ConditionError) as raised:
        await resolver(registry).resolve(user_on(None))
    assert (raised.value.reason, raised.value.message) == ("ServerNotFound", NO_DEFAULT_SERVER)

    with pytest.raises(ConditionError) as raised:
        await resolver(registry).resolve(user_on("main"))
    assert raised.value.reason == "ServerNotFound"
    assert "MySQLServer team-a/main does not exist" in raised.value.message
    assert not raised.value.retry  # requeued when the server appears

    deleting = server("main", deletionTimestamp="2026-01-01T00:00:00Z")
    with pytest.raises(ConditionError) as raised:
        await resolver(registry, deleting).resolve(user_on("main"))
    assert raised.value.reason == "ServerDeleting"
    assert "MySQLServer team-a/main" in raised.value.message
    bound, handle = await resolver(registry, deleting).resolve(user_on("main"), deleting=True)
    assert bound is not None
    assert handle.key == "MySQLServer/team-a/main"  # a resource being deleted still reaches its server

    failing = server("main")
    failing["status"] = {"conditions": [{"type": "Ready", "status": "False", "message": "db:3306: down"}]}
    with pytest.raises(ConditionError) as raised:
        await resolver(registry, failing).resolve(user_on("main"))
    assert raised.value.reason == "ServerNotReady"
    assert "MySQLServer team-a/main is not ready: db:3306: down" in raised.value.message


async def test_the_default_server_without_serverref(secrets: Secrets) -> None:
    default = ServerHandle(cast(Database, None), "dbuser_operator")
    registry = ServerRegistry(default, DEFAULTS, secrets, made)
    assert await resolver(registry).resolve(user_on(None)) == (None, default)
    assert registry.handles() == {"": default}


async def test_a_server_resources_admin_and_bookkeeping_schema_are_protected() -> None:
    settings = ConnectionSettings(host="db", user="dba", password=SecretStr(PASSWORD))
    handle = ServerHandle(
        Database(settings), "books", key="MySQLServer/team-a/main", name="MySQLServer team-a/main"
    )
    plain = DatabaseUserSpec.model_validate({"password": {"name": "s", "key": "k"}})
    grants = {
        "password": {"name": "s", "key": "k"},
        "privileges": [{"database": "Books", "privileges": ["SELECT"]}],
    }
    guard = Guard([], "dbuser_operator")  # its admin's name: the registry's (tests/unit/controllers/kit)
    refusal = await guard.server_refusal(handle, DatabaseUserSpec.model_validate(grants).privileges)
    assert refusal == Refusal("PrivilegeNotAllowed", "grants on the Books schema are not allowed")
    assert await guard.server_refusal(handle, plain.privileges) is None
    default = ServerHandle(Database(settings), "books")  # the settings' server: the guard's own lists apply
    assert await guard.server_refusal(default, DatabaseUserSpec.model_validate(grants).privileges) is None


async def test_health_checks_do_not_keep_a_pool_open(secrets: Secrets) -> None:
    """refresh (the server controller's) is no use: a server no reconcile used stays idle."""
    registry = ServerRegistry(None, DEFAULTS, secrets, made, idle_timeout=60.0)
    assert registry.idle("MySQLServer/team-a/main")
    await registry.refresh(server_resource())
    registry._entries["MySQLServer/team-a/main"].used -= 120  # two idle minutes ago
    await registry.refresh(server_resource())
    assert registry.idle("MySQLServer/team-a/main")
    await registry.handle(server_resource())
    assert not registry.idle("MySQLServer/team-a/main")


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (DatabaseUnavailableError("cannot connect"), "Unreachable"),
        (AccessDeniedError("access denied"), "AccessDenied"),
        (TLSError("certificate verify failed"), "TLSError"),
    ],
)
def test_a_failed_health_check_says_why(error: MySQLError, reason: str) -> None:
    assert failure_reason(error) == reason
