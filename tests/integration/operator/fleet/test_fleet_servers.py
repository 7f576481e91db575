"""One operator, many servers, each server on its own: an admin password rotated on one server reconnects
without a restart and loses nothing; the same account name on two servers is two accounts; a server
resource deleted while users refer to it waits for them, or lets go with the release annotation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest.fleet import Fleet
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import NotFound
from tests.conftest import Runner
from tests.integration.operator.support.builders import unique
from tests.integration.operator.support.fleet import (
    Admin,
    FleetOperator,
    ServerHandle,
    add_user,
    create_admin,
    create_server,
    forget_server,
    get_server,
    logs_in_soon,
    remove_servers,
    running_fleet_operator,
    server_gone,
    set_admin_password,
    set_password,
    set_server_secret_password,
    wait_for_server,
    wait_for_user_message,
    wait_for_users,
)
from tests.integration.operator.support.kube import ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.rotation import applied_version
from tests.integration.operator.support.wait import eventually

pytestmark = [pytest.mark.integration, pytest.mark.fleet]

RELEASE = "mysql.dbuser-operator.dev/release"


@pytest.fixture(scope="module")
async def fleet_operator(
    start_module_operator: StartOperator, kube_api: client.ApiClient
) -> AsyncIterator[FleetOperator]:
    async with running_fleet_operator(start_module_operator, kube_api) as operator:
        yield operator


def end_sessions(admin: Admin) -> int:
    """KILL every session of ``admin`` on its server (as the envtest admin), as a server restart or an idle
    timeout would: the operator's pooled connections must be opened again. How many there were."""
    sessions = mysql_query(
        admin.server, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", admin.user
    )
    for (session,) in sessions:
        mysql_query(admin.server, f"KILL {int(session)}")
    return len(sessions)


async def test_an_admin_password_rotated_on_one_server_reconnects_without_restart(
    fleet_operator: FleetOperator,
    fleet: Fleet,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
) -> None:
    """The ClusterMySQLServer of MySQL 9.7 (its Secret in the operator's namespace) and a MySQLServer of
    MariaDB 10.11: the admin password of the first changes, in MySQL then in its Secret."""
    rotated = await create_server(
        kube_client, fleet_operator, create_admin(fleet["mysql-9.7"].admin, passwords), unique("rotated")
    )
    other = await create_server(
        kube_client,
        fleet_operator,
        create_admin(fleet["mariadb-10.11"].admin, passwords),
        unique("other"),
        namespace=namespace,
    )
    servers = {"rotated": rotated, "other": other}
    try:
        await asyncio.gather(*(wait_for_server(kube_client, server) for server in servers.values()))
        first, first_password = await add_user(kube_client, fleet_operator, namespace, rotated, passwords)
        await wait_for_users(kube_client, namespace, [first])

        # The DBA changes the admin password in MySQL; the operator's sessions end (as on a restart).
        new_admin = set_admin_password(rotated.admin, passwords.new("admin"))
        end_sessions(rotated.admin)
        waiting, waiting_password = await add_user(kube_client, fleet_operator, namespace, rotated, passwords)
        await wait_for_user_message(kube_client, namespace, waiting, "False", str(rotated))
        await wait_for_server(kube_client, rotated, "False")
        # The other server is not concerned.
        elsewhere, elsewhere_password = await add_user(
            kube_client, fleet_operator, namespace, other, passwords
        )
        await wait_for_users(kube_client, namespace, [elsewhere])
        assert can_log_in(other.mysql, elsewhere, elsewhere_password)

        # Then in the Secret: the operator reconnects with it, no restart, and what waited converges.
        await set_server_secret_password(kube_client, rotated, new_admin.password)
        await wait_for_server(kube_client, rotated, "True")  # False above: this True is a new check's
        # `waiting` was False: its True is new. `first` may never have gone False (no pass of it needed the
        # server meanwhile): its Ready=True may be the one from before, and proves nothing of the reconnect.
        await wait_for_users(kube_client, namespace, [first, waiting])
        assert can_log_in(rotated.mysql, waiting, waiting_password)
        assert can_log_in(rotated.mysql, first, first_password)
        # Writes work through the new connections: a rotation of `first` applies (every session of the admin
        # made since the password changed, and only the new one logs in), and its pass ends: its status names
        # the edited Secret.
        newer = passwords.new()
        await set_password(kube_client, namespace, first, newer)
        await logs_in_soon(rotated, first, newer)
        await applied_version(kube_client, namespace, first, f"{first}-pw")
        # ... made as the admin with its new password (the operator's sessions there are its own).
        sessions = mysql_query(
            rotated.mysql,
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
            new_admin.user,
        )
        assert sessions[0][0] >= 1
        assert not fleet_operator.instance.task.done(), "the operator restarted or stopped"
    finally:
        await remove_servers(kube_client, namespace, servers)


async def test_the_same_account_name_on_two_servers_is_two_accounts(
    fleet_operator: FleetOperator,
    fleet: Fleet,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
) -> None:
    servers = {
        flavour: await create_server(
            kube_client,
            fleet_operator,
            create_admin(fleet[flavour].admin, passwords),
            unique(flavour.replace(".", "")),
            namespace=namespace,
        )
        for flavour in ("mysql-9.7", "mariadb-10.11")
    }
    try:
        await asyncio.gather(*(wait_for_server(kube_client, server) for server in servers.values()))
        account = unique("shared").replace("-", "_")
        users = {
            flavour: await add_user(kube_client, fleet_operator, namespace, server, passwords, user=account)
            for flavour, server in servers.items()
        }
        # Both Ready: no AccountClaimed, each owns the account on its own server.
        await wait_for_users(kube_client, namespace, [name for name, _ in users.values()])
        for flavour, (_, password) in users.items():
            assert can_log_in(servers[flavour].mysql, account, password)
        mysql_name, mariadb_name = users["mysql-9.7"][0], users["mariadb-10.11"][0]
        mariadb_password = users["mariadb-10.11"][1]
        assert not can_log_in(servers["mysql-9.7"].mysql, account, mariadb_password)

        # Deleting one drops only its own account.
        await kube_client.delete(DATABASE_USERS, mysql_name, namespace)
        await wait_until_gone(kube_client, namespace, mysql_name, limit=60)
        assert not account_exists(servers["mysql-9.7"].mysql, account)
        assert account_exists(servers["mariadb-10.11"].mysql, account)
        assert can_log_in(servers["mariadb-10.11"].mysql, account, mariadb_password)
        # ... and the other stays Ready through drift checks (every second here).
        await asyncio.sleep(3)
        await wait_for_users(kube_client, namespace, [mariadb_name], limit=5)
        assert account_exists(servers["mariadb-10.11"].mysql, account)
    finally:
        await remove_servers(kube_client, namespace, servers)


async def release_everything(kube: KubeClient, namespace: str, servers: list[ServerHandle]) -> None:
    """Whatever a failed test left: DatabaseUsers and servers released (their accounts left) and deleted,
    the admins dropped."""
    annotate = {"metadata": {"annotations": {RELEASE: "true"}}}
    for item in (await kube.list(DATABASE_USERS, namespace))["items"]:
        name = item["metadata"]["name"]
        await kube.patch(DATABASE_USERS, name, annotate, PatchType.MERGE, namespace=namespace)
        await kube.delete(DATABASE_USERS, name, namespace)
    for server in servers:
        try:
            await kube.patch(
                server.resource, server.name, annotate, PatchType.MERGE, namespace=server.namespace
            )
            await kube.delete(server.resource, server.name, server.namespace)
        except NotFound:
            pass
        forget_server(server)


def warnings_of(kubectl: Runner, namespace: str, name: str) -> list[dict[str, str]]:
    """The Warning Events about the object ``name`` in ``namespace``."""
    events = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return [
        event for event in events if event["type"] == "Warning" and event["involvedObject"]["name"] == name
    ]


async def test_a_server_deleted_under_its_users_waits_for_them_or_lets_go_when_released(
    fleet_operator: FleetOperator,
    fleet: Fleet,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    mariadb = fleet["mariadb-10.11"]
    waits = await create_server(
        kube_client,
        fleet_operator,
        create_admin(mariadb.admin, passwords),
        unique("waits"),
        namespace=namespace,
    )
    released = await create_server(
        kube_client,
        fleet_operator,
        create_admin(mariadb.admin, passwords),
        unique("released"),
        namespace=namespace,
    )
    orphan, orphan_password = unique("orphan"), passwords.new()
    try:
        await asyncio.gather(*(wait_for_server(kube_client, s) for s in (waits, released)))
        kept, _ = await add_user(kube_client, fleet_operator, namespace, waits, passwords)
        orphan, orphan_password = await add_user(kube_client, fleet_operator, namespace, released, passwords)
        await wait_for_users(kube_client, namespace, [kept, orphan])

        # Deleted while a user is on it: the finalizer keeps it, the user says why it stops converging.
        await kube_client.delete(waits.resource, waits.name, waits.namespace)
        await wait_for_user_message(
            kube_client, namespace, kept, "False", str(waits), reasons={"ServerDeleting"}
        )
        # The server says what it waits for (kubectl get mysqlservers: Ready False, reason Deleting).
        obj = await wait_for_server(kube_client, waits, "False", "Deleting")
        assert "1 DatabaseUser(s)" in (ready(obj) or {})["message"]
        await asyncio.sleep(3)  # health checks and drift checks go on: it still waits
        obj = await get_server(kube_client, waits)
        assert obj["metadata"].get("deletionTimestamp")
        assert obj["metadata"]["finalizers"] == [f"mysql.dbuser-operator.dev/server-{fleet_operator.target}"]
        # The user's own deletion still goes through on that server (its account dropped), then the server
        # goes.
        await kube_client.delete(DATABASE_USERS, kept, namespace)
        await wait_until_gone(kube_client, namespace, kept, limit=60)
        assert not account_exists(waits.mysql, kept)
        await server_gone(kube_client, waits)

        # Released: it goes at once, its account left in MySQL, a Warning Event says so.
        annotate = {"metadata": {"annotations": {RELEASE: "true"}}}
        await kube_client.patch(
            released.resource, released.name, annotate, PatchType.MERGE, namespace=namespace
        )
        await kube_client.delete(released.resource, released.name, released.namespace)
        await server_gone(kube_client, released)
        warnings = await eventually(
            lambda: warnings_of(kubectl, namespace, released.name),
            interval=0.2,
            message=f"no Warning Event about {released}",
        )
        (event,) = warnings
        assert event["reason"] == "Released"
        assert "1 DatabaseUser(s)" in event["message"]
        assert can_log_in(released.mysql, orphan, orphan_password)
        # Its user first saw it deleting, then gone: it says so (no account to drop there any more).
        await wait_for_user_message(
            kube_client, namespace, orphan, "False", str(released), reasons={"ServerNotFound"}
        )
        # The user left behind is let go with the same annotation; its account stays.
        await kube_client.patch(DATABASE_USERS, orphan, annotate, PatchType.MERGE, namespace=namespace)
        await kube_client.delete(DATABASE_USERS, orphan, namespace)
        await wait_until_gone(kube_client, namespace, orphan, limit=60)
        assert account_exists(released.mysql, orphan)
    finally:
        await release_everything(kube_client, namespace, [waits, released])
        mysql_query(mariadb.admin, f"DROP USER IF EXISTS '{orphan}'@'%'")
