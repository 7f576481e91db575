"""Two server resources on one physical server: each one's admin account and bookkeeping schema are reserved
through the other. The tenants' ClusterMySQLServer (with a policy) and the platform's MySQLServer reach the
same MySQL/MariaDB server under two host names, with two admin accounts. A tenant naming the platform's admin
(with the adopt annotation and an in-policy grant) is refused ReservedAccount, and the admin keeps its
password, privileges and login, also after the tenant's resource is deleted; grants on the platform's
bookkeeping schema are refused PrivilegeNotAllowed; a DatabaseRole of that name is refused too."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import KIND
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.operator.servers.test_server_policy import BOUNDS, Tenancy, snapshot, tenancy
from tests.integration.operator.servers.test_servers import wait_for_server, warning_event
from tests.integration.operator.support.builders import server_object, server_spec, unique
from tests.integration.operator.support.kube import (
    create_secret,
    ready,
    wait_for_ready,
    wait_role_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query, privileges_of
from tests.integration.operator.support.operator import PasswordLedger

pytestmark = pytest.mark.integration

__all__ = ["tenancy"]  # the fixture, imported for the tests below


@pytest.fixture(scope="module")
def other_mysql(envtest_workdir: Path) -> Iterator[MySQLServer]:
    """Another real server of the session's flavour, on this host (its own data directory)."""
    server = LocalMySQLServer(envtest_workdir / "reserved-other-mysql")
    server.start()
    yield server.admin
    server.stop()


@dataclass
class Platform:
    """The platform's MySQLServer on the tenants' physical server: its namespace, admin and schema."""

    namespace: str
    server: str
    admin: str
    password: str
    schema: str


def _admin_grants(mysql: MySQLServer, user: str) -> list[tuple[Any, ...]]:
    return sorted(mysql_query(mysql, f"SHOW GRANTS FOR '{user}'@'%'"))


@pytest.fixture
async def platform(
    tenancy: Tenancy, kube_api: client.ApiClient, passwords: PasswordLedger
) -> AsyncIterator[Platform]:
    """A second admin account on the same server, and a MySQLServer of the platform's namespace using it,
    reaching the server under another host name (localhost, where the tenants' says 127.0.0.1)."""
    env, suffix = tenancy, uuid.uuid4().hex[:6]
    core = client.CoreV1Api(kube_api)
    namespace, admin, password = f"plat-{suffix}", f"padm_{suffix}", passwords.new()
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    mysql_query(env.mysql, f"CREATE USER '{admin}'@'%%' IDENTIFIED BY %s", password)
    mysql_query(env.mysql, f"GRANT ALL ON *.* TO '{admin}'@'%' WITH GRANT OPTION")
    data = {"user": admin, "password": password}
    if env.mysql.ca_file is not None:
        data["ca.crt"] = env.mysql.ca_file.read_text()
    await create_secret(env.kube, namespace, "admin", data)
    schema = f"dbu_plat_{suffix}"
    spec = server_spec(env.mysql, "admin", schema)
    spec["host"] = "localhost" if env.mysql.host == "127.0.0.1" else spec["host"]
    body = server_object(KIND, "platform", spec)
    body["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
    await env.kube.create(MYSQL_SERVERS, body, namespace)
    await wait_for_server(env.kube, namespace, "platform", "True")
    yield Platform(namespace, "platform", admin, password, schema)
    await env.kube.delete(MYSQL_SERVERS, "platform", namespace)
    await core.delete_namespace(namespace, _request_timeout=30)
    mysql_query(env.mysql, f"DROP USER IF EXISTS '{admin}'@'%'")
    mysql_query(env.mysql, f"DROP DATABASE IF EXISTS `{schema}`")


async def checked_again(kube: KubeClient, platform: Platform) -> None:
    """The platform's server checked anew, and Ready: a Secret or MySQL changed moves no generation, and the
    Ready=True from before stays current until the next check (which writes nothing when nothing changed).
    A new pool size moves the generation: only a check made after it counts."""
    obj = await kube.get(MYSQL_SERVERS, platform.server, platform.namespace)
    size = 3 if obj["spec"].get("poolSize") == 2 else 2
    patch = {"spec": {"poolSize": size}}
    await kube.patch(MYSQL_SERVERS, platform.server, patch, PatchType.MERGE, namespace=platform.namespace)
    await wait_for_server(kube, platform.namespace, platform.server, "True")


async def test_a_tenant_cannot_take_over_another_server_resources_admin(
    tenancy: Tenancy, platform: Platform
) -> None:
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**BOUNDS)
    before, grants = snapshot(env, {platform.admin}), _admin_grants(env.mysql, platform.admin)
    assert before  # the admin's rows: mysql.user (and mysql.global_priv on MariaDB)
    name = unique("grab")
    obj = env.user(
        name, user=platform.admin, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}]
    )
    obj["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await env.kube.create(DATABASE_USERS, obj, ns)
    found = await wait_for_ready(env.kube, ns, name, "False", "ReservedAccount", limit=60)
    message = ready(found)["message"]  # type: ignore[index]
    assert message == (
        f"'{platform.admin}'@'%': the admin account of MySQLServer {platform.namespace}/{platform.server} "
        "(which reaches the same server) is reserved: never managed"
    )
    assert platform.password not in str(found)
    # Nothing changed: password hash, privileges, login.
    assert snapshot(env, {platform.admin}) == before
    assert _admin_grants(env.mysql, platform.admin) == grants
    assert can_log_in(env.mysql, platform.admin, platform.password, tls=env.mysql.ca_file is not None)
    # Deleting the refused resource leaves the admin.
    await env.kube.delete(DATABASE_USERS, name, ns)
    await wait_until_gone(env.kube, ns, name, limit=60)
    assert snapshot(env, {platform.admin}) == before
    assert can_log_in(env.mysql, platform.admin, platform.password, tls=env.mysql.ca_file is not None)
    # The platform's server still works with it: checked again (none of the above moved its generation, so
    # the Ready=True from before would do; a new one comes from a check made after).
    await checked_again(env.kube, platform)


async def test_a_tenant_cannot_grant_on_another_server_resources_bookkeeping_schema(
    tenancy: Tenancy, platform: Platform
) -> None:
    env, ns = tenancy, tenancy.tenant
    # Within the policy: the platform's schema is one of the namespace's databases.
    await env.set_policy(databases=["{namespace}_*", platform.schema], privileges=["SELECT", "UPDATE"])
    name = unique("books")
    obj = env.user(name, privileges=[{"database": platform.schema, "privileges": ["SELECT", "UPDATE"]}])
    await env.kube.create(DATABASE_USERS, obj, ns)
    await refused_books(env, platform, name)
    # The same name and grants on the tenants' own databases converge.
    fine = unique("fine")
    obj = env.user(fine, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}])
    await env.kube.create(DATABASE_USERS, obj, ns)
    await wait_for_ready(env.kube, ns, fine, limit=60)
    assert privileges_of(env.mysql, fine)
    await env.kube.delete(DATABASE_USERS, fine, ns)
    await wait_until_gone(env.kube, ns, fine, limit=60)


async def refused_books(env: Tenancy, platform: Platform, name: str) -> None:
    """The tenant's DatabaseUser ``name`` is refused its grants on the platform's bookkeeping schema, with
    no account made; then deleted."""
    found = await wait_for_ready(env.kube, env.tenant, name, "False", "PrivilegeNotAllowed", limit=60)
    assert ready(found)["message"] == (  # type: ignore[index]
        f"'{name}'@'%': grants on the bookkeeping schema of MySQLServer {platform.namespace}/"
        f"{platform.server} (which reaches the same server) are not allowed: never managed"
    )
    assert not account_exists(env.mysql, name)
    await env.kube.delete(DATABASE_USERS, name, env.tenant)
    await wait_until_gone(env.kube, env.tenant, name, limit=60)


async def test_a_role_named_as_another_server_resources_admin_is_refused(
    tenancy: Tenancy, platform: Platform
) -> None:
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**{**BOUNDS, "allowRoles": True})
    before = snapshot(env, {platform.admin})
    name = unique("role-grab")
    obj = env.role(
        name, role=platform.admin, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}]
    )
    obj["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await env.kube.create(DATABASE_ROLES, obj, ns)
    found = await wait_role_ready(env.kube, ns, name, "False", "ReservedAccount")
    assert f"the admin account of MySQLServer {platform.namespace}/{platform.server}" in str(ready(found))
    assert snapshot(env, {platform.admin}) == before
    await env.kube.delete(DATABASE_ROLES, name, ns)
    assert account_exists(env.mysql, platform.admin)
    assert can_log_in(env.mysql, platform.admin, platform.password, tls=env.mysql.ca_file is not None)


async def test_an_account_that_became_another_server_resources_admin_is_kept_on_deletion(
    tenancy: Tenancy, kube_api: client.ApiClient, passwords: PasswordLedger
) -> None:
    """A tenant's account, made by its DatabaseUser, later picked as the admin of a platform MySQLServer:
    the DatabaseUser is refused from then on, and deleting it forgets the account instead of dropping it."""
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**BOUNDS)
    name, password = unique("later-admin"), passwords.new()
    await create_secret(env.kube, ns, f"{name}-pw", {"password": password})
    obj = env.user(name, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}])
    obj["spec"]["password"] = {"name": f"{name}-pw", "key": "password"}
    await env.kube.create(DATABASE_USERS, obj, ns)
    await wait_for_ready(env.kube, ns, name, limit=60)
    core, platform_ns = client.CoreV1Api(kube_api), f"plat-{uuid.uuid4().hex[:6]}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=platform_ns)))
    try:
        data = {"user": name, "password": password}
        if env.mysql.ca_file is not None:
            data["ca.crt"] = env.mysql.ca_file.read_text()
        await create_secret(env.kube, platform_ns, "admin", data)
        body = server_object(
            KIND, "platform", server_spec(env.mysql, "admin", f"dbu_later_{uuid.uuid4().hex[:6]}")
        )
        body["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
        await env.kube.create(MYSQL_SERVERS, body, platform_ns)
        await wait_for_server(env.kube, platform_ns, "platform", "False", "AdminPrivilegeMissing")
        # Its next pass (any change) refuses it.
        touch = {"metadata": {"annotations": {"example.com/touch": "1"}}}
        await env.kube.patch(DATABASE_USERS, name, touch, PatchType.MERGE, namespace=ns)
        await wait_for_ready(env.kube, ns, name, "False", "ReservedAccount", limit=60)
        await env.kube.delete(DATABASE_USERS, name, ns)
        await wait_until_gone(env.kube, ns, name, limit=60)
        assert account_exists(env.mysql, name)
        assert can_log_in(env.mysql, name, password, tls=env.mysql.ca_file is not None)
        event = await warning_event(env.kube, ns, "DatabaseUser", "AccountKept")
        assert event["message"] == (
            f"'{name}'@'%' was not dropped, only forgotten: the admin account of MySQLServer "
            f"{platform_ns}/platform (which reaches the same server) is reserved: never managed"
        )
    finally:
        await env.kube.delete(MYSQL_SERVERS, "platform", platform_ns)
        await core.delete_namespace(platform_ns, _request_timeout=30)
        mysql_query(env.mysql, f"DROP USER IF EXISTS '{name}'@'%'")


async def test_the_admin_of_a_server_resource_on_another_server_is_an_ordinary_name(
    tenancy: Tenancy, other_mysql: MySQLServer, kube_api: client.ApiClient, passwords: PasswordLedger
) -> None:
    """The same admin name on another physical server (of the same flavour, on this host: MariaDB's
    @@hostname is the same, its port differs) reserves nothing on the tenants' server."""
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**BOUNDS)
    admin, password = f"oadm_{uuid.uuid4().hex[:6]}", passwords.new()
    mysql_query(other_mysql, f"CREATE USER '{admin}'@'%%' IDENTIFIED BY %s", password)
    mysql_query(other_mysql, f"GRANT ALL ON *.* TO '{admin}'@'%' WITH GRANT OPTION")
    core, platform_ns = client.CoreV1Api(kube_api), f"plat-{uuid.uuid4().hex[:6]}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=platform_ns)))
    try:
        data = {"user": admin, "password": password}
        if other_mysql.ca_file is not None:
            data["ca.crt"] = other_mysql.ca_file.read_text()
        await create_secret(env.kube, platform_ns, "admin", data)
        body = server_object(
            KIND, "other", server_spec(other_mysql, "admin", f"dbu_o_{uuid.uuid4().hex[:6]}")
        )
        body["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
        await env.kube.create(MYSQL_SERVERS, body, platform_ns)
        await wait_for_server(env.kube, platform_ns, "other", "True")
        name = unique("same-name")
        obj = env.user(name, user=admin, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}])
        await env.kube.create(DATABASE_USERS, obj, ns)
        await wait_for_ready(env.kube, ns, name, limit=60)  # a new account of that name on this server
        assert account_exists(env.mysql, admin)
        await env.kube.delete(DATABASE_USERS, name, ns)
        await wait_until_gone(env.kube, ns, name, limit=60)
        assert not account_exists(env.mysql, admin)
        assert can_log_in(other_mysql, admin, password, tls=other_mysql.ca_file is not None)
    finally:
        await env.kube.delete(MYSQL_SERVERS, "other", platform_ns)
        await core.delete_namespace(platform_ns, _request_timeout=30)
