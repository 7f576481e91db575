"""A hostile tenant against another tenant on a shared server: every field that names something — the user,
the host, roles, the server, Secrets, databases, a DatabaseRole's role — pointed at tenant B's objects by
tenant A, who may write only in its own namespace. Each attempt is refused where A looks (Ready=False, a
reason naming why) and B's accounts, roles, grants and logins are exactly as before."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import KIND
from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    MYSQL_SERVERS,
)
from dbuser_operator.runtime.client import PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.servers import test_server_policy
from tests.integration.operator.servers.test_server_policy import Tenancy, escaped, snapshot
from tests.integration.operator.support.builders import server_object, server_spec, unique
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    ready,
    secret_exists,
    wait_for_ready,
    wait_for_secret,
    wait_role_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import (
    can_log_in,
    is_mariadb,
    mysql_query,
    privileges_of,
    role_host,
)
from tests.integration.operator.support.operator import PasswordLedger

pytestmark = pytest.mark.integration

shared_tenancy = test_server_policy.tenancy  # the policy tests' fixture, under this name here

POLICY: dict[str, Any] = {"databases": ["{namespace}_*"], "privileges": ["SELECT", "UPDATE"]}


@dataclass
class Victim:
    """Tenant B: a namespace the same policy entry admits, with a Ready user and a Ready role."""

    namespace: str
    user: str
    password: str
    role: str
    server: str  # a MySQLServer in B's namespace


@pytest.fixture
async def victim(
    shared_tenancy: Tenancy, kube_api: client.ApiClient, passwords: PasswordLedger
) -> AsyncIterator[Victim]:
    env = shared_tenancy
    await env.set_policy(**POLICY)
    core = client.CoreV1Api(kube_api)
    namespace = f"victim-{uuid.uuid4().hex[:6]}"
    meta = client.V1ObjectMeta(name=namespace, labels={env.label: "tenant"})
    await core.create_namespace(client.V1Namespace(metadata=meta), _request_timeout=30)
    password = passwords.new()
    await create_secret(env.kube, namespace, "pw", {"password": password})
    await create_secret(env.kube, namespace, "b-only", {"password": passwords.new()})
    user, role = unique("b-app"), unique("b-role")
    app = [{"database": f"{namespace}_app", "privileges": ["SELECT"]}]
    await env.kube.create(DATABASE_USERS, env.user(user, privileges=app), namespace)
    await env.kube.create(DATABASE_ROLES, env.role(role, privileges=app), namespace)
    await wait_for_ready(env.kube, namespace, user, limit=60)
    await wait_role_ready(env.kube, namespace, role, "True", "RoleReady")
    await admin_secrets(env.kube, namespace, env.mysql, "admin")
    server = server_object(KIND, "b-server", server_spec(env.mysql, "admin", env.schema))
    await env.kube.create(MYSQL_SERVERS, server, namespace)
    yield Victim(namespace, user, password, role, "b-server")
    for resource in (DATABASE_USERS, DATABASE_ROLES):
        for obj in (await env.kube.list(resource, namespace))["items"]:
            await env.kube.delete(resource, obj["metadata"]["name"], namespace)
    await asyncio.sleep(1)
    await env.kube.delete(MYSQL_SERVERS, "b-server", namespace)
    await core.delete_namespace(namespace, _request_timeout=30)


async def attempt(
    env: Tenancy, obj: dict[str, Any], reason: str, expected: str, *, role: bool = False
) -> None:
    """Tenant A creates ``obj``: refused with ``reason`` and ``expected`` in the message; then deleted.

    Waited for with ``expected``: after a change of the server (its policy, its endpoints) the operator's
    cache may hold it as it was a moment longer, and refuse with the same reason in other words."""
    name = obj["metadata"]["name"]
    resource = DATABASE_ROLES if role else DATABASE_USERS
    await env.kube.create(resource, obj, env.tenant)
    if role:
        found = await wait_role_ready(env.kube, env.tenant, name, "False", reason, containing=expected)
    else:
        found = await wait_for_ready(
            env.kube, env.tenant, name, "False", reason, limit=60, containing=expected
        )
    condition = ready(found)
    assert condition is not None
    assert expected in condition["message"], condition["message"]
    await env.kube.delete(resource, name, env.tenant)
    await wait_until_gone(env.kube, env.tenant, name, limit=60, resource=resource)


async def test_every_name_a_tenant_gives_stays_inside_its_bounds(
    shared_tenancy: Tenancy, victim: Victim
) -> None:
    env, b = shared_tenancy, victim
    names = {b.user, b.role}
    before = snapshot(env, names)
    b_privileges = privileges_of(env.mysql, b.user)
    assert b_privileges == {(escaped(f"{b.namespace}_app"), "*", "SELECT", False)}
    mine = [{"database": f"{env.tenant}_app", "privileges": ["SELECT"]}]

    # spec.user: B's account, with and without the adopt annotation.
    await attempt(
        env, env.user(unique("a-same"), user=b.user, privileges=mine), "AccountClaimed", "is managed by"
    )
    adopt = env.user(unique("a-adopt"), user=b.user, privileges=mine)
    adopt["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await attempt(env, adopt, "AccountClaimed", "is managed by")
    # spec.host: B's user name on a more specific host would capture B's logins from there.
    shadow = env.user(unique("a-host"), user=b.user, host="127.0.0.1", privileges=mine)
    await attempt(env, shadow, "UserNameTaken", f"'{b.user}'@'%' (a DatabaseUser of another namespace)")
    # spec.hosts: B's account among several hosts, or B's user name on other hosts only.
    for hosts in (["%"], ["127.0.0.1"]):
        several = env.user(unique("a-hosts"), user=b.user, host="10.1.2.%", hosts=hosts, privileges=mine)
        await attempt(env, several, "UserNameTaken", f"'{b.user}'@'%' (a DatabaseUser of another namespace)")
    # spec.roles: B's DatabaseRole is not A's (roles name DatabaseRoles of A's own namespace).
    await attempt(env, env.user(unique("a-role"), roles=[b.role], privileges=mine), "RoleNotFound", b.role)
    # A DatabaseRole naming B's role, or B's account, as its MySQL role.
    await attempt(
        env, env.role(unique("a-r1"), role=b.role, privileges=mine), "RoleClaimed", "is managed by", role=True
    )
    if not is_mariadb(env.mysql):  # MariaDB keeps roles apart from accounts: a role of that name is another
        on_account = env.role(unique("a-r2"), role=b.user, privileges=mine)
        await attempt(env, on_account, "RoleExists", "already exists", role=True)
        on_account = env.role(unique("a-r3"), role=b.user, privileges=mine)
        on_account["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await attempt(env, on_account, "RoleClaimed", "is the account of", role=True)
    # spec.serverRef: B's MySQLServer is looked up in A's namespace, for a user and for a role.
    other_server = env.user(unique("a-srv"), privileges=mine)
    other_server["spec"]["serverRef"] = {"kind": KIND, "name": b.server}
    await attempt(env, other_server, "ServerNotFound", b.server)
    role_server = env.role(unique("a-r4"), privileges=mine)
    role_server["spec"]["serverRef"] = {"kind": KIND, "name": b.server}
    await attempt(env, role_server, "ServerNotFound", b.server, role=True)
    # spec.password: a Secret only B has is looked up in A's namespace.
    secret = env.user(unique("a-sec"), privileges=mine)
    secret["spec"]["password"] = {"name": "b-only", "key": "password"}
    await attempt(env, secret, "SecretNotFound", f"Secret {env.tenant}/b-only not found")
    # Grants on B's database, for a user and for a role.
    theirs = [{"database": f"{b.namespace}_app", "privileges": ["SELECT"]}]
    await attempt(env, env.user(unique("a-db"), privileges=theirs), "PolicyViolation", "is outside")
    await attempt(
        env, env.role(unique("a-r5"), privileges=theirs), "PolicyViolation", "is outside", role=True
    )

    assert snapshot(env, names) == before
    # Nothing of A's attempts is left in MySQL: no account or role of its own names, no grant on B's data.
    left = mysql_query(env.mysql, "SELECT User, Host FROM mysql.user WHERE User LIKE 'a-%%'")
    assert left == [], left
    grantees = mysql_query(
        env.mysql,
        "SELECT GRANTEE FROM information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA = %s",
        escaped(f"{b.namespace}_app"),
    )
    assert {str(row[0]) for row in grantees} == {f"'{b.user}'@'%'", f"'{b.role}'@'{role_host(env.mysql)}'"}
    assert privileges_of(env.mysql, b.user) == b_privileges
    assert can_log_in(env.mysql, b.user, b.password)
    obj = await env.kube.get(DATABASE_USERS, b.user, b.namespace)
    assert ready(obj)["status"] == "True"  # type: ignore[index]


async def test_a_tenants_endpoint_and_connection_secret_names_stay_inside_its_bounds(
    shared_tenancy: Tenancy, victim: Victim, passwords: PasswordLedger
) -> None:
    """spec.connectionSecret.endpoint selects among the endpoints of the server the policy lets the tenant
    use, never another server's; a renamed connection Secret's cleanup never deletes a Secret the
    DatabaseUser does not own."""
    env, b = shared_tenancy, victim
    mine = [{"database": f"{env.tenant}_app", "privileges": ["SELECT"]}]
    shared = {"spec": {"endpoints": [{"name": "shared", "host": env.mysql.host, "port": env.mysql.port}]}}
    await env.kube.patch(CLUSTER_MYSQL_SERVERS, env.server, shared, PatchType.MERGE)
    private = {"spec": {"endpoints": [{"name": "b-only", "host": "b-private.databases.svc"}]}}
    await env.kube.patch(MYSQL_SERVERS, b.server, private, PatchType.MERGE, namespace=b.namespace)
    try:
        # An endpoint only B's server has: not found on A's server, whose endpoints alone are named.
        other = env.user(
            unique("a-ep"), privileges=mine, connectionSecret={"name": "a-ep", "endpoint": "b-only"}
        )
        expected = f"ClusterMySQLServer {env.server} has no endpoint b-only (its endpoints: shared)"
        await attempt(env, other, "EndpointNotFound", expected)
        assert not await secret_exists(env.kube, env.tenant, "a-ep")

        # A connection Secret named over a Secret someone else made, then renamed: that Secret stays.
        foreign = await create_secret(env.kube, env.tenant, "theirs-db", {"config": "x"})
        name = unique("a-rename")
        obj = env.user(name, privileges=mine, connectionSecret={"name": "theirs-db"})
        await env.kube.create(DATABASE_USERS, obj, env.tenant)
        await wait_for_ready(env.kube, env.tenant, name, "False", "SecretNotOwned", limit=60)
        patch = {"spec": {"connectionSecret": {"name": "a-own-db"}}}
        await env.kube.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=env.tenant)
        await wait_for_secret(env.kube, env.tenant, "a-own-db")
        await wait_for_ready(env.kube, env.tenant, name, limit=60)
        kept = await env.kube.get(SECRETS, "theirs-db", env.tenant)
        assert kept["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]
        await env.kube.delete(DATABASE_USERS, name, env.tenant)
        await wait_until_gone(env.kube, env.tenant, name, limit=60)
        assert await secret_exists(env.kube, env.tenant, "theirs-db")
    finally:
        none = {"spec": {"endpoints": None}}
        await env.kube.patch(CLUSTER_MYSQL_SERVERS, env.server, none, PatchType.MERGE)
        await env.kube.patch(MYSQL_SERVERS, b.server, none, PatchType.MERGE, namespace=b.namespace)
    assert can_log_in(env.mysql, b.user, b.password)


def forged_owner(namespace: str, name: str) -> str:
    """A comment that would close its JSON string and name another owner, were it pasted into the JSON."""
    owner = json.dumps({"namespace": namespace, "name": name})
    return '"}, "dbuser-operator.dev/owner": ' + owner + ', "x": {"'


async def test_a_tenants_comment_forges_no_owner(shared_tenancy: Tenancy, victim: Victim) -> None:
    """spec.comment is free text a tenant writes: on B's account it changes nothing (AccountClaimed, or
    CommentNotSupported on MariaDB, before any SQL); on A's own account it is one JSON string next to A's
    owner entry, whatever it contains; 64 KiB is refused at admission."""
    env, b = shared_tenancy, victim
    before = snapshot(env, {b.user})
    mine = [{"database": f"{env.tenant}_app", "privileges": ["SELECT"]}]
    forged = forged_owner(b.namespace, b.user)
    mariadb = is_mariadb(env.mysql)

    claim = env.user(unique("a-note"), user=b.user, privileges=mine, comment=forged)
    claim["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    if mariadb:
        await attempt(env, claim, "CommentNotSupported", "MariaDB has no account comments")
    else:
        await attempt(env, claim, "AccountClaimed", "is managed by")
    assert snapshot(env, {b.user}) == before  # B's mysql.user row, attributes included, and bookkeeping

    own = unique("a-own")
    await env.kube.create(DATABASE_USERS, env.user(own, privileges=mine, comment=forged), env.tenant)
    if mariadb:
        await wait_for_ready(env.kube, env.tenant, own, "False", "CommentNotSupported", limit=60)
    else:
        obj = await wait_for_ready(env.kube, env.tenant, own, limit=60)
        rows = mysql_query(
            env.mysql, "SELECT ATTRIBUTE FROM information_schema.USER_ATTRIBUTES WHERE USER = %s", own
        )
        attributes = json.loads(rows[0][0])
        assert attributes["dbuser-operator.dev/owner"] == {
            "managedBy": "dbuser-operator",
            "namespace": env.tenant,
            "name": own,
            "uid": obj["metadata"]["uid"],
        }
        assert attributes["comment"] == forged  # one string, whatever it holds
        # Besides: the operator's own records of the password it set (never the tenant's text).
        records = {"dbuser-operator.dev/fingerprint", "dbuser-operator.dev/credential"}
        assert set(attributes) - {"dbuser-operator.dev/owner", "comment"} <= records, attributes
        assert forged not in json.dumps({key: attributes[key] for key in records & set(attributes)})
    await env.kube.delete(DATABASE_USERS, own, env.tenant)
    await wait_until_gone(env.kube, env.tenant, own, limit=60)

    with pytest.raises(ApiException) as refused:
        await env.kube.create(DATABASE_USERS, env.user(unique("a-big"), comment="x" * 65536), env.tenant)
    assert refused.value.status == 422
    assert "spec.comment" in str(refused.value.body)
    assert snapshot(env, {b.user}) == before
