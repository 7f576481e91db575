"""Grants, limits and TLS, ownership, deletion policies and drift repair, end to end on real servers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, RELEASE_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import own_schema
from tests.integration.operator.support.kube import (
    create_secret,
    ready,
    wait_for_event,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import (
    account_exists,
    account_row,
    can_log_in,
    mysql_query,
    privileges_of,
    write_statements,
)
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.support.kube import eventually

pytestmark = pytest.mark.integration


async def until(condition: Callable[[], bool], what: str) -> None:
    await eventually(condition, timeout=20, interval=0.1, what=what)


def local_server(provider: MySQLServer | LocalMySQLServer) -> LocalMySQLServer:
    if not isinstance(provider, LocalMySQLServer):
        pytest.skip("the MySQL server is not ours to stop (MYSQL_URL or a container)")
    return provider


async def patch_spec(kube: KubeClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    await kube.patch(DATABASE_USERS, name, {"spec": spec}, PatchType.MERGE, namespace=namespace)


async def annotate(kube: KubeClient, namespace: str, name: str, key: str, value: str) -> None:
    patch = {"metadata": {"annotations": {key: value}}}
    await kube.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)


async def test_grants_converge_exactly_and_hand_grants_are_revoked(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    granted = unique("granted")
    mysql_query(mysql, "CREATE DATABASE IF NOT EXISTS appdb")
    mysql_query(mysql, "CREATE TABLE IF NOT EXISTS appdb.orders (id INT)")
    body = database_user(
        granted, "pw", privileges=[{"privileges": ["SELECT", "INSERT"], "database": "appdb"}]
    )
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, granted)
    assert privileges_of(mysql, granted) == {
        ("appdb", "*", "SELECT", False),
        ("appdb", "*", "INSERT", False),
    }

    wanted = [
        {"privileges": ["SELECT"], "database": "appdb", "grantOption": True},
        {"privileges": ["SELECT", "UPDATE"], "database": "appdb", "table": "orders"},
        {"privileges": ["PROCESS"], "database": "*"},
    ]
    expected = {
        ("appdb", "*", "SELECT", True),
        ("appdb", "orders", "SELECT", False),
        ("appdb", "orders", "UPDATE", False),
        ("*", "*", "PROCESS", False),
    }
    await patch_spec(kube_client, namespace, granted, {"privileges": wanted})
    await until(lambda: privileges_of(mysql, granted) == expected, what="the new grants")

    # Grants added by hand, at a managed level and at a level of their own, are revoked by the drift check.
    mysql_query(mysql, f"GRANT DELETE ON appdb.* TO '{granted}'@'%'")
    mysql_query(mysql, f"GRANT SELECT ON mysql.* TO '{granted}'@'%'")
    assert ("mysql", "*", "SELECT", False) in privileges_of(mysql, granted)
    await until(lambda: privileges_of(mysql, granted) == expected, what="hand grants revoked")

    await patch_spec(kube_client, namespace, granted, {"privileges": []})
    await until(lambda: privileges_of(mysql, granted) == set(), what="every grant revoked")
    assert account_exists(mysql, granted)


async def test_limits_and_tls_are_applied_and_read_back(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    limited = unique("limited")
    limits: dict[str, Any] = {
        "maxUserConnections": 5,
        "maxQueriesPerHour": 100,
        "maxUpdatesPerHour": 50,
        "maxConnectionsPerHour": 20,
        "requireTLS": True,
    }
    await kube_client.create(DATABASE_USERS, database_user(limited, "pw", **limits), namespace)
    await wait_for_ready(kube_client, namespace, limited)
    row = account_row(mysql, limited)
    assert row is not None
    assert (
        row["max_user_connections"],
        row["max_questions"],
        row["max_updates"],
        row["max_connections"],
    ) == (
        5,
        100,
        50,
        20,
    )
    assert row["ssl_type"] == "ANY"
    assert not can_log_in(mysql, limited, secret, tls=False)  # a client without TLS: refused
    assert can_log_in(mysql, limited, secret, tls=True)

    await patch_spec(kube_client, namespace, limited, {"requireTLS": False, "maxUserConnections": 0})
    await until(lambda: (account_row(mysql, limited) or {}).get("ssl_type") == "", what="TLS not required")
    assert (account_row(mysql, limited) or {})["max_user_connections"] == 0
    assert can_log_in(mysql, limited, secret)


async def test_an_existing_account_is_not_adopted_nor_dropped_unless_asked(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    passwords: PasswordLedger,
) -> None:
    adopter = unique("adopter")
    preexisting = unique("preexisting")
    handmade = passwords.new("handmade")
    mysql_query(mysql, f"CREATE USER '{preexisting}'@'%%' IDENTIFIED BY %s", handmade)
    try:
        await kube_client.create(DATABASE_USERS, database_user(preexisting, "pw"), namespace)
        obj = await wait_for_ready(kube_client, namespace, preexisting, "False", "AccountExists")
        assert ADOPT_ANNOTATION in ready(obj)["message"]  # type: ignore[index]
        assert can_log_in(mysql, preexisting, handmade)  # untouched

        await kube_client.delete(DATABASE_USERS, preexisting, namespace)
        await wait_until_gone(kube_client, namespace, preexisting)
        assert can_log_in(mysql, preexisting, handmade)  # not dropped: it was never ours

        # Opting in adopts it: the Secret's password replaces the hand-made one.
        body = database_user(adopter, "pw", user=preexisting)
        body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await kube_client.create(DATABASE_USERS, body, namespace)
        await wait_for_ready(kube_client, namespace, adopter)
        assert can_log_in(mysql, preexisting, secret)
        assert not can_log_in(mysql, preexisting, handmade)
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{preexisting}'@'%'")


async def test_reserved_accounts_are_refused(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    admin_user = mysql.user if len(mysql.user) <= 32 else "root"
    for name, user in (("root-attempt", "root"), ("sys-attempt", "mysql.sys"), ("admin-attempt", admin_user)):
        before = account_row(mysql, user, "%")
        await kube_client.create(DATABASE_USERS, database_user(name, "pw", user=user), namespace)
        obj = await wait_for_ready(kube_client, namespace, name, "False", "ReservedAccount")
        assert "reserved" in ready(obj)["message"]  # type: ignore[index]
        assert account_row(mysql, user, "%") == before
        await kube_client.delete(DATABASE_USERS, name, namespace)
        await wait_until_gone(kube_client, namespace, name)
        assert account_row(mysql, user, "%") == before


async def test_two_resources_for_one_account_one_wins_and_the_loser_drops_nothing(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    first = unique("first")
    shared = unique("shared")
    second = unique("second")
    await kube_client.create(DATABASE_USERS, database_user(first, "pw", user=shared), namespace)
    await wait_for_ready(kube_client, namespace, first)
    await kube_client.create(DATABASE_USERS, database_user(second, "pw", user=shared), namespace)
    obj = await wait_for_ready(kube_client, namespace, second, "False", "AccountClaimed")
    assert f"DatabaseUser {namespace}/{first}" in ready(obj)["message"]  # type: ignore[index]

    await kube_client.delete(DATABASE_USERS, second, namespace)
    await wait_until_gone(kube_client, namespace, second)
    assert account_exists(mysql, shared)
    assert can_log_in(mysql, shared, secret)
    await wait_for_ready(kube_client, namespace, first)

    await kube_client.delete(DATABASE_USERS, first, namespace)
    await wait_until_gone(kube_client, namespace, first)
    assert not account_exists(mysql, shared)


def owned(mysql: MySQLServer, user: str) -> bool:
    return bool(mysql_query(mysql, f"SELECT 1 FROM `{own_schema()}`.accounts WHERE user = %s", user))


async def test_retain_keeps_the_account_and_releases_even_while_mysql_is_down(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    mysql_provider: MySQLServer | LocalMySQLServer,
    secret: str,
) -> None:
    kept, kept_offline = unique("kept"), unique("kept-offline")
    for name in (kept, kept_offline):
        await kube_client.create(
            DATABASE_USERS, database_user(name, "pw", deletionPolicy="Retain"), namespace
        )
        await wait_for_ready(kube_client, namespace, name)
    await kube_client.delete(DATABASE_USERS, kept, namespace)
    await wait_until_gone(kube_client, namespace, kept)
    assert can_log_in(mysql, kept, secret)
    assert not owned(mysql, kept)  # ownership forgotten

    server = local_server(mysql_provider)
    server.stop()
    try:
        started = time.monotonic()
        await kube_client.delete(DATABASE_USERS, kept_offline, namespace)
        await wait_until_gone(kube_client, namespace, kept_offline, limit=15)
        print(f"Retain released with MySQL down in {time.monotonic() - started:.2f} s")
    finally:
        server.start()
    assert can_log_in(mysql, kept_offline, secret)
    for user in (kept, kept_offline):
        mysql_query(mysql, f"DROP USER IF EXISTS '{user}'@'%'")


async def test_delete_waits_for_mysql_and_the_release_annotation_lets_go(
    operator: RunningOperator,
    kube_client: KubeClient,
    kubectl: Any,
    namespace: str,
    mysql: MySQLServer,
    mysql_provider: MySQLServer | LocalMySQLServer,
    secret: str,
) -> None:
    waits, released = unique("waits"), unique("released")
    for name in (waits, released):
        await kube_client.create(DATABASE_USERS, database_user(name, "pw"), namespace)
        await wait_for_ready(kube_client, namespace, name)
    server = local_server(mysql_provider)
    server.stop()
    try:
        await kube_client.delete(DATABASE_USERS, waits, namespace)
        await kube_client.delete(DATABASE_USERS, released, namespace)
        obj = await wait_for_ready(kube_client, namespace, waits, "False", "DatabaseUnavailable")
        assert obj["metadata"].get("deletionTimestamp")
        assert f"cannot drop '{waits}'@'%'" in ready(obj)["message"]  # type: ignore[index]

        await annotate(kube_client, namespace, released, RELEASE_ANNOTATION, "true")
        await wait_until_gone(kube_client, namespace, released, limit=15)
        await asyncio.sleep(1)
        assert (await kube_client.get(DATABASE_USERS, waits, namespace))["metadata"]["deletionTimestamp"]
    finally:
        server.start()
    await wait_until_gone(kube_client, namespace, waits, limit=60)
    assert not account_exists(mysql, waits)  # dropped once MySQL was back
    assert can_log_in(mysql, released, secret)  # released: left as it was
    mysql_query(mysql, f"DROP USER '{released}'@'%'")

    def reasons() -> list[str]:
        query = "jsonpath={.items[*].reason}"
        return str(kubectl("get", "events", "-n", namespace, "-o", query).stdout).split()

    await until(lambda: "Released" in reasons(), what="the Released event")
    mysql_query(mysql, "DROP USER IF EXISTS 'released'@'%'")


async def test_drift_is_repaired_and_a_quiet_check_writes_nothing(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    drifty = unique("drifty")
    await kube_client.create(DATABASE_USERS, database_user(drifty, "pw"), namespace)
    await wait_for_ready(kube_client, namespace, drifty)

    mysql_query(mysql, f"DROP USER '{drifty}'@'%'")
    await until(lambda: account_exists(mysql, drifty), what="the dropped account recreated")
    await until(lambda: can_log_in(mysql, drifty, secret), what="login after recreation")
    # The pass that recreated it has recorded its password's fingerprint once its Event is out: a hand change
    # before that would be taken for the operator's own (a window of a few milliseconds, see README).
    await wait_for_event(kube_client, namespace, drifty, "AccountRecreated", limit=30)

    mysql_query(mysql, f"ALTER USER '{drifty}'@'%' IDENTIFIED BY 'changed-by-hand'")
    await until(lambda: can_log_in(mysql, drifty, secret), what="the password restored")
    assert not can_log_in(mysql, drifty, "changed-by-hand")

    await asyncio.sleep(1.5)  # let the repairs settle
    before = write_statements(mysql)
    await asyncio.sleep(3.5)  # three drift checks with nothing drifted
    assert write_statements(mysql) == before


async def test_orphans_are_reported_and_never_dropped(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    orphan = unique("orphan")
    await kube_client.create(DATABASE_USERS, database_user(orphan, "pw"), namespace)
    await wait_for_ready(kube_client, namespace, orphan)
    # Someone removes the finalizer by hand and deletes the resource: the account is left behind.
    await kube_client.patch(
        DATABASE_USERS,
        orphan,
        [{"op": "remove", "path": "/metadata/finalizers"}],
        PatchType.JSON,
        namespace=namespace,
    )
    await kube_client.delete(DATABASE_USERS, orphan, namespace)
    await wait_until_gone(kube_client, namespace, orphan)

    def orphans() -> float:
        return REGISTRY.get_sample_value("dbuser_operator_orphaned_accounts") or 0

    await until(lambda: orphans() >= 1, what="the orphan reported")
    assert account_exists(mysql, orphan)
    mysql_query(mysql, f"DROP USER '{orphan}'@'%'")
    mysql_query(mysql, f"DELETE FROM `{own_schema()}`.accounts WHERE user = %s", orphan)


async def test_the_drift_check_leaves_a_failing_resource_to_the_controller(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A resource that is not Ready gets no reconcile per drift period (the controller retries it with
    back-off): its account, dropped by hand meanwhile, is recreated once what it waits for is back."""
    name, secret, password = unique("failing"), unique("pw"), passwords.new()
    await create_secret(kube_client, namespace, secret, {"password": password})
    await kube_client.create(DATABASE_USERS, database_user(name, secret), namespace)
    await wait_for_ready(kube_client, namespace, name)
    await kube_client.delete(SECRETS, secret, namespace)
    await wait_for_ready(kube_client, namespace, name, "False")
    mysql_query(mysql, f"DROP USER '{name}'@'%'")

    def repairs() -> list[str]:
        lines = operator.log_path.read_text(errors="replace").splitlines()
        return [line for line in lines if "account drifted" in line and f'"{name}"' in line]

    await asyncio.sleep(3.5)  # three drift checks find the account gone
    assert repairs() == []
    assert not account_exists(mysql, name)

    await create_secret(kube_client, namespace, secret, {"password": password})
    await wait_for_ready(kube_client, namespace, name)
    await until(lambda: can_log_in(mysql, name, password), what="the account recreated")


OWN_SCHEMA = "<own schema>"  # the bookkeeping schema of the test's operator, known once it runs


@pytest.mark.parametrize(
    ("grant", "words"),
    [
        ({"privileges": ["SELECT"], "database": "mysql"}, "mysql schema"),
        ({"privileges": ["ALL"], "database": OWN_SCHEMA}, f"{OWN_SCHEMA} schema"),
        ({"privileges": ["SUPER"], "database": "*"}, "SUPER on *.*"),
        ({"privileges": ["CREATE USER", "PROCESS"], "database": "*"}, "CREATE USER on *.*"),
        ({"privileges": ["PROCESS"], "database": "*", "grantOption": True}, "grant option on *.*"),
    ],
)
async def test_grants_that_would_escalate_are_refused(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    grant: dict[str, Any],
    words: str,
) -> None:
    greedy = unique("greedy")
    grant = {**grant, "database": grant["database"].replace(OWN_SCHEMA, own_schema())}
    await kube_client.create(DATABASE_USERS, database_user(greedy, "pw", privileges=[grant]), namespace)
    obj = await wait_for_ready(kube_client, namespace, greedy, "False", "PrivilegeNotAllowed")
    assert words.replace(OWN_SCHEMA, own_schema()) in ready(obj)["message"]  # type: ignore[index]
    assert not account_exists(mysql, greedy)  # refused before anything was created


async def test_a_privilege_of_one_flavour_only(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    """DELETE HISTORY (MariaDB only): granted exactly on MariaDB; on MySQL a Ready=False condition names it
    and the server, before anything is written, the account included (no syntax error retried)."""
    flavour = "mariadb" if "mariadb" in str(mysql_query(mysql, "SELECT VERSION()")[0][0]).lower() else "mysql"
    user = unique("history")
    database = unique("hist")  # no "_": a wildcard in information_schema's escaped names
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    try:
        grant = {"privileges": ["SELECT", "DELETE HISTORY"], "database": database}
        await kube_client.create(DATABASE_USERS, database_user(user, "pw", privileges=[grant]), namespace)
        if flavour == "mariadb":
            await wait_for_ready(kube_client, namespace, user)
            wanted = {(database, "*", "SELECT", False), (database, "*", "DELETE HISTORY", False)}
            assert privileges_of(mysql, user) == wanted
        else:
            obj = await wait_for_ready(kube_client, namespace, user, "False", "PrivilegeUnknown")
            message = ready(obj)["message"]  # type: ignore[index]
            assert "DELETE HISTORY is a MariaDB-only privilege: MySQL " in message, message
            assert not account_exists(mysql, user)  # refused before CREATE USER
        await kube_client.delete(DATABASE_USERS, user, namespace)
        await wait_until_gone(kube_client, namespace, user)
        assert not account_exists(mysql, user)  # dropped on delete, on either flavour
    finally:
        mysql_query(mysql, f"DROP DATABASE IF EXISTS `{database}`")
