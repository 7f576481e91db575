"""What a DatabaseUser says of a role of spec.roles it cannot be granted: RoleNotReady (a wait, Progressing
for Argo CD) while the DatabaseRole exists and owns its MySQL role but is not Ready, and the user gets the
role as soon as it is; RoleNotFound (Degraded) while a named DatabaseRole is missing, also when another
named role is only not Ready. Checked on the grant tables, not only in status."""

from __future__ import annotations

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.operator.support.builders import database_role, database_user, unique
from tests.integration.operator.support.kube import create_secret, ready, wait_for_ready, wait_role_ready
from tests.integration.operator.support.mysql import mysql_query, privileges_of, role_host, roles_of
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration


async def test_a_role_not_ready_is_waited_for_and_granted_once_ready(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    role, database = unique("waited"), unique("waitdb").replace("-", "")
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    good = [{"privileges": ["SELECT"], "database": database}]
    await kube_client.create(DATABASE_ROLES, database_role(role, privileges=good), namespace)
    await wait_role_ready(kube_client, namespace, role)
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    holder = unique("holder")
    await kube_client.create(DATABASE_USERS, database_user(holder, "pw", roles=[role]), namespace)
    await wait_for_ready(kube_client, namespace, holder, limit=60)
    assert roles_of(mysql, holder) == {role}

    # The role's spec now names a schema the operator never grants on: it stays ours (it owns its MySQL
    # role, whose privileges are unchanged), but is not Ready.
    refused = {"spec": {"privileges": [{"privileges": ["SELECT"], "database": "mysql"}]}}
    await kube_client.patch(DATABASE_ROLES, role, refused, PatchType.MERGE, namespace=namespace)
    await wait_role_ready(kube_client, namespace, role, "False", "PrivilegeNotAllowed")
    assert privileges_of(mysql, role, role_host(mysql)) == {(database, "*", "SELECT", False)}

    # The holder waits, and keeps the role (neither granted nor revoked); a new user waits, granted nothing;
    # a user naming a missing role as well is RoleNotFound, which needs its action, naming both.
    newcomer, mixed, gone = unique("newcomer"), unique("mixed"), unique("gone")
    await kube_client.create(DATABASE_USERS, database_user(newcomer, "pw", roles=[role]), namespace)
    await kube_client.create(DATABASE_USERS, database_user(mixed, "pw", roles=[role, gone]), namespace)
    waiting = f"waiting for role {role} (DatabaseRole {role} is not Ready: PrivilegeNotAllowed)"
    for user in (holder, newcomer):
        obj = await wait_for_ready(
            kube_client, namespace, user, "False", "RoleNotReady", limit=60, containing=waiting
        )
        assert ready(obj)["message"] == f"'{user}'@'%': {waiting}"  # type: ignore[index]
    obj = await wait_for_ready(kube_client, namespace, mixed, "False", "RoleNotFound", limit=60)
    message = ready(obj)["message"]  # type: ignore[index]
    assert f"missing role {gone} (no DatabaseRole {gone} in namespace {namespace}" in message, message
    assert waiting in message, message
    assert roles_of(mysql, holder) == {role}
    assert roles_of(mysql, newcomer) == set()
    assert roles_of(mysql, mixed) == set()

    # The cause fixed: the role is Ready again, which re-queues its users: both are Ready and hold it; the
    # one naming a missing role is granted this one and still says the other is missing.
    await kube_client.patch(
        DATABASE_ROLES, role, {"spec": {"privileges": good}}, PatchType.MERGE, namespace=namespace
    )
    await wait_role_ready(kube_client, namespace, role)
    for user in (holder, newcomer):
        await wait_for_ready(kube_client, namespace, user, limit=60)
        assert roles_of(mysql, user) == {role}

    async def granted_and_still_missing() -> bool:
        obj = await kube_client.get(DATABASE_USERS, mixed, namespace)
        condition = ready(obj) or {}
        assert (condition.get("status"), condition.get("reason")) == ("False", "RoleNotFound"), condition
        assert condition["message"] == (
            f"'{mixed}'@'%': missing role {gone} (no DatabaseRole {gone} in namespace {namespace} served by "
            "this operator)"
        ), condition
        assert roles_of(mysql, mixed) == {role}
        return True

    await eventually(granted_and_still_missing, limit=60, interval=0.1, message=f"{mixed} never got {role}")
    mysql_query(mysql, f"DROP DATABASE `{database}`")


async def test_a_missing_role_is_still_not_found(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    user, gone = unique("lonely"), unique("gone")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(user, "pw", roles=[gone]), namespace)
    obj = await wait_for_ready(kube_client, namespace, user, "False", "RoleNotFound", limit=60)
    assert ready(obj)["message"] == (  # type: ignore[index]
        f"'{user}'@'%': missing role {gone} (no DatabaseRole {gone} in namespace {namespace} served by this "
        "operator)"
    )
    assert roles_of(mysql, user) == set()
