"""Owner metadata end to end: on MySQL the account's attributes name its owner and carry spec.comment —
written at creation, converged on an edit, repaired after a hand edit, removed on release, shown by Observe
and never written by it; on MariaDB a comment is refused by name and the bookkeeping table names the
owner."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import own_schema
from tests.integration.operator.support.kube import ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, is_mariadb, mysql_query, write_statements
from tests.integration.operator.support.operator import RunningOperator
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

OWNER_KEY = "dbuser-operator.dev/owner"
BOOKKEEPING = ("dbuser-operator.dev/credential", "dbuser-operator.dev/fingerprint")


async def until(condition: Callable[[], bool], what: str) -> None:
    await eventually(condition, timeout=30, interval=0.1, what=what)


async def patch_spec(kube: KubeClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    await kube.patch(DATABASE_USERS, name, {"spec": spec}, PatchType.MERGE, namespace=namespace)


def attributes(mysql: MySQLServer, user: str, host: str = "%") -> dict[str, Any] | None:
    """The account's attributes as a DBA reads them (None: no such account), but the operator's own
    bookkeeping there (:func:`bookkeeping`)."""
    found = all_attributes(mysql, user, host)
    return None if found is None else {key: value for key, value in found.items() if key not in BOOKKEEPING}


def bookkeeping(mysql: MySQLServer, user: str, host: str = "%") -> set[str]:
    """Which of the operator's own keys the account's attributes carry: the credential marker, the
    fingerprint it was created with."""
    return set(all_attributes(mysql, user, host) or {}) & set(BOOKKEEPING)


def all_attributes(mysql: MySQLServer, user: str, host: str = "%") -> dict[str, Any] | None:
    rows = mysql_query(
        mysql,
        "SELECT ATTRIBUTE FROM information_schema.USER_ATTRIBUTES WHERE USER = %s AND HOST = %s",
        user,
        host,
    )
    if not rows:
        return None
    return dict(json.loads(rows[0][0])) if rows[0][0] is not None else {}


def entry(obj: dict[str, Any]) -> dict[str, str]:
    metadata = obj["metadata"]
    return {
        "managedBy": "dbuser-operator",
        "namespace": metadata["namespace"],
        "name": metadata["name"],
        "uid": metadata["uid"],
    }


@pytest.fixture
def mysql_only(mysql: MySQLServer) -> None:
    if is_mariadb(mysql):
        pytest.skip("account attributes: MySQL 8.0.21+ (MariaDB: test_mariadb_refuses_a_comment_by_name)")


@pytest.mark.usefixtures("mysql_only", "secret")
async def test_the_account_names_its_owner_converges_and_forgets_it_when_released(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    name = unique("owned")
    body = database_user(name, "pw", comment="billing API, team payments", deletionPolicy="Retain")
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name)
    mine = entry(obj)
    assert attributes(mysql, name) == {OWNER_KEY: mine, "comment": "billing API, team payments"}
    assert bookkeeping(mysql, name) == set(BOOKKEEPING)  # from CREATE USER and the statement after it

    await asyncio.sleep(1.5)  # a pass and drift checks in line: nothing written
    before = write_statements(mysql)
    await asyncio.sleep(2.5)
    assert write_statements(mysql) == before

    await patch_spec(kube_client, namespace, name, {"comment": "billing API (v2)"})
    edited = {OWNER_KEY: mine, "comment": "billing API (v2)"}
    await until(lambda: attributes(mysql, name) == edited, "comment edited")

    # A hand edit, the owner entry pointed elsewhere with a key of its own: the drift check repairs it.
    forged = json.dumps({OWNER_KEY: {"namespace": "team-b", "name": "thief", "extra": 1}, "comment": "x"})
    mysql_query(mysql, f"ALTER USER '{name}'@'%' ATTRIBUTE '{forged}'")
    await until(
        lambda: attributes(mysql, name) == {OWNER_KEY: mine, "comment": "billing API (v2)"}, "repaired"
    )

    await patch_spec(kube_client, namespace, name, {"comment": ""})  # "": no comment
    await until(lambda: attributes(mysql, name) == {OWNER_KEY: mine}, "comment removed")

    await kube_client.delete(DATABASE_USERS, name, namespace)  # Retain: the account stays, owner-less
    await wait_until_gone(kube_client, namespace, name)
    assert account_exists(mysql, name)
    assert all_attributes(mysql, name) == {}  # the operator's own keys went with the owner entry
    mysql_query(mysql, f"DROP USER '{name}'@'%'")


@pytest.mark.usefixtures("mysql_only", "secret")
async def test_a_host_released_from_the_spec_loses_its_owner_entry(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    name = unique("hosted")
    body = database_user(name, "pw", hosts=["10.9.8.7"], deletionPolicy="Retain")
    await kube_client.create(DATABASE_USERS, body, namespace)
    mine = entry(await wait_for_ready(kube_client, namespace, name))
    assert attributes(mysql, name, "10.9.8.7") == {OWNER_KEY: mine}

    await patch_spec(kube_client, namespace, name, {"hosts": []})
    released = "the released host's owner entry removed"
    await until(lambda: all_attributes(mysql, name, "10.9.8.7") == {}, released)
    assert attributes(mysql, name) == {OWNER_KEY: mine}  # the host still in the spec keeps it
    await patch_spec(kube_client, namespace, name, {"deletionPolicy": "Delete"})
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    mysql_query(mysql, f"DROP USER IF EXISTS '{name}'@'10.9.8.7'")


@pytest.mark.usefixtures("mysql_only", "secret")
async def test_observe_shows_the_owner_and_the_comment_and_writes_neither(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    name = unique("watched")
    await kube_client.create(DATABASE_USERS, database_user(name, "pw", comment="batch jobs"), namespace)
    mine = entry(await wait_for_ready(kube_client, namespace, name))
    await patch_spec(kube_client, namespace, name, {"managementPolicy": "Observe"})
    obj = await wait_for_ready(kube_client, namespace, name, reason="Observed")
    (seen,) = obj["status"]["observed"]
    assert (seen["owner"], seen["comment"]) == (f"{namespace}/{name}", "batch jobs")

    await patch_spec(kube_client, namespace, name, {"comment": "changed"})
    obj = await wait_for_ready(kube_client, namespace, name, "False", "Diverged")
    assert "comment is 'batch jobs' (spec 'changed')" in (ready(obj) or {})["message"]
    assert attributes(mysql, name) == {OWNER_KEY: mine, "comment": "batch jobs"}  # not written

    await kube_client.delete(DATABASE_USERS, name, namespace)  # Observe lets go and writes nothing
    await wait_until_gone(kube_client, namespace, name)
    assert attributes(mysql, name) == {OWNER_KEY: mine, "comment": "batch jobs"}
    mysql_query(mysql, f"DROP USER '{name}'@'%'")


@pytest.mark.usefixtures("secret")
async def test_mariadb_refuses_a_comment_by_name(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """MariaDB cannot store a comment: refused before anything is written; without it the account is made
    and the bookkeeping table, the documented query's, names its owner."""
    if not is_mariadb(mysql):
        pytest.skip("MariaDB only: MySQL stores the comment (test_the_account_names_its_owner…)")
    name = unique("noted")
    await kube_client.create(DATABASE_USERS, database_user(name, "pw", comment="billing"), namespace)
    obj = await wait_for_ready(kube_client, namespace, name, "False", "CommentNotSupported")
    assert "MariaDB has no account comments" in (ready(obj) or {})["message"]
    assert not account_exists(mysql, name)
    query = f"SELECT namespace, name, owner_uid FROM {own_schema()}.accounts WHERE user = %s"
    tables = "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'accounts'"
    if mysql_query(mysql, tables, own_schema()):  # a fresh server may have none yet: nothing written
        assert mysql_query(mysql, query, name) == []

    await patch_spec(kube_client, namespace, name, {"comment": None})  # merge patch: null removes it
    obj = await wait_for_ready(kube_client, namespace, name)
    assert mysql_query(mysql, query, name) == [(namespace, name, obj["metadata"]["uid"])]
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


@pytest.mark.usefixtures("mysql_only", "secret")
async def test_an_owner_entry_written_by_hand_is_no_proof_of_ownership(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """An account made by hand whose attributes name this very resource is still not the operator's: the
    bookkeeping table decides (AccountExists), and the account is left as it is."""
    name = unique("claimed")
    forged = json.dumps({OWNER_KEY: {"managedBy": "dbuser-operator", "namespace": namespace, "name": name}})
    mysql_query(mysql, f"CREATE USER '{name}'@'%' IDENTIFIED BY 'theirs' ATTRIBUTE '{forged}'")
    before = attributes(mysql, name)
    await kube_client.create(DATABASE_USERS, database_user(name, "pw", comment="mine"), namespace)
    await wait_for_ready(kube_client, namespace, name, "False", "AccountExists")
    assert attributes(mysql, name) == before
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert account_exists(mysql, name)  # not ours: never dropped
    mysql_query(mysql, f"DROP USER '{name}'@'%'")
