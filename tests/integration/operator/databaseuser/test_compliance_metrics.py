"""The compliance metrics after a scripted history, checked against the server: accounts without TLS, with
global privileges or GRANT OPTION, old passwords retained past their grace period (and what holds them), a
rotation overdue, the oldest password's age, an orphan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pymysql
import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.conditions import format_time
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import client_tls
from tests.integration.operator.servers.test_server_policy import Tenancy, tenancy  # noqa: F401 - the fixture
from tests.integration.operator.support.builders import database_user, generated_user, unique
from tests.integration.operator.support.kube import create_secret, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import (
    has_dual_passwords,
    is_mariadb,
    mysql_query,
    privileges_of,
)
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.rotation import (
    an_hour_ago,
    create_pod,
    poll,
    rotation_status,
    wait_for_phase,
)

pytestmark = [pytest.mark.integration, pytest.mark.dual_passwords]

# The scripted history runs under an operator of its own, with its own target and bookkeeping schema: the
# session's other operators (other targets, one schema) would count its accounts as their orphans, and
# every operator of the process feeds the one collector.
OWN_TARGET, SCHEMA = "compliance", "dbuser_compliance"
PAST, FUTURE = "2020-01-01T00:00:00Z", "2100-01-01T00:00:00Z"  # expiresAt of an ended and an ending account


def metric(name: str, namespace: str, server: str = "default", **labels: str) -> float | None:
    wanted = {"server": server, "namespace": namespace, **labels}
    return REGISTRY.get_sample_value(f"dbuser_operator_{name}", wanted)


def owned_accounts(mysql: MySQLServer, namespace: str) -> list[tuple[str, str]]:
    rows = mysql_query(mysql, f"SELECT user, host FROM `{SCHEMA}`.accounts WHERE namespace = %s", namespace)
    return [(str(user), str(host)) for user, host in rows]


def password_born(user: dict[str, Any]) -> float:
    """When the DatabaseUser's password was last set, by its own records: its last rotation, else its
    creation (what the compliance metrics count ages from)."""
    rotation = (user.get("status") or {}).get("rotation") or {}
    stamp = rotation.get("lastRotationTime") or user["metadata"]["creationTimestamp"]
    return datetime.fromisoformat(stamp).timestamp()


def server_facts(mysql: MySQLServer, accounts: list[tuple[str, str]]) -> dict[str, Any]:
    """What the server says of ``accounts``, as the metrics count them."""
    facts: dict[str, Any] = {
        "without_tls": 0, "global": 0, "grant_option": 0, "retained": 0, "locked": 0, "changed": []
    }  # fmt: skip
    for user, host in accounts:
        [(ssl_type, additional, locked, age)] = mysql_query(
            mysql,
            "SELECT ssl_type, JSON_EXTRACT(User_attributes, '$.additional_password') IS NOT NULL,"
            " account_locked,"
            " TIMESTAMPDIFF(SECOND, password_last_changed, NOW())"
            " FROM mysql.user WHERE User = %s AND Host = %s",
            user,
            host,
        )
        privileges = privileges_of(mysql, user, host)
        facts["without_tls"] += ssl_type == ""
        facts["global"] += any(database == "*" for database, *_ in privileges)
        facts["grant_option"] += any(grantable for *_, grantable in privileges)
        facts["retained"] += bool(additional)
        facts["locked"] += locked == "Y"
        facts["changed"].append(int(age))
    return facts


async def test_the_metrics_match_the_server_after_a_scripted_history(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    if not has_dual_passwords(mysql) or is_mariadb(mysql):
        # The history is checked against MySQL's mysql.user (ssl_type, additional_password, account_locked,
        # password_last_changed); the collector reads the cache, the same on every flavour.
        pytest.skip("checked against MySQL's grant tables")
    await start_operator(target=OWN_TARGET, ownership_schema=SCHEMA, resync_period=1.0)
    ns = namespace
    app = [{"database": "compliance_app", "privileges": ["SELECT"]}]
    bodies = [
        generated_user(unique("plain"), OWN_TARGET, hosts=["10.0.%"], privileges=app),
        generated_user(unique("tls"), OWN_TARGET, requireTLS=True, privileges=app),
        generated_user(
            unique("admin"), OWN_TARGET, privileges=[{"database": "*", "privileges": ["PROCESS"]}]
        ),
        generated_user(
            unique("granter"), OWN_TARGET, privileges=[{**app[0], "grantOption": True}], tls={"x509": True}
        ),
        generated_user(unique("locked"), OWN_TARGET, requireTLS=True, account={"locked": True}),
        generated_user(
            unique("ended"), OWN_TARGET, requireTLS=True, account={"expiresAt": "2020-01-01T00:00:00Z"}
        ),
        generated_user(
            unique("ending"), OWN_TARGET, requireTLS=True, account={"expiresAt": "2100-01-01T00:00:00Z"}
        ),
        generated_user(unique("overdue"), OWN_TARGET, rotation={"period": "3s", "gracePeriod": "1s"}),
    ]
    for body in bodies:
        await kube_client.create(DATABASE_USERS, body, ns)
    for body in bodies:
        await wait_for_ready(kube_client, ns, body["metadata"]["name"])

    # An overdue rotation: the scheduled user is paused, and its next rotation time passes.
    overdue = bodies[-1]["metadata"]["name"]
    pause = {"spec": {"managementPolicy": "Paused"}}
    await kube_client.patch(DATABASE_USERS, overdue, pause, PatchType.MERGE, namespace=ns)

    # Two rotations whose old passwords stay: one held by a session opened before, one by a pod.
    held = {}
    for kind in ("session", "pod"):
        name = unique(kind)
        first = passwords.new()
        await create_secret(kube_client, ns, name, {"password": first})
        body = database_user(name, name, target=OWN_TARGET, rotation={"gracePeriod": "1s", "maxWait": "10m"})
        await kube_client.create(DATABASE_USERS, body, ns)
        await wait_for_ready(kube_client, ns, name)
        held[kind] = (name, first)
    await create_pod(kube_client, ns, unique("app"), held["pod"][0], an_hour_ago())
    name, first = held["session"]
    session = pymysql.connect(
        host=mysql.host, port=mysql.port, user=name, password=first.encode(), **client_tls(mysql, tls=False)
    )
    try:
        for name, _ in held.values():
            patch = {"stringData": {"password": passwords.new()}}
            await kube_client.patch(SECRETS, name, patch, PatchType.MERGE, namespace=ns)
        for name, _ in held.values():
            await wait_for_phase(kube_client, ns, name, "Retained", limit=120)

        async def settled() -> bool:
            return (
                metric("retained_passwords_past_grace", ns, reason="sessions") == 1
                and metric("retained_passwords_past_grace", ns, reason="pods") == 1
                and metric("rotations_overdue", ns) == 1
            )

        await poll(settled, "the retained passwords and the overdue rotation counted", limit=120)
        assert (await rotation_status(kube_client, ns, overdue)).get("nextRotationTime")

        accounts = owned_accounts(mysql, ns)
        # The overdue user was paused after its Ready: on a busy machine its 3 s period may have passed
        # first, and its rotation's old password then stays (no discard while paused). The server says.
        overdue_accounts = [account for account in accounts if account[0] == overdue]
        assert overdue_accounts, (overdue, accounts)

        def expected_retained() -> int:
            return 2 + int(server_facts(mysql, overdue_accounts)["retained"])

        async def retained_agree() -> bool:  # a pass in flight may hold a password the metric counts later
            found = server_facts(mysql, accounts)["retained"]
            counted = sum(
                metric("retained_passwords_past_grace", ns, reason=reason) or 0
                for reason in ("pods", "sessions", "pods_and_sessions", "unknown")
            )
            assert counted == found == expected_retained(), (counted, found)
            return True

        await poll(retained_agree, "the retained passwords counted as the server holds them", limit=120)
        facts = server_facts(mysql, accounts)
        # The oldest age counts from the resources' own records (the last rotation, else the creation),
        # which precede the server's change of the password: read between two clock readings, the metric
        # lies between the ages of the oldest record then (whole seconds: 1 s either way), however busy.
        before = datetime.now(UTC).timestamp()
        oldest = metric("oldest_password_age_seconds", ns) or 0
        after = datetime.now(UTC).timestamp()
        users = (await kube_client.list(DATABASE_USERS, ns))["items"]
        born = min(
            password_born(user) for user in users if {"password", "generatedPassword"} & user["spec"].keys()
        )
        assert before - born - 1 <= oldest <= after - born + 1, (oldest, before - born, after - born)
        assert oldest >= max(facts["changed"]) - 1, (oldest, facts["changed"])
        assert metric("compliance_accounts", ns) == len(accounts) == 11  # plain has two hosts
        assert metric("compliance_users", ns) == 10
        assert metric("accounts_without_tls", ns) == facts["without_tls"] == 6
        assert metric("accounts_with_global_privileges", ns) == facts["global"] == 1
        assert metric("accounts_with_grant_option", ns) == facts["grant_option"] == 1
        retained = sum(
            metric("retained_passwords_past_grace", ns, reason=reason) or 0
            for reason in ("pods", "sessions", "pods_and_sessions", "unknown")
        )
        assert retained == facts["retained"] == expected_retained()
        assert metric("accounts_locked", ns) == facts["locked"] == 2
        assert metric("accounts_expiring", ns) == 1  # not locked yet: nothing on the server to compare
        assert metric("passwords_over_max_lifetime", ns) == 0  # the settings' server has no policy
        assert metric("passwords_expired", ns) == 0
    finally:
        session.close()

    # An orphan: the finalizer removed by hand, the resource deleted; the account stays.
    orphan = bodies[0]["metadata"]["name"]
    remove = [{"op": "remove", "path": "/metadata/finalizers"}]
    await kube_client.patch(DATABASE_USERS, orphan, remove, PatchType.JSON, namespace=ns)
    await kube_client.delete(DATABASE_USERS, orphan, ns)
    await wait_until_gone(kube_client, ns, orphan)
    try:

        async def orphaned() -> bool:
            return metric("server_orphaned_accounts", ns) == 2  # its two hosts

        await poll(orphaned, "the orphans counted for the server and namespace", limit=120)
        assert len([user for user, _ in owned_accounts(mysql, ns) if user == orphan]) == 2
        assert metric("compliance_accounts", ns) == 9
    finally:
        for host in ("%", "10.0.%"):
            mysql_query(mysql, f"DROP USER IF EXISTS '{orphan}'@'{host}'")
        mysql_query(mysql, f"DELETE FROM `{SCHEMA}`.accounts WHERE user = %s", orphan)


async def test_passwords_over_the_namespace_policys_maximum(
    tenancy: Tenancy,  # noqa: F811 - the fixture of test_server_policy
    kube_client: KubeClient,
) -> None:
    """maxPasswordLifetime of the server's policy entry for the namespace, from the caches: a password whose
    status says it was set two days ago is over a 1-day maximum, and expired by its own 1-day interval; a
    looser policy counts it no more."""
    env, ns = tenancy, tenancy.tenant
    server = f"ClusterMySQLServer/{env.server}"
    await env.set_policy(maxPasswordLifetime="1d")
    name = unique("aged")
    await kube_client.create(DATABASE_USERS, env.user(name, account={"passwordExpire": "1d"}), ns)
    await wait_for_ready(kube_client, ns, name)

    async def counted_and_not_over() -> bool:  # once the operator's cache has the Ready status too
        return metric("passwords_over_max_lifetime", ns, server) == 0

    await poll(counted_and_not_over, "the password counted, within the policy's maximum", limit=120)
    pause = {"spec": {"managementPolicy": "Paused"}}
    await kube_client.patch(DATABASE_USERS, name, pause, PatchType.MERGE, namespace=ns)
    await wait_for_ready(kube_client, ns, name, "True", "Paused")
    try:
        # As if set two days ago: the status of a Paused resource is not written again.
        two_days = timedelta(days=2)
        aged = {"status": {"rotation": {"lastRotationTime": format_time(datetime.now(UTC) - two_days)}}}
        await kube_client.patch(
            DATABASE_USERS, name, aged, PatchType.MERGE, namespace=ns, subresource="status"
        )

        async def counted(over: float) -> bool:
            return (
                metric("passwords_over_max_lifetime", ns, server) == over
                and metric("passwords_expired", ns, server) == 1
            )

        await poll(lambda: counted(1), "the password over the policy's maximum", limit=120)
        assert (metric("oldest_password_age_seconds", ns, server) or 0) > two_days.total_seconds() - 60
        await env.set_policy(maxPasswordLifetime="3d")
        await poll(lambda: counted(0), "no longer over the looser maximum", limit=120)
    finally:
        manage = {"spec": {"managementPolicy": "Manage"}}
        await kube_client.patch(DATABASE_USERS, name, manage, PatchType.MERGE, namespace=ns)
