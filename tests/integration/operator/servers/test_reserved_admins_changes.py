"""The reservations follow every change of the server resources at once: the list of admins the operator keeps
(:mod:`dbuser_operator.controllers.servers.admin_list`) is never older than the caches. A tenant's
DatabaseUser, its passes already run (so the list is built) and held before any SQL by its missing password
Secret, names an account that becomes another server resource's admin, or grants on a schema that becomes
another's bookkeeping schema; then its Secret appears and it is reconciled. Whatever made the name reserved
— the platform's admin Secret rewritten (before the server controller rebuilds its connection: the tenant's
Secret comes later in the same watch), a new MySQLServer, a changed ``bookkeepingSchema`` — the resource is
refused, and the account keeps its rows in the grant tables, its password and its open session."""

from __future__ import annotations

import base64
import contextlib
import uuid
from typing import Any

import pymysql
import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import KIND
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.runtime.client import PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.databaserole.test_roles import alive, session_of
from tests.integration.operator.servers.test_reserved_admins import (
    Platform,
    checked_again,
    platform,
    refused_books,
)
from tests.integration.operator.servers.test_server_policy import BOUNDS, Tenancy, snapshot, tenancy
from tests.integration.operator.servers.test_servers import wait_for_server
from tests.integration.operator.support.builders import server_object, server_spec, unique
from tests.integration.operator.support.kube import create_secret, ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger
from tests.integration.operator.support.wait import becomes

pytestmark = pytest.mark.integration

__all__ = ["platform", "tenancy"]  # the fixtures, imported for the tests below


def new_admin(env: Tenancy, passwords: PasswordLedger) -> tuple[str, str]:
    """An account with every privilege on the tenants' server, that no server resource names yet."""
    name, password = f"nadm_{uuid.uuid4().hex[:6]}", passwords.new()
    mysql_query(env.mysql, f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", password)
    mysql_query(env.mysql, f"GRANT ALL ON *.* TO '{name}'@'%' WITH GRANT OPTION")
    return name, password


def admin_data(env: Tenancy, user: str, password: str) -> dict[str, str]:
    data = {"user": user, "password": password}
    if env.mysql.ca_file is not None:
        data["ca.crt"] = env.mysql.ca_file.read_text()
    return data


async def held_grab(env: Tenancy, name: str, **spec: Any) -> None:
    """The tenant's DatabaseUser ``name`` (adopting), its password Secret ``<name>-pw`` not there yet:
    each pass asks for the reservations, then stops at the password, before any SQL."""
    obj = env.user(name, **spec)
    obj["spec"]["password"] = {"name": f"{name}-pw", "key": "password"}
    obj["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await env.kube.create(DATABASE_USERS, obj, env.tenant)
    await wait_for_ready(env.kube, env.tenant, name, "False", "SecretNotFound", limit=60)


async def release(env: Tenancy, name: str, passwords: PasswordLedger) -> None:
    """The held DatabaseUser's password Secret appears: it is reconciled again."""
    await create_secret(env.kube, env.tenant, f"{name}-pw", {"password": passwords.new()})


async def test_an_admin_secret_rewritten_reserves_its_new_account_at_once(
    tenancy: Tenancy, platform: Platform, passwords: PasswordLedger
) -> None:
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**BOUNDS)
    admin, password = new_admin(env, passwords)
    try:
        name = unique("grab-next")
        await held_grab(
            env, name, user=admin, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}]
        )
        before = snapshot(env, {admin})
        with contextlib.closing(session_of(env.mysql, admin, password)) as open_session:
            # The platform moves its MySQLServer to the new admin; the tenant's Secret comes after it in
            # the one watch of Secrets, so the pass it starts sees the new admin Secret in the cache.
            data = {
                key: base64.b64encode(value.encode()).decode()
                for key, value in admin_data(env, admin, password).items()
            }
            await env.kube.patch(
                SECRETS, "admin", {"data": data}, PatchType.MERGE, namespace=platform.namespace
            )
            await release(env, name, passwords)
            found = await wait_for_ready(env.kube, ns, name, "False", "ReservedAccount", limit=60)
            assert ready(found)["message"] == (  # type: ignore[index]
                f"'{admin}'@'%': the admin account of MySQLServer {platform.namespace}/{platform.server} "
                "(which reaches the same server) is reserved: never managed"
            )
            assert snapshot(env, {admin}) == before  # no claim, no grant, no password
            assert alive(open_session)
        assert can_log_in(env.mysql, admin, password, tls=env.mysql.ca_file is not None)
        await env.kube.delete(DATABASE_USERS, name, ns)
        await wait_until_gone(env.kube, ns, name, limit=60)
        assert snapshot(env, {admin}) == before
        # The server works with its new admin: the old one locked out (its sessions ended), then a check
        # made after a new generation (the Secret moved none: the Ready=True of before is still current).
        mysql_query(env.mysql, f"ALTER USER '{platform.admin}'@'%' ACCOUNT LOCK")
        for (session,) in mysql_query(
            env.mysql, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", platform.admin
        ):
            with contextlib.suppress(pymysql.err.OperationalError):  # ended meanwhile (unknown thread)
                mysql_query(env.mysql, f"KILL {int(session)}")
        await checked_again(env.kube, platform)
    finally:
        mysql_query(env.mysql, f"DROP USER IF EXISTS '{admin}'@'%'")


async def test_a_new_server_resource_reserves_its_admin_and_schema_at_once(
    tenancy: Tenancy, platform: Platform, kube_api: client.ApiClient, passwords: PasswordLedger
) -> None:
    env, ns = tenancy, tenancy.tenant
    schema = f"dbu_new_{uuid.uuid4().hex[:6]}"
    await env.set_policy(databases=["{namespace}_*", schema], privileges=["SELECT", "UPDATE"])
    admin, password = new_admin(env, passwords)
    try:
        grab, books = unique("grab-new"), unique("books-new")
        app = [{"database": f"{ns}_app", "privileges": ["SELECT"]}]
        await held_grab(env, grab, user=admin, privileges=app)
        await held_grab(env, books, privileges=[{"database": schema, "privileges": ["SELECT", "UPDATE"]}])
        before = snapshot(env, {admin, books})
        with contextlib.closing(session_of(env.mysql, admin, password)) as open_session:
            await create_secret(env.kube, platform.namespace, "second", admin_data(env, admin, password))
            body = server_object(KIND, "second", server_spec(env.mysql, "second", schema))
            body["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
            await env.kube.create(MYSQL_SERVERS, body, platform.namespace)
            await wait_for_server(env.kube, platform.namespace, "second", "True")  # in the operator's cache
            await release(env, grab, passwords)
            await release(env, books, passwords)
            found = await wait_for_ready(env.kube, ns, grab, "False", "ReservedAccount", limit=60)
            assert f"the admin account of MySQLServer {platform.namespace}/second" in str(ready(found))
            found = await wait_for_ready(env.kube, ns, books, "False", "PrivilegeNotAllowed", limit=60)
            assert f"the bookkeeping schema of MySQLServer {platform.namespace}/second" in str(ready(found))
            assert snapshot(env, {admin, books}) == before
            assert not account_exists(env.mysql, books)
            assert alive(open_session)
        for name in (grab, books):
            await env.kube.delete(DATABASE_USERS, name, ns)
            await wait_until_gone(env.kube, ns, name, limit=60)
        assert can_log_in(env.mysql, admin, password, tls=env.mysql.ca_file is not None)
    finally:
        await env.kube.delete(MYSQL_SERVERS, "second", platform.namespace)
        mysql_query(env.mysql, f"DROP USER IF EXISTS '{admin}'@'%'")
        mysql_query(env.mysql, f"DROP DATABASE IF EXISTS `{schema}`")


async def test_a_changed_bookkeeping_schema_is_reserved_at_once(
    tenancy: Tenancy, platform: Platform, passwords: PasswordLedger
) -> None:
    env = tenancy
    schema = f"dbu_moved_{uuid.uuid4().hex[:6]}"
    await env.set_policy(databases=["{namespace}_*", schema], privileges=["SELECT", "UPDATE"])
    name = unique("books-moved")
    await held_grab(env, name, privileges=[{"database": schema, "privileges": ["SELECT", "UPDATE"]}])
    try:
        patch = {"spec": {"bookkeepingSchema": schema}}
        await env.kube.patch(
            MYSQL_SERVERS, platform.server, patch, PatchType.MERGE, namespace=platform.namespace
        )
        await wait_for_server(env.kube, platform.namespace, platform.server, "True")
        await wait_until_observed(env, platform)
        await release(env, name, passwords)
        await refused_books(env, platform, name)
    finally:
        mysql_query(env.mysql, f"DROP DATABASE IF EXISTS `{schema}`")


async def wait_until_observed(env: Tenancy, platform: Platform) -> None:
    """Until the platform's MySQLServer status is written for its current generation (the operator's
    cache has that spec)."""

    async def observed() -> bool:
        obj = await env.kube.get(MYSQL_SERVERS, platform.server, platform.namespace)
        status = obj.get("status") or {}
        return bool(status.get("observedGeneration") == obj["metadata"].get("generation"))

    await becomes(observed, True, limit=60)
