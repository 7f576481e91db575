"""One operator, three real servers of different flavours at once (MySQL 9.7, MariaDB 11.8, MariaDB 10.11):
users spread over them converge and log in; a stopped server holds only its own users while the others
converge and rotate, and all converge when it returns; `kubectl get mysqlservers` shows which is healthy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest.fleet import Fleet
from dbuser_operator.runtime.client import KubeClient
from tests.conftest import Runner
from tests.integration.operator.support.fleet import (
    FleetOperator,
    ServerHandle,
    add_user,
    create_servers,
    get_server,
    logs_in_soon,
    remove_servers,
    running_fleet_operator,
    server_stopped,
    set_password,
    wait_for_server,
    wait_for_user_message,
    wait_for_users,
)
from tests.integration.operator.support.kube import printed_table
from tests.integration.operator.support.mysql import account_exists, can_log_in
from tests.integration.operator.support.operator import PasswordLedger, StartOperator
from tests.integration.operator.support.wait import eventually

pytestmark = [pytest.mark.integration, pytest.mark.fleet]

FLAVOURS = {
    "mysql-9.7": ("MySQL", "9.7."),
    "mariadb-11.8": ("MariaDB", "11.8."),
    "mariadb-10.11": ("MariaDB", "10.11."),
}


@pytest.fixture(scope="module")
async def fleet_operator(
    start_module_operator: StartOperator, kube_api: client.ApiClient
) -> AsyncIterator[FleetOperator]:
    async with running_fleet_operator(start_module_operator, kube_api) as operator:
        yield operator


async def wait_for_accounts(
    kube: KubeClient, server: ServerHandle, count: int, limit: float = 60
) -> dict[str, Any]:
    """Poll until the server's status counts ``count`` managed accounts; the object."""

    async def check() -> dict[str, Any]:
        obj = await get_server(kube, server)
        assert (obj.get("status") or {}).get("accounts") == count, f"status: {obj.get('status')}"
        return obj

    return await eventually(
        check, limit=limit, interval=0.2, message=f"{server} never counted {count} accounts"
    )


async def test_users_spread_over_three_servers_converge_and_log_in(
    fleet_operator: FleetOperator,
    fleet: Fleet,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    servers = await create_servers(kube_client, fleet_operator, fleet, passwords, namespace)
    try:
        users: dict[str, tuple[str, str]] = {}  # name → (flavour, password)
        for flavour, server in servers.items():
            for _ in range(3):
                name, password = await add_user(kube_client, fleet_operator, namespace, server, passwords)
                users[name] = (flavour, password)
        await wait_for_users(kube_client, namespace, list(users))

        for name, (flavour, password) in users.items():
            assert can_log_in(servers[flavour].mysql, name, password), f"{name} on {flavour}"
            for other, server in servers.items():
                if other != flavour:  # the account exists where its resource says, and nowhere else
                    assert not account_exists(server.mysql, name), f"{name} leaked onto {other}"

        # Each server's status: healthy, what it is, what it can do, how many accounts the operator has there.
        for flavour, server in servers.items():
            status = (await wait_for_accounts(kube_client, server, 3))["status"]
            product, version = FLAVOURS[flavour]
            assert status["flavour"] == product
            assert status["version"].startswith(version)
            assert status["capabilities"]["dualPasswords"] is True  # MySQL 8.0.21+, MariaDB 10.11+

        # kubectl, as a platform team reads it: one line per server, Ready, flavour and version.
        rows = printed_table(kubectl("get", "mysqlservers", "-n", namespace).stdout)
        by_name = {row["NAME"]: row for row in rows}
        for flavour in ("mariadb-11.8", "mariadb-10.11"):
            row = by_name[servers[flavour].name]
            assert (row["READY"], row["FLAVOUR"], row["ACCOUNTS"]) == ("True", "MariaDB", "3")
            assert row["VERSION"].startswith(FLAVOURS[flavour][1])
            assert row["PORT"] == str(servers[flavour].mysql.port)
        cluster = servers["mysql-9.7"]
        (row,) = printed_table(kubectl("get", "clustermysqlservers", cluster.name).stdout)
        assert (row["READY"], row["FLAVOUR"], row["ACCOUNTS"]) == ("True", "MySQL", "3")
        assert row["VERSION"].startswith("9.7.")
        wide = printed_table(kubectl("get", "clustermysqlservers", cluster.name, "-o", "wide").stdout)
        assert (wide[0]["DUALPASSWORDS"], wide[0]["ROLES"]) == ("true", "true")
    finally:
        await remove_servers(kube_client, namespace, servers)


async def test_a_stopped_server_holds_only_its_own_users(
    fleet_operator: FleetOperator,
    fleet: Fleet,
    kube_client: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    servers = await create_servers(kube_client, fleet_operator, fleet, passwords, namespace)
    down = "mariadb-11.8"
    stopped = servers[down]
    try:
        before: dict[str, list[tuple[str, str]]] = {flavour: [] for flavour in servers}
        for flavour, server in servers.items():
            for _ in range(2):
                before[flavour].append(
                    await add_user(kube_client, fleet_operator, namespace, server, passwords)
                )
        await wait_for_users(kube_client, namespace, [name for pairs in before.values() for name, _ in pairs])

        async with server_stopped(fleet, down):
            # The server says so, and so do its users, naming it; the other servers stay Ready.
            await wait_for_server(kube_client, stopped, "False")
            for name, _ in before[down]:
                await wait_for_user_message(kube_client, namespace, name, "False", str(stopped))
            rows = {
                row["NAME"]: row
                for row in printed_table(kubectl("get", "mysqlservers", "-n", namespace).stdout)
            }
            assert rows[stopped.name]["READY"] == "False"
            assert rows[servers["mariadb-10.11"].name]["READY"] == "True"

            # New users: on the running servers they converge, on the stopped one they wait, naming it.
            new = {
                flavour: await add_user(kube_client, fleet_operator, namespace, server, passwords, "new")
                for flavour, server in servers.items()
            }
            running = [flavour for flavour in servers if flavour != down]
            await wait_for_users(kube_client, namespace, [new[flavour][0] for flavour in running])
            for flavour in running:
                assert can_log_in(servers[flavour].mysql, *new[flavour])
            condition = await wait_for_user_message(
                kube_client, namespace, new[down][0], "False", str(stopped)
            )
            assert condition["reason"] in {"ServerNotReady", "DatabaseUnavailable"}, condition

            # Rotation goes on elsewhere: a Secret edit applies, the new password logs in.
            rotated: dict[str, tuple[str, str]] = {}
            for flavour in servers:
                name, _ = before[flavour][0]
                rotated[flavour] = (name, passwords.new())
                await set_password(kube_client, namespace, *rotated[flavour])
            for flavour in running:
                await logs_in_soon(servers[flavour], *rotated[flavour])
            for flavour in running:  # and they are all still Ready
                await wait_for_users(kube_client, namespace, [name for name, _ in before[flavour]])
            # The users on the stopped server are still waiting, not failed for good.
            for name, _ in [*before[down], new[down]]:
                await wait_for_user_message(kube_client, namespace, name, "False", str(stopped))
            # kubectl get dbu -o wide: which users wait, and on which server.
            users = printed_table(kubectl("get", "dbu", "-n", namespace, "-o", "wide").stdout)
            waiting = {row["NAME"] for row in users if row["READY"] == "False"}
            assert waiting == {name for name, _ in [*before[down], new[down]]}
            assert {row["SERVER"] for row in users if row["NAME"] in waiting} == {stopped.name}

        # Back: everything converges, what was asked meanwhile included, without anyone touching it.
        await wait_for_server(kube_client, stopped, "True")
        everyone = [name for pairs in before.values() for name, _ in pairs] + [
            name for name, _ in new.values()
        ]
        await wait_for_users(kube_client, namespace, everyone)
        assert can_log_in(stopped.mysql, *new[down])
        await logs_in_soon(stopped, *rotated[down])
        rows = {
            row["NAME"]: row for row in printed_table(kubectl("get", "mysqlservers", "-n", namespace).stdout)
        }
        assert rows[stopped.name]["READY"] == "True"
    finally:
        await remove_servers(kube_client, namespace, servers)
