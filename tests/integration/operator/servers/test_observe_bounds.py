"""managementPolicy Observe reads no further than the namespace could manage: an account another namespace's
DatabaseUser owns (a database another namespace's Database owns: the bound is the frame's, every kind's),
another server resource's admin, and (under a policy) an account the namespace could not adopt are refused,
with nothing of the account (or database) in status; an account within the bounds is observed."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS, DATABASES
from dbuser_operator.runtime.client import PatchType
from tests.integration.operator.servers.test_reserved_admins import Platform, platform
from tests.integration.operator.servers.test_server_policy import BOUNDS, Tenancy, tenancy
from tests.integration.operator.support.builders import database, database_user, unique
from tests.integration.operator.support.kube import (
    database_gone,
    ready,
    wait_db,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import mysql_query

pytestmark = pytest.mark.integration

__all__ = ["platform", "tenancy"]  # the fixtures, imported for the tests below


async def refused_observe(
    env: Tenancy, namespace: str, obj: dict[str, Any], reason: str, containing: str | None = None
) -> str:
    """Create the Observe resource ``obj``; it must be refused with ``reason`` (and a message ``containing``
    that text: what only the policy just set says, the operator's cache may hold the one before a moment
    longer), nothing observed in status. Its message."""
    name = obj["metadata"]["name"]
    await env.kube.create(DATABASE_USERS, obj, namespace)
    found = await wait_for_ready(env.kube, namespace, name, "False", reason, limit=60, containing=containing)
    assert not (found.get("status") or {}).get("observed"), found["status"]
    message = str(ready(found)["message"])  # type: ignore[index]
    await env.kube.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(env.kube, namespace, name, limit=60)
    return message


async def test_observe_refuses_an_account_another_namespace_owns(tenancy: Tenancy) -> None:
    """On the default server (no policy): the tenant's account, observed from another namespace."""
    env = tenancy
    victim = unique("victim")
    grant = [{"database": f"{env.tenant}_app", "privileges": ["SELECT"]}]
    await env.kube.create(
        DATABASE_USERS, database_user(victim, "pw", target=env.target, privileges=grant), env.tenant
    )
    await wait_for_ready(env.kube, env.tenant, victim, limit=60)
    spy = database_user(unique("spy"), "pw", target=env.target, user=victim, managementPolicy="Observe")
    message = await refused_observe(env, env.outsider, spy, "ObserveNotAllowed")
    assert message == f"'{victim}'@'%' is managed by a resource of another namespace: not observed"
    assert env.tenant not in message  # nothing about the owner either
    # Its own namespace may observe it.
    own = database_user(unique("own"), "pw", target=env.target, user=victim, managementPolicy="Observe")
    own["spec"]["privileges"] = grant
    await env.kube.create(DATABASE_USERS, own, env.tenant)
    found = await wait_for_ready(env.kube, env.tenant, own["metadata"]["name"], "True", "Observed", limit=60)
    assert found["status"]["observed"][0]["privileges"]
    await env.kube.delete(DATABASE_USERS, own["metadata"]["name"], env.tenant)
    await env.kube.delete(DATABASE_USERS, victim, env.tenant)
    await wait_until_gone(env.kube, env.tenant, victim, limit=60)


async def test_observe_refuses_a_database_another_namespace_owns(tenancy: Tenancy) -> None:
    """On the default server (no policy): the tenant's database, observed from another namespace, is not
    read (not even whether it exists); its own namespace may observe it."""
    env = tenancy
    name = f"victim{unique('db').replace('-', '')}"
    owned = database(unique("victim"), name=name)
    owned["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
    await env.kube.create(DATABASES, owned, env.tenant)
    await wait_db(env.kube, env.tenant, owned["metadata"]["name"], "True", "DatabaseReady")
    try:
        for namespace, status, reason in [
            (env.outsider, "False", "ObserveNotAllowed"),
            (env.tenant, "True", "Observed"),
        ]:
            spy = database(unique("spy"), name=name, managementPolicy="Observe")
            spy["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
            await env.kube.create(DATABASES, spy, namespace)
            found = await wait_db(env.kube, namespace, spy["metadata"]["name"], status, reason)
            if status == "False":
                assert ready(found)["message"] == (  # type: ignore[index]
                    f"database {name} is managed by a resource of another namespace: not observed"
                )
                assert not (found.get("status") or {}).get("name"), found["status"]
                assert not (found.get("status") or {}).get("characterSet"), found["status"]
            else:
                assert found["status"]["name"] == name
            await env.kube.delete(DATABASES, spy["metadata"]["name"], namespace)
            await database_gone(env.kube, namespace, spy["metadata"]["name"])
    finally:
        owned_name = owned["metadata"]["name"]
        patch = {"spec": {"deletionPolicy": "Delete"}}
        await env.kube.patch(DATABASES, owned_name, patch, PatchType.MERGE, namespace=env.tenant)
        await env.kube.delete(DATABASES, owned_name, env.tenant)
        await database_gone(env.kube, env.tenant, owned_name)


async def test_observe_refuses_another_server_resources_admin(tenancy: Tenancy, platform: Platform) -> None:
    env = tenancy
    await env.set_policy(**BOUNDS, allowAdoption=True)
    spy = env.user(unique("spy-admin"), user=platform.admin, managementPolicy="Observe")
    message = await refused_observe(env, env.tenant, spy, "ReservedAccount")
    assert f"the admin account of MySQLServer {platform.namespace}/{platform.server}" in message


async def test_observe_under_a_policy_is_bounded_like_adoption(tenancy: Tenancy) -> None:
    env, ns = tenancy, tenancy.tenant
    dba = f"dba_{unique('o').replace('-', '_')}"
    mysql_query(env.mysql, f"CREATE USER '{dba}'@'%%' IDENTIFIED BY %s", "Dba-pw-1234567")
    mysql_query(env.mysql, f"GRANT SELECT ON `{ns}\\_app`.* TO '{dba}'@'%'")  # '_' escaped: a database
    try:
        grant = [{"database": f"{ns}_app", "privileges": ["SELECT"]}]
        # Without allowAdoption: refused, naming the rule, showing nothing of the account.
        await env.set_policy(**BOUNDS)
        spy = env.user(unique("spy-dba"), user=dba, privileges=grant, managementPolicy="Observe")
        message = await refused_observe(env, ns, spy, "ObserveNotAllowed")
        assert message == (
            f"ClusterMySQLServer {env.server} policy.namespaces[0]: cannot observe '{dba}'@'%': "
            "adopting is not allowed (allowAdoption is false)"
        )
        # Holding more than the bounds: refused.
        mysql_query(env.mysql, f"GRANT PROCESS ON *.* TO '{dba}'@'%'")
        await env.set_policy(**BOUNDS, allowAdoption=True)
        spy = env.user(unique("spy-dba"), user=dba, privileges=grant, managementPolicy="Observe")
        held = "it holds PROCESS on *.*"  # the policy before refused with the same reason, not these words
        message = await refused_observe(env, ns, spy, "ObserveNotAllowed", held)
        assert message.startswith(f"ClusterMySQLServer {env.server} policy.namespaces[0]: cannot observe")
        assert held in message
        # Within the bounds: observed.
        mysql_query(env.mysql, f"REVOKE PROCESS ON *.* FROM '{dba}'@'%'")
        name = unique("obs-dba")
        await env.kube.create(
            DATABASE_USERS, env.user(name, user=dba, privileges=grant, managementPolicy="Observe"), ns
        )
        found = await wait_for_ready(env.kube, ns, name, "True", "Observed", limit=60)
        assert found["status"]["observed"][0]["exists"]
        await env.kube.delete(DATABASE_USERS, name, ns)
        await wait_until_gone(env.kube, ns, name, limit=60)
    finally:
        mysql_query(env.mysql, f"DROP USER IF EXISTS '{dba}'@'%'")
