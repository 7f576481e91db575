"""Several hosts per user, end to end on real servers: each host its own account under the ownership rules;
hosts removed from the spec dropped (Delete) or released (Retain); deletion drops every owned host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import login
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import own_schema
from tests.integration.operator.support.kube import ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query, privileges_of
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import becomes
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

SELECT_APP = [{"privileges": ["SELECT"], "database": "hostsdb"}]


async def until(condition: Callable[[], bool], what: str) -> None:
    await eventually(condition, timeout=30, interval=0.1, what=what)


async def patch_spec(kube: KubeClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    await kube.patch(DATABASE_USERS, name, {"spec": spec}, PatchType.MERGE, namespace=namespace)


def owned_hosts(mysql: MySQLServer, user: str) -> set[str]:
    rows = mysql_query(mysql, f"SELECT host FROM {own_schema()}.accounts WHERE user = %s", user)
    return {str(row[0]) for row in rows}


async def status_hosts_become(kube: KubeClient, namespace: str, name: str, hosts: list[str]) -> None:
    async def status_hosts() -> list[str]:
        return sorted((await kube.get(DATABASE_USERS, name, namespace)).get("status", {}).get("hosts") or [])

    await becomes(status_hosts, hosts, interval=0.1, message=f"status.hosts never became {hosts}")


async def test_two_hosts_converge_and_each_account_logs_in_from_its_host(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    mysql_provider: MySQLServer | LocalMySQLServer,
    secret: str,
    passwords: PasswordLedger,
) -> None:
    name = unique("twohosts")
    body = database_user(name, "pw", host="localhost", hosts=["127.0.0.1"], privileges=SELECT_APP)
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    assert f"'{name}'@'localhost', '{name}'@'127.0.0.1'" in ready(obj)["message"]  # type: ignore[index]
    assert obj["status"]["hosts"] == sorted(["localhost", "127.0.0.1"])
    for host in ("localhost", "127.0.0.1"):
        assert privileges_of(mysql, name, host) == {("hostsdb", "*", "SELECT", False)}
    assert owned_hosts(mysql, name) == {"localhost", "127.0.0.1"}

    # A TCP client from 127.0.0.1 is the '127.0.0.1' account (the servers skip name resolution) ...
    assert login(mysql, name, secret) == f"{name}@127.0.0.1"
    # ... and a client on the server's Unix socket is the 'localhost' one.
    if isinstance(mysql_provider, LocalMySQLServer):
        assert login(mysql, name, secret, unix_socket=str(mysql_provider.socket)) == f"{name}@localhost"

    # A new password reaches every host.
    changed = passwords.new()
    await kube_client.patch(
        SECRETS, "pw", {"stringData": {"password": changed}}, PatchType.MERGE, namespace=namespace
    )
    await until(lambda: can_log_in(mysql, name, changed), what="the new password from 127.0.0.1")
    if isinstance(mysql_provider, LocalMySQLServer):
        assert login(mysql, name, changed, unix_socket=str(mysql_provider.socket)) == f"{name}@localhost"

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name, "localhost")
    assert not account_exists(mysql, name, "127.0.0.1")
    assert owned_hosts(mysql, name) == set()


async def test_a_host_added_later_is_adopted_with_the_secrets_password(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    passwords: PasswordLedger,
) -> None:
    """With the adopt annotation, an existing account of a host added to a resource that is Ready already
    gets the Secret's password (the resource's appliedSecret is not that account's)."""
    name = unique("addlater")
    body = database_user(name, "pw", host="10.1.%")
    body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    handmade = passwords.new("handmade")
    mysql_query(mysql, f"CREATE USER '{name}'@'127.0.0.1' IDENTIFIED BY %s", handmade)
    assert can_log_in(mysql, name, handmade)

    await patch_spec(kube_client, namespace, name, {"hosts": ["127.0.0.1"]})
    await until(lambda: owned_hosts(mysql, name) == {"10.1.%", "127.0.0.1"}, what="127.0.0.1 adopted")
    await until(lambda: can_log_in(mysql, name, secret), what="the Secret's password on 127.0.0.1")
    assert not can_log_in(mysql, name, handmade)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name, "127.0.0.1")


async def test_a_removed_host_is_dropped_under_delete(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("dropped")
    body = database_user(name, "pw", host="10.1.%", hosts=["10.2.%", "10.3.%"])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    assert all(account_exists(mysql, name, host) for host in ("10.1.%", "10.2.%", "10.3.%"))

    await patch_spec(kube_client, namespace, name, {"hosts": ["10.3.%"]})
    await until(lambda: not account_exists(mysql, name, "10.2.%"), what="the removed host dropped")
    assert account_exists(mysql, name, "10.1.%")
    assert account_exists(mysql, name, "10.3.%")
    await until(lambda: owned_hosts(mysql, name) == {"10.1.%", "10.3.%"}, what="and forgotten")
    await status_hosts_become(kube_client, namespace, name, ["10.1.%", "10.3.%"])

    # A host added back is created again.
    await patch_spec(kube_client, namespace, name, {"hosts": ["10.3.%", "10.2.%"]})
    await until(lambda: account_exists(mysql, name, "10.2.%"), what="the host added back")

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not any(account_exists(mysql, name, host) for host in ("10.1.%", "10.2.%", "10.3.%"))


async def test_a_removed_host_is_kept_and_forgotten_under_retain(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("retained")
    body = database_user(name, "pw", host="10.1.%", hosts=["10.2.%"], deletionPolicy="Retain")
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    try:
        await patch_spec(kube_client, namespace, name, {"hosts": []})
        await until(lambda: owned_hosts(mysql, name) == {"10.1.%"}, what="the removed host forgotten")
        assert account_exists(mysql, name, "10.2.%")  # kept
        # No longer managed: a change by hand stays.
        mysql_query(mysql, f"GRANT SELECT ON hostsdb.* TO '{name}'@'10.2.%'")
        await status_hosts_become(kube_client, namespace, name, ["10.1.%"])
        await until(lambda: owned_hosts(mysql, name) == {"10.1.%"}, what="still forgotten")
        assert privileges_of(mysql, name, "10.2.%") == {("hostsdb", "*", "SELECT", False)}
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{name}'@'10.2.%', '{name}'@'10.1.%'")


async def test_an_owned_account_of_a_host_no_longer_in_the_spec_is_found_and_dropped(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    """What the bookkeeping table says the resource owns counts, not status: an account left by a removal
    whose drop failed (made here by hand, after the removal) is dropped by the drift check's next pass."""
    name = unique("leftover")
    body = database_user(name, "pw", host="10.1.%", hosts=["10.9.%"])
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    uid = obj["metadata"]["uid"]
    await kube_client.patch(
        DATABASE_USERS, name, {"spec": {"hosts": None}}, PatchType.MERGE, namespace=namespace
    )
    await until(lambda: not account_exists(mysql, name, "10.9.%"), what="the removed host's account dropped")
    # Its row goes right after the drop: a row written before that would be forgotten with it.
    await until(lambda: owned_hosts(mysql, name) == {"10.1.%"}, what="the removed host's account forgotten")
    # As if that drop had failed: the account and its row are back; status no longer names the host.
    mysql_query(mysql, f"CREATE USER '{name}'@'10.9.%' IDENTIFIED BY 'left-over-9'")
    mysql_query(
        mysql,
        f"INSERT INTO {own_schema()}.accounts (user, host, owner_uid, namespace, name)"
        " VALUES (%s, '10.9.%%', %s, %s, %s)",
        name,
        uid,
        namespace,
        name,
    )
    await until(lambda: not account_exists(mysql, name, "10.9.%"), what="the left-over account dropped")
    await until(lambda: owned_hosts(mysql, name) == {"10.1.%"}, what="and forgotten")
    assert account_exists(mysql, name, "10.1.%")


async def test_another_owners_account_on_one_host_refuses_that_host_only(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    passwords: PasswordLedger,
) -> None:
    user = unique("shared")
    first, second = unique("first"), unique("second")
    body = database_user(first, "pw", user=user, host="10.4.%", hosts=["10.5.%"])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, first)
    handmade = passwords.new("handmade")
    mysql_query(mysql, f"CREATE USER '{user}'@'10.7.%%' IDENTIFIED BY %s", handmade)
    try:
        body = database_user(second, "pw", user=user, host="10.6.%", hosts=["10.5.%", "10.7.%"])
        await kube_client.create(DATABASE_USERS, body, namespace)
        obj = await wait_for_ready(kube_client, namespace, second, "False", "AccountClaimed")
        message = ready(obj)["message"]  # type: ignore[index]
        assert f"'{user}'@'10.5.%' is managed by DatabaseUser {namespace}/{first}" in message
        assert f"'{user}'@'10.7.%' already exists" in message  # AccountExists, named too
        assert "10.6.%" not in message
        # The free host converged all the same; the others are untouched.
        assert account_exists(mysql, user, "10.6.%")
        assert owned_hosts(mysql, user) == {"10.4.%", "10.5.%", "10.6.%"}
        assert obj["status"]["hosts"] == ["10.6.%"]

        # The first one lets go of 10.5.% (dropped): the second is looked at again and takes it.
        await patch_spec(kube_client, namespace, first, {"hosts": []})
        obj = await wait_for_ready(kube_client, namespace, second, "False", "AccountExists", limit=30)
        assert "10.5.%" not in ready(obj)["message"]  # type: ignore[index]
        await until(lambda: account_exists(mysql, user, "10.5.%"), what="10.5.% created by the second")
        obj = await kube_client.get(DATABASE_USERS, second, namespace)
        assert sorted(obj["status"]["hosts"]) == ["10.5.%", "10.6.%"]

        # Deleting the second drops its own accounts only.
        await kube_client.delete(DATABASE_USERS, second, namespace)
        await wait_until_gone(kube_client, namespace, second)
        assert not account_exists(mysql, user, "10.6.%")
        assert not account_exists(mysql, user, "10.5.%")
        assert account_exists(mysql, user, "10.4.%")
        assert account_exists(mysql, user, "10.7.%")
        assert owned_hosts(mysql, user) == {"10.4.%"}
        await wait_for_ready(kube_client, namespace, first)
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{user}'@'10.7.%'")
