"""A server's spec.policy end to end: one operator, a real API server and a real MySQL/MariaDB server behind a
ClusterMySQLServer with a policy. Every refusal is reported (Ready=False, PolicyViolation, naming the rule)
and leaves MySQL exactly as it was (the grant tables, mysql.user and the bookkeeping tables, compared before
and after); tightening a policy stops a Ready user without revoking anything (drift is not repaired either),
loosening it brings the user back; namespace labels are followed; a refused user is still deleted cleanly."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND, KIND
from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    MYSQL_SERVERS,
)
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.envtest.kubeconfig import current_cluster
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import NAMESPACES
from tests.conftest import Runner
from tests.integration.operator.rbac.test_chart_rbac import service_account_token, write_token_kubeconfig
from tests.integration.operator.support.builders import database_user, server_object, server_spec, unique
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    ready,
    wait_for_ready,
    wait_role_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, mysql_query, privileges_of, role_exists
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.wait import becomes
from tests.unit.chart.chart import CLUSTER_RULES, OPERATOR_RULES

pytestmark = pytest.mark.integration

GRANT_TABLES = (
    "user",
    "global_priv",
    "db",
    "tables_priv",
    "columns_priv",
    "procs_priv",
    "proxies_priv",
    "role_edges",
    "default_roles",
    "roles_mapping",
)


@dataclass
class Tenancy:
    """One operator instance, a ClusterMySQLServer with a policy, a tenant namespace it admits and one it
    does not."""

    kube: KubeClient
    mysql: MySQLServer
    target: str
    server: str
    tenant: str  # selected by policy.namespaces[0]
    outsider: str  # selected by no entry
    label: str  # the label (key) entry 0 selects the tenant by (value "tenant")
    schema: str  # the server's bookkeeping schema

    def user(self, name: str, **spec: Any) -> dict[str, Any]:
        obj = database_user(name, "pw", target=self.target, **spec)
        obj["spec"]["serverRef"] = {"kind": CLUSTER_KIND, "name": self.server}
        return obj

    def role(self, name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": DATABASE_ROLES.api_version,
            "kind": "DatabaseRole",
            "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": self.target}},
            "spec": {"serverRef": {"kind": CLUSTER_KIND, "name": self.server}, **spec},
        }

    def policy(self, **entry: Any) -> dict[str, Any]:
        """The server's policy: entry 0 selects the tenant namespace by its label, with ``entry``'s bounds."""
        selector = {"matchLabels": {self.label: "tenant"}}
        return {"namespaces": [{"namespaceSelector": selector, **entry}]}

    async def set_policy(self, **entry: Any) -> None:
        patch = {"spec": {"policy": self.policy(**entry)}}
        await self.kube.patch(CLUSTER_MYSQL_SERVERS, self.server, patch, PatchType.MERGE)


BOUNDS: dict[str, Any] = {
    "databases": ["{namespace}_*"],
    "privileges": ["SELECT", "UPDATE"],
    "allowRoles": False,
}


def snapshot(env: Tenancy, names: set[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the grant tables, mysql.user and the server's bookkeeping tables that names one of
    ``names``."""
    mysql, schema_name = env.mysql, env.schema
    existing = {
        (str(schema), str(table))
        for schema, table in mysql_query(
            mysql,
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (%s, %s)",
            "mysql",
            schema_name,
        )
    }
    tables = [("mysql", table) for table in GRANT_TABLES if ("mysql", table) in existing]
    tables += sorted(item for item in existing if item[0] == schema_name)  # the bookkeeping tables
    found: dict[str, list[tuple[Any, ...]]] = {}
    for schema, table in tables:
        rows = mysql_query(mysql, f"SELECT * FROM `{schema}`.`{table}`")
        mine = [row for row in rows if any(_text(cell) in names for cell in row)]
        if mine:
            found[f"{schema}.{table}"] = sorted(mine, key=repr)
    return found


def escaped(database: str) -> str:
    """A database as information_schema shows a database-level grant on it: '_' escaped."""
    return database.replace("_", "\\_")


def _text(cell: Any) -> str:
    return cell.decode("utf-8", "replace") if isinstance(cell, bytes | bytearray) else str(cell)


async def _namespace(core: client.CoreV1Api, name: str, labels: dict[str, str]) -> None:
    meta = client.V1ObjectMeta(name=name, labels=labels)
    await core.create_namespace(client.V1Namespace(metadata=meta), _request_timeout=30)


@pytest.fixture
async def tenancy(
    start_operator: StartOperator,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    workload_signing_ca: Path | None,
) -> AsyncIterator[Tenancy]:
    suffix = uuid.uuid4().hex[:6]
    core = client.CoreV1Api(kube_api)
    operator_ns, tenant, outsider = f"ops-{suffix}", f"team-{suffix}", f"other-{suffix}"
    label = f"policy-test-{suffix}"
    await _namespace(core, operator_ns, {})
    await _namespace(core, tenant, {label: "tenant"})
    await _namespace(core, outsider, {label: "outsider"})
    await admin_secrets(kube_client, operator_ns, mysql, "admin")
    for namespace in (tenant, outsider):
        await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    target, schema = f"policy-{suffix}", f"dbu_policy_{suffix}"
    state = Tenancy(kube_client, mysql, target, f"shared-{suffix}", tenant, outsider, label, schema)
    server = server_object(CLUSTER_KIND, state.server, server_spec(mysql, "admin", schema))
    server["metadata"]["labels"] = {"dbuser-operator.dev/target": target}
    server["spec"]["policy"] = state.policy(**BOUNDS)
    await kube_client.create(CLUSTER_MYSQL_SERVERS, server)
    await start_operator(
        target=target,
        cluster_resource_namespace=operator_ns,
        resync_period=1.0,
        workload_signing_ca=workload_signing_ca,  # workload identity, where the server's CA is ours
    )
    yield state
    for namespace in (tenant, outsider):  # let go of what is left (a failed test), then the server
        for resource in (DATABASE_USERS, DATABASE_ROLES):
            for obj in (await kube_client.list(resource, namespace))["items"]:
                await kube_client.delete(resource, obj["metadata"]["name"], namespace)
    await asyncio.sleep(1)
    await kube_client.delete(CLUSTER_MYSQL_SERVERS, state.server)
    for namespace in (operator_ns, tenant, outsider):
        await core.delete_namespace(namespace, _request_timeout=30)


async def refused(
    env: Tenancy, namespace: str, obj: dict[str, Any], expected: str, *, role: bool = False
) -> dict[str, Any]:
    """Create ``obj``; it must be refused with PolicyViolation and ``expected`` in the message, and nothing
    that names it may appear in MySQL."""
    name = obj["metadata"]["name"]
    names = {name, obj["spec"].get("user") or name, obj["spec"].get("role") or name}
    before = snapshot(env, names)
    assert before == {}, f"{name} is new: nothing in MySQL names it"
    await env.kube.create(DATABASE_ROLES if role else DATABASE_USERS, obj, namespace)
    if role:
        found = await wait_role_ready(env.kube, namespace, name, "False", "PolicyViolation")
    else:
        found = await wait_for_ready(env.kube, namespace, name, "False", "PolicyViolation", limit=60)
    condition = ready(found)
    assert condition is not None
    assert expected in condition["message"], condition["message"]
    assert condition["message"].startswith(f"ClusterMySQLServer {env.server}")
    await asyncio.sleep(1.5)  # a drift check period and more: still nothing
    assert snapshot(env, names) == before
    assert not account_exists(env.mysql, name)
    return found


async def test_each_refusal_is_reported_and_writes_nothing(tenancy: Tenancy, kubectl: Runner) -> None:
    env, ns, rule = tenancy, tenancy.tenant, f"ClusterMySQLServer {tenancy.server} policy.namespaces[0]"
    await env.set_policy(**BOUNDS)

    # A server it may not use: no entry selects the namespace.
    outside = unique("pol-out")
    found = await refused(env, env.outsider, env.user(outside), "may not use it")
    message = ready(found)["message"]  # type: ignore[index]
    assert message == (
        f"ClusterMySQLServer {env.server}: namespace {env.outsider} may not use it "
        "(no entry of spec.policy.namespaces selects it)"
    )
    # ... as a real kubectl shows it.
    header, row = kubectl("get", "dbu", outside, "-n", env.outsider).stdout.splitlines()
    assert header.split()[:5] == ["NAME", "USER", "HOST", "READY", "REASON"]
    assert row.split()[:5] == [outside, outside, "%", "False", "PolicyViolation"]
    described = " ".join(kubectl("describe", "dbu", outside, "-n", env.outsider).stdout.split())
    assert f"namespace {env.outsider} may not use it" in described
    # A database outside its pattern; table, column and routine grants check their database too.
    found = await refused(
        env,
        ns,
        env.user(unique("pol-db"), privileges=[{"database": "billing", "privileges": ["SELECT"]}]),
        f'database "billing" is outside {ns}_* (pattern {{namespace}}_*)',
    )
    assert ready(found)["message"].startswith(rule)  # type: ignore[index]
    await refused(
        env,
        ns,
        env.user(
            unique("pol-tb"),
            privileges=[{"database": "billing", "table": "invoices", "privileges": ["SELECT"]}],
        ),
        'database "billing" is outside',
    )
    # A privilege above the ceiling, on a database it may use.
    await refused(
        env,
        ns,
        env.user(
            unique("pol-ceil"), privileges=[{"database": f"{ns}_app", "privileges": ["SELECT", "INSERT"]}]
        ),
        "INSERT is above the privilege ceiling SELECT, UPDATE",
    )
    await refused(
        env,
        ns,
        env.user(unique("pol-all"), privileges=[{"database": f"{ns}_app", "privileges": ["ALL"]}]),
        "ALL is above the privilege ceiling SELECT, UPDATE",
    )
    # Global privileges.
    await refused(
        env,
        ns,
        env.user(unique("pol-glob"), privileges=[{"database": "*", "privileges": ["PROCESS"]}]),
        "grants on *.* are not allowed (allowGlobalPrivileges is false)",
    )
    # The grant option (passing privileges on), even within the ceiling.
    await refused(
        env,
        ns,
        env.user(
            unique("pol-gopt"),
            privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"], "grantOption": True}],
        ),
        f"grantOption is not allowed (allowGrantOption is false): on `{ns}_app`.*",
    )
    # Roles: granted to a user, and a DatabaseRole itself.
    await refused(
        env,
        ns,
        env.user(unique("pol-roles"), roles=["reader"]),
        "roles are not allowed (allowRoles is false)",
    )
    await refused(
        env,
        ns,
        env.role(unique("pol-role"), privileges=[{"database": f"{ns}_app", "privileges": ["SELECT"]}]),
        f"{rule}: DatabaseRoles are not allowed (allowRoles is false)",
        role=True,
    )
    # A chosen authentication plugin.
    await refused(
        env,
        ns,
        env.user(unique("pol-plug"), authentication={"plugin": "caching_sha2_password"}),
        "choosing the authentication plugin is not allowed (allowPlugins is false)",
    )
    # managementPolicy Observe is refused the same way (it would read accounts of a server it may not use).
    await refused(
        env, env.outsider, env.user(unique("pol-obs"), managementPolicy="Observe"), "may not use it"
    )
    # ... while what the policy allows converges.
    allowed = unique("pol-ok")
    await env.kube.create(
        DATABASE_USERS,
        env.user(allowed, privileges=[{"database": f"{ns}_app", "privileges": ["SELECT", "UPDATE"]}]),
        ns,
    )
    await wait_for_ready(env.kube, ns, allowed, limit=60)
    assert privileges_of(env.mysql, allowed) == {
        (escaped(f"{ns}_app"), "*", "SELECT", False),
        (escaped(f"{ns}_app"), "*", "UPDATE", False),
    }
    await env.kube.delete(DATABASE_USERS, allowed, ns)
    await wait_until_gone(env.kube, ns, allowed, limit=60)
    assert not account_exists(env.mysql, allowed)


async def test_tightening_stops_a_ready_user_and_loosening_brings_it_back(tenancy: Tenancy) -> None:
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**BOUNDS)
    name = unique("pol-tight")
    app = f"{ns}_app"
    granted = {(escaped(app), "*", "SELECT", False), (escaped(app), "*", "UPDATE", False)}
    await env.kube.create(
        DATABASE_USERS, env.user(name, privileges=[{"database": app, "privileges": ["SELECT", "UPDATE"]}]), ns
    )
    await wait_for_ready(env.kube, ns, name, limit=60)
    assert privileges_of(env.mysql, name) == granted

    # Tightened: the user reports the violation; nothing is revoked, and from then on nothing is written.
    # (``before`` is taken once the violation is reported: a pass that began under the old policy may end.)
    await env.set_policy(**(BOUNDS | {"privileges": ["SELECT"]}))
    found = await wait_for_ready(env.kube, ns, name, "False", "PolicyViolation", limit=60)
    assert ready(found)["message"] == (  # type: ignore[index]
        f"ClusterMySQLServer {env.server} policy.namespaces[0]: UPDATE is above the privilege ceiling SELECT"
    )
    before = snapshot(env, {name})
    assert {"mysql.user", f"{env.schema}.accounts"} <= set(before)  # the account and its ownership row
    assert privileges_of(env.mysql, name) == granted
    await asyncio.sleep(2)
    assert snapshot(env, {name}) == before
    # ... and it stops converging: drift made by hand is not repaired (the drift check runs every second).
    mysql_query(env.mysql, f"REVOKE UPDATE ON `{escaped(app)}`.* FROM '{name}'@'%'")
    drifted = snapshot(env, {name})
    await asyncio.sleep(3)
    assert snapshot(env, {name}) == drifted
    assert privileges_of(env.mysql, name) == {(escaped(app), "*", "SELECT", False)}

    # Loosened: Ready again, and the drift is repaired.
    await env.set_policy(**BOUNDS)
    await wait_for_ready(env.kube, ns, name, limit=60)
    message = "the drift was not repaired after loosening"
    await becomes(lambda: privileges_of(env.mysql, name), granted, interval=0.1, message=message)

    # The namespace's labels are followed: unlabelled, it may not use the server; labelled again, Ready.
    unlabel = {"metadata": {"labels": {env.label: None}}}
    await env.kube.patch(NAMESPACES, ns, unlabel, PatchType.MERGE)
    found = await wait_for_ready(env.kube, ns, name, "False", "PolicyViolation", limit=60)
    assert f"namespace {ns} may not use it" in ready(found)["message"]  # type: ignore[index]
    assert privileges_of(env.mysql, name) == granted
    await env.kube.patch(NAMESPACES, ns, {"metadata": {"labels": {env.label: "tenant"}}}, PatchType.MERGE)
    await wait_for_ready(env.kube, ns, name, limit=60)

    # A user refused by a tightened policy is still deleted cleanly: its own account is dropped.
    await env.set_policy(**(BOUNDS | {"privileges": ["SELECT"]}))
    await wait_for_ready(env.kube, ns, name, "False", "PolicyViolation", limit=60)
    await env.kube.delete(DATABASE_USERS, name, ns)
    await wait_until_gone(env.kube, ns, name, limit=60)
    assert not account_exists(env.mysql, name)
    assert snapshot(env, {name}) == {}


async def test_a_grant_option_needs_allow_grant_option_and_is_never_revoked_for_it(tenancy: Tenancy) -> None:
    """A user holding a grant option when the policy stops allowing it (as on upgrading to an operator that
    checks allowGrantOption, whose default is false) reports it and keeps the option; allowed, Ready."""
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**(BOUNDS | {"allowGrantOption": True}))
    name, app = unique("pol-deleg"), f"{ns}_app"
    delegating = [{"database": app, "privileges": ["SELECT"], "grantOption": True}]
    await env.kube.create(DATABASE_USERS, env.user(name, privileges=delegating), ns)
    await wait_for_ready(env.kube, ns, name, limit=60)
    granted = {(escaped(app), "*", "SELECT", True)}
    assert privileges_of(env.mysql, name) == granted

    await env.set_policy(**BOUNDS)  # allowGrantOption left out: false
    found = await wait_for_ready(env.kube, ns, name, "False", "PolicyViolation", limit=60)
    assert ready(found)["message"] == (  # type: ignore[index]
        f"ClusterMySQLServer {env.server} policy.namespaces[0]: grantOption is not allowed "
        f"(allowGrantOption is false): on `{app}`.*"
    )
    before = snapshot(env, {name})
    await asyncio.sleep(2)
    assert snapshot(env, {name}) == before
    assert privileges_of(env.mysql, name) == granted  # not revoked

    # Without the option the same user is within the policy again.
    await env.kube.patch(
        DATABASE_USERS,
        name,
        {"spec": {"privileges": [{"database": app, "privileges": ["SELECT"]}]}},
        PatchType.MERGE,
        namespace=ns,
    )
    await wait_for_ready(env.kube, ns, name, limit=60)
    assert privileges_of(env.mysql, name) == {(escaped(app), "*", "SELECT", False)}
    await env.kube.delete(DATABASE_USERS, name, ns)
    await wait_until_gone(env.kube, ns, name, limit=60)
    assert not account_exists(env.mysql, name)


async def test_tightening_stops_a_ready_role_without_dropping_it(tenancy: Tenancy) -> None:
    env, ns = tenancy, tenancy.tenant
    await env.set_policy(**(BOUNDS | {"allowRoles": True}))
    name = unique("pol-reader")
    app = f"{ns}_app"
    await env.kube.create(
        DATABASE_ROLES, env.role(name, privileges=[{"database": app, "privileges": ["SELECT"]}]), ns
    )
    await wait_role_ready(env.kube, ns, name)
    assert role_exists(env.mysql, name)
    granted = snapshot(env, {name})

    # Roles no longer allowed: the role reports it, and stays in MySQL with its grants and ownership.
    await env.set_policy(**BOUNDS)  # allowRoles false
    found = await wait_role_ready(env.kube, ns, name, "False", "PolicyViolation")
    before = snapshot(env, {name})
    assert before == granted
    assert ready(found)["message"] == (  # type: ignore[index]
        f"ClusterMySQLServer {env.server} policy.namespaces[0]: "
        "DatabaseRoles are not allowed (allowRoles is false)"
    )
    await asyncio.sleep(2)
    assert snapshot(env, {name}) == before

    # Allowed again: Ready, unchanged.
    await env.set_policy(**(BOUNDS | {"allowRoles": True}))
    await wait_role_ready(env.kube, ns, name)
    assert snapshot(env, {name}) == before


async def test_a_mysqlservers_policy_bounds_its_own_namespace(tenancy: Tenancy) -> None:
    env, ns = tenancy, tenancy.tenant
    schema = f"{env.schema}_ns"
    await admin_secrets(env.kube, ns, env.mysql, "own-admin")
    server = server_object(KIND, "own", server_spec(env.mysql, "own-admin", schema))
    server["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
    server["spec"]["policy"] = env.policy(databases=["{namespace}_*"])
    await env.kube.create(MYSQL_SERVERS, server, ns)
    try:
        name = unique("pol-own")
        obj = env.user(name, privileges=[{"database": "billing", "privileges": ["SELECT"]}])
        obj["spec"]["serverRef"] = {"kind": KIND, "name": "own"}
        await env.kube.create(DATABASE_USERS, obj, ns)
        found = await wait_for_ready(env.kube, ns, name, "False", "PolicyViolation", limit=60)
        assert ready(found)["message"] == (  # type: ignore[index]
            f'MySQLServer {ns}/own policy.namespaces[0]: database "billing" is outside {ns}_* '
            "(pattern {namespace}_*)"
        )
        assert not account_exists(env.mysql, name)
        # Within the pattern: Ready.
        fixed = {"spec": {"privileges": [{"database": f"{ns}_billing", "privileges": ["SELECT"]}]}}
        await env.kube.patch(DATABASE_USERS, name, fixed, PatchType.MERGE, namespace=ns)
        await wait_for_ready(env.kube, ns, name, limit=60)
        assert privileges_of(env.mysql, name) == {(escaped(f"{ns}_billing"), "*", "SELECT", False)}
        await env.kube.delete(DATABASE_USERS, name, ns)
        await wait_until_gone(env.kube, ns, name, limit=60)
        assert not account_exists(env.mysql, name)
    finally:
        await env.kube.delete(MYSQL_SERVERS, "own", ns)


async def test_without_rbac_on_namespaces_the_operator_runs_and_policies_fail_closed(
    tenancy: Tenancy,
    start_operator: StartOperator,
    kube: KubeCluster,
    kube_api: client.ApiClient,
    tmp_path: Path,
) -> None:
    """An install whose RBAC predates server policies (no namespaces): the operator starts and manages
    accounts as before; only resources on a server with spec.policy are refused, NamespacesUnreadable."""
    env, ns = tenancy, tenancy.tenant
    suffix = uuid.uuid4().hex[:6]
    name, target = f"old-rbac-{suffix}", f"old-rbac-{suffix}"
    core, rbac = client.CoreV1Api(kube_api), client.RbacAuthorizationV1Api(kube_api)
    account_body: Any = {"metadata": {"name": name}}
    await core.create_namespaced_service_account(ns, account_body, _request_timeout=30)
    by_resource: dict[tuple[str, str], list[str]] = {}
    old_rules = OPERATOR_RULES | {rule for rule in CLUSTER_RULES if rule[1] != "namespaces"}
    for group, resource, verb in sorted(old_rules):  # the chart's rules, without namespaces
        by_resource.setdefault((group, resource), []).append(verb)
    rules = [
        {"apiGroups": [group], "resources": [resource], "verbs": verbs}
        for (group, resource), verbs in by_resource.items()
    ]
    role_body: Any = {"metadata": {"name": name}, "rules": rules}
    await rbac.create_cluster_role(role_body, _request_timeout=30)
    binding: Any = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
    }
    await rbac.create_cluster_role_binding(binding, _request_timeout=30)
    try:
        token = await service_account_token(kube_api, name, ns)
        account = f"system:serviceaccount:{ns}:{name}"
        kubeconfig = write_token_kubeconfig(
            tmp_path / "sa.kubeconfig", current_cluster(kube.kubeconfig), account, token
        )
        server_ns = (
            env.tenant
        )  # the restricted operator's --cluster-resource-namespace: the admin Secret there
        await admin_secrets(env.kube, server_ns, env.mysql, "old-admin")
        server = server_object(CLUSTER_KIND, name, server_spec(env.mysql, "old-admin", f"dbu_old_{suffix}"))
        server["metadata"]["labels"] = {"dbuser-operator.dev/target": target}
        server["spec"]["policy"] = env.policy()
        await env.kube.create(CLUSTER_MYSQL_SERVERS, server)
        await start_operator(kubeconfig=kubeconfig, target=target, cluster_resource_namespace=server_ns)

        plain = unique("pol-plain")
        await env.kube.create(DATABASE_USERS, database_user(plain, "pw", target=target), ns)
        await wait_for_ready(env.kube, ns, plain, limit=60)  # the settings' server: as before
        assert account_exists(env.mysql, plain)

        on_server = database_user(unique("pol-fenced"), "pw", target=target)
        on_server["spec"]["serverRef"] = {"kind": CLUSTER_KIND, "name": name}
        await env.kube.create(DATABASE_USERS, on_server, ns)
        found = await wait_for_ready(
            env.kube, ns, on_server["metadata"]["name"], "False", "NamespacesUnreadable", limit=60
        )
        assert ready(found)["message"].startswith(  # type: ignore[index]
            f"ClusterMySQLServer {name}: its spec.policy cannot be checked"
        )
        assert not account_exists(env.mysql, on_server["metadata"]["name"])
        for user in (plain, on_server["metadata"]["name"]):
            await env.kube.delete(DATABASE_USERS, user, ns)
            await wait_until_gone(env.kube, ns, user, limit=60)
        assert not account_exists(env.mysql, plain)
        await env.kube.delete(CLUSTER_MYSQL_SERVERS, name)
    finally:
        await rbac.delete_cluster_role_binding(name, _request_timeout=30)
        await rbac.delete_cluster_role(name, _request_timeout=30)
