"""DatabaseRole and a DatabaseUser's roles end to end: real API server, real MySQL/MariaDB, real logins."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pymysql
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import EVENTS
from tests.conftest import Runner
from tests.integration.mysql.support import client_tls
from tests.integration.operator.support.builders import database_role, database_user, unique
from tests.integration.operator.support.instances import own_target
from tests.integration.operator.support.kube import (
    create_secret,
    ready,
    wait_for_event,
    wait_for_ready,
    wait_role_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import (
    default_roles_of,
    is_mariadb,
    mysql_accounts,
    mysql_query,
    privileges_of,
    role_exists,
    role_host,
    roles_of,
)
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import becomes, eventually

pytestmark = pytest.mark.integration

# Refused as a role name (spec.role) and as a reference to a DatabaseRole (spec.roles, spec.defaultRoles).
TRICKS = ["a'b", "a`b", "a\\b", "a b", "a%b", "ｒｏｏｔ", "x" * 33, "", "-x", "' OR '1'='1"]  # noqa: RUF001


def select_as(mysql: MySQLServer, user: str, password: str, query: str) -> list[tuple[Any, ...]] | int:
    """Rows of ``query`` run by ``user`` after a real login, or the server's error code."""
    connection = pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password,
        connect_timeout=5,
        **client_tls(mysql, tls=False),
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(query)
            return list(cursor.fetchall())
    except pymysql.err.MySQLError as error:
        return int(error.args[0])
    finally:
        connection.close()


async def test_role_lifecycle_and_user_roles(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    role_name, database = unique("reader"), unique("rolesdb").replace("-", "")
    host = role_host(mysql)
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    mysql_query(mysql, f"CREATE TABLE `{database}`.t (a INT)")
    mysql_query(mysql, f"INSERT INTO `{database}`.t VALUES (42)")
    grant = {"privileges": ["SELECT"], "database": database}
    await kube_client.create(DATABASE_ROLES, database_role(role_name, privileges=[grant]), namespace)

    # From empty: the role exists with exactly its privileges.
    obj = await wait_role_ready(kube_client, namespace, role_name)
    assert obj["status"]["role"] == role_name
    assert obj["metadata"]["finalizers"] == [f"mysql.dbuser-operator.dev/account-{own_target()}"]
    assert role_exists(mysql, role_name)
    expected = {(database, "*", "SELECT", False)}
    assert privileges_of(mysql, role_name, host) == expected

    # From drift: a privilege added by hand is revoked, one removed by hand restored (periodic resync).
    grantee = f"'{role_name}'" + (f"@'{host}'" if host else "")
    mysql_query(mysql, f"GRANT INSERT ON `{database}`.* TO {grantee}")
    mysql_query(mysql, f"REVOKE SELECT ON `{database}`.* FROM {grantee}")
    await eventually(
        lambda: privileges_of(mysql, role_name, host) == expected,
        limit=60,
        interval=0.1,
        message="role drift never repaired",
    )

    # A user with the role as default role: a real login can read through it, and only through it.
    user, password = unique("roleuser"), passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    body = database_user(user, "pw", roles=[role_name], defaultRoles=[role_name])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, user, limit=60)
    assert roles_of(mysql, user) == {role_name}
    assert default_roles_of(mysql, user) == {role_name}
    assert privileges_of(mysql, user) == set()  # nothing of its own
    assert select_as(mysql, user, password, f"SELECT a FROM `{database}`.t") == [(42,)]
    assert select_as(mysql, user, password, "SELECT CURRENT_ROLE()") != [(None,)]
    assert select_as(mysql, user, password, f"INSERT INTO `{database}`.t VALUES (1)") in {1142, 1044}

    # A role granted by hand is revoked (exact convergence, periodic drift check), the spec's one stays.
    extra = unique("extra")
    mysql_query(mysql, f"CREATE ROLE '{extra}'")
    mysql_query(mysql, f"GRANT '{extra}' TO '{user}'@'%'")
    assert roles_of(mysql, user) == {role_name, extra}
    await eventually(
        lambda: roles_of(mysql, user) == {role_name},
        limit=60,
        interval=0.1,
        message="the hand-granted role was never revoked",
    )
    # ... and so is one revoked by hand restored, with its default (the periodic role drift check).
    mysql_query(mysql, f"REVOKE {grantee} FROM '{user}'@'%'")
    await eventually(
        lambda: roles_of(mysql, user) == {role_name},
        limit=60,
        interval=0.1,
        message="the revoked role was never restored",
    )
    await eventually(
        lambda: default_roles_of(mysql, user) == {role_name},
        limit=60,
        interval=0.1,
        message="the default role never came back",
    )
    mysql_query(mysql, f"DROP ROLE '{extra}'")

    # The role deleted while granted: the user says which role is missing.
    started = time.monotonic()
    await kube_client.delete(DATABASE_ROLES, role_name, namespace)
    obj = await wait_for_ready(kube_client, namespace, user, status="False", reason="RoleNotFound", limit=60)
    print(f"role deleted -> user reports RoleNotFound: {(time.monotonic() - started) * 1000:.0f} ms")
    assert role_name in ready(obj)["message"]  # type: ignore[index]
    await eventually(
        lambda: not role_exists(mysql, role_name),
        limit=60,
        interval=0.1,
        message="the role was never dropped",
    )
    await role_gone(kube_client, namespace, role_name)  # the finalizer comes off after the drop
    assert select_as(mysql, user, password, f"SELECT a FROM `{database}`.t") in {1142, 1044}

    # The role comes back: the user is re-queued by the role's events and gets it again.
    started = time.monotonic()
    await kube_client.create(DATABASE_ROLES, database_role(role_name, privileges=[grant]), namespace)
    await wait_for_ready(kube_client, namespace, user, limit=60)
    print(f"role recreated -> user Ready with it again: {(time.monotonic() - started) * 1000:.0f} ms")
    assert roles_of(mysql, user) == {role_name}
    assert default_roles_of(mysql, user) == {role_name}
    assert select_as(mysql, user, password, f"SELECT a FROM `{database}`.t") == [(42,)]


async def test_several_default_roles(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    """MySQL activates several default roles; MariaDB refuses more than one with the reason."""
    first, second = unique("one"), unique("two")
    for name in (first, second):
        await kube_client.create(DATABASE_ROLES, database_role(name), namespace)
        await wait_role_ready(kube_client, namespace, name)
    table = kubectl("get", "dbrole", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "ROLE", "READY", "REASON", "AGE"]
    assert sorted(line.split()[:4] for line in table[1:]) == [
        [first, first, "True", "RoleReady"],
        [second, second, "True", "RoleReady"],
    ]
    user = unique("twodefaults")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    body = database_user(user, "pw", roles=[first, second], defaultRoles=[first, second])
    await kube_client.create(DATABASE_USERS, body, namespace)
    if is_mariadb(mysql):
        obj = await wait_for_ready(kube_client, namespace, user, "False", "TooManyDefaultRoles", limit=60)
        assert "one default role" in ready(obj)["message"]  # type: ignore[index]
        assert roles_of(mysql, user) == set()
    else:
        await wait_for_ready(kube_client, namespace, user, limit=60)
        assert default_roles_of(mysql, user) == {first, second}
    # One default role is fine on both.
    patch = {"spec": {"defaultRoles": [second]}}
    await kube_client.patch(DATABASE_USERS, user, patch, PatchType.MERGE, namespace=namespace)
    await eventually(
        lambda: default_roles_of(mysql, user) == {second},
        limit=60,
        interval=0.1,
        message="the default role was never set",
    )
    await wait_for_ready(kube_client, namespace, user, limit=60)
    assert roles_of(mysql, user) == {first, second}


async def test_existing_role_not_taken_over(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """A role that exists but that the operator did not create is not ours: refused, left alone, dropped
    never; the adopt annotation takes it over."""
    name = unique("byhand")
    mysql_query(mysql, f"CREATE ROLE '{name}'")
    await kube_client.create(DATABASE_ROLES, database_role(name), namespace)
    await wait_role_ready(kube_client, namespace, name, "False", "RoleExists")
    await kube_client.delete(DATABASE_ROLES, name, namespace)
    await role_gone(kube_client, namespace, name)
    assert role_exists(mysql, name)  # never dropped: not ours

    # Adopted: the role is this resource's from then on, brought in line, and dropped with it.
    body = database_role(name, privileges=[{"privileges": ["SELECT"], "database": "adopted"}])
    body["metadata"]["annotations"] = {"mysql.dbuser-operator.dev/adopt": "true"}
    await kube_client.create(DATABASE_ROLES, body, namespace)
    await wait_role_ready(kube_client, namespace, name)
    assert privileges_of(mysql, name, role_host(mysql)) == {("adopted", "*", "SELECT", False)}
    await kube_client.delete(DATABASE_ROLES, name, namespace)
    await role_gone(kube_client, namespace, name)
    assert not role_exists(mysql, name)


async def role_gone(kube: KubeClient, namespace: str, name: str) -> None:
    await wait_until_gone(kube, namespace, name, resource=DATABASE_ROLES)


async def test_hostile_role_names_refused_at_admission(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    before = mysql_accounts(mysql)
    for value in TRICKS:
        with pytest.raises(ApiException) as refused:
            await kube_client.create(DATABASE_ROLES, database_role("hostile", role=value), namespace)
        assert refused.value.status == 422, value
        reference = "x" * 254 if value == "x" * 33 else value  # DatabaseRole names: up to 253
        for field in ("roles", "defaultRoles"):
            body = database_user("hostile-user", "pw", roles=["fine"], defaultRoles=[])
            body["spec"][field] = [*body["spec"][field], reference]
            with pytest.raises(ApiException) as refused:
                await kube_client.create(DATABASE_USERS, body, namespace)
            assert refused.value.status == 422, (field, value)
    body = database_user("hostile-user", "pw", roles=["a"], defaultRoles=["b"])
    with pytest.raises(ApiException) as refused:
        await kube_client.create(DATABASE_USERS, body, namespace)
    assert "every default role must be listed in roles" in str(refused.value.body)
    with pytest.raises(ApiException):  # a metadata.name longer than a role name, without spec.role
        await kube_client.create(DATABASE_ROLES, database_role("r" * 33), namespace)
    for privilege in ("SELECT; DROP USER root", "SELECT`", "ALL PRIVILEGES ON *.* TO x"):  # the Grant rules
        grant = {"privileges": [privilege], "database": "app"}
        with pytest.raises(ApiException) as refused:
            await kube_client.create(DATABASE_ROLES, database_role("hostile", privileges=[grant]), namespace)
        assert refused.value.status == 422, privilege
    assert mysql_accounts(mysql) == before


async def test_a_role_never_takes_over_an_account(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """On MySQL roles and accounts share mysql.user: adopting a DatabaseUser's account (or any account that
    logs in) as a role is refused. On MariaDB a role of that name is a separate thing, and the account too
    stays as it was."""
    name, password = unique("victim"), passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    await kube_client.create(DATABASE_USERS, database_user(name, "pw"), namespace)
    await wait_for_ready(kube_client, namespace, name, limit=60)
    body = database_role(name, privileges=[{"privileges": ["SELECT"], "database": "stolen"}])
    body["metadata"]["annotations"] = {"mysql.dbuser-operator.dev/adopt": "true"}
    await kube_client.create(DATABASE_ROLES, body, namespace)
    if is_mariadb(mysql):
        await wait_role_ready(kube_client, namespace, name)
    else:
        obj = await wait_role_ready(kube_client, namespace, name, "False", "RoleClaimed")
        assert f"DatabaseUser {namespace}/{name}" in ready(obj)["message"]  # type: ignore[index]
    assert privileges_of(mysql, name) == set()
    await kube_client.delete(DATABASE_ROLES, name, namespace)
    await role_gone(kube_client, namespace, name)
    assert select_as(mysql, name, password, "SELECT 1") == [(1,)]

    # An account made by hand that logs in is not adopted as a role either (MySQL).
    other = unique("login")
    mysql_query(mysql, f"CREATE USER '{other}'@'%' IDENTIFIED BY 'x-{other}'")
    body = database_role(other)
    body["metadata"]["annotations"] = {"mysql.dbuser-operator.dev/adopt": "true"}
    await kube_client.create(DATABASE_ROLES, body, namespace)
    if not is_mariadb(mysql):
        obj = await wait_role_ready(kube_client, namespace, other, "False")
        assert "can log in, not a role" in ready(obj)["message"]  # type: ignore[index]
    await kube_client.delete(DATABASE_ROLES, other, namespace)
    await role_gone(kube_client, namespace, other)
    assert select_as(mysql, other, f"x-{other}", "SELECT 1") == [(1,)]
    mysql_query(mysql, f"DROP USER '{other}'@'%'")

    # ... nor the other way round: a DatabaseUser's adopt annotation never takes over a managed role.
    shared = unique("shared")
    await kube_client.create(DATABASE_ROLES, database_role(shared), namespace)
    await wait_role_ready(kube_client, namespace, shared)
    body = database_user(shared, "pw")
    body["metadata"]["annotations"] = {"mysql.dbuser-operator.dev/adopt": "true"}
    await kube_client.create(DATABASE_USERS, body, namespace)
    if is_mariadb(mysql):  # an account 'shared'@'%' of its own, beside the role 'shared'
        await wait_for_ready(kube_client, namespace, shared, limit=60)
        assert role_exists(mysql, shared)
    else:
        obj = await wait_for_ready(kube_client, namespace, shared, "False", "AccountClaimed", limit=60)
        assert f"DatabaseRole {namespace}/{shared}" in ready(obj)["message"]  # type: ignore[index]
        row = mysql_query(
            mysql, "SELECT account_locked, authentication_string FROM mysql.user WHERE User = %s", shared
        )
        assert row == [("Y", "")]  # still a role: no password, locked


async def test_a_role_relabelled_while_no_instance_watched_is_let_go_at_start(
    start_operator: StartOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """As for users: a role that left the scope while no leader watched loses this instance's finalizer at
    the next start (a LeftTarget Warning), and stays in MySQL."""
    name = unique("asleep")
    first = await start_operator(target="role-sweep")  # instances run to the session's end: own target
    body = database_role(name)
    body["metadata"]["labels"] = {"dbuser-operator.dev/target": "role-sweep"}
    await kube_client.create(DATABASE_ROLES, body, namespace)
    await wait_role_ready(kube_client, namespace, name)
    first.stop.set()
    await first.task

    relabel = {"metadata": {"labels": {"dbuser-operator.dev/target": "nobody"}}}
    await kube_client.patch(DATABASE_ROLES, name, relabel, PatchType.MERGE, namespace=namespace)
    held = (await kube_client.get(DATABASE_ROLES, name, namespace))["metadata"]["finalizers"]
    assert held == [Scope("dbuser-operator.dev/target", "role-sweep").finalizer]  # none of it runs

    second = await start_operator(target="role-sweep")

    async def finalizers() -> list[str]:
        obj = await kube_client.get(DATABASE_ROLES, name, namespace)
        return list(obj["metadata"].get("finalizers") or [])

    await becomes(finalizers, [], interval=0.1, message="the departed role kept this instance's finalizer")

    async def left_target() -> bool:
        events, _ = await kube_client.list_all(EVENTS, namespace)
        return any(e["reason"] == "LeftTarget" and e["involvedObject"]["name"] == name for e in events)

    # The Event is written after the finalizer's removal, not with it.
    await eventually(left_target, interval=0.1, message="no LeftTarget Warning for the departed role")
    await kube_client.delete(DATABASE_ROLES, name, namespace)
    await role_gone(kube_client, namespace, name)
    assert role_exists(mysql, name)  # let go: never dropped
    second.stop.set()
    await second.task


def grantee(mysql: MySQLServer, role: str) -> str:
    """The role in a statement: ``'r'@'%'`` on MySQL, ``'r'`` on MariaDB."""
    return f"'{role}'" + ("" if is_mariadb(mysql) else "@'%'")


def roles_held_by_role(mysql: MySQLServer, role: str) -> set[str]:
    """The roles granted to the role ``role``, from the grant tables."""
    if is_mariadb(mysql):
        rows = mysql_query(mysql, "SELECT Role FROM mysql.roles_mapping WHERE User = %s AND Host = ''", role)
    else:
        rows = mysql_query(
            mysql, "SELECT FROM_USER FROM mysql.role_edges WHERE TO_USER = %s AND TO_HOST = '%%'", role
        )
    return {str(row[0]) for row in rows}


def holders_of(mysql: MySQLServer, role: str) -> set[tuple[str, str]]:
    """The accounts (and roles) holding ``role``, from the grant tables."""
    if is_mariadb(mysql):
        rows = mysql_query(mysql, "SELECT User, Host FROM mysql.roles_mapping WHERE Role = %s", role)
    else:
        rows = mysql_query(
            mysql,
            "SELECT TO_USER, TO_HOST FROM mysql.role_edges WHERE FROM_USER = %s AND FROM_HOST = '%%'",
            role,
        )
    return {(str(user), str(host)) for user, host in rows}


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == type_:
            return dict(item)
    return None


async def wait_condition(
    kube: KubeClient, namespace: str, name: str, type_: str, status: str, limit: float = 60
) -> dict[str, Any]:

    async def check() -> dict[str, Any]:
        found = condition(await kube.get(DATABASE_ROLES, name, namespace), type_)
        assert found is not None, f"no {type_} condition"
        assert found["status"] == status, f"{type_}: {found}"
        return found

    message = f"DatabaseRole {namespace}/{name} never got {type_}={status}"
    return await eventually(check, limit=limit, interval=0.1, message=message)


def make_data(mysql: MySQLServer, prefix: str) -> str:
    """A database with a table ``t`` holding 7: data a tenant must not read."""
    database = unique(prefix).replace("-", "")
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    mysql_query(mysql, f"CREATE TABLE `{database}`.t (a INT)")
    mysql_query(mysql, f"INSERT INTO `{database}`.t VALUES (7)")
    return database


def set_default_role(mysql: MySQLServer, role: str, user: str) -> None:
    """The role, granted already, active at the account's login."""
    verb = "FOR" if is_mariadb(mysql) else "TO"
    mysql_query(mysql, f"SET DEFAULT ROLE {grantee(mysql, role)} {verb} '{user}'@'%'")


DENIED = {1142, 1044}  # no SELECT on the table / no access to the database


def session_of(mysql: MySQLServer, user: str, password: str) -> pymysql.Connection[Any]:
    """An open session of ``user``, as an application keeps one."""
    return pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password,
        connect_timeout=5,
        read_timeout=10,
        autocommit=True,
        **client_tls(mysql, tls=False),
    )


def alive(session: pymysql.Connection[Any]) -> bool:
    """Whether the session still answers (pymysql never reconnects by itself)."""
    try:
        with session.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except pymysql.err.MySQLError:
        return False


async def test_a_role_granted_to_a_managed_role_is_revoked(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A DatabaseRole holds no role: one granted to it by hand is revoked at the next pass, with a Warning
    naming it, and the accounts holding the managed role no longer get what it gave them (a new session)."""
    data, sub = make_data(mysql, "dbadata"), unique("dbareader")
    mysql_query(mysql, f"CREATE ROLE {grantee(mysql, sub)}")
    mysql_query(mysql, f"GRANT SELECT ON `{data}`.* TO {grantee(mysql, sub)}")
    name = unique("tenant")
    await kube_client.create(DATABASE_ROLES, database_role(name), namespace)
    await wait_role_ready(kube_client, namespace, name)
    user, password = unique("tenantuser"), passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    body = database_user(user, "pw", roles=[name], defaultRoles=[name])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, user, limit=60)
    assert select_as(mysql, user, password, f"SELECT a FROM `{data}`.t") in DENIED
    session = session_of(mysql, user, password)  # open across the change: it is ended

    with mysql.connect() as connection, connection.cursor() as cursor:  # one session: before the next pass
        cursor.execute(f"GRANT {grantee(mysql, sub)} TO {grantee(mysql, name)}")
        if not is_mariadb(mysql):  # a role may even have default roles on MySQL
            cursor.execute(f"SET DEFAULT ROLE {grantee(mysql, sub)} TO {grantee(mysql, name)}")
    await eventually(
        lambda: not roles_held_by_role(mysql, name),
        limit=60,
        interval=0.1,
        message="the role granted to the role stayed",
    )
    event = await wait_for_event(kube_client, namespace, name, "RolesRevoked")
    assert event["type"] == "Warning"
    assert sub in event["message"], event["message"]
    if not is_mariadb(mysql):
        assert not mysql_query(mysql, "SELECT 1 FROM mysql.default_roles WHERE USER = %s", name)
    assert holders_of(mysql, sub) == set() or is_mariadb(mysql)  # MariaDB: its creator holds it too
    assert (name, "" if is_mariadb(mysql) else "%") not in holders_of(mysql, sub)
    assert roles_of(mysql, user) == {name}  # the user keeps the managed role itself ...
    assert select_as(mysql, user, password, f"SELECT a FROM `{data}`.t") in DENIED  # ... not the data
    # MariaDB keeps a session's global privileges from a role until it reconnects: the sessions of the
    # DatabaseUsers holding the role are ended.
    await eventually(
        lambda: not alive(session),
        limit=60,
        interval=0.1,
        message="the holder's open session was never ended",
    )
    session.close()
    event = await wait_for_event(kube_client, namespace, name, "SessionsEnded")
    assert "ended 1 open session(s)" in event["message"], event
    await wait_role_ready(kube_client, namespace, name)
    mysql_query(mysql, f"DROP ROLE {grantee(mysql, sub)}")
    mysql_query(mysql, f"DROP DATABASE `{data}`")


async def test_an_unmanaged_holder_is_reported_never_changed_and_named_at_deletion(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A managed role held by an account the operator does not manage: reported (a condition and a Warning
    naming the account), its grants left as they are; deleting the DatabaseRole drops the role with a
    Warning naming the account that loses it. A DatabaseUser's account holding it is not reported."""
    data = make_data(mysql, "shareddata")
    name = unique("shared")
    body = database_role(name, privileges=[{"privileges": ["SELECT"], "database": data}])
    await kube_client.create(DATABASE_ROLES, body, namespace)
    await wait_role_ready(kube_client, namespace, name)
    user, password = unique("manageduser"), passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    body = database_user(user, "pw", roles=[name], defaultRoles=[name])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, user, limit=60)
    found = await wait_condition(kube_client, namespace, name, "UnmanagedHolders", "False")
    assert found["reason"] == "NoUnmanagedHolders", found

    dba, dba_password = unique("dba"), passwords.new()
    mysql_query(mysql, f"CREATE USER '{dba}'@'%%' IDENTIFIED BY %s", dba_password)
    mysql_query(mysql, f"GRANT {grantee(mysql, name)} TO '{dba}'@'%'")
    set_default_role(mysql, name, dba)
    found = await wait_condition(kube_client, namespace, name, "UnmanagedHolders", "True")
    assert found["reason"] == "HeldByUnmanagedAccounts", found
    assert f"'{dba}'@'%'" in found["message"], found
    assert user not in found["message"], found  # the DatabaseUser's account is managed
    event = await wait_for_event(kube_client, namespace, name, "UnmanagedHolders")
    assert event["type"] == "Warning", event
    assert f"'{dba}'@'%'" in event["message"], event
    obj = await kube_client.get(DATABASE_ROLES, name, namespace)
    assert ready(obj)["status"] == "True"  # type: ignore[index]  # the role itself is as the spec says
    await asyncio.sleep(2.5)  # a few resync passes (1 s): reported, never changed
    assert roles_of(mysql, dba) == {name}
    assert default_roles_of(mysql, dba) == {name}
    assert select_as(mysql, dba, dba_password, f"SELECT a FROM `{data}`.t") == [(7,)]

    # The account loses the role by hand: no longer reported.
    mysql_query(mysql, f"REVOKE {grantee(mysql, name)} FROM '{dba}'@'%'")
    await wait_condition(kube_client, namespace, name, "UnmanagedHolders", "False")
    mysql_query(mysql, f"GRANT {grantee(mysql, name)} TO '{dba}'@'%'")
    set_default_role(mysql, name, dba)
    await wait_condition(kube_client, namespace, name, "UnmanagedHolders", "True")
    session, dba_session = session_of(mysql, user, password), session_of(mysql, dba, dba_password)

    # Deletion drops the role and names the account that loses it; the DatabaseUser reports it missing.
    await kube_client.delete(DATABASE_ROLES, name, namespace)
    await role_gone(kube_client, namespace, name)
    event = await wait_for_event(kube_client, namespace, name, "DroppedFromUnmanagedAccounts")
    assert event["type"] == "Warning", event
    assert f"'{dba}'@'%'" in event["message"], event
    assert user not in event["message"], event
    assert not role_exists(mysql, name)
    assert roles_of(mysql, dba) == set()
    # MySQL's DROP ROLE clears the default roles naming it; MariaDB's leaves mysql.user.default_role naming
    # a role that is gone (a login ignores it): nothing else of an account it does not manage is changed.
    assert default_roles_of(mysql, dba) == ({name} if is_mariadb(mysql) else set())
    assert select_as(mysql, dba, dba_password, f"SELECT a FROM `{data}`.t") in DENIED
    obj = await wait_for_ready(kube_client, namespace, user, status="False", reason="RoleNotFound", limit=60)
    assert name in ready(obj)["message"]  # type: ignore[index]
    assert not alive(session)  # the DatabaseUser's session: ended with the drop
    assert alive(dba_session)  # the DBA's: never touched
    event = await wait_for_event(kube_client, namespace, name, "RoleDropped")
    assert "ended 1 open session(s)" in event["message"], event
    session.close()
    dba_session.close()
    mysql_query(mysql, f"DROP USER '{dba}'@'%'")
    mysql_query(mysql, f"DROP DATABASE `{data}`")


async def test_an_adopted_dba_role_is_cut_from_its_sub_roles_and_its_dba_holder_reported(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The hostile tenant's path: adopt a DBA's role that holds another role with privileges on a DBA
    database. The sub-role is revoked (the tenant's user cannot read the DBA data), the DBA's account that
    holds the adopted role is reported and left alone, and deletion names it before the role is dropped."""
    data, sub, adopted = make_data(mysql, "dbaonly"), unique("dbasub"), unique("dbarole")
    for role in (sub, adopted):
        mysql_query(mysql, f"CREATE ROLE {grantee(mysql, role)}")
    mysql_query(mysql, f"GRANT SELECT ON `{data}`.* TO {grantee(mysql, sub)}")
    mysql_query(mysql, f"GRANT {grantee(mysql, sub)} TO {grantee(mysql, adopted)}")
    dba, dba_password = unique("dba"), passwords.new()
    mysql_query(mysql, f"CREATE USER '{dba}'@'%%' IDENTIFIED BY %s", dba_password)
    mysql_query(mysql, f"GRANT {grantee(mysql, adopted)} TO '{dba}'@'%'")
    set_default_role(mysql, adopted, dba)
    assert select_as(mysql, dba, dba_password, f"SELECT a FROM `{data}`.t") == [(7,)]

    body = database_role(adopted)
    body["metadata"]["annotations"] = {"mysql.dbuser-operator.dev/adopt": "true"}
    await kube_client.create(DATABASE_ROLES, body, namespace)
    await wait_role_ready(kube_client, namespace, adopted)
    assert roles_held_by_role(mysql, adopted) == set()
    event = await wait_for_event(kube_client, namespace, adopted, "RolesRevoked")
    assert sub in event["message"], event
    found = await wait_condition(kube_client, namespace, adopted, "UnmanagedHolders", "True")
    assert f"'{dba}'@'%'" in found["message"], found
    user, password = unique("tenantuser"), passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": password})
    body = database_user(user, "pw", roles=[adopted], defaultRoles=[adopted])
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, user, limit=60)
    assert select_as(mysql, user, password, f"SELECT a FROM `{data}`.t") in DENIED
    assert (dba, "%") in holders_of(mysql, adopted)  # the DBA's grants: untouched
    assert default_roles_of(mysql, dba) == {adopted}

    await kube_client.delete(DATABASE_ROLES, adopted, namespace)
    await role_gone(kube_client, namespace, adopted)
    event = await wait_for_event(kube_client, namespace, adopted, "DroppedFromUnmanagedAccounts")
    assert f"'{dba}'@'%'" in event["message"], event
    assert not role_exists(mysql, adopted)
    assert roles_of(mysql, dba) == set()
    assert default_roles_of(mysql, dba) == ({adopted} if is_mariadb(mysql) else set())
    assert select_as(mysql, dba, dba_password, f"SELECT a FROM `{data}`.t") in DENIED
    for statement in (
        f"DROP USER '{dba}'@'%'",
        f"DROP ROLE {grantee(mysql, sub)}",
        f"DROP DATABASE `{data}`",
    ):
        mysql_query(mysql, statement)


async def test_a_role_granted_by_hand_to_a_user_naming_none_is_revoked(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The role drift check skips the users that name no role only while their account holds none: one
    granted by hand to such an account (named by spec.user, not the resource's name) is still found."""
    name, account, extra = unique("noroles"), unique("noroles_acct").replace("-", "_"), unique("byhand")
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(name, "pw", user=account), namespace)
    await wait_for_ready(kube_client, namespace, name, limit=60)
    mysql_query(mysql, f"CREATE ROLE '{extra}'")
    mysql_query(mysql, f"GRANT '{extra}' TO '{account}'@'%'")
    assert roles_of(mysql, account) == {extra}
    await eventually(
        lambda: roles_of(mysql, account) == set(),
        limit=60,
        interval=0.1,
        message="the role granted by hand was never revoked",
    )
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    mysql_query(mysql, f"DROP ROLE '{extra}'")
