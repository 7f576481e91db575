"""Adoption under a server's policy, tried as a hostile tenant would: the tenant may create DatabaseUsers,
DatabaseRoles and Secrets in its own namespace, and names a DBA's account or role with the adopt
annotation. The policy must say the namespace may adopt (allowAdoption), the name (adoptableNames), and
what the account or role holds today — its grants, the roles granted to it recursively, proxy grants, its
plugin — must be within the entry; otherwise Ready=False, AdoptionNotAllowed, naming what is beyond, and
the grant tables unchanged. An attacker logging in with the tenant's password all along never gets in.

An adoption the policy allows revokes first, sets the password last and ends the sessions the account had
open: the DBA's old session, which kept what the account lost, is gone."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymysql
import pytest

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.servers import test_server_policy
from tests.integration.operator.servers.test_server_policy import BOUNDS, Tenancy, escaped, snapshot
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import (
    create_secret,
    events_of,
    ready,
    wait_for_event,
    wait_for_ready,
    wait_role_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import (
    account_exists,
    can_log_in,
    is_mariadb,
    mysql_query,
    privileges_of,
)
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

shared_tenancy = test_server_policy.tenancy  # the policy tests' fixture, under this name here

ADOPT = {ADOPT_ANNOTATION: "true"}


class LoginLoop:
    """An attacker logging in as ``user`` with ``password`` as fast as it can, in a thread."""

    def __init__(self, mysql: MySQLServer, user: str, password: str) -> None:
        self.mysql, self.user, self.password = mysql, user, password
        self.successes = 0
        self.attempts = 0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.attempts += 1
            try:
                connection = self.mysql.connect(user=self.user, password=self.password, connect_timeout=2)
            except pymysql.err.MySQLError:
                self._stop.wait(0.02)
                continue
            self.successes += 1
            connection.close()

    @contextmanager
    def running(self) -> Iterator[LoginLoop]:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=10)


def dba_account(mysql: MySQLServer, user: str, password: str, *grants: str) -> None:
    """An account a DBA made by hand, with ``grants`` (``SELECT ON `db`.*``)."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
        for grant in grants:
            cursor.execute(f"GRANT {grant} TO '{user}'@'%'")


def drop_accounts(mysql: MySQLServer, *names: str) -> None:
    with mysql.connect() as connection, connection.cursor() as cursor:
        for name in names:
            cursor.execute(f"DROP USER IF EXISTS '{name}'@'%'")


def make_role(mysql: MySQLServer, name: str) -> str:
    """A role made by hand; its grantee literal (``'r'`` on MariaDB, ``'r'@'%'`` on MySQL)."""
    mysql_query(mysql, f"CREATE ROLE '{name}'")
    return f"'{name}'" if is_mariadb(mysql) else f"'{name}'@'%'"


def drop_roles(mysql: MySQLServer, *names: str) -> None:
    for name in names:
        mysql_query(mysql, f"DROP ROLE IF EXISTS '{name}'")


async def refused(env: Tenancy, obj: dict[str, Any], expected: str, *, role: bool = False) -> str:
    """Create ``obj`` in the tenant namespace: refused with AdoptionNotAllowed, ``expected`` in the message;
    the message.

    Waited for with ``expected``: right after the policy changed, the operator's cache of the server may
    still hold the old policy, which refuses with the same reason and other words (the server's change
    requeues the resource)."""
    name = obj["metadata"]["name"]
    await env.kube.create(DATABASE_ROLES if role else DATABASE_USERS, obj, env.tenant)
    reason = "AdoptionNotAllowed"
    if role:
        found = await wait_role_ready(env.kube, env.tenant, name, "False", reason, containing=expected)
    else:
        found = await wait_for_ready(
            env.kube, env.tenant, name, "False", reason, limit=60, containing=expected
        )
    condition = ready(found)
    assert condition is not None
    assert expected in condition["message"], condition["message"]
    return str(condition["message"])


async def delete(env: Tenancy, name: str, *, role: bool = False) -> None:
    await env.kube.delete(DATABASE_ROLES if role else DATABASE_USERS, name, env.tenant)
    resource = DATABASE_ROLES if role else DATABASE_USERS
    await wait_until_gone(env.kube, env.tenant, name, limit=60, resource=resource)


async def test_a_dbas_account_is_never_adopted_beyond_the_policy(
    shared_tenancy: Tenancy, passwords: PasswordLedger
) -> None:
    env, ns = shared_tenancy, shared_tenancy.tenant
    dba, dba_password = unique("dba"), passwords.new()
    dba_account(env.mysql, dba, dba_password, "SELECT, INSERT ON `dba_ledger`.*")
    try:
        before = snapshot(env, {dba})
        spec = {"privileges": [{"database": f"{ns}_app", "privileges": ["SELECT"]}]}
        secret = await env.kube.get(SECRETS, "pw", ns)
        tenant_password = base64.b64decode(secret["data"]["password"]).decode()
        attacker = LoginLoop(env.mysql, dba, tenant_password)
        with attacker.running():
            # The default: no adoption at all.
            obj = env.user(unique("adopt-no"), user=dba, **spec)
            obj["metadata"]["annotations"] = ADOPT
            message = await refused(env, obj, "adopting is not allowed (allowAdoption is false)")
            assert message.startswith(f"ClusterMySQLServer {env.server} policy.namespaces[0]: cannot adopt")
            await delete(env, obj["metadata"]["name"])

            # Adoption allowed, but only of the namespace's own names.
            await env.set_policy(**BOUNDS, allowAdoption=True, adoptableNames=["{namespace}_*"])
            obj = env.user(unique("adopt-name"), user=dba, **spec)
            obj["metadata"]["annotations"] = ADOPT
            await refused(
                env, obj, f"{dba} is not among the adoptable names {ns}_* (pattern {{namespace}}_*)"
            )
            await delete(env, obj["metadata"]["name"])

            # Any name: what the account holds today is beyond the entry (another database, INSERT).
            await env.set_policy(**BOUNDS, allowAdoption=True)
            obj = env.user(unique("adopt-held"), user=dba, **spec)
            obj["metadata"]["annotations"] = ADOPT
            message = await refused(env, obj, "it holds privileges on `dba_ledger`.*, outside")
            await asyncio.sleep(1.5)  # looked at again (with backoff): still refused, nothing written
            await delete(env, obj["metadata"]["name"])
        assert attacker.attempts > 10
        assert attacker.successes == 0, "the tenant's password logged in as the DBA"
        assert snapshot(env, {dba}) == before
        assert can_log_in(env.mysql, dba, dba_password)
        assert account_exists(env.mysql, dba)
    finally:
        drop_accounts(env.mysql, dba)


async def test_a_dbas_role_is_judged_on_the_roles_granted_to_it(shared_tenancy: Tenancy) -> None:
    """The outer role holds nothing itself; the role granted to it reads the DBA's data."""
    env, ns = shared_tenancy, shared_tenancy.tenant
    outer, inner, dba = unique("dba-outer"), unique("dba-inner"), unique("dba-holder")
    inner_literal = make_role(env.mysql, inner)
    outer_literal = make_role(env.mysql, outer)
    try:
        mysql_query(env.mysql, f"GRANT SELECT ON `dba_secret`.* TO {inner_literal}")
        mysql_query(env.mysql, f"GRANT {inner_literal} TO {outer_literal}")
        dba_account(env.mysql, dba, "dba-password-1", f"{outer_literal}")
        before = snapshot(env, {outer, inner, dba})
        await env.set_policy(**{**BOUNDS, "allowRoles": True}, allowAdoption=True)
        obj = env.role(outer, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}])
        obj["metadata"]["annotations"] = ADOPT
        inner_name = inner if is_mariadb(env.mysql) else f"'{inner}'@'%'"
        message = await refused(
            env, obj, f"role {inner_name} holds privileges on `dba_secret`.*, outside", role=True
        )
        assert "cannot adopt role" in message
        assert f"accounts the operator does not manage hold it: '{dba}'@'%'" in message, message
        await asyncio.sleep(1.5)
        assert snapshot(env, {outer, inner, dba}) == before
        await delete(env, outer, role=True)
        assert snapshot(env, {outer, inner, dba}) == before  # never dropped from under the DBA
    finally:
        drop_accounts(env.mysql, dba)
        drop_roles(env.mysql, outer, inner)


async def test_an_allowed_adoption_revokes_first_and_ends_the_old_sessions(
    shared_tenancy: Tenancy, passwords: PasswordLedger
) -> None:
    env, ns = shared_tenancy, shared_tenancy.tenant
    legacy, old_password = f"{ns}_legacy"[:32], passwords.new()
    app = f"{ns}_app"
    dba_account(env.mysql, legacy, old_password, f"SELECT, UPDATE ON `{app}`.*")
    try:
        old_session = env.mysql.connect(user=legacy, password=old_password)
        await env.set_policy(**BOUNDS, allowAdoption=True, adoptableNames=["{namespace}_*"])
        name = unique("adopt-ok")
        obj = env.user(name, user=legacy, privileges=[{"database": app, "privileges": ["SELECT"]}])
        obj["metadata"]["annotations"] = ADOPT
        await env.kube.create(DATABASE_USERS, obj, ns)
        await wait_for_ready(env.kube, ns, name, limit=60)
        assert privileges_of(env.mysql, legacy) == {(escaped(app), "*", "SELECT", False)}
        assert not can_log_in(env.mysql, legacy, old_password)
        with pytest.raises(pymysql.err.OperationalError), old_session.cursor() as cursor:
            cursor.execute("SELECT 1")  # ended: it kept UPDATE until then
        await wait_for_event(env.kube, ns, name, "AccountAdopted")  # a Warning: written at once

        async def sessions_ended() -> bool:
            events = await events_of(env.kube, ns, name)
            assert any("ended 1 open session(s)" in e["message"] for e in events), events
            return True

        # Normal Events may wait behind a busy queue (at most a minute).
        await eventually(sessions_ended, limit=90, interval=0.2, message="no Event says the session ended")
        await delete(env, name)
        assert not account_exists(env.mysql, legacy)  # adopted: it was ours to drop
    finally:
        drop_accounts(env.mysql, legacy)


async def wait_for_privileges(mysql: MySQLServer, user: str, count: int) -> None:
    def check() -> bool:
        held = privileges_of(mysql, user)
        assert len(held) == count, f"holds {held}"
        return True

    await eventually(check, limit=30, interval=0.1, message=f"{user} never held {count} privileges")


async def test_revoking_a_privilege_ends_the_sessions_that_kept_it(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """Any pass that takes privileges away ends the account's open sessions; granting more ends none."""
    server = mysql
    name, password = unique("revoke-ends"), passwords.new()
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": password})
    grants = [{"database": "revoke_app", "privileges": ["SELECT", "UPDATE"]}]
    await kube_client.create(DATABASE_USERS, database_user(name, f"{name}-pw", privileges=grants), namespace)
    await wait_for_ready(kube_client, namespace, name)
    session = server.connect(user=name, password=password)
    grants.append({"database": "revoke_more", "privileges": ["SELECT"]})  # more: the session stays
    await kube_client.patch(
        DATABASE_USERS, name, {"spec": {"privileges": grants}}, PatchType.MERGE, namespace=namespace
    )
    await wait_for_privileges(server, name, 3)
    with session.cursor() as cursor:
        cursor.execute("SELECT 1")
    grants[0]["privileges"] = ["SELECT"]  # less: the session, which could still UPDATE, is ended
    await kube_client.patch(
        DATABASE_USERS, name, {"spec": {"privileges": grants}}, PatchType.MERGE, namespace=namespace
    )
    await wait_for_privileges(server, name, 2)
    await asyncio.sleep(0.5)
    with pytest.raises(pymysql.err.OperationalError), session.cursor() as cursor:
        cursor.execute("SELECT 1")
    assert can_log_in(server, name, password)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
